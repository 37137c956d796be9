//! Structured inputs (a ZIP log, a JSON document, a run folder): the file is copied
//! whole into the archive first (a document's header members read from its bytes as they
//! are copied), then read from that copy as its format lays it out, header first, then
//! item by item. Items are copied off the reader in batches, read and normalized on
//! worker threads, taken in file order by the sink, and their records encoded and
//! compressed on a writer thread (JSON Lines inputs do all three on one thread per core:
//! `parallel::run_ordered`). Every item is read into its members, as a line is: an item
//! of JSON text by the streaming reader, a Parquet row column by column ([`RowAt::read`]).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use super::identities::Identities;
use super::memory;
use super::sink::{Normalized, Place, Refusal};
use super::{Companion, FileImport, FileOutcome, ImportReport};
use crate::adapters::{self, ImportContext, Layout};
use crate::archive::ArchiveError;
use crate::archive::artifacts::contract::BankIndex;
use crate::archive::records::ThreadedWriter;
use crate::durable::{Copied, NewFile, io_at};
use crate::inputs::document::{ArrayItems, Items, SpannedItems, Spans};
use crate::inputs::parquet::RowAt;
use crate::inputs::zip::Packed;
use crate::inputs::{Content, HeaderVisit, Item, Shape, ShapeError, Stop};
use crate::jsonl::{self, FieldPath, NonFinitePolicy, PathSegment};
use crate::parallel;
use crate::record::Locator;

