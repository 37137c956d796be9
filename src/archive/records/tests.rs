use std::io::Write;

use serde_json::{Map, Value, json};

use super::*;
use crate::record::{DEFAULT_FILTER, IdentityScope, NewRecord, Record, Source};
use parquet::file::metadata::ColumnChunkMetaData;

fn record(question_id: &str, correct: Option<bool>) -> Record {
    Record {
        schema_version: 1,
        run_id: "r1".into(),
        benchmark: "mmlu".into(),
        script: None,
        language: Some("tr".into()),
        question_id: question_id.into(),
        variant_id: "original".into(),
        filter: DEFAULT_FILTER.into(),
        repeat_id: 0,
        identity_scope: IdentityScope::Stable,
        model: "m".into(),
        rephrasing_model: Some("para".into()),
        input: json!({"question": "Başkent?", "choices": ["a", "b"], "z": 1.0, "a": [1e21, -0.0]}),
        target: json!({"index": 1}),
        prediction: json!("b"),
        correct,
        scores: json!({"logprobs": [-0.5, -1.25]})
            .as_object()
            .unwrap()
            .clone(),
        metrics: Map::new(),
        response: Value::Null,
        source: Source::line("runs/r1/raw/0001-x.jsonl", 3),
        warnings: vec!["a \"quoted\" warning\n".into()],
        extra: json!({"doc_id": 7}).as_object().unwrap().clone(),
    }
}

fn write(records: &[Record]) -> Vec<u8> {
    let mut writer = RecordsWriter::new(Vec::new()).unwrap();
    let mut batch = EncodedBatch::new();
    for record in records {
        batch.push(&NewRecord::from_record(record.clone()).unwrap());
    }
    writer.write(batch).unwrap();
    let (bytes, rows) = writer.finish().unwrap();
    assert_eq!(rows, records.len() as u64);
    bytes
}

/// A records file written by the Parquet writer itself (not babel's): `batches` with the
/// encoder's `properties`, the records schema `version` named in the metadata, no Arrow
/// schema.
fn write_parquet(
    batches: &[arrow_array::RecordBatch],
    properties: parquet::file::properties::WriterPropertiesBuilder,
    version: &str,
) -> Vec<u8> {
    let properties = properties
        .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            SCHEMA_KEY.to_owned(),
            version.to_owned(),
        )]))
        .build();
    let options = parquet::arrow::arrow_writer::ArrowWriterOptions::new()
        .with_properties(properties)
        .with_skip_arrow_metadata(true);
    let mut bytes = Vec::new();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new_with_options(&mut bytes, batches[0].schema(), options)
            .unwrap();
    for batch in batches {
        writer.write(batch).unwrap();
    }
    writer.close().unwrap();
    bytes
}

fn open(bytes: &[u8]) -> RecordsFile {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    RecordsFile::open(file).unwrap()
}

