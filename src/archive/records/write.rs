//! Writing a records file: records are encoded on worker threads ([`EncodedRecord`]: the
//! nested values turned into canonical JSON text), then appended in order to one
//! [`RecordsWriter`], which cuts Arrow batches and lets the Parquet encoder compress them
//! into row groups of bounded size.

use std::io::{self, Write};
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use serde_json::Value;

use super::{COLUMNS, Column, Kind, SCHEMA_KEY, SCHEMA_VALUE, file_schema};
use crate::canonical_json::{self, CanonicalError};
use crate::record::{Identity, IdentityScope, Locator, Record};

/// Rows per Arrow batch handed to the encoder.
const BATCH_ROWS: usize = 1024;
/// A row group is closed once its encoded size passes this (so memory stays bounded
/// however long the import), or at this many rows.
const ROW_GROUP_BYTES: usize = 32 << 20;
const ROW_GROUP_ROWS: usize = 1 << 20;
/// Every column closes a page at least this often, so each column's compressor exists
/// from the first few thousand rows on and memory is flat from there (a page of a label
/// column is otherwise 20,000 rows, and its compressor appears only then).
const PAGE_ROWS: usize = 4096;
/// The zstd level of every page: fast to write, small enough (see BENCHMARKS.md).
const ZSTD_LEVEL: i32 = 3;

/// The JSON columns, in the order [`EncodedRecord`] keeps their text.
const JSON_COLUMNS: [Column; 8] = [
    Column::Input,
    Column::Target,
    Column::Prediction,
    Column::Scores,
    Column::Metrics,
    Column::Response,
    Column::Warnings,
    Column::Extra,
];

/// A record ready for the columns: scalars as they are, nested values as canonical JSON.
#[derive(Debug, Clone)]
pub struct EncodedRecord {
    run_id: String,
    benchmark: String,
    script: Option<String>,
    language: Option<String>,
    question_id: String,
    variant_id: String,
    filter: String,
    repeat_id: u64,
    identity_scope: IdentityScope,
    model: String,
    rephrasing_model: Option<String>,
    correct: Option<bool>,
    source_path: String,
    source_line: u64,
    /// The canonical JSON of the nested values, one after the other.
    json: Vec<u8>,
    /// Where each of [`JSON_COLUMNS`] ends in `json`.
    ends: [usize; 8],
}

impl EncodedRecord {
    /// Encodes a record; refuses a nested integer that has no exact canonical form (its
    /// path starts with the record field: `input.doc.n`).
    pub fn encode(record: Record) -> Result<Self, CanonicalError> {
        let mut json = Vec::with_capacity(1024);
        let mut ends = [0; 8];
        let values = [
            (Column::Input, record.input),
            (Column::Target, record.target),
            (Column::Prediction, record.prediction),
            (Column::Scores, Value::Object(record.scores)),
            (Column::Metrics, Value::Object(record.metrics)),
            (Column::Response, record.response),
        ];
        for (slot, (column, value)) in values.into_iter().enumerate() {
            canonical_json::write_value(&value, &mut json).map_err(|error| match error {
                CanonicalError::UnsafeInteger { path, value } => CanonicalError::UnsafeInteger {
                    path: path.under(column.name()),
                    value,
                },
                other => other,
            })?;
            ends[slot] = json.len();
        }
        json.push(b'[');
        for (index, warning) in record.warnings.iter().enumerate() {
            if index > 0 {
                json.push(b',');
            }
            canonical_json::write_string(warning, &mut json);
        }
        json.push(b']');
        ends[6] = json.len();
        canonical_json::write_value(&Value::Object(record.extra), &mut json).map_err(|error| {
            match error {
                CanonicalError::UnsafeInteger { path, value } => CanonicalError::UnsafeInteger {
                    path: path.under("extra"),
                    value,
                },
                other => other,
            }
        })?;
        ends[7] = json.len();
        let Locator::Line(source_line) = record.source.locator;
        Ok(Self {
            run_id: record.run_id,
            benchmark: record.benchmark,
            script: record.script,
            language: record.language,
            question_id: record.question_id,
            variant_id: record.variant_id,
            filter: record.filter,
            repeat_id: record.repeat_id,
            identity_scope: record.identity_scope,
            model: record.model,
            rephrasing_model: record.rephrasing_model,
            correct: record.correct,
            source_path: record.source.path,
            source_line,
            json,
            ends,
        })
    }

