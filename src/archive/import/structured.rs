//! Structured inputs (a ZIP log, a JSON document, a run folder): the file is copied
//! whole into the archive first, then read from that copy as its format lays it out,
//! header first, then item by item, each normalized and handed on in file order.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::{Map, Value};

use super::sink::{Normalized, Place, Refusal, Seen};
use super::{FileImport, FileOutcome, ImportReport};
use crate::adapters::{self, ImportContext};
use crate::archive::ArchiveError;
use crate::archive::artifacts::contract::BankIndex;
use crate::archive::records::RecordsWriter;
use crate::durable::{NewFile, io_at};
use crate::jsonl::{self, NonFinitePolicy};
use crate::record::{DigestMap, Locator};

impl FileImport<'_, '_> {
    /// A structured file (a ZIP log, a JSON document): copied whole to its raw file
    /// first, then read from that copy, so every locator points into the archived bytes.
    pub(super) fn items(
        &self,
        structured: &adapters::Structured,
        source: File,
        companions: Vec<(String, File, u64)>,
        roles: &[(&'static str, String)],
        seen: &mut DigestMap<Seen>,
        report: &mut ImportReport,
    ) -> Result<FileOutcome, ArchiveError> {
        let raw_path = self.transaction.path(&self.plan.raw_rel);
        let records_path = self.transaction.path(&self.plan.records_rel);
        let mut copied = Vec::new();
        for (name, file, _) in companions {
            let digest = self.copy_whole(file, &raw_path.with_file_name(&name))?;
            copied.push((name, digest));
        }
        let raw_digest = self.copy_whole(source, &raw_path)?;
        let mut records = NewFile::create(&records_path)?;
        let import_context = self.import_context();
        let mut sink = self.sink(seen);
        let mut count = 0;
        let mut producer = None;
        if !self.source_refused(&sink, report) {
            let mut writer =
                RecordsWriter::new(records.writer()).map_err(io_at("writing", &records_path))?;
            let read = structured_items(
                structured,
                &raw_path,
                roles,
                &import_context,
                self.bank,
                |normalized| {
                    if let Some(records) = sink.take(normalized, report) {
                        writer
                            .write(&records)
                            .map_err(io_at("writing", &records_path))?;
                        sink.wrote();
                    }
                    Ok(())
                },
            )?;
            match read {
                Ok(facts) => producer = Some(facts),
                Err((message, hint)) => sink.reject(report, None, None, None, message, hint),
            }
            count = writer.finish().map_err(io_at("writing", &records_path))?.1;
        }
        let mut outcome = self.finish(sink, raw_digest, records, count, report)?;
        outcome.producer = producer;
        outcome.companions = copied;
        Ok(outcome)
    }
}

/// The largest item of a structured file (a ZIP member, a document element): the same
/// bound as a JSON Lines line.
const MAX_ITEM_BYTES: usize = jsonl::MAX_LINE_BYTES;

/// Hands every item of a JSON document, with its pointer, to `item`.
fn document_items<R: BufRead>(
    reader: R,
    items: crate::inputs::document::Items<'_>,
    mut item: impl FnMut(&[u8], Locator) -> Result<(), ArchiveError>,
) -> Result<(), crate::inputs::document::DocumentError<ArchiveError>> {
    use crate::inputs::document::{self, Part};
    document::read(
        reader,
        items,
        &|_| false,
        MAX_ITEM_BYTES,
        |part| match part {
            Part::Item { index, value } => item(value, Locator::Pointer(items.pointer(index))),
            Part::Member { .. } => Ok(()),
        },
    )
}

/// The largest header file of a folder input (a HELM run's `per_instance_stats.json`,
/// an OpenCompass results file: read whole because every item is joined with it).
const MAX_HEADER_FILE_BYTES: u64 = 1 << 30;

/// A whole file, refused when larger than `limit`: `Ok(problem)` for a file too large,
/// `Err` for a failed read.
fn read_whole(path: &Path, limit: u64) -> Result<Vec<u8>, Result<FileProblem, ArchiveError>> {
    let file = File::open(path).map_err(|e| Err(io_at("reading", path)(e).into()))?;
    let size = file
        .metadata()
        .map_err(|e| Err(io_at("reading", path)(e).into()))?
        .len();
    if size > limit {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        return Err(Ok((
            format!("{name} is {size} bytes, more than the {limit} babel reads whole"),
            None,
        )));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| Err(io_at("reading", path)(e).into()))?;
    Ok(bytes)
}

/// A problem of a whole structured file: the message and a hint.
type FileProblem = (String, Option<String>);

/// What an adapter found wrong with a file's header, naming the field.
fn header_problem(error: adapters::AdapterError) -> FileProblem {
    let message = if error.path.is_root() {
        error.message
    } else {
        format!("field {}: {}", error.path, error.message)
    };
    (message, error.hint)
}

/// Streams the [`adapters::Indexed`] file at `path` into its index, one element of its
/// array at a time; `Ok(Ok(None))` when the folder has no such file. A problem names the
/// file and the element (`per_instance_stats.json#/12`).
fn read_index(
    indexed: &adapters::Indexed,
    path: &Path,
) -> Result<Result<Option<Box<dyn std::any::Any + Send + Sync>>, FileProblem>, ArchiveError> {
    use crate::inputs::document::{DocumentError, Items};
    if !path.is_file() {
        return Ok(Ok(None));
    }
    let mut index = (indexed.new)();
    let mut problem: Option<FileProblem> = None;
    let file = File::open(path).map_err(io_at("reading", path))?;
    let reader = BufReader::with_capacity(256 * 1024, file);
    let read = document_items(reader, Items::TopLevel, |bytes, locator| {
        if problem.is_some() {
            return Ok(());
        }
        let Locator::Pointer(pointer) = &locator else {
            unreachable!("a document's items are located by pointer")
        };
        let at = format!("{}#{pointer}", indexed.file);
        let item = match jsonl::parse_bytes(bytes, 1, NonFinitePolicy::Null) {
            Ok(parsed) => adapters::Item {
                object: parsed.object,
                replaced: parsed.replaced,
                locator,
            },
            Err(error) => {
                let field = (!error.path.is_root()).then(|| format!(": field {}", error.path));
                problem = Some((
                    format!("{at}{}: {}", field.unwrap_or_default(), error.message()),
                    None,
                ));
                return Ok(());
            }
        };
        if let Err(error) = (indexed.add)(index.as_mut(), item) {
            let field = (!error.path.is_root()).then(|| format!(": field {}", error.path));
            problem = Some((
                format!("{at}{}: {}", field.unwrap_or_default(), error.message),
                error.hint,
            ));
        }
        Ok(())
    });
    match read {
        Ok(()) => Ok(problem.map_or(Ok(Some(index)), Err)),
        Err(DocumentError::Visit(error)) => Err(error),
        Err(DocumentError::Io(error)) => Err(io_at("reading", path)(error).into()),
        Err(other) => Ok(Err((
            format!("{}: not the JSON array babel reads ({other})", indexed.file),
            None,
        ))),
    }
}

/// Hands a header with no index to the adapter.
fn begin_without_index(
    structured: &adapters::Structured,
    members: Map<String, Value>,
    context: &ImportContext<'_>,
) -> Result<adapters::Begun, FileProblem> {
    (structured.begin)(
        adapters::Header {
            members,
            index: None,
        },
        context,
    )
    .map_err(header_problem)
}

/// A header file of a [`adapters::Layout::Rows`] unit parsed: a `.jsonl` file (a dataset)
/// as the array of its lines, any other as one JSON value.
fn header_file_value(bytes: &[u8], name: &str) -> Result<Value, FileProblem> {
    if !name.ends_with(".jsonl") {
        let mut wrapped = b"{\"v\":".to_vec();
        wrapped.extend_from_slice(bytes);
        wrapped.push(b'}');
        return jsonl::parse_bytes(&wrapped, 1, NonFinitePolicy::Null)
            .map(|mut line| line.object.shift_remove("v").unwrap_or_default())
            .map_err(|e| (format!("{name}: {}", e.message()), None));
    }
    let mut lines = Vec::new();
    for (number, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = jsonl::parse_bytes(line, number as u64 + 1, NonFinitePolicy::Null)
            .map_err(|e| (format!("{name}: {e}"), None))?;
        lines.push(Value::Object(parsed.object));
    }
    Ok(Value::Array(lines))
}

/// A member of a JSON object as an item located by `/<key>`: its value must be an object.
fn member_item(key: &str, value: &[u8]) -> Result<adapters::Item, Refusal> {
    let locator = Locator::Pointer(format!("/{}", crate::inputs::document::escape_pointer(key)));
    if value.trim_ascii_start().starts_with(b"{") {
        return parse_item(value, locator);
    }
    let found = header_file_value(value, "").map_or_else(
        |_| "not JSON".to_owned(),
        |v| crate::record::fields::describe(&v),
    );
    Err(Refusal {
        place: Place::of(&locator),
        column: None,
        field: None,
        message: format!("member {key:?} is {found}, not an object"),
        hint: None,
    })
}

/// An item's JSON text parsed, or why it is refused.
fn parse_item(bytes: &[u8], locator: Locator) -> Result<adapters::Item, Refusal> {
    match jsonl::parse_bytes(bytes, 1, NonFinitePolicy::Null) {
        Ok(parsed) => Ok(adapters::Item {
            object: parsed.object,
            replaced: parsed.replaced,
            locator,
        }),
        Err(error) => Err(Refusal {
            place: Place::of(&locator),
            column: None,
            field: (!error.path.is_root()).then(|| error.path.to_string()),
            message: error.message(),
            hint: None,
        }),
    }
}

/// Reads the archived structured file at `raw` as `structured` lays it out: its header
/// first (a second pass over a document, so the header may come after the items), then
/// every item, normalized and handed to `take` in file order. Returns the producer's
/// facts, or the problem that stopped the file (after the items before it were handed
/// out).
fn structured_items(
    structured: &adapters::Structured,
    raw: &Path,
    roles: &[(&'static str, String)],
    context: &ImportContext<'_>,
    bank: Option<&BankIndex>,
    mut take: impl FnMut(Normalized) -> Result<(), ArchiveError>,
) -> Result<Result<Map<String, Value>, FileProblem>, ArchiveError> {
    use crate::inputs::document::{self, DocumentError, Part};
    use crate::inputs::zip::ZipInput;
    let layout = match (structured.layout)(context.source.basename) {
        Ok(layout) => layout,
        Err(message) => return Ok(Err((message, None))),
    };
    let parse_value = |bytes: &[u8], what: &str| -> Result<Value, FileProblem> {
        let mut wrapped = b"{\"v\":".to_vec();
        wrapped.extend_from_slice(bytes);
        wrapped.push(b'}');
        jsonl::parse_bytes(&wrapped, 1, NonFinitePolicy::Null)
            .map(|mut line| line.object.shift_remove("v").unwrap_or_default())
            .map_err(|e| (format!("{what}: {}", e.message()), None))
    };
    let mut normalize_item = |item: Result<adapters::Item, Refusal>,
                              begun: &adapters::Begun|
     -> Result<(), ArchiveError> {
        let mut out = Normalized::default();
        let item = match item {
            Ok(item) => item,
            Err(refusal) => {
                out.refuse(refusal);
                return take(out);
            }
        };
        let place = Place::of(&item.locator);
        let replaced = item.replaced.clone();
        let mut records = Vec::new();
        match (structured.normalize)(begun, item, context, &mut records) {
            Err(error) => out.refuse(Refusal::of_adapter(place, error)),
            Ok(()) => {
                let note = |r: &jsonl::NonFiniteReplacement| {
                    format!(
                        "non-finite number {} at {} was read as null",
                        r.token, r.path
                    )
                };
                for record in records {
                    out.finish_tree_record(record, &replaced, &note, bank, context, place.clone());
                }
            }
        }
        take(out)
    };
    let shape = |error: DocumentError<ArchiveError>| match error {
        DocumentError::Visit(error) => Err(error),
        DocumentError::Io(error) => Err(io_at("reading", raw)(error).into()),
        other => Ok((
            format!("not the JSON document the format reads: {other}"),
            None,
        )),
    };
    let mut header = Map::new();
    match layout {
        adapters::Layout::Zip {
            header: wanted,
            item,
        } => {
            let mut zip = match ZipInput::open(raw) {
                Ok(zip) => zip,
                Err(error) => return Ok(Err((error.to_string(), None))),
            };
            let names = match zip.names() {
                Ok(names) => names,
                Err(error) => return Ok(Err((error.to_string(), None))),
            };
            for name in wanted.iter().filter(|w| names.iter().any(|n| n == *w)) {
                let value = zip
                    .read(name, MAX_ITEM_BYTES as u64)
                    .map_err(|e| (e.to_string(), None))
                    .and_then(|bytes| parse_value(&bytes, name));
                match value {
                    Ok(value) => header.insert((*name).to_owned(), value),
                    Err(problem) => return Ok(Err(problem)),
                };
            }
            let begun = match begin_without_index(structured, std::mem::take(&mut header), context)
            {
                Ok(begun) => begun,
                Err(problem) => return Ok(Err(problem)),
            };
            for name in names.iter().filter(|n| item(n)) {
                let bytes = match zip.read(name, MAX_ITEM_BYTES as u64) {
                    Ok(bytes) => bytes,
                    Err(error) => return Ok(Err((error.to_string(), None))),
                };
                normalize_item(parse_item(&bytes, Locator::Member(name.clone())), &begun)?;
            }
            Ok(Ok(begun.producer))
        }
        adapters::Layout::Folder {
            header: wanted,
            items,
            indexed,
            ..
        } => {
            for name in wanted.iter() {
                let path = raw.with_file_name(name);
                if !path.is_file() {
                    continue;
                }
                let value = read_whole(&path, MAX_HEADER_FILE_BYTES)
                    .and_then(|bytes| parse_value(&bytes, name).map_err(Ok));
                match value {
                    Ok(value) => header.insert((*name).to_owned(), value),
                    Err(Ok(problem)) => return Ok(Err(problem)),
                    Err(Err(error)) => return Err(error),
                };
            }
            let index = match indexed {
                Some(indexed) => match read_index(&indexed, &raw.with_file_name(indexed.file))? {
                    Ok(index) => index,
                    Err(problem) => return Ok(Err(problem)),
                },
                None => None,
            };
            let header = adapters::Header {
                members: header,
                index,
            };
            let begun = match (structured.begin)(header, context) {
                Ok(begun) => begun,
                Err(error) => return Ok(Err(header_problem(error))),
            };
            let file = File::open(raw).map_err(io_at("reading", raw))?;
            let reader = BufReader::with_capacity(256 * 1024, file);
            match document_items(reader, items, |item, locator| {
                normalize_item(parse_item(item, locator), &begun)
            }) {
                Ok(()) => Ok(Ok(begun.producer)),
                Err(error) => shape(error).map(Err),
            }
        }
        adapters::Layout::Rows(rows) => {
            for (role, stored) in roles {
                let path = raw.with_file_name(stored);
                let value = read_whole(&path, MAX_HEADER_FILE_BYTES)
                    .and_then(|bytes| header_file_value(&bytes, stored).map_err(Ok));
                match value {
                    Ok(value) => header.insert((*role).to_owned(), value),
                    Err(Ok(problem)) => return Ok(Err(problem)),
                    Err(Err(error)) => return Err(error),
                };
            }
            let begun = match begin_without_index(structured, std::mem::take(&mut header), context)
            {
                Ok(begun) => begun,
                Err(problem) => return Ok(Err(problem)),
            };
            match rows {
                adapters::Rows::Parquet => {
                    use crate::inputs::parquet::{ParquetInputError, Row, read_rows};
                    let file = File::open(raw).map_err(io_at("reading", raw))?;
                    let read = read_rows(file, |row, Row { object, replaced }| {
                        let locator = Locator::Pointer(format!("/{row}"));
                        normalize_item(
                            Ok(adapters::Item {
                                object,
                                replaced,
                                locator,
                            }),
                            &begun,
                        )
                    });
                    match read {
                        Ok(()) => Ok(Ok(begun.producer)),
                        Err(ParquetInputError::Visit(error)) => Err(error),
                        Err(other) => Ok(Err((other.to_string(), None))),
                    }
                }
                adapters::Rows::Members => {
                    // Streamed a member at a time: memory holds one item, and a NaN read as
                    // null costs a re-parse of that item only.
                    let file = File::open(raw).map_err(io_at("reading", raw))?;
                    let reader = BufReader::with_capacity(256 * 1024, file);
                    let read = document::read(
                        reader,
                        document::Items::Nothing,
                        &|_| true,
                        MAX_ITEM_BYTES,
                        |part| match part {
                            Part::Member { key, value } => {
                                normalize_item(member_item(key, value), &begun)
                            }
                            Part::Item { .. } => Ok(()),
                        },
                    );
                    match read {
                        Ok(()) => Ok(Ok(begun.producer)),
                        Err(error) => shape(error).map(Err),
                    }
                }
            }
        }
        adapters::Layout::Document {
            header: wanted,
            items,
        } => {
            let open = || -> Result<BufReader<File>, ArchiveError> {
                Ok(BufReader::with_capacity(
                    256 * 1024,
                    File::open(raw).map_err(io_at("reading", raw))?,
                ))
            };
            let mut problem = None;
            // The header pass skips the items' bytes; the second pass reads them.
            let first = document::read_members(
                open()?,
                items,
                &|key| wanted.contains(&key),
                MAX_ITEM_BYTES,
                |part| {
                    if let Part::Member { key, value } = part {
                        match parse_value(value, key) {
                            Ok(value) => {
                                header.insert(key.to_owned(), value);
                            }
                            Err(found) => problem = Some(found),
                        }
                    }
                    Ok::<(), ArchiveError>(())
                },
            );
            if let Err(error) = first {
                return shape(error).map(Err);
            }
            if let Some(problem) = problem {
                return Ok(Err(problem));
            }
            let begun = match begin_without_index(structured, std::mem::take(&mut header), context)
            {
                Ok(begun) => begun,
                Err(problem) => return Ok(Err(problem)),
            };
            let second = document_items(open()?, items, |item, locator| {
                normalize_item(parse_item(item, locator), &begun)
            });
            match second {
                Ok(()) => Ok(Ok(begun.producer)),
                Err(error) => shape(error).map(Err),
            }
        }
    }
}