fn read_all(bytes: &[u8], columns: Columns) -> Vec<Batch> {
    open(bytes)
        .batches(columns)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn the_columns_are_declared_in_file_order() {
    for (position, (column, name, _)) in COLUMNS.iter().enumerate() {
        assert_eq!(column.index(), position, "{name}");
        assert_eq!(column.name(), *name);
    }
}

#[test]
fn a_record_reads_back_as_it_was_written_with_nested_values_canonical() {
    let records = vec![record("q1", Some(true)), record("q2", None)];
    let bytes = write(&records);
    let batches = read_all(&bytes, Columns::ALL);
    let read: Vec<Record> = batches
        .iter()
        .flat_map(|b| (0..b.len()).map(move |row| b.record(row).unwrap()))
        .collect();
    // Canonical JSON keeps every value: 1.0 and 1 are the same JSON number, -0 reads as 0.
    let mut expected = records.clone();
    for record in &mut expected {
        record.input =
            json!({"a": [1e21, 0], "choices": ["a", "b"], "question": "Başkent?", "z": 1});
    }
    assert_eq!(read, expected);
    assert_eq!(read[1].correct, None, "null correctness stays unknown");
    assert_eq!(
        batches[0].text(Column::Input, 0),
        Some(r#"{"a":[1e+21,0],"choices":["a","b"],"question":"Başkent?","z":1}"#)
    );
}

#[test]
fn the_same_records_give_the_same_bytes() {
    // "The same input imported by the same babel version gives byte-identical files."
    let records: Vec<Record> = (0..10_000)
        .map(|i| record(&format!("q{i}"), Some(i % 3 == 0)))
        .collect();
    assert_eq!(write(&records), write(&records));
}

#[test]
fn a_projection_reads_only_the_asked_columns() {
    let bytes = write(&[record("q1", Some(false))]);
    let batches = read_all(&bytes, Columns::JOIN);
    let batch = &batches[0];
    assert_eq!(batch.identity(0).question_id, "q1");
    assert_eq!(batch.identity(0).language, Some("tr"));
    assert_eq!(batch.correct(0), Some(false));
    assert_eq!(batch.identity_scope(0), Ok(IdentityScope::Stable));
    let unprojected = std::panic::catch_unwind(|| batch.text(Column::Input, 0).map(str::len));
    assert!(unprojected.is_err(), "input was not read");
}

#[test]
fn json_lines_from_columns_equal_the_serialized_record() {
    let mut records = vec![record("q1", Some(true))];
    records[0].input = json!({"question": "x"});
    records[0].language = None;
    let bytes = write(&records);
    let batches = read_all(&bytes, Columns::ALL);
    let mut line = Vec::new();
    let mut stored = crate::record::StoredRecord::default();
    batches[0].stored_record(0, &mut stored);
    stored.write_json_line(&mut line);
    let mut expected = serde_json::to_vec(&records[0]).unwrap();
    expected.push(b'\n');
    assert_eq!(
        String::from_utf8(line).unwrap(),
        String::from_utf8(expected).unwrap()
    );
}

#[test]
fn a_file_with_another_schema_is_refused_with_what_differs() {
    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    use std::sync::Arc;
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "question_id",
        arrow_schema::DataType::Utf8,
        false,
    )]));
    let column: ArrayRef = Arc::new(StringArray::from(vec!["q1"]));
    let batch = RecordBatch::try_new(schema.clone(), vec![column]).unwrap();
    let parquet_with = |metadata: Option<&str>| {
        let mut bytes = Vec::new();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_key_value_metadata(metadata.map(|value| {
                vec![parquet::file::metadata::KeyValue::new(
                    SCHEMA_KEY.to_owned(),
                    value.to_owned(),
                )]
            }))
            .build();
        let mut writer =
            parquet::arrow::ArrowWriter::try_new(&mut bytes, schema.clone(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&bytes).unwrap();
        RecordsFile::open(file).err().unwrap()
    };
    let error = parquet_with(None);
    assert!(
        error.starts_with("its metadata babel.records_schema is missing, not one this babel reads (\"1\" or \"2\")"),
        "{error}"
    );
    let error = parquet_with(Some("2"));
    assert!(
        error.starts_with("its columns are [question_id]"),
        "{error}"
    );

    let mut file = tempfile::tempfile().unwrap();
    file.write_all(b"not parquet").unwrap();
    let error = RecordsFile::open(file).err().unwrap();
    assert!(error.starts_with("not a readable Parquet file"), "{error}");

    // A footer claimed larger than babel decodes: refused before it is read.
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(b"PAR1").unwrap();
    file.write_all(&(64u32 << 20).to_le_bytes()).unwrap();
    file.write_all(b"PAR1").unwrap();
    let error = RecordsFile::open(file).err().unwrap();
    assert_eq!(
        error,
        "its footer is 67108864 bytes, more than the 8388608 babel decodes"
    );
}

