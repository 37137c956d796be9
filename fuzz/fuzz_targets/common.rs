//! What every adapter target checks: input bytes, split into lines and read strictly, go
//! through the adapter; nothing panics, and every record it returns encodes into a records
//! file that reads back as the same record (compared as canonical JSON, the form stored).

use babel::adapters::{
    AdapterOptions, Format, Header, ImportContext, JsonLine, Layout, MembersItem, Reader,
    RunContext, SourceFile,
};
use babel::archive::records::{Columns, EncodedBatch, RecordsFile, RecordsWriter};
use babel::canonical_json::to_canonical_bytes;
use babel::jsonl::{self, Members, NonFinitePolicy};
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
            folder: "",
        },
    };
    let adapter = format.adapter();
    if (adapter.check_source)(&context).is_err() {
        return;
    }
    // What the adapter made: the encoded batch, and each record as a tree to compare with.
    let mut batch = EncodedBatch::new();
    let mut kept: Vec<Record> = Vec::new();
    let mut members = Members::new();
    for (index, line) in data.split(|&b| b == b'\n').take(MAX_LINES).enumerate() {
        if jsonl::is_blank(line) {
            continue;
        }
        let number = index as u64 + 1;
        match &adapter.reader {
            Reader::Lines(normalize) => {
                if jsonl::scan_bytes(line, number, NonFinitePolicy::Null, &mut members).is_err() {
                    continue;
                }
                let mut records = Vec::new();
                let line = JsonLine {
                    number,
                    members: &members,
                };
                let _ = normalize(line, &context, &mut records);
                for record in records {
                    batch.push(&record);
                    kept.push(record.to_record());
                }
            }
            Reader::Items(_) => panic!("the line targets fuzz JSON Lines formats only"),
        }
    }
    round_trip(batch, kept);
}

/// A structured format's items (lighteval, OpenCompass): the first line is its results
/// file, each later line an item; nothing panics and every record round-trips.
pub fn run_items(format: Format, basename: &str, data: &[u8]) {
    let Some((results, lines)) = header_line(data) else {
        return;
    };
    let mut members = serde_json::Map::new();
    members.insert("results".into(), serde_json::Value::Object(results.object));
    let header = Header {
        members,
        index: None,
    };
    structured_items(format, basename, header, lines);
}

/// A log or a run folder (Inspect, HELM): the first line holds the header's members as
/// the layout names them (`{"eval": ...}` or `{"header.json": ...}` for an Inspect log,
/// `{"run_spec.json": ..., "scenario.json": ...}` for a HELM run); a later line with an
/// `instance_id` is an element of the layout's indexed file (HELM's per-instance stats),
/// any other line an item. Nothing panics and every record round-trips.
pub fn run_log(format: Format, basename: &str, data: &[u8]) {
    let Reader::Items(structured) = &format.adapter().reader else {
        panic!("run_log fuzzes structured formats only");
    };
    let indexed = match (structured.layout)(basename) {
        Ok(Layout::Folder { indexed, .. }) => indexed,
        Ok(_) => None,
        Err(_) => return,
    };
    let Some((first, lines)) = header_line(data) else {
        return;
    };
    let mut index = indexed.map(|indexed| (indexed.new)());
    let mut items = Vec::new();
    let mut members = Members::new();
    for (number, line) in lines.enumerate() {
        let line_number = number as u64 + 2;
        let scanned =
            jsonl::scan_bytes(line, line_number, NonFinitePolicy::Null, &mut members).is_ok();
        match (indexed, index.as_mut()) {
            (Some(indexed), Some(index))
                if scanned && members.get("instance_id").is_some() =>
            {
                // Index elements are read from their members, as the import reads them.
                // The archive refuses the whole run when an element is refused.
                let added = (indexed.read)(&members)
                    .and_then(|kept| (indexed.add)(index.as_mut(), kept));
                if added.is_err() {
                    return;
                }
            }
            _ => items.push(line),
        }
    }
    let header = Header {
        members: first.object,
        index,
    };
    structured_items(format, basename, header, items.into_iter());
}

/// The input's first line, parsed (`None` when it is no JSON object), and its next lines.
fn header_line(data: &[u8]) -> Option<(jsonl::Line, impl Iterator<Item = &[u8]>)> {
    let mut lines = data.split(|&b| b == b'\n');
    let header = jsonl::parse_bytes(lines.next()?, 1, NonFinitePolicy::Null).ok()?;
    Some((header, lines.take(MAX_LINES)))
}

/// Begins a structured import with `header` and normalizes each item (each line read as
/// the import reads items, as members; a line that is no JSON object is skipped); every
/// record must round-trip.
fn structured_items<'d>(
    format: Format,
    basename: &str,
    header: Header,
    items: impl Iterator<Item = &'d [u8]>,
) {
    let run = RunContext {
        run_id: "r".into(),
        model: "m".into(),
        benchmark: None,
        correctness_metric: None,
        shared_answer_key: false,
        strict: false,
    };
    let options = AdapterOptions {
        allow_other_model: true,
        ..AdapterOptions::default()
    };
    let context = ImportContext {
        run: &run,
        options: &options,
        source: SourceFile {
            raw_path: "runs/r/raw/0001-input/input",
            basename,
            folder: "m",
        },
    };
    let Reader::Items(structured) = &format.adapter().reader else {
        panic!("structured_items fuzzes structured formats only");
    };
    let Ok(begun) = (structured.begin)(header, &context) else {
        return;
    };
    let mut batch = EncodedBatch::new();
    let mut kept: Vec<Record> = Vec::new();
    let mut members = Members::new();
    for (index, line) in items.enumerate() {
        let locator = babel::record::Locator::Pointer(format!("/{index}"));
        if jsonl::scan_bytes(line, 1, NonFinitePolicy::Null, &mut members).is_err() {
            continue;
        }
        let item = MembersItem {
            members: &members,
            locator: &locator,
        };
        let mut records = Vec::new();
        let _ = (structured.normalize)(&begun, item, &context, &mut records);
        for record in records {
            batch.push(&record);
            kept.push(record.to_record());
        }
    }
    round_trip(batch, kept);
}

fn round_trip(batch: EncodedBatch, kept: Vec<Record>) {
    if kept.is_empty() {
        return;
    }
    let mut writer = RecordsWriter::new(Vec::new()).expect("a writer in memory");
    writer.write(batch).expect("writing the records");
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
            let back = batch.record(index).expect("a row babel wrote reads");
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