impl FileImport<'_, '_> {
    /// A structured file (a ZIP log, a JSON document): copied whole to its raw file
    /// first, then read from that copy, so every locator points into the archived bytes.
    pub(super) fn items(
        &self,
        structured: &adapters::Structured,
        source: (File, &Path),
        companions: Vec<Companion>,
        roles: &[(&'static str, String)],
        seen: &mut Identities,
        report: &mut ImportReport,
    ) -> Result<FileOutcome, ArchiveError> {
        let raw_path = self.transaction.path(&self.plan.raw_rel);
        let records_path = self.transaction.path(&self.plan.records_rel);
        let mut copied = Vec::new();
        for Companion {
            stored, path, file, ..
        } in companions
        {
            let to = raw_path.with_file_name(&stored);
            let (digest, ()) = self.copy_whole((file, &path), &to, drop)?;
            copied.push((stored, digest));
        }
        // A document's header members are read from its bytes as they are copied.
        let (raw_digest, header) = match (structured.layout)(self.plan.given_name) {
            Ok(Layout::Document { header, items }) => {
                let (digest, header) = self.copy_whole(source, &raw_path, |copied| {
                    document_header(copied, items, header, &raw_path)
                })?;
                (digest, header?)
            }
            _ => (
                self.copy_whole(source, &raw_path, drop)?.0,
                HeaderFrom::Archived { roles },
            ),
        };
        // The second pass, over the items, counts as many bytes as the copy did.
        let copied_bytes = raw_digest.bytes + copied.iter().map(|(_, d)| d.bytes).sum::<u64>();
        let mut progress = ItemProgress {
            progress: self.progress,
            left: copied_bytes,
            pending: 0,
        };
        let mut records = NewFile::create(&records_path)?;
        let import_context = self.import_context();
        let mut sink = self.sink(seen);
        let mut count = 0;
        let mut producer = None;
        let rejected_before = report.rejected_total;
        if !self.source_refused(&sink, report) {
            let (read, written) = std::thread::scope(|scope| {
                let mut writer = ThreadedWriter::spawn(scope, records.writer());
                let read = structured_items(
                    structured,
                    &raw_path,
                    header,
                    &import_context,
                    self.bank,
                    &mut progress,
                    |normalized| {
                        if let Some(records) = sink.take(normalized, report) {
                            writer
                                .write(records)
                                .map_err(io_at("writing", &records_path))?;
                            sink.wrote();
                        }
                        Ok(())
                    },
                );
                (read, writer.finish())
            });
            // A failed write stops the writer thread: its own error is the one to report.
            count = written.map_err(io_at("writing", &records_path))?;
            // The check of the whole file means something only when every item made its
            // records: an item refused for its own problem is not also a file problem.
            let whole = read?.and_then(|begun| match structured.finish {
                Some(finish) if report.rejected_total == rejected_before => {
                    finish(&begun).map_err(header_problem).map(|()| begun)
                }
                _ => Ok(begun),
            });
            match whole {
                Ok(begun) => producer = Some(begun.producer),
                Err((message, hint)) => sink.reject(report, None, None, None, message, hint),
            }
        }
        progress.finish();
        let mut outcome = self.finish(sink, raw_digest, records, count, report)?;
        outcome.producer = producer;
        outcome.companions = copied;
        Ok(outcome)
    }
}

/// The most bytes of header files an import reads whole, all of them together (a HELM
/// run's `run_spec.json`, an OpenCompass results file: read whole because every item is
/// joined with them).
const MAX_HEADER_FILE_BYTES: u64 = 1 << 30;

/// How many times its size a header file may take in memory once parsed into a tree: an
/// OpenCompass results file of numbers takes 28 (RELIABILITY.md).
const TREE_BYTES_PER_BYTE: u64 = 32;

/// How many bytes of header files one import reads whole: at most
/// [`MAX_HEADER_FILE_BYTES`], and no more than `available` memory (`None`: unknown)
/// holds once they are trees.
fn header_budget(available: Option<u64>) -> u64 {
    available.map_or(MAX_HEADER_FILE_BYTES, |bytes| {
        (bytes / TREE_BYTES_PER_BYTE).min(MAX_HEADER_FILE_BYTES)
    })
}

/// A whole header file, refused when larger than `limit` (what is left of the
/// [`header_budget`] of `budget` bytes): `Ok(problem)` for a file too large, `Err` for a
/// failed read.
fn read_whole(
    path: &Path,
    limit: u64,
    budget: u64,
) -> Result<Vec<u8>, Result<FileProblem, ArchiveError>> {
    let file = File::open(path).map_err(|e| Err(io_at("reading", path)(e).into()))?;
    let size = file
        .metadata()
        .map_err(|e| Err(io_at("reading", path)(e).into()))?
        .len();
    let name = || {
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if size > limit {
        return Err(Ok(too_large(&name(), size, limit, budget)));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    // A file that grew since its size was read is refused, not cut short.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Err(io_at("reading", path)(e).into()))?;
    if bytes.len() as u64 > limit {
        return Err(Ok(too_large(&name(), bytes.len() as u64, limit, budget)));
    }
    Ok(bytes)
}

/// Why a header file of `size` bytes is not read, with `limit` bytes left of a budget
/// of `budget`.
fn too_large(name: &str, size: u64, limit: u64, budget: u64) -> FileProblem {
    let message = match limit == budget {
        true => format!("{name} is {size} bytes, more than the {limit} babel reads whole here"),
        false => format!(
            "{name} is {size} bytes, more than the {limit} babel reads whole here beside the files before it"
        ),
    };
    let why = format!(
        "babel holds a run's header files in memory as trees of up to {TREE_BYTES_PER_BYTE} times their size"
    );
    let hint = match budget == MAX_HEADER_FILE_BYTES {
        true => format!("{why}, so it reads at most 1 GiB of them; split the run's output"),
        false => format!(
            "{why}, so it reads no more than 1/{TREE_BYTES_PER_BYTE} of the memory available ({budget} bytes of files now): free memory, or import on a machine with more"
        ),
    };
    (message, Some(hint))
}

/// A problem of a whole structured file: the message and a hint.
type FileProblem = (String, Option<String>);

/// What a file read through a [`Shape`] came to: read whole, stopped by its visitor for
/// the problem of the file it kept (`stop`), a failed read, or a file of another shape.
fn settle(
    read: Result<(), ShapeError>,
    raw: &Path,
    stop: Option<FileProblem>,
) -> Result<Result<(), FileProblem>, ArchiveError> {
    match read {
        Ok(()) => Ok(Ok(())),
        Err(ShapeError::Stopped) => match stop {
            Some(problem) => Ok(Err(problem)),
            None => unreachable!("a shape stops only when its visitor does"),
        },
        Err(ShapeError::Io(error)) => Err(io_at("reading", raw)(error).into()),
        Err(ShapeError::Invalid(message)) => Ok(Err((message, None))),
    }
}

fn open(path: &Path) -> Result<File, ArchiveError> {
    Ok(File::open(path).map_err(io_at("reading", path))?)
}

/// What an adapter found wrong with a file's header, naming the field.
fn header_problem(error: adapters::AdapterError) -> FileProblem {
    let message = if error.path.is_root() {
        error.message
    } else {
        format!("field {}: {}", error.path, error.message)
    };
    (message, error.hint)
}

/// Streams the [`adapters::Indexed`] file at `path` into its index; `Ok(Ok(None))` when the
/// folder has no such file. A problem names the file and the element
/// (`per_instance_stats.json#/12`). Elements are scanned into their canonical members (the
/// streaming reader, no tree) and read in batches on the workers, and added to the index
/// in file order on this thread (done all here, a HELM run's `per_instance_stats.json`
/// kept one core busy and the other idle).
fn read_index(
    indexed: &adapters::Indexed,
    path: &Path,
) -> Result<Result<Option<Box<dyn std::any::Any + Send + Sync>>, FileProblem>, ArchiveError> {
    if !path.is_file() {
        return Ok(Ok(None));
    }
    let mut index = (indexed.new)();
    let shape = ArrayItems {
        items: Items::TopLevel,
    };
    let read = |batch: Batch| -> Vec<_> {
        let mut members = jsonl::Members::new();
        batch
            .items
            .into_iter()
            .map(|(locator, owned)| {
                let Owned::Json(bytes) = owned else {
                    unreachable!("an array's items are JSON text")
                };
                let at = format!("{}{}", indexed.file, locator.suffix());
                let kept = match jsonl::scan_bytes(&bytes, 1, NonFinitePolicy::Null, &mut members) {
                    Ok(()) => (indexed.read)(&members)
                        .map_err(|error| (error.path, error.message, error.hint)),
                    Err(error) => Err((error.path.clone(), error.message(), None)),
                };
                (at, kept)
            })
            .collect()
    };
    let problem = |at: &str, (path, message, hint): (FieldPath, String, Option<String>)| {
        let field = (!path.is_root()).then(|| format!(": field {path}"));
        Halt::File((
            format!("{at}{}: {message}", field.unwrap_or_default()),
            hint,
        ))
    };
    let add = |elements: Vec<(String, Result<_, _>)>| {
        for (at, kept) in elements {
            let added = kept.and_then(|kept| {
                (indexed.add)(index.as_mut(), kept)
                    .map_err(|error| (error.path, error.message, error.hint))
            });
            added.map_err(|error| problem(&at, error))?;
        }
        Ok(())
    };
    // Nothing is counted: an index is read before the items, whose pass counts the file.
    let read = match in_batches(&shape, path, read, add, |_| {})? {
        Ok(read) => read,
        Err(problem) => return Ok(Err(problem)),
    };
    let read = read.map_err(|error| match error {
        ShapeError::Invalid(message) => ShapeError::Invalid(format!("{}: {message}", indexed.file)),
        other => other,
    });
    Ok(settle(read, path, None)?.map(|()| Some(index)))
}

/// A JSON value of a header, parsed strictly (a byte order mark may open a file); a
/// problem names `what` (a file or member name). The value is read as the one member of
/// an object wrapped around it, so the strict reader's rules hold; text that closes the
/// wrapper and adds members of its own is not one value, and is refused.
fn parse_value(bytes: &[u8], what: &str) -> Result<Value, FileProblem> {
    let bytes = bytes.strip_prefix(jsonl::BOM).unwrap_or(bytes);
    const WRAPPER: &[u8] = b"{\"v\":";
    let mut wrapped = WRAPPER.to_vec();
    wrapped.extend_from_slice(bytes);
    wrapped.push(b'}');
    let mut line = jsonl::parse_bytes(&wrapped, 1, NonFinitePolicy::Null).map_err(|e| {
        // The path below the wrapper's member names the field in the file.
        let inside =
            e.path.segments().iter().skip(1).fold(
                FieldPath::root(),
                |path, segment| match segment {
                    PathSegment::Key(key) => path.key(key),
                    PathSegment::Index(index) => path.index(*index),
                },
            );
        let field = (!inside.is_root()).then(|| format!(" field {inside}:"));
        // Where in the file a syntax error is: where the strict reader stopped in the
        // wrapper, less the wrapper's opening (a file cut short stops at its end).
        let place = match &e.kind {
            jsonl::LineErrorKind::Syntax(_) => e
                .index
                .and_then(|index| index.checked_sub(WRAPPER.len()))
                .and_then(|index| jsonl::position_at(bytes, index))
                .map(|(line, column)| format!(" line {line}, column {column}:")),
            _ => None,
        };
        (
            format!(
                "{what}:{}{} {}",
                place.unwrap_or_default(),
                field.unwrap_or_default(),
                e.message()
            ),
            None,
        )
    })?;
    if line.object.len() != 1 {
        return Err((format!("{what}: not one JSON value"), None));
    }
    Ok(line.object.shift_remove("v").unwrap_or_default())
}

/// A header file of a folder input parsed: a `.jsonl` file (a dataset) as the array of
/// its lines, any other as one JSON value.
fn header_file_value(bytes: &[u8], name: &str) -> Result<Value, FileProblem> {
    if !name.ends_with(".jsonl") {
        return parse_value(bytes, name);
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

/// The header files beside the raw file, each `(key, stored name)`, parsed into
/// `members` (a missing one is absent), no more than `budget` bytes of them
/// ([`header_budget`]).
fn header_files<'n>(
    raw: &Path,
    files: impl Iterator<Item = (&'n str, &'n str)>,
    members: &mut Map<String, Value>,
    budget: u64,
) -> Result<Result<(), FileProblem>, ArchiveError> {
    let mut left = budget;
    for (key, stored) in files {
        let path = raw.with_file_name(stored);
        if !path.is_file() {
            continue;
        }
        let value = read_whole(&path, left, budget).and_then(|bytes| {
            left -= bytes.len() as u64;
            header_file_value(&bytes, stored).map_err(Ok)
        });
        match value {
            Ok(value) => members.insert(key.to_owned(), value),
            Err(Ok(problem)) => return Ok(Err(problem)),
            Err(Err(error)) => return Err(error),
        };
    }
    Ok(Ok(()))
}

/// Header members handed out by `read` (a shape reading them from the archived file at
/// `raw`, or from its bytes as they are copied), each parsed.
fn header_members(
    raw: &Path,
    read: impl FnOnce(&mut HeaderVisit) -> Result<(), ShapeError>,
) -> Result<Result<Map<String, Value>, FileProblem>, ArchiveError> {
    let mut members = Map::new();
    let mut stop = None;
    let read = read(&mut |name, bytes| {
        let value = parse_value(bytes, name).map_err(|problem| {
            stop = Some(problem);
            Stop
        })?;
        members.insert(name.to_owned(), value);
        Ok(())
    });
    Ok(settle(read, raw, stop)?.map(|()| members))
}

/// The header members of a JSON document, read from its bytes as they are copied to
/// `raw` (`copied`), so the document is not read once more for them alone; and where its
/// items are, so they are not scanned for again either.
fn document_header(
    copied: Copied,
    items: Items<'static>,
    wanted: &[&str],
    raw: &Path,
) -> Result<HeaderFrom<'static>, ArchiveError> {
    let mut spans = None;
    let members = header_members(raw, |visit| {
        let found = ArrayItems { items }.header_from(copied, wanted, visit)?;
        spans = found;
        Ok(())
    })?;
    let header = members.map(|members| adapters::Header {
        members,
        index: None,
    });
    Ok(HeaderFrom::Copied { header, spans })
}

/// Where the header of a structured file comes from.
enum HeaderFrom<'r> {
    /// A JSON document's members, read from its bytes as they were copied, and where its
    /// items are (unless there were too many to note).
    Copied {
        header: Result<adapters::Header, FileProblem>,
        spans: Option<Spans>,
    },
    /// The archived file, as its layout keeps it; a unit's header files have these
    /// roles.
    Archived { roles: &'r [(&'static str, String)] },
}

/// The header of the archived file at `raw` as `layout` keeps it: members inside the
/// file (a ZIP log), files beside it (a run folder, with its index), or a unit's header
/// files by role; a JSON document's was read as the file was copied (`from`).
fn read_header(
    layout: &Layout,
    shape: &dyn Shape,
    raw: &Path,
    from: HeaderFrom<'_>,
) -> Result<Result<adapters::Header, FileProblem>, ArchiveError> {
    let roles = match from {
        HeaderFrom::Copied { header, .. } => return Ok(header),
        HeaderFrom::Archived { roles } => roles,
    };
    let mut members = Map::new();
    let mut index = None;
    let read = match *layout {
        Layout::Zip { header, .. } => header_members(raw, |visit| {
            shape.header(File::open(raw).map_err(ShapeError::Io)?, header, visit)
        })?
        .map(|read| members = read),
        Layout::Document { .. } => {
            unreachable!("a document's header members are read as it is copied (items)")
        }
        Layout::Folder {
            header, indexed, ..
        } => match header_files(
            raw,
            header.iter().map(|n| (*n, *n)),
            &mut members,
            header_budget(memory::available()),
        )? {
            Ok(()) => match indexed {
                Some(indexed) => read_index(&indexed, &raw.with_file_name(indexed.file))?
                    .map(|found| index = found),
                None => Ok(()),
            },
            Err(problem) => Err(problem),
        },
        Layout::Rows(_) => {
            let files = roles.iter().map(|(role, stored)| (*role, stored.as_str()));
            header_files(raw, files, &mut members, header_budget(memory::available()))?
        }
    };
    Ok(read.map(|()| adapters::Header { members, index }))
}

/// An item's JSON text (of the top-level member `member` of an object whose members are
/// the items, when it is one) read into `members` by the streaming reader, or why it is
/// refused.
fn item_members(
    locator: &Locator,
    member: Option<&str>,
    bytes: &[u8],
    members: &mut jsonl::Members,
) -> Result<(), Refusal> {
    not_an_object(locator, member, bytes)?;
    let Err(error) = jsonl::scan_bytes(bytes, 1, NonFinitePolicy::Null, members) else {
        return Ok(());
    };
    // The tree reader fails where the streaming reader does, with the same error
    // (`stream_vs_tree`), and knows where in the item: an item may span lines. Only the
    // streaming reader's bound on the places it notes is its own.
    let error = jsonl::parse_bytes(bytes, 1, NonFinitePolicy::Null)
        .err()
        .unwrap_or(error);
    Err(item_refusal(locator, bytes, error))
}

/// The member `member` of an object whose members are the items is refused unless it is
/// an object.
fn not_an_object(locator: &Locator, member: Option<&str>, bytes: &[u8]) -> Result<(), Refusal> {
    match member {
        Some(key) if !bytes.trim_ascii_start().starts_with(b"{") => {
            let found = parse_value(bytes, "").map_or_else(
                |_| "not JSON".to_owned(),
                |v| crate::record::fields::describe(&v),
            );
            Err(Refusal {
                place: Place::of(locator),
                column: None,
                field: None,
                message: format!("member {key:?} is {found}, not an object"),
                hint: None,
            })
        }
        _ => Ok(()),
    }
}

/// The refusal of an item at `locator` whose JSON text `bytes` the reader refused: at the
/// line and column in the item where the reader stopped, when it says.
fn item_refusal(locator: &Locator, bytes: &[u8], error: jsonl::LineError) -> Refusal {
    Refusal {
        place: error.position_in(bytes).map_or_else(
            || Place::of(locator),
            |(line, column)| Place::within(locator, line, column),
        ),
        column: None,
        field: (!error.path.is_root()).then(|| error.path.to_string()),
        message: error.message(),
        hint: None,
    }
}

/// A batch of items normalized by the adapter (on a worker thread) into what the sink
/// takes: their records, finished, and their refusals, in item order.
fn normalize_batch(
    structured: &adapters::Structured,
    begun: &adapters::Begun,
    batch: Batch,
    context: &ImportContext<'_>,
    bank: Option<&BankIndex>,
) -> Worked {
    let mut out = Normalized::default();
    let mut members = jsonl::Members::new();
    for (locator, owned) in batch.items {
        let read = match owned {
            Owned::Json(bytes) => item_members(&locator, None, &bytes, &mut members),
            Owned::Member { key, value } => {
                item_members(&locator, Some(&key), &value, &mut members)
            }
            Owned::Packed(packed) => match packed.inflate() {
                Ok(bytes) => item_members(&locator, None, &bytes, &mut members),
                // The items before it are handed out, then the file is stopped.
                Err(error) => return (out, Some((error.to_string(), Some(DAMAGED_MEMBER.into())))),
            },
            Owned::Row(row) => match row.read(&mut members) {
                Ok(()) => Ok(()),
                // The items before it are handed out, then the file is stopped.
                Err(error) => return (out, Some((error, None))),
            },
        };
        if let Err(refusal) = read {
            out.refuse(refusal);
            continue;
        }
        let place = Place::of(&locator);
        let item = adapters::MembersItem {
            members: &members,
            locator: &locator,
        };
        let mut records = Vec::new();
        match (structured.normalize)(begun, item, context, &mut records) {
            Err(error) => out.refuse(Refusal::of_adapter(place, error)),
            Ok(()) => {
                for record in records {
                    let replaced = members.replaced();
                    out.finish_record(record, replaced, &item_note, bank, context, place.clone());
                }
            }
        }
    }
    (out, None)
}

/// Says how a non-finite token of an item was read.
fn item_note(replaced: &jsonl::NonFiniteReplacement) -> String {
    format!(
        "non-finite number {} at {} was read as null",
        replaced.token, replaced.path
    )
}

/// A batch is handed to a worker once it holds this many items or this many bytes: small
/// enough that both workers have one while the reader fills the next, large enough that
/// handing it over costs nothing beside parsing it.
const BATCH_ITEMS: usize = 64;
const BATCH_BYTES: usize = 1 << 20;
/// Batches out per worker at once, and their bytes. The reading thread of a ZIP log
/// reads members between batches and takes the results in order: with two out per
/// worker, workers and reader each slept a third of a 40,000-sample import waiting on one
/// another (`perf sched`, when the reader inflated them too); six took 8 % off it
/// (BENCHMARKS.md). The bytes keep six batches of long items (one item may be 64 MiB, a
/// ZIP member weighs its compressed bytes and its recorded size) from holding six times
/// what two did.
const IN_FLIGHT_PER_WORKER: usize = 6;
const IN_FLIGHT_BYTES_PER_WORKER: usize = 8 << 20;

/// What to do about a ZIP member that does not inflate to what the archive records.
const DAMAGED_MEMBER: &str = "the log file is damaged (cut short, or changed since it was written): \
     copy it again from where the evaluation wrote it, or run the evaluation again";

/// What a worker made of a batch: its items normalized, up to a problem of the file (a
/// ZIP member that does not inflate to what the archive records), which ends the file.
type Worked = (Normalized, Option<FileProblem>);

/// Why the items of a file stopped being taken: the archive's own failure, or a problem of
/// the file (a worker's, or the sink's: a repeated index entry).
enum Halt {
    Archive(ArchiveError),
    File(FileProblem),
}

impl From<ArchiveError> for Halt {
    fn from(error: ArchiveError) -> Self {
        Halt::Archive(error)
    }
}

/// Reads the items of the file at `path` as `shape` lays them out, in batches: each batch
/// goes to `work` on a worker thread, and the results to `take` in file order; `counted`
/// hears how many bytes of the file each item took. Returns how the reading ended, or the
/// problem of the file that `take` stopped at (the items before it taken).
fn in_batches<Out: Send>(
    shape: &dyn Shape,
    path: &Path,
    work: impl Fn(Batch) -> Out + Sync,
    take: impl FnMut(Out) -> Result<(), Halt>,
    mut counted: impl FnMut(usize),
) -> Result<Result<Result<(), ShapeError>, FileProblem>, ArchiveError> {
    let read = parallel::push_ordered(
        parallel::workers(),
        parallel::InFlight::batches(IN_FLIGHT_PER_WORKER)
            .bytes(IN_FLIGHT_BYTES_PER_WORKER, |batch: &Batch| batch.bytes),
        work,
        take,
        |push| {
            let mut batch = Batch::default();
            let read = shape.items(open(path)?, &mut |item| {
                let (full, read) = batch.add(item);
                counted(read);
                match full && !push(std::mem::take(&mut batch)) {
                    // The sink failed: its error is what push_ordered returns.
                    true => Err(Stop),
                    false => Ok(()),
                }
            });
            // The items before a problem of the file are handed out before it is reported.
            if !batch.items.is_empty() {
                push(batch);
            }
            Ok(read)
        },
    );
    match read {
        Ok(read) => Ok(Ok(read)),
        Err(Halt::Archive(error)) => Err(error),
        Err(Halt::File(problem)) => Ok(Err(problem)),
    }
}

/// Items of a structured file as its shape read them, their bytes copied off the
/// reader's buffers so a worker can parse and normalize them.
#[derive(Default)]
struct Batch {
    items: Vec<(Locator, Owned)>,
    bytes: usize,
}

/// An item's content, owned ([`Content`] borrows the reader's buffer).
enum Owned {
    Json(Vec<u8>),
    Member { key: String, value: Vec<u8> },
    Row(RowAt),
    Packed(Packed),
}

impl Batch {
    /// Adds an item: whether the batch is full, and how many bytes of the file it took (a
    /// ZIP member's compressed bytes, a Parquet row its JSON's; the batch weighs a member
    /// as it will be once inflated, a row with its share of its group's values).
    fn add(&mut self, item: Item<'_>) -> (bool, usize) {
        let owned = match item.content {
            Content::Json(bytes) => Owned::Json(bytes.to_vec()),
            Content::ReadJson(bytes) => Owned::Json(bytes),
            Content::Member { key, value } => Owned::Member {
                key: key.to_owned(),
                value: value.to_vec(),
            },
            Content::Row(row) => Owned::Row(row),
            Content::Packed(packed) => Owned::Packed(packed),
        };
        // What the item holds, what it took of the file, and, for a Parquet row, whether
        // it ends its group: a group shares one copy of its rows' values and is one batch,
        // so that the batch's weight is all the copy holds.
        let (weight, read, ends_group) = match &owned {
            Owned::Json(bytes) => (bytes.len(), bytes.len(), None),
            Owned::Member { key, value } => {
                (key.len() + value.len(), key.len() + value.len(), None)
            }
            Owned::Row(row) => (row.weight(), row.bytes(), Some(row.ends_group())),
            Owned::Packed(packed) => (packed.bytes(), packed.compressed_bytes(), None),
        };
        self.bytes += weight;
        self.items.push((item.locator, owned));
        let full =
            ends_group.unwrap_or(self.items.len() >= BATCH_ITEMS || self.bytes >= BATCH_BYTES);
        (full, read)
    }
}

/// Progress over a structured file's items: the bytes of the items read so far, at most as
/// many as the copy counted (a ZIP member counts its compressed bytes, a Parquet row the
/// size of its JSON, more than the file holds), the rest once the items end.
struct ItemProgress<'p> {
    progress: &'p dyn super::Progress,
    /// Bytes this pass may still count.
    left: u64,
    /// Bytes read and not yet counted (counted a mebibyte at a time).
    pending: u64,
}