#[test]
fn non_canonical_or_mistyped_json_in_a_column_is_a_row_error() {
    // A file written by hand with the right schema but a JSON column out of its form.
    let good = write(&[record("q1", None)]);
    let batches = read_all(&good, Columns::ALL);
    let hand_written = |scores: &str, metrics: &str| {
        let mut columns: Vec<arrow_array::ArrayRef> = Vec::new();
        let source = &batches[0];
        for (column, _, kind) in COLUMNS {
            let array: arrow_array::ArrayRef = match (column, kind) {
                (Column::Scores, _) => {
                    std::sync::Arc::new(arrow_array::StringArray::from(vec![scores]))
                }
                (Column::Metrics, _) => {
                    std::sync::Arc::new(arrow_array::StringArray::from(vec![metrics]))
                }
                (_, Kind::Label { .. } | Kind::Text | Kind::Json) => {
                    std::sync::Arc::new(arrow_array::StringArray::from(vec![
                        source.text(column, 0),
                    ]))
                }
                (_, Kind::Integer { .. }) => {
                    std::sync::Arc::new(arrow_array::UInt64Array::from(vec![
                        source.integer(column, 0),
                    ]))
                }
                (_, Kind::Boolean) => {
                    std::sync::Arc::new(arrow_array::BooleanArray::from(vec![source.correct(0)]))
                }
            };
            columns.push(array);
        }
        let batch = arrow_array::RecordBatch::try_new(file_schema(), columns).unwrap();
        let bytes = write_parquet(&[batch], Default::default(), SCHEMA_VALUE);
        read_all(&bytes, Columns::ALL)
    };
    let error = hand_written("{\"b\":1,\"a\":2}", "{}")[0]
        .record(0)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "field scores: not RFC 8785 canonical JSON"
    );
    let error = hand_written("{}", "[1]")[0].record(0).unwrap_err();
    assert_eq!(
        error.to_string(),
        "field metrics: expected a JSON object, found an array"
    );
    let error = hand_written("{\"a\":9007199254740993}", "{}")[0]
        .record(0)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "field scores: field a: the integer 9007199254740993 has no exact canonical form (RFC 8785 numbers are doubles)"
    );
    let error = hand_written("{\"a\":1,\"a\":1}", "{}")[0]
        .record(0)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "field scores: field a: duplicate key \"a\""
    );
}

#[test]
fn every_kind_of_locator_round_trips() {
    use crate::record::Locator;
    let mut line = record("q1", Some(true));
    line.source = Source::line("runs/r1/raw/0001-x.jsonl", 3);
    let mut member = record("q2", None);
    member.source = Source {
        path: "runs/r1/raw/0002-log.eval".into(),
        locator: Locator::Member("samples/q2_epoch_1.json".into()),
    };
    let mut pointer = record("q3", Some(false));
    pointer.source = Source {
        path: "runs/r1/raw/0003-run/scenario_state.json".into(),
        locator: Locator::Pointer("/request_states/12".into()),
    };
    let written = vec![line, member, pointer];
    let batches = read_all(&write(&written), Columns::ALL);
    let canonical = |r: &Record| crate::canonical_json::to_canonical_bytes(r).unwrap();
    for (row, record) in written.iter().enumerate() {
        assert_eq!(
            canonical(&batches[0].record(row).unwrap()),
            canonical(record)
        );
    }
    let mut json = Vec::new();
    let mut stored = crate::record::StoredRecord::default();
    batches[0].stored_record(1, &mut stored);
    stored.write_json_line(&mut json);
    let value: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        value["source"],
        json!({"path": "runs/r1/raw/0002-log.eval", "member": "samples/q2_epoch_1.json"})
    );
}