    /// The record's identity fields.
    pub fn identity(&self) -> Identity<'_> {
        Identity {
            benchmark: &self.benchmark,
            language: self.language.as_deref(),
            script: self.script.as_deref(),
            question_id: &self.question_id,
            variant_id: &self.variant_id,
            filter: &self.filter,
            repeat_id: self.repeat_id,
        }
    }

    /// The canonical JSON text of one nested column.
    fn json(&self, slot: usize) -> &str {
        let start = if slot == 0 { 0 } else { self.ends[slot - 1] };
        std::str::from_utf8(&self.json[start..self.ends[slot]])
            .expect("canonical JSON is written from UTF-8 strings")
    }
}

/// The builders of one Arrow batch, a field per column.
struct Builders {
    schema_version: UInt64Builder,
    run_id: StringBuilder,
    benchmark: StringBuilder,
    script: StringBuilder,
    language: StringBuilder,
    question_id: StringBuilder,
    variant_id: StringBuilder,
    filter: StringBuilder,
    repeat_id: UInt64Builder,
    identity_scope: StringBuilder,
    model: StringBuilder,
    rephrasing_model: StringBuilder,
    json: [StringBuilder; 8],
    correct: BooleanBuilder,
    source_path: StringBuilder,
    source_line: UInt64Builder,
    rows: usize,
}

impl Builders {
    fn new() -> Self {
        let text = || StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 16);
        Self {
            schema_version: UInt64Builder::with_capacity(BATCH_ROWS),
            run_id: text(),
            benchmark: text(),
            script: text(),
            language: text(),
            question_id: text(),
            variant_id: text(),
            filter: text(),
            repeat_id: UInt64Builder::with_capacity(BATCH_ROWS),
            identity_scope: text(),
            model: text(),
            rephrasing_model: text(),
            json: std::array::from_fn(|_| {
                StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 64)
            }),
            correct: BooleanBuilder::with_capacity(BATCH_ROWS),
            source_path: text(),
            source_line: UInt64Builder::with_capacity(BATCH_ROWS),
            rows: 0,
        }
    }

    fn append(&mut self, record: &EncodedRecord) {
        self.schema_version
            .append_value(crate::record::SCHEMA_VERSION);
        self.run_id.append_value(&record.run_id);
        self.benchmark.append_value(&record.benchmark);
        self.script.append_option(record.script.as_deref());
        self.language.append_option(record.language.as_deref());
        self.question_id.append_value(&record.question_id);
        self.variant_id.append_value(&record.variant_id);
        self.filter.append_value(&record.filter);
        self.repeat_id.append_value(record.repeat_id);
        self.identity_scope
            .append_value(record.identity_scope.as_str());
        self.model.append_value(&record.model);
        self.rephrasing_model
            .append_option(record.rephrasing_model.as_deref());
        for (slot, builder) in self.json.iter_mut().enumerate() {
            builder.append_value(record.json(slot));
        }
        self.correct.append_option(record.correct);
        self.source_path.append_value(&record.source_path);
        self.source_line.append_value(record.source_line);
        self.rows += 1;
    }

    /// The columns built so far, in file order; the builders start over empty.
    fn finish(&mut self) -> Vec<ArrayRef> {
        self.rows = 0;
        COLUMNS
            .iter()
            .map(|(column, _, _)| -> ArrayRef {
                match column {
                    Column::SchemaVersion => Arc::new(self.schema_version.finish()),
                    Column::RunId => Arc::new(self.run_id.finish()),
                    Column::Benchmark => Arc::new(self.benchmark.finish()),
                    Column::Script => Arc::new(self.script.finish()),
                    Column::Language => Arc::new(self.language.finish()),
                    Column::QuestionId => Arc::new(self.question_id.finish()),
                    Column::VariantId => Arc::new(self.variant_id.finish()),
                    Column::Filter => Arc::new(self.filter.finish()),
                    Column::RepeatId => Arc::new(self.repeat_id.finish()),
                    Column::IdentityScope => Arc::new(self.identity_scope.finish()),
                    Column::Model => Arc::new(self.model.finish()),
                    Column::RephrasingModel => Arc::new(self.rephrasing_model.finish()),
                    Column::Correct => Arc::new(self.correct.finish()),
                    Column::SourcePath => Arc::new(self.source_path.finish()),
                    Column::SourceLine => Arc::new(self.source_line.finish()),
                    json => {
                        let slot = JSON_COLUMNS
                            .iter()
                            .position(|c| c == json)
                            .expect("the other columns are JSON columns");
                        Arc::new(self.json[slot].finish())
                    }
                }
            })
            .collect()
    }
}