impl ItemProgress<'_> {
    fn read(&mut self, bytes: usize) {
        self.pending += bytes as u64;
        if self.pending >= 1 << 20 {
            let counted = self.pending.min(self.left);
            self.progress.advance(counted);
            self.left -= counted;
            self.pending = 0;
        }
    }

    fn finish(self) {
        if self.left > 0 {
            self.progress.advance(self.left);
        }
    }
}

/// How the items of a file of `layout` are read: a document's at the `spans` its copy
/// noted, where it noted them; otherwise as the layout reads them.
fn items_shape(layout: &Layout, spans: Option<Spans>) -> Box<dyn Shape> {
    match (spans, layout) {
        (Some(spans), Layout::Document { items, .. }) => Box::new(SpannedItems {
            items: *items,
            spans,
        }),
        _ => layout.shape(),
    }
}

/// Reads the archived structured file at `raw` as `structured` lays it out: its header
/// first (`header`: a document's was read as it was copied, so its header members may
/// come after its items), then every item, normalized and handed to `take` in file
/// order. Returns what the adapter began with (its state and the producer's facts), or
/// the problem that stopped the file (after the items before it were handed out).
fn structured_items(
    structured: &adapters::Structured,
    raw: &Path,
    mut header: HeaderFrom<'_>,
    context: &ImportContext<'_>,
    bank: Option<&BankIndex>,
    progress: &mut ItemProgress<'_>,
    mut take: impl FnMut(Normalized) -> Result<(), ArchiveError>,
) -> Result<Result<adapters::Begun, FileProblem>, ArchiveError> {
    let layout = match (structured.layout)(context.source.basename) {
        Ok(layout) => layout,
        Err(message) => return Ok(Err((message, None))),
    };
    // A document whose items were found as it was copied is read where they are.
    let spans = match &mut header {
        HeaderFrom::Copied { spans, .. } => spans.take(),
        HeaderFrom::Archived { .. } => None,
    };
    let shape = items_shape(&layout, spans);
    let header = match read_header(&layout, shape.as_ref(), raw, header)? {
        Ok(header) => header,
        Err(problem) => return Ok(Err(problem)),
    };
    let begun = match (structured.begin)(header, context) {
        Ok(begun) => begun,
        Err(error) => return Ok(Err(header_problem(error))),
    };
    // Items are read and copied on this thread, parsed and normalized in batches on the
    // workers (which inflate Zstandard ZIP members and read Parquet rows into members),
    // and handed to `take` in file order.
    let read = in_batches(
        shape.as_ref(),
        raw,
        |batch| normalize_batch(structured, &begun, batch, context, bank),
        |(normalized, problem): Worked| {
            take(normalized)?;
            problem.map_or(Ok(()), |problem| Err(Halt::File(problem)))
        },
        |read| progress.read(read),
    )?;
    let read = match read {
        Ok(read) => read,
        Err(problem) => return Ok(Err(problem)),
    };
    Ok(settle(read, raw, None)?.map(|()| begun))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::document::tests::handed_out;

    #[test]
    fn a_documents_items_are_read_at_the_spans_its_copy_noted_not_scanned_again() {
        // The spans of one document, and the file of another whose items are elsewhere:
        // read at the spans, the file gives the bytes there; scanned, its own items. The
        // import reads at the spans only where the copy noted them.
        let layout = Layout::Document {
            header: &[],
            items: Items::TopLevel,
        };
        let noted = "[1, 22, 333]";
        let spans = ArrayItems {
            items: Items::TopLevel,
        }
        .header_from(noted.as_bytes(), &[], &mut |_, _| Ok(()))
        .unwrap();
        let items_of = |shape: Box<dyn Shape>| {
            let handed = handed_out(shape.as_ref(), b"[  1,22,333 ]").unwrap();
            let texts = handed
                .into_iter()
                .map(|(_, bytes)| String::from_utf8(bytes));
            texts.collect::<Result<Vec<_>, _>>().unwrap()
        };
        assert_eq!(items_of(items_shape(&layout, spans)), [" ", ",2", "333"]);
        assert_eq!(items_of(items_shape(&layout, None)), ["1", "22", "333"]);
    }

    #[test]
    fn header_files_are_read_whole_only_as_far_as_memory_holds_their_trees() {
        const GIB: u64 = 1 << 30;
        assert_eq!(header_budget(None), MAX_HEADER_FILE_BYTES);
        assert_eq!(header_budget(Some(64 * GIB)), MAX_HEADER_FILE_BYTES);
        assert_eq!(header_budget(Some(3_200_000_000)), 100_000_000);
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("0001-run");
        std::fs::write(
            dir.path().join("a.json"),
            format!("[{}]", "1,".repeat(49) + "1"),
        )
        .unwrap();
        std::fs::write(dir.path().join("b.json"), "[1]").unwrap();
        let files = || [("a", "a.json"), ("b", "b.json")].into_iter();
        let mut members = Map::new();
        header_files(&raw, files(), &mut members, 104)
            .unwrap()
            .unwrap();
        assert_eq!(members.len(), 2);
        // The second file passes what the first left of the budget.
        let (message, hint) = header_files(&raw, files(), &mut Map::new(), 103)
            .unwrap()
            .unwrap_err();
        assert_eq!(
            message,
            "b.json is 3 bytes, more than the 2 babel reads whole here beside the files before it"
        );
        assert!(hint.unwrap().contains("(103 bytes of files now)"));
        let (message, _) = header_files(&raw, files(), &mut Map::new(), 100)
            .unwrap()
            .unwrap_err();
        assert_eq!(
            message,
            "a.json is 101 bytes, more than the 100 babel reads whole here"
        );
        // Where the 1 GiB cap, not the memory, is what a file passes, more memory is no help.
        let (_, hint) = too_large("r.json", 3 << 30, 1 << 30, MAX_HEADER_FILE_BYTES);
        assert!(
            hint.unwrap()
                .ends_with("reads at most 1 GiB of them; split the run's output")
        );
    }

    #[test]
    fn a_header_file_is_one_strict_json_value() {
        assert_eq!(
            parse_value(b"\xEF\xBB\xBF{\"a\": [1, NaN]}", "run_spec.json").unwrap(),
            serde_json::json!({"a": [1, null]})
        );
        // Text that closes the wrapper and adds members of its own is not one value.
        let (message, _) = parse_value(b"{\"a\": 1}, \"w\": 3", "run_spec.json").unwrap_err();
        assert_eq!(message, "run_spec.json: not one JSON value");
        let (message, _) = parse_value(b"{\"a\": 1}, \"v\": 3", "scenario.json").unwrap_err();
        assert!(
            message.starts_with("scenario.json: duplicate key"),
            "{message}"
        );
        // A problem inside the value names its field in the file, not in the wrapper.
        let (message, _) =
            parse_value(b"{\"a\": [0, {\"b\": 1, \"b\": 2}]}", "run_spec.json").unwrap_err();
        assert_eq!(message, "run_spec.json: field a[1].b: duplicate key \"b\"");
        assert!(parse_value(b"{\"a\": 1} {\"b\": 2}", "scenario.json").is_err());
    }

    /// Where broken JSON that spans lines is: the line and byte column the strict reader
    /// stopped at, even when a `NaN` it reads as null stands at the same column of an
    /// earlier line (where serde_json alone would stop).
    #[test]
    fn broken_json_that_spans_lines_is_placed_where_the_strict_reader_stopped() {
        let header = b"{\"a\":\n  NaN,\n  \"b\": 1,\n  @}";
        let (message, _) = parse_value(header, "run_spec.json").unwrap_err();
        assert!(
            message.starts_with("run_spec.json: line 4, column 3:"),
            "{message}"
        );
        let (message, _) = parse_value(b"{\"a\": [1,\n 2", "run_spec.json").unwrap_err();
        assert!(
            message.starts_with("run_spec.json: line 2, column 2:"),
            "a file cut short is placed at its end: {message}"
        );
        // An item is placed within itself, as the tree reader (which tells where it
        // stopped) places it, and refused for what the tree reader says.
        let mut members = jsonl::Members::new();
        for (member, bytes, at) in [
            (
                "samples/q1_epoch_1.json",
                &header[..],
                "!samples/q1_epoch_1.json:4:3",
            ),
            ("m.json", b"{\"a\" 1}", "!m.json:1:6"),
        ] {
            let locator = Locator::Member(member.into());
            let streamed = item_members(&locator, None, bytes, &mut members).unwrap_err();
            let Place::Other(place) = streamed.place else {
                panic!("an item's place")
            };
            assert_eq!(&*place, at);
            let tree = jsonl::parse_bytes(bytes, 1, NonFinitePolicy::Null).unwrap_err();
            let field = (!tree.path.is_root()).then(|| tree.path.to_string());
            assert_eq!((streamed.field, streamed.message), (field, tree.message()));
        }
    }

    #[test]
    fn a_batch_of_parquet_rows_is_one_group_of_the_reader() {
        // The rows of a group share one copy of their values, which their weights count
        // between them: a batch ending inside a group would leave rows holding the copy
        // after the batch that counted most of it was done. A string weighs twice its
        // JSON (its text and its copy), so batches cut by weight alone would end halfway
        // through each group of these.
        use arrow_array::{ArrayRef, RecordBatch, StringArray};
        use std::sync::Arc;
        let text = "x".repeat(200_000);
        let strings: ArrayRef = Arc::new(StringArray::from(vec![text.as_str(); 100]));
        let rows = RecordBatch::try_from_iter([("s", strings)]).unwrap();
        let file = crate::inputs::parquet::tests::parquet_file(&rows);
        let mut batch = Batch::default();
        let mut sizes = Vec::new();
        crate::inputs::parquet::read_rows(file, |position, row| {
            let (full, read) = batch.add(Item {
                locator: Locator::Pointer(format!("/{position}")),
                content: Content::Row(row),
            });
            assert_eq!(read, 200_001, "progress counts the row's JSON");
            if full {
                let taken = std::mem::take(&mut batch);
                let ends: Vec<bool> = taken
                    .items
                    .iter()
                    .map(|(_, owned)| matches!(owned, Owned::Row(row) if row.ends_group()))
                    .collect();
                assert_eq!(ends.iter().filter(|end| **end).count(), 1);
                assert_eq!(ends.last(), Some(&true));
                assert!(taken.bytes >= 2 * 200_001 * ends.len());
                sizes.push(ends.len());
            }
            Ok::<(), ()>(())
        })
        .unwrap();
        assert!(batch.items.is_empty(), "the last row ends a batch");
        assert_eq!(sizes.iter().sum::<usize>(), 100);
        // Five rows are 1,000,005 bytes of JSON, six pass a mebibyte.
        assert_eq!(sizes.iter().max(), Some(&6));
    }
}