#[test]
fn a_version_1_file_reads_with_line_locators() {
    // Version 1: the first 23 columns, source_line required, metadata "1".
    let written = record("q1", Some(true));
    let current = read_all(&write(std::slice::from_ref(&written)), Columns::ALL);
    let schema = schema_of("1", false);
    let columns: Vec<arrow_array::ArrayRef> = COLUMNS[..schema.fields().len()]
        .iter()
        .map(|(column, _, kind)| -> arrow_array::ArrayRef {
            match kind {
                Kind::Integer { .. } => std::sync::Arc::new(arrow_array::UInt64Array::from(vec![
                    current[0].integer(*column, 0).unwrap(),
                ])),
                Kind::Boolean => std::sync::Arc::new(arrow_array::BooleanArray::from(vec![
                    current[0].correct(0),
                ])),
                _ => std::sync::Arc::new(arrow_array::StringArray::from(vec![
                    current[0].text(*column, 0),
                ])),
            }
        })
        .collect();
    let batch = arrow_array::RecordBatch::try_new(schema.clone(), columns).unwrap();
    let bytes = write_parquet(&[batch], Default::default(), "1");
    let batches = read_all(&bytes, Columns::ALL);
    let canonical = |r: &Record| crate::canonical_json::to_canonical_bytes(r).unwrap();
    assert_eq!(
        canonical(&batches[0].record(0).unwrap()),
        canonical(&written)
    );
}

#[test]
fn batches_of_long_records_hold_fewer_rows() {
    let records: Vec<Record> = (0..40)
        .map(|q| {
            let mut record = record(&format!("q{q}"), Some(true));
            record.input = json!({"context": "x".repeat(1 << 20)});
            record
        })
        .collect();
    let bytes = write(&records);
    let batches = read_all(&bytes, Columns::ALL);
    // 40 records of a mebibyte: at most BATCH_BYTES of them in a batch, not all 40.
    let most = (crate::inputs::parquet::BATCH_BYTES >> 20) as usize;
    assert!(
        batches
            .iter()
            .all(|batch| (1..=most).contains(&batch.len()))
    );
    assert_eq!(batches.iter().map(Batch::len).sum::<usize>(), 40);
    // Short records are still read 4,096 to a batch, all columns or the join's.
    let short: Vec<Record> = (0..5000).map(|q| record(&format!("q{q}"), None)).collect();
    let short = write(&short);
    for columns in [Columns::ALL, Columns::JOIN] {
        let lengths: Vec<usize> = read_all(&short, columns).iter().map(Batch::len).collect();
        assert_eq!(lengths, [read::BATCH_ROWS, 5000 - read::BATCH_ROWS]);
    }
}

#[test]
fn long_records_among_short_ones_are_read_in_small_batches() {
    // 80 records of a mebibyte of repetitive text (it compresses to almost nothing, so the
    // encoder's own bound on a row group never closes one) before, or between, 20,000 short
    // ones. A row group holds at most ROW_GROUP_TEXT_BYTES of text (and a writer batch), and
    // each group is read on its own in batches its average row sizes, so no batch holds
    // much more than BATCH_BYTES of the long records wherever they are.
    let long = |q: usize| {
        let mut record = record(&format!("long{q}"), Some(true));
        record.input = json!({"context": "x".repeat(1 << 20)});
        record
    };
    let short = |q: usize| record(&format!("short{q}"), None);
    let first: Vec<Record> = (0..80).map(long).chain((0..20_000).map(short)).collect();
    let between: Vec<Record> = (0..10_000)
        .map(short)
        .chain((0..80).map(long))
        .chain((10_000..20_000).map(short))
        .collect();
    for (layout, records) in [("first", first), ("between", between)] {
        let batches = read_all(&write(&records), Columns::ALL);
        // The short records' groups are still read 4,096 to a batch: read with one size for
        // the whole file, the long records' group made every batch 32 rows.
        assert!(
            batches.iter().any(|batch| batch.len() == read::BATCH_ROWS),
            "{layout}: {:?}",
            batches.iter().map(Batch::len).collect::<Vec<_>>()
        );
        let most = batches
            .iter()
            .map(|batch| {
                (0..batch.len())
                    .map(|row| batch.text(Column::Input, row).map_or(0, str::len))
                    .sum::<usize>()
            })
            .max()
            .unwrap();
        // A writer batch is at most 8 MiB and the record that passed it.
        let bound = crate::inputs::parquet::BATCH_BYTES as usize + (9 << 20);
        assert!(most <= bound, "{layout}: a batch of {most} bytes of input");
        assert_eq!(batches.iter().map(Batch::len).sum::<usize>(), 20_080);
    }
}