/// The encoder settings of every records file. Label columns are dictionary-encoded with
/// statistics (readers can skip row groups by benchmark or language); the JSON and
/// question text columns are plain, with no statistics (min/max of prompts help no one).
fn properties() -> WriterProperties {
    let level = ZstdLevel::try_new(ZSTD_LEVEL).expect("a valid zstd level");
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_data_page_row_count_limit(PAGE_ROWS)
        .set_statistics_truncate_length(Some(64))
        .set_column_index_truncate_length(Some(64))
        .set_key_value_metadata(Some(vec![KeyValue::new(
            SCHEMA_KEY.to_owned(),
            SCHEMA_VALUE.to_owned(),
        )]));
    for (_, name, kind) in COLUMNS {
        if matches!(kind, Kind::Json | Kind::Text) {
            let path = ColumnPath::from(name);
            builder = builder
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_statistics_enabled(path, EnabledStatistics::None);
        }
    }
    builder.build()
}

/// Turns a Parquet failure into the I/O error it wraps, or an I/O error that says it.
pub(super) fn to_io(error: ParquetError) -> io::Error {
    match error {
        ParquetError::External(inner) => match inner.downcast::<io::Error>() {
            Ok(io) => *io,
            Err(other) => io::Error::other(other),
        },
        other => io::Error::other(other),
    }
}

/// Appends encoded records to one records file.
pub struct RecordsWriter<W: Write + Send> {
    writer: ArrowWriter<W>,
    builders: Builders,
    rows: u64,
}

impl<W: Write + Send> RecordsWriter<W> {
    /// A records file written to `out`.
    pub fn new(out: W) -> io::Result<Self> {
        let options = ArrowWriterOptions::new()
            .with_properties(properties())
            .with_skip_arrow_metadata(true);
        let writer =
            ArrowWriter::try_new_with_options(out, file_schema(), options).map_err(to_io)?;
        Ok(Self {
            writer,
            builders: Builders::new(),
            rows: 0,
        })
    }

    /// Appends one record.
    pub fn push(&mut self, record: &EncodedRecord) -> io::Result<()> {
        self.builders.append(record);
        self.rows += 1;
        if self.builders.rows == BATCH_ROWS {
            self.write_batch()?;
        }
        Ok(())
    }

    /// Records appended so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn write_batch(&mut self) -> io::Result<()> {
        let batch = RecordBatch::try_new(file_schema(), self.builders.finish())
            .map_err(io::Error::other)?;
        self.writer.write(&batch).map_err(to_io)
    }

    /// Writes what is buffered and the file footer; gives back the output and the number
    /// of records.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        if self.builders.rows > 0 {
            self.write_batch()?;
        }
        let out = self.writer.into_inner().map_err(to_io)?;
        Ok((out, self.rows))
    }
}
