//! What every adapter target checks: input bytes, split into lines and read strictly, go
//! through the adapter; nothing panics, and every record it returns encodes into a records
//! file that reads back as the same record (compared as canonical JSON, the form stored).

use babel::canonical_json::to_canonical_bytes;
use babel::adapters::{AdapterOptions, Format, ImportContext, Reader, RunContext, SourceFile};
use babel::archive::records::{Columns, EncodedRecord, RecordsFile, RecordsWriter};
use babel::jsonl::{self, NonFinitePolicy};
use babel::record::Record;
use std::io::{Seek, Write};

/// At most this many lines per input, so one run stays fast.
const MAX_LINES: usize = 64;

pub fn run(format: Format, basename: &str, data: &[u8]) {
    let run = RunContext {
        run_id: "r".into(),
        model: "m".into(),
        benchmark: None,
        correctness_metric: None,
        shared_answer_key: data.first().is_some_and(|b| b & 1 == 1),
        strict: false,
    };
    let options = AdapterOptions::default();
    let context = ImportContext {
        run: &run,
        options: &options,
        source: SourceFile {
            raw_path: "runs/r/raw/0001-input.jsonl",
            basename,
        },
    };
    let adapter = format.adapter();
    let Reader::Lines(normalize) = adapter.reader else {
        panic!("the line targets fuzz JSON Lines formats only");
    };
    if (adapter.check_source)(&context).is_err() {
        return;
    }
    let mut records: Vec<Record> = Vec::new();
    for (index, line) in data.split(|&b| b == b'\n').take(MAX_LINES).enumerate() {
        if jsonl::is_blank(line) {
            continue;
        }
        let Ok(parsed) = jsonl::parse_bytes(line, index as u64 + 1, NonFinitePolicy::Null) else {
            continue;
        };
        let _ = normalize(parsed, &context, &mut records);
    }
    round_trip(records);
}

fn round_trip(records: Vec<Record>) {
    if records.is_empty() {
        return;
    }
    let mut writer = RecordsWriter::new(Vec::new()).expect("a writer in memory");
    let mut kept = Vec::new();
    for record in records {
        // A record whose values have no canonical form is refused at import; not a bug.
        let Ok(encoded) = EncodedRecord::encode(record.clone()) else {
            continue;
        };
        writer.push(&encoded).expect("pushing a record");
        kept.push(record);
    }
    let (bytes, rows) = writer.finish().expect("finishing the file");
    assert_eq!(rows, kept.len() as u64);
    let mut file = tempfile::tempfile().expect("a temporary file");
    file.write_all(&bytes).expect("writing");
    file.rewind().expect("rewinding");
    let read = RecordsFile::open(file).expect("a file babel wrote opens");
    let mut row = 0;
    for batch in read.batches(Columns::ALL).expect("batches") {
        let batch = batch.expect("a batch babel wrote decodes");
        for index in 0..batch.len() {
            let back = batch.record(index, true).expect("a row babel wrote reads");
            // Stored values are canonical (keys sorted, -3.0 as -3): compare canonically.
            let canonical = |r: &Record| to_canonical_bytes(r).expect("it encoded once");
            assert_eq!(
                canonical(&back),
                canonical(&kept[row]),
                "row {row} reads back differently"
            );
            row += 1;
        }
    }
    assert_eq!(row, kept.len());
}