/// 64 records whose inputs are 2 MiB each, as Arrow batches read back from babel's own
/// file (to be written again by the Parquet writer with other settings).
fn long_inputs() -> Vec<arrow_array::RecordBatch> {
    let value_bytes = 2 << 20;
    let records: Vec<Record> = (0..64)
        .map(|q| {
            let mut record = record(&format!("q{q}"), Some(true));
            record.input = json!({"context": "x".repeat(value_bytes)});
            record
        })
        .collect();
    let mut stored = tempfile::tempfile().unwrap();
    stored.write_all(&write(&records)).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(stored)
        .unwrap()
        .build()
        .unwrap();
    reader.map(Result::unwrap).collect()
}

/// Asserts that no batch of `bytes`, read whole, holds more input text than a batch may.
fn assert_batches_bounded(bytes: &[u8], what: &str) {
    let read = read_all(bytes, Columns::ALL);
    for batch in &read {
        let input: usize = (0..batch.len())
            .map(|row| batch.text(Column::Input, row).map_or(0, str::len))
            .sum();
        assert!(
            input <= crate::inputs::parquet::BATCH_BYTES as usize,
            "{what}: a batch of {} rows, {input} bytes of input",
            batch.len()
        );
    }
    assert_eq!(read.iter().map(Batch::len).sum::<usize>(), 64);
}

#[test]
fn a_long_value_in_a_dictionary_or_a_delta_column_is_read_a_few_rows_at_a_time() {
    // babel writes neither, but a records file may come from anyone (a bundle): here every
    // record's input is one 2 MiB value, stored once in the column's dictionary, or as a
    // prefix of the value before it (DELTA_BYTE_ARRAY), so each row's page entry is a few
    // bytes. Sized by the pages, one batch held all 64 rows (128 MiB); each is now at most
    // BATCH_BYTES.
    let batches = long_inputs();
    let zstd = || {
        parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
    };
    let dictionary = zstd()
        .set_dictionary_enabled(true)
        .set_dictionary_page_size_limit(1 << 30);
    let delta = zstd().set_dictionary_enabled(false).set_column_encoding(
        parquet::schema::types::ColumnPath::from("input"),
        parquet::basic::Encoding::DELTA_BYTE_ARRAY,
    );
    for (encoding, properties) in [("dictionary", dictionary), ("delta", delta)] {
        let bytes = write_parquet(&batches, properties, SCHEMA_VALUE);
        assert!(bytes.len() < 1 << 20, "{encoding}: {} bytes", bytes.len());
        assert_batches_bounded(&bytes, encoding);
    }
}

/// The footer of the Parquet file `bytes`, and where it starts.
fn footer(bytes: &[u8]) -> (parquet::file::metadata::ParquetMetaData, usize) {
    let end = bytes.len() - 8;
    let length = u32::from_le_bytes(bytes[end..end + 4].try_into().unwrap()) as usize;
    let decoded =
        parquet::file::metadata::ParquetMetaDataReader::decode_metadata(&bytes[end - length..end]);
    (decoded.unwrap(), end - length)
}

/// `bytes` with a footer in which `edit` rewrote each chunk of `column` (the pages are as
/// they were).
fn edited_footer(
    bytes: &[u8],
    column: Column,
    edit: impl Fn(ColumnChunkMetaData) -> ColumnChunkMetaData,
) -> Vec<u8> {
    let (metadata, start) = footer(bytes);
    let groups = metadata
        .row_groups()
        .iter()
        .map(|group| {
            let chunks = group.columns().iter().enumerate().map(|(index, chunk)| {
                match index == column.index() {
                    false => chunk.clone(),
                    true => edit(chunk.clone()),
                }
            });
            let chunks: Vec<_> = chunks.collect();
            let total = chunks.iter().map(|c| c.uncompressed_size()).sum();
            group
                .clone()
                .into_builder()
                .set_column_metadata(chunks)
                .set_total_byte_size(total)
                .build()
                .unwrap()
        })
        .collect();
    let metadata = metadata.into_builder().set_row_groups(groups).build();
    let mut out = bytes[..start].to_vec();
    let writer = parquet::file::metadata::ParquetMetaDataWriter::new(&mut out, &metadata);
    writer.finish().unwrap();
    out
}

/// `bytes` with a footer that says each chunk of `column` decodes from no more bytes than
/// it takes in the file (its pages say otherwise).
fn understated(bytes: &[u8], column: Column) -> Vec<u8> {
    edited_footer(bytes, column, |chunk| {
        let said = chunk.compressed_size();
        let builder = chunk.into_builder().set_total_uncompressed_size(said);
        builder.build().unwrap()
    })
}

#[test]
fn a_footer_that_understates_a_column_does_not_make_its_batches_larger() {
    // One row group of 64 records of 2 MiB of input each, plain: the footer says the input
    // column decodes from a few kilobytes. Sized by the footer, one batch held every row
    // (128 MiB); sized by what the pages' headers say, each is at most BATCH_BYTES.
    let properties = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
        .set_dictionary_enabled(false);
    let bytes = understated(
        &write_parquet(&long_inputs(), properties, SCHEMA_VALUE),
        Column::Input,
    );
    let said = footer(&bytes)
        .0
        .row_group(0)
        .column(Column::Input.index())
        .uncompressed_size();
    assert!(said < 1 << 20, "the footer says {said} bytes");
    assert_batches_bounded(&bytes, "understated");
}

#[test]
fn a_footer_that_hides_a_dictionary_does_not_make_its_batches_larger() {
    // Every record's input is one 2 MiB value in the dictionary; the footer says the
    // chunk has no dictionary page and plain values only (its first page, the dictionary,
    // named as its first data page). The reader decodes by the pages: taken from the
    // footer, one batch held every row, 128 MiB (found by the eighth session's review).
    let properties = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
        .set_dictionary_enabled(true)
        .set_dictionary_page_size_limit(1 << 30);
    let honest = write_parquet(&long_inputs(), properties, SCHEMA_VALUE);
    let bytes = edited_footer(&honest, Column::Input, |chunk| {
        let first = chunk.dictionary_page_offset().unwrap();
        let plain = vec![
            parquet::basic::Encoding::PLAIN,
            parquet::basic::Encoding::RLE,
        ];
        let builder = chunk
            .into_builder()
            .set_dictionary_page_offset(None)
            .set_data_page_offset(first)
            .set_encodings(plain);
        builder.build().unwrap()
    });
    let chunk = footer(&bytes)
        .0
        .row_group(0)
        .column(Column::Input.index())
        .clone();
    assert_eq!(chunk.dictionary_page_offset(), None);
    assert_batches_bounded(&bytes, "hidden dictionary");
}

#[test]
fn the_pages_of_a_file_babel_wrote_decode_from_what_its_footer_says() {
    // What the pages' headers say of each chunk agrees with the footer's own count for an
    // honest file: every column kind, a dictionary page, statistics in the headers,
    // several row groups.
    let records: Vec<Record> = (0..20_000)
        .map(|q| {
            let mut record = record(&format!("q{q}"), Some(q % 3 == 0));
            let long = if q % 500 == 0 { 2 << 20 } else { 100 };
            record.input = json!({"question": "y".repeat(long)});
            record
        })
        .collect();
    let bytes = write(&records);
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&bytes).unwrap();
    let metadata = footer(&bytes).0;
    let groups = metadata.row_groups();
    assert!(groups.len() > 1, "{} row groups", groups.len());
    for group in groups {
        for (index, chunk) in group.columns().iter().enumerate() {
            let paged = crate::inputs::parquet::chunk_pages(&file, group, index).unwrap();
            crate::inputs::parquet::tests::assert_honest(paged.bytes, chunk, "babel's file");
        }
    }
}
