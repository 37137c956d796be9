//! Import orchestration: a batch of input files becomes one transaction. Each file is read
//! once, as a stream: its bytes are copied to `raw/` and hashed as they are read, each line
//! is parsed strictly and normalized by its adapter, each record is checked against the
//! run's identity set and written to `records/`. Any rejected line rejects the whole batch
//! and nothing is published; the problems of every file are reported (up to a limit).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::artifacts::contract::BankIndex;
use super::history::Change;
use super::layout::{self, RunId, run_relative};
use super::manifest::{
    BreakdownCounter, CountEntry, FileEntry, ImportEntry, RecordsEntry, RunManifest,
};
use super::read;
use super::records::{Columns, EncodedRecord, RecordsWriter, ThreadedWriter};
use super::runs::{FilesToVerify, open_for_write, plan_attachments, run_context, verify_files};
use super::transaction::{Transaction, abort_after};
use super::{ArchiveError, WriteSession, faults};
use crate::adapters::{self, AdapterOptions, Format, ImportContext, Layout, Reader, SourceFile};
use crate::canonical_json::CanonicalError;
use crate::clock::now_rfc3339;
use crate::durable::{NewFile, io_at};
use crate::jsonl::{self, NonFinitePolicy};
use crate::parallel;
use crate::record::{DigestMap, KeyDigest, Locator};

/// How many problems an import reports in detail (all are counted).
pub const MAX_REPORTED: usize = 20;

/// Everything that shapes how a batch is imported (one struct, not ten parameters).
#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub format: Format,
    pub adapter: AdapterOptions,
    /// What to do with `NaN` / `Infinity` tokens.
    pub non_finite: NonFinitePolicy,
    /// Files stored as attachments of the run in the same transaction (`--attach`: a
    /// harness `results_*.json`, say). The adapters never read them.
    pub attachments: Vec<PathBuf>,
    /// The ceiling for each attachment (`--max-attachment-size`).
    pub max_attachment_size: u64,
}

impl ImportOptions {
    /// Options for `format` with every default.
    pub fn new(format: Format) -> Self {
        Self {
            format,
            adapter: AdapterOptions::default(),
            non_finite: NonFinitePolicy::Reject,
            attachments: Vec::new(),
            max_attachment_size: super::DEFAULT_MAX_ATTACHMENT_SIZE,
        }
    }

    fn recorded_options(&self) -> Map<String, Value> {
        let mut options = Map::new();
        let text = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
        options.insert("benchmark".into(), text(&self.adapter.benchmark));
        options.insert("language".into(), text(&self.adapter.language));
        let policy = match self.non_finite {
            NonFinitePolicy::Reject => "reject",
            NonFinitePolicy::Null => "null",
        };
        options.insert("non_finite".into(), Value::String(policy.into()));
        options
    }
}

/// Observes a long import (bytes read per file).
pub trait Progress {
    /// A file of `bytes` bytes is starting.
    fn begin_file(&self, _name: &str, _bytes: u64) {}
    /// `bytes` more bytes were read.
    fn advance(&self, _bytes: u64) {}
    /// The current file is done.
    fn end_file(&self) {}
}

/// A [`Progress`] that shows nothing.
pub struct NoProgress;
impl Progress for NoProgress {}

/// One refused line (or file), located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The input file as the user named it.
    pub file: String,
    pub line: Option<u64>,
    pub column: Option<usize>,
    /// The item at fault in a structured file: `!member` or `#pointer`.
    pub item: Option<String>,
    /// The field at fault, as a path (`doc.choices[2]`).
    pub field: Option<String>,
    pub message: String,
    pub hint: Option<String>,
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        if let Some(item) = &self.item {
            f.write_str(item)?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// One file that was (or would have been) imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedFile {
    pub seq: u64,
    pub given: PathBuf,
    /// ROOT-relative path of the raw copy.
    pub raw_path: String,
    pub records: u64,
}

/// The outcome of an import: what was imported, or why nothing was.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    pub run: String,
    pub files: Vec<ImportedFile>,
    /// Run-relative paths of the files attached in the same transaction.
    pub attachments: Vec<String>,
    /// The first [`MAX_REPORTED`] problems.
    pub rejections: Vec<Rejection>,
    /// All problems, counted.
    pub rejected_total: usize,
}

impl ImportReport {
    /// One line saying how bad it is.
    pub fn summary(&self) -> String {
        let mut files: Vec<&str> = self.rejections.iter().map(|r| r.file.as_str()).collect();
        files.dedup();
        let problems = if self.rejected_total == 1 {
            "1 problem".to_owned()
        } else {
            format!("{} problems", self.rejected_total)
        };
        format!("{problems} in {}; nothing was imported", files.join(", "))
    }

    /// The hint of the first problem that has one.
    pub fn hint(&self) -> Option<String> {
        self.rejections.iter().find_map(|r| r.hint.clone())
    }

    fn reject(&mut self, rejection: Rejection) {
        self.rejected_total += 1;
        if self.rejections.len() < MAX_REPORTED {
            self.rejections.push(rejection);
        }
    }
}

/// Where an identity was first seen: the import and the place in its file (for
/// duplicate messages).
#[derive(Debug, Clone)]
struct Seen {
    seq: u64,
    place: Place,
}

/// The place of an item in its file: a line, or (for structured inputs) a ZIP member or
/// JSON Pointer as `!member` or `#pointer`.
#[derive(Debug, Clone)]
enum Place {
    Line(u64),
    Other(Box<str>),
}

impl Place {
    fn of(locator: &crate::record::Locator) -> Self {
        match locator {
            crate::record::Locator::Line(line) => Place::Line(*line),
            crate::record::Locator::Member(member) => Place::Other(format!("!{member}").into()),
            crate::record::Locator::Pointer(pointer) => Place::Other(format!("#{pointer}").into()),
        }
    }

    /// `:N` for a line, `!member` or `#pointer` otherwise: what follows a file name.
    fn suffix(&self) -> String {
        match self {
            Place::Line(line) => format!(":{line}"),
            Place::Other(other) => other.to_string(),
        }
    }
}

/// Where the first record with an identity came from.
enum Origin {
    /// A published import: its archived raw file.
    Published(String),
    /// A file of this batch, as the user named it, and its position in the batch.
    Batch(String, usize),
}

impl Origin {
    /// The place of `line` of this origin, as a duplicate message names it, seen from the
    /// file whose sequence number is `current`.
    fn describe(origins: &HashMap<u64, Origin>, first: &Seen, current: u64) -> String {
        let place = first.place.suffix();
        if first.seq == current {
            return match &first.place {
                Place::Line(line) => format!("at line {line} of this file"),
                Place::Other(other) => format!("at {other} of this file"),
            };
        }
        match origins.get(&first.seq) {
            Some(Origin::Published(raw)) => format!("at {raw}{place} (import {})", first.seq),
            Some(Origin::Batch(given, position)) => {
                format!("at {given}{place} (file {position} of this batch)")
            }
            None => format!("at {place} of import {}", first.seq),
        }
    }
}

/// Imports `files` into `run` as one transaction.
pub fn import(
    session: &WriteSession<'_>,
    run: &RunId,
    files: &[PathBuf],
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport, ArchiveError> {
    let mut manifest = open_for_write(session, run)?;
    let context = run_context(&manifest);
    if files.is_empty() {
        return Err(ArchiveError::Usage {
            message: "no input files".into(),
            hint: Some("name one or more JSON Lines files to import".into()),
        });
    }
    options
        .format
        .check_options(&options.adapter)
        .map_err(|message| ArchiveError::Usage {
            message,
            hint: None,
        })?;
    let attachments = plan_attachments(
        run,
        &manifest,
        &options.attachments,
        options.max_attachment_size,
    )?;
    let folders = options.format.reads_folders();
    let mut sources = Vec::new();
    for path in files {
        let input = if folders {
            open_folder(path, options.format)?
        } else {
            let (file, size) = super::open_input(path, None)?;
            Input::File(file, size)
        };
        sources.push((path, input));
    }
    let first_seq = manifest.imports.last().map_or(1, |i| i.seq + 1);
    let planned: Vec<(u64, String, String, String)> = sources
        .iter()
        .enumerate()
        .map(|(i, (path, input))| {
            let seq = first_seq + i as u64;
            let given = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "input".into());
            let mut raw = layout::raw_path(seq, &layout::stored_basename(&given));
            if let Input::Folder { items_file, .. } = input {
                raw = format!("{raw}/{items_file}");
            }
            (seq, given, raw, layout::records_path(seq))
        })
        .collect();
    verify_files(session, run, &manifest, FilesToVerify::Records)?;
    let mut seen = existing_identities(session, run, &manifest)?;
    let mut origins: HashMap<u64, Origin> = manifest
        .imports
        .iter()
        .map(|entry| {
            (
                entry.seq,
                Origin::Published(run_relative(run, &entry.raw.path)),
            )
        })
        .collect();
    for (position, ((path, _), (seq, _, _, _))) in sources.iter().zip(&planned).enumerate() {
        origins.insert(
            *seq,
            Origin::Batch(path.display().to_string(), position + 1),
        );
    }
    let bank = BankIndex::for_run(session.archive(), &manifest)?;

    let mut created: Vec<String> = planned
        .iter()
        .flat_map(|(_, _, raw, records)| [run_relative(run, raw), run_relative(run, records)])
        .collect();
    let mut dirs = vec![
        run_relative(run, layout::RAW),
        run_relative(run, layout::RECORDS),
    ];
    for ((_, input), (_, _, raw, _)) in sources.iter().zip(&planned) {
        if let Input::Folder { companions, .. } = input {
            let folder = folder_of(raw);
            dirs.push(run_relative(run, folder));
            created.extend(
                companions
                    .iter()
                    .map(|(name, _, _)| run_relative(run, &format!("{folder}/{name}"))),
            );
        }
    }
    created.extend(attachments.files());
    dirs.extend(attachments.dirs());
    let transaction = Transaction::begin(
        session,
        "import",
        created,
        dirs,
        run_relative(run, layout::MANIFEST),
    )?;
    let mut report = ImportReport {
        run: run.to_string(),
        ..Default::default()
    };
    let mut entries = Vec::new();
    for ((path, input), (seq, given, raw, records)) in sources.into_iter().zip(planned) {
        let plan = FilePlan {
            given_path: path,
            given_name: &given,
            seq,
            origins: &origins,
            raw_rel: run_relative(run, &raw),
            records_rel: run_relative(run, &records),
        };
        progress.begin_file(&given, input.bytes());
        let importing = FileImport {
            transaction: &transaction,
            plan: &plan,
            context: &context,
            bank: bank.as_ref(),
            options,
            progress,
        };
        let outcome = match (&options.format.adapter().reader, input) {
            (adapters::Reader::Lines(normalize), Input::File(file, _)) => {
                importing.lines(*normalize, file, &mut seen, &mut report)
            }
            (adapters::Reader::Items(structured), Input::File(file, _)) => {
                importing.items(structured, file, Vec::new(), &mut seen, &mut report)
            }
            (
                adapters::Reader::Items(structured),
                Input::Folder {
                    items, companions, ..
                },
            ) => importing.items(structured, items, companions, &mut seen, &mut report),
            (adapters::Reader::Lines(_), Input::Folder { .. }) => {
                unreachable!("only a format that reads folders opens one")
            }
        };
        progress.end_file();
        match outcome {
            Ok(FileOutcome {
                raw: raw_digest,
                companions,
                records: records_entry,
                breakdown,
                producer,
            }) => {
                report.files.push(ImportedFile {
                    seq,
                    given: path.clone(),
                    raw_path: plan.raw_rel.clone(),
                    records: records_entry.count,
                });
                entries.push(ImportEntry {
                    seq,
                    format: options.format.name().into(),
                    source_basename: given.clone(),
                    raw: FileEntry {
                        path: raw.clone(),
                        sha256: raw_digest.sha256,
                        bytes: raw_digest.bytes,
                    },
                    companions: companions
                        .into_iter()
                        .map(|(name, digest)| FileEntry {
                            path: format!("{}/{name}", folder_of(&raw)),
                            sha256: digest.sha256,
                            bytes: digest.bytes,
                        })
                        .collect(),
                    records: RecordsEntry {
                        path: records,
                        ..records_entry
                    },
                    breakdown,
                    variant_override: options.adapter.variant.clone(),
                    id_field: options.adapter.id_field.as_ref().map(|f| f.to_string()),
                    options: options.recorded_options(),
                    normalizer_version: options.format.normalizer_version().into(),
                    producer,
                    babel_version: env!("CARGO_PKG_VERSION").into(),
                    imported_at: now_rfc3339(),
                });
            }
            Err(fatal) => return Err(abort_after(transaction, fatal)),
        }
    }
    if report.rejected_total > 0 {
        // The rejection is what the user needs to see; if the clean-up fails, the journal
        // still names the files and the next write removes them.
        return Err(abort_after(
            transaction,
            ArchiveError::Rejected(Box::new(report)),
        ));
    }
    manifest.imports.extend(entries.iter().cloned());
    let attached_before = manifest.attachments.len();
    if let Err(error) = attachments.store(&transaction, &mut manifest) {
        return Err(abort_after(transaction, error));
    }
    report.attachments = manifest.attachments[attached_before..]
        .iter()
        .map(|a| a.path.clone())
        .collect();
    let bytes = match manifest.to_bytes() {
        Ok(bytes) => bytes,
        Err(error) => return Err(abort_after(transaction, error.into())),
    };
    let change = Change::Extend {
        path: run_relative(run, layout::MANIFEST),
        imports: entries,
        attachments: manifest.attachments[attached_before..].to_vec(),
    };
    transaction.commit(&bytes, change)?;
    Ok(report)
}

/// One input as opened: a file, or a folder's files (the items file and the others,
/// each `(stored name, file, bytes)`, sorted by name).
enum Input {
    File(File, u64),
    Folder {
        items_file: &'static str,
        items: File,
        companions: Vec<(String, File, u64)>,
        bytes: u64,
    },
}

impl Input {
    fn bytes(&self) -> u64 {
        match self {
            Input::File(_, bytes) | Input::Folder { bytes, .. } => *bytes,
        }
    }
}

/// The folder a folder input's raw file is in.
fn folder_of(raw: &str) -> &str {
    raw.rsplit_once('/').map_or("", |(folder, _)| folder)
}

/// The most entries a folder input may hold (a HELM run folder holds about ten).
const MAX_FOLDER_FILES: usize = 10_000;

/// Opens a folder input: every entry must be a regular file, not a link (nothing in it
/// would otherwise be left out of the archive, and nothing outside it read through it),
/// at most [`MAX_FOLDER_FILES`] of them, and the format's items file must be one.
fn open_folder(path: &Path, format: adapters::Format) -> Result<Input, ArchiveError> {
    let usage = |message: String, hint: &str| ArchiveError::Usage {
        message,
        hint: Some(hint.into()),
    };
    let Reader::Items(structured) = &format.adapter().reader else {
        unreachable!("a format that reads folders reads items");
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Ok(Layout::Folder { items_file, .. }) = (structured.layout)(&name) else {
        unreachable!("a format that reads folders lays them out");
    };
    if !path.is_dir() {
        return Err(usage(
            format!(
                "{} is not a folder; --format {} reads a run folder",
                path.display(),
                format.name()
            ),
            "give the folder that holds the run's files (for HELM: benchmark_output/runs/<suite>/<run>)",
        ));
    }
    let mut entries = Vec::new();
    for entry in fs::read_dir(path).map_err(io_at("listing", path))? {
        let entry = entry.map_err(io_at("listing", path))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entries.len() >= MAX_FOLDER_FILES {
            return Err(usage(
                format!(
                    "{} holds more than {MAX_FOLDER_FILES} entries; a run folder holds a few files",
                    path.display()
                ),
                "give the run's own folder (for HELM: benchmark_output/runs/<suite>/<run>)",
            ));
        }
        // A link is refused, not followed: its target (`/etc/hostname`, a token file)
        // would otherwise be archived, and published, as if it were the run's.
        let kind = entry.file_type().map_err(io_at("reading", &entry.path()))?;
        let what = if kind.is_symlink() {
            Some("a symbolic link")
        } else if !kind.is_file() {
            Some("not a regular file")
        } else {
            None
        };
        if let Some(what) = what {
            return Err(usage(
                format!("{} holds {name:?}, which is {what}", path.display()),
                "a run folder is imported whole and holds only its own regular files; copy a linked file in, or move the rest out",
            ));
        }
        let (file, bytes) = super::open_input(&entry.path(), None)?;
        entries.push((layout::stored_basename(&name), file, bytes));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let total = entries.iter().map(|(_, _, bytes)| bytes).sum();
    let Some(at) = entries.iter().position(|(name, _, _)| name == items_file) else {
        return Err(usage(
            format!("{} has no {items_file}", path.display()),
            "is this a complete run folder? the items are read from that file",
        ));
    };
    let (_, items, _) = entries.remove(at);
    Ok(Input::Folder {
        items_file,
        items,
        companions: entries,
        bytes: total,
    })
}

struct FilePlan<'a> {
    given_path: &'a Path,
    given_name: &'a str,
    seq: u64,
    /// Where the records of every import sequence number came from, for duplicate
    /// messages: an archived raw path for a published import, a given path for an
    /// earlier file of this batch.
    origins: &'a HashMap<u64, Origin>,
    raw_rel: String,
    records_rel: String,
}

/// Copies what it reads into the raw file (which hashes it) and reports progress.
struct Tee<'p, R> {
    inner: R,
    copy: NewFile,
    copy_error: Option<io::Error>,
    progress: &'p dyn Progress,
    since_report: u64,
}

impl<R: Read> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Err(e) = self.copy.writer().write_all(&buf[..n]) {
            let kind = e.kind();
            self.copy_error = Some(e);
            return Err(io::Error::new(kind, "writing the raw copy failed"));
        }
        self.since_report += n as u64;
        if self.since_report >= 1 << 20 || n == 0 {
            self.progress.advance(self.since_report);
            self.since_report = 0;
        }
        Ok(n)
    }
}

/// What importing one file made: its raw copy, its records file, the breakdown, and (for
/// a structured input) the producer's facts from its header.
struct FileOutcome {
    raw: crate::durable::ContentDigest,
    /// A folder input's other files (stored name, digest), archived beside the raw file.
    companions: Vec<(String, crate::durable::ContentDigest)>,
    records: RecordsEntry,
    breakdown: Vec<CountEntry>,
    producer: Option<Map<String, Value>>,
}

fn duplicate_hint(strict: bool) -> &'static str {
    if strict {
        "each (benchmark, language, script, question_id, variant_id, filter, repeat_id) may occur once \
         in a strict run; give repeated measurements distinct repeat_id values"
    } else {
        "each (benchmark, language, question_id, variant_id, filter, repeat_id) may occur once per run; \
         give repeated measurements distinct repeat_id values"
    }
}

/// What a worker made of one input item (a line, a member, an element).
enum Normalized {
    /// The item (or one of its records) is refused.
    Refused {
        place: Place,
        column: Option<usize>,
        field: Option<String>,
        message: String,
        hint: Option<String>,
    },
    /// A record, encoded for the records file, with the digest of its key.
    Record {
        place: Place,
        digest: KeyDigest,
        record: Box<EncodedRecord>,
    },
}

/// An adapter's line hook.
type LinesAdapter = fn(
    jsonl::Line,
    &ImportContext<'_>,
    &mut Vec<crate::record::Record>,
) -> Result<(), adapters::AdapterError>;

/// The last steps of every record, whatever its input: a warning for each non-finite
/// token read as null (`note` says how), the strict run's bank check, the identity
/// digest, and the encoding into columns.
fn finish_record(
    mut record: crate::record::Record,
    replaced: &[jsonl::NonFiniteReplacement],
    note: &dyn Fn(&jsonl::NonFiniteReplacement) -> String,
    bank: Option<&BankIndex>,
    context: &ImportContext<'_>,
    place: Place,
) -> Normalized {
    record.warnings.extend(replaced.iter().map(note));
    // A strict run holds only its item bank's instances, each naming its script.
    if let Some(bank) = bank
        && let Err(refused) = bank.check(&record)
    {
        return Normalized::Refused {
            place,
            column: None,
            field: (!refused.path.is_root()).then(|| refused.path.to_string()),
            message: refused.message,
            hint: Some(refused.hint),
        };
    }
    let digest = record.identity().record_digest(context.run.strict);
    match EncodedRecord::encode(record) {
        Ok(record) => Normalized::Record {
            place,
            digest,
            record: Box::new(record),
        },
        Err(CanonicalError::UnsafeInteger { path, value }) => Normalized::Refused {
            place,
            column: None,
            field: Some(path.to_string()),
            message: format!(
                "the integer {value} has no exact JSON double (RFC 8785 stores numbers as doubles)"
            ),
            hint: Some(
                "write integers beyond 2^53 as strings; as numbers every JSON reader may round them"
                    .into(),
            ),
        },
        Err(other) => Normalized::Refused {
            place,
            column: None,
            field: None,
            message: other.to_string(),
            hint: None,
        },
    }
}

/// Parses and normalizes one batch of lines (on a worker thread): everything that needs
/// no knowledge of the other lines, down to the canonical JSON of every nested value.
fn normalize_batch(
    batch: jsonl::LineBatch,
    normalize: LinesAdapter,
    options: &ImportOptions,
    context: &ImportContext<'_>,
    bank: Option<&BankIndex>,
    skip_normalizing: bool,
) -> Vec<Normalized> {
    let mut out = Vec::with_capacity(batch.len());
    let mut records = Vec::new();
    if skip_normalizing {
        return out;
    }
    for (number, parsed) in batch.parse(options.non_finite) {
        let mut line = match parsed {
            Ok(Some(line)) => line,
            Ok(None) => continue,
            Err(error) => {
                out.push(Normalized::Refused {
                    place: Place::Line(number),
                    column: error.column,
                    field: (!error.path.is_root()).then(|| error.path.to_string()),
                    message: error.message(),
                    hint: error.hint().map(str::to_owned),
                });
                continue;
            }
        };
        let replaced = std::mem::take(&mut line.replaced);
        records.clear();
        if let Err(error) = normalize(line, context, &mut records) {
            out.push(Normalized::Refused {
                place: Place::Line(number),
                column: None,
                field: (!error.path.is_root()).then(|| error.path.to_string()),
                message: error.message,
                hint: error.hint,
            });
            continue;
        }
        let note = |r: &jsonl::NonFiniteReplacement| {
            format!(
                "non-finite number {} at {} was read as null (--non-finite null)",
                r.token, r.path
            )
        };
        for record in records.drain(..) {
            out.push(finish_record(
                record,
                &replaced,
                &note,
                bank,
                context,
                Place::Line(number),
            ));
        }
    }
    out
}

/// Everything one file's import shares with the rest of the batch, and what it builds:
/// where records go and what they are checked against.
struct FileImport<'a, 'p> {
    transaction: &'a Transaction<'a>,
    plan: &'a FilePlan<'a>,
    context: &'a crate::adapters::RunContext,
    bank: Option<&'a BankIndex>,
    options: &'a ImportOptions,
    progress: &'p dyn Progress,
}

/// Takes normalized items in order: reports refusals, refuses duplicate identities,
/// counts the breakdown, and says which records to write.
struct Sink<'a> {
    seen: &'a mut DigestMap<Seen>,
    plan: &'a FilePlan<'a>,
    strict: bool,
    file_label: String,
    breakdown: BreakdownCounter,
    partly_written: bool,
}

impl Sink<'_> {
    fn reject(
        &self,
        report: &mut ImportReport,
        place: Option<&Place>,
        column: Option<usize>,
        field: Option<String>,
        message: String,
        hint: Option<String>,
    ) {
        let (line, item) = match place {
            Some(Place::Line(line)) => (Some(*line), None),
            Some(Place::Other(other)) => (None, Some(other.to_string())),
            None => (None, None),
        };
        report.reject(Rejection {
            file: self.file_label.clone(),
            line,
            column,
            item,
            field,
            message,
            hint,
        });
    }

    /// The record to write, if `item` is one that may be written.
    fn take(&mut self, item: Normalized, report: &mut ImportReport) -> Option<Box<EncodedRecord>> {
        match item {
            Normalized::Refused {
                place,
                column,
                field,
                message,
                hint,
            } => {
                self.reject(report, Some(&place), column, field, message, hint);
                None
            }
            Normalized::Record {
                place,
                digest,
                record,
            } => {
                match self.seen.entry(digest) {
                    Entry::Occupied(first) => {
                        let first = first.get().clone();
                        self.reject(
                            report,
                            Some(&place),
                            None,
                            None,
                            format!(
                                "duplicate record identity ({}); the same identity is {}",
                                record.identity().record_key(self.strict),
                                Origin::describe(self.plan.origins, &first, self.plan.seq)
                            ),
                            Some(duplicate_hint(self.strict).into()),
                        );
                        return None;
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(Seen {
                            seq: self.plan.seq,
                            place,
                        });
                    }
                }
                // A rejected batch publishes nothing, so the file need not be written once
                // a problem is known.
                if report.rejected_total > 0 {
                    return None;
                }
                let identity = record.identity();
                self.breakdown
                    .add(identity.benchmark, identity.language, identity.variant_id);
                Some(record)
            }
        }
    }

    /// Marks that records were written (the fault point of a partly written file).
    fn wrote(&mut self) {
        if !self.partly_written {
            self.partly_written = true;
            faults::point("data-partly-written");
        }
    }
}

impl FileImport<'_, '_> {
    fn import_context(&self) -> ImportContext<'_> {
        ImportContext {
            run: self.context,
            options: &self.options.adapter,
            source: SourceFile {
                raw_path: &self.plan.raw_rel,
                basename: self.plan.given_name,
            },
        }
    }

    fn sink<'s>(&'s self, seen: &'s mut DigestMap<Seen>) -> Sink<'s> {
        Sink {
            seen,
            plan: self.plan,
            strict: self.context.strict,
            // A folder input's items are in one of its files: name that file.
            file_label: if self.options.format.reads_folders() {
                let items_file = self.plan.raw_rel.rsplit('/').next().unwrap_or_default();
                self.plan.given_path.join(items_file).display().to_string()
            } else {
                self.plan.given_path.display().to_string()
            },
            breakdown: BreakdownCounter::default(),
            partly_written: false,
        }
    }

    /// A problem of the whole file is reported once, alone.
    fn source_refused(&self, sink: &Sink<'_>, report: &mut ImportReport) -> bool {
        match (self.options.format.adapter().check_source)(&self.import_context()) {
            Ok(()) => false,
            Err(error) => {
                sink.reject(report, None, None, None, error.message, error.hint);
                true
            }
        }
    }

    /// Copies `source` (given as `from`) whole to the new file `to`, hashing it and
    /// reporting progress; an error names the side that failed.
    fn copy_whole(
        &self,
        source: File,
        from: &Path,
        to: &Path,
    ) -> Result<crate::durable::ContentDigest, ArchiveError> {
        let mut tee = Tee {
            inner: source,
            copy: NewFile::create(to)?,
            copy_error: None,
            progress: self.progress,
            since_report: 0,
        };
        if let Err(error) = io::copy(&mut tee, &mut io::sink()) {
            return Err(match tee.copy_error {
                Some(copy) => io_at("writing", to)(copy),
                None => io_at("reading", from)(error),
            }
            .into());
        }
        Ok(tee.copy.finish()?)
    }

    /// The end of every file: at least one record, and the entries of its files.
    fn finish(
        &self,
        sink: Sink<'_>,
        raw_digest: crate::durable::ContentDigest,
        records: NewFile,
        count: u64,
        report: &mut ImportReport,
    ) -> Result<FileOutcome, ArchiveError> {
        if count == 0 && report.rejected_total == 0 {
            sink.reject(
                report,
                None,
                None,
                None,
                "the file holds no records".into(),
                Some("an input needs at least one item that makes a record".into()),
            );
        }
        let digest = records.finish()?;
        Ok(FileOutcome {
            raw: raw_digest,
            companions: Vec::new(),
            records: RecordsEntry {
                path: String::new(),
                sha256: digest.sha256,
                bytes: digest.bytes,
                count,
            },
            breakdown: sink.breakdown.finish(),
            producer: None,
        })
    }

    /// A JSON Lines file: copied to its raw file while it is read in batches of lines,
    /// normalized on worker threads and written in order.
    fn lines(
        &self,
        normalize: LinesAdapter,
        source: File,
        seen: &mut DigestMap<Seen>,
        report: &mut ImportReport,
    ) -> Result<FileOutcome, ArchiveError> {
        let raw_path = self.transaction.path(&self.plan.raw_rel);
        let records_path = self.transaction.path(&self.plan.records_rel);
        let tee = Tee {
            inner: source,
            copy: NewFile::create(&raw_path)?,
            copy_error: None,
            progress: self.progress,
            since_report: 0,
        };
        let mut records = NewFile::create(&records_path)?;
        let mut batcher = jsonl::Batcher::new(BufReader::with_capacity(256 * 1024, tee));
        let import_context = self.import_context();
        let mut sink = self.sink(seen);
        // A problem of the whole file: its lines are then only read through (to finish the
        // raw copy), not parsed, so one cause is not reported per line.
        let source_refused = self.source_refused(&sink, report);
        let (options, bank) = (self.options, self.bank);
        let mut read_error = None;
        let (parsed, written) = std::thread::scope(|scope| {
            let mut writer = ThreadedWriter::spawn(scope, records.writer());
            let parsed = parallel::map_ordered(
                parallel::workers(),
                || match batcher.next_batch() {
                    Ok(batch) => Ok(batch),
                    Err(error) => {
                        read_error = Some(error);
                        Err(None)
                    }
                },
                |batch| {
                    normalize_batch(
                        batch,
                        normalize,
                        options,
                        &import_context,
                        bank,
                        source_refused,
                    )
                },
                |batch: Vec<Normalized>| {
                    for item in batch {
                        if let Some(record) = sink.take(item, report) {
                            // A failed push means the writer stopped; its error comes from
                            // `finish` below.
                            writer.push(*record).map_err(|_| None)?;
                            sink.wrote();
                        }
                    }
                    Ok(())
                },
            );
            (parsed, writer.finish())
        });
        let count = written.map_err(io_at("writing", &records_path))?;
        parsed.or_else(|error: Option<ArchiveError>| match error {
            Some(error) => Err(error),
            None => Ok(()),
        })?;
        if let Some(error) = read_error {
            let tee = batcher.get_ref().get_ref();
            return Err(match &tee.copy_error {
                Some(copy) => {
                    io_at("writing", &raw_path)(io::Error::new(copy.kind(), copy.to_string()))
                }
                None => io_at("reading", self.plan.given_path)(error),
            }
            .into());
        }
        let mut buffered = batcher.into_inner();
        // The batcher stops at the end of the input, so nothing is left unread in the
        // buffer; draining keeps that true even for an input without a final newline.
        let _ = buffered.fill_buf();
        let raw_digest = buffered.into_inner().copy.finish()?;
        self.finish(sink, raw_digest, records, count, report)
    }

    /// A structured file (a ZIP log, a JSON document): copied whole to its raw file
    /// first, then read from that copy, so every locator points into the archived bytes.
    fn items(
        &self,
        structured: &adapters::Structured,
        source: File,
        companions: Vec<(String, File, u64)>,
        seen: &mut DigestMap<Seen>,
        report: &mut ImportReport,
    ) -> Result<FileOutcome, ArchiveError> {
        let raw_path = self.transaction.path(&self.plan.raw_rel);
        let records_path = self.transaction.path(&self.plan.records_rel);
        let mut copied = Vec::new();
        for (name, file, _) in companions {
            let from = self.plan.given_path.join(&name);
            let digest = self.copy_whole(file, &from, &raw_path.with_file_name(&name))?;
            copied.push((name, digest));
        }
        let raw_digest = self.copy_whole(source, self.plan.given_path, &raw_path)?;
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
                &import_context,
                self.bank,
                |normalized| {
                    if let Some(record) = sink.take(normalized, report) {
                        writer
                            .push(&record)
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
/// read whole because every item is joined with it).
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

/// Reads the archived structured file at `raw` as `structured` lays it out: its header
/// first (a second pass over a document, so the header may come after the items), then
/// every item, normalized and handed to `take` in file order. Returns the producer's
/// facts, or the problem that stopped the file (after the items before it were handed
/// out).
fn structured_items(
    structured: &adapters::Structured,
    raw: &Path,
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
    let mut normalize_item = |item_bytes: &[u8],
                              locator: Locator,
                              begun: &adapters::Begun|
     -> Result<(), ArchiveError> {
        let place = Place::of(&locator);
        let parsed = match jsonl::parse_bytes(item_bytes, 1, NonFinitePolicy::Null) {
            Ok(parsed) => parsed,
            Err(error) => {
                return take(Normalized::Refused {
                    place,
                    column: None,
                    field: (!error.path.is_root()).then(|| error.path.to_string()),
                    message: error.message(),
                    hint: None,
                });
            }
        };
        let item = adapters::Item {
            object: parsed.object,
            replaced: parsed.replaced,
            locator,
        };
        let replaced = item.replaced.clone();
        let mut records = Vec::new();
        if let Err(error) = (structured.normalize)(begun, item, context, &mut records) {
            return take(Normalized::Refused {
                place,
                column: None,
                field: (!error.path.is_root()).then(|| error.path.to_string()),
                message: error.message,
                hint: error.hint,
            });
        }
        let note = |r: &jsonl::NonFiniteReplacement| {
            format!(
                "non-finite number {} at {} was read as null",
                r.token, r.path
            )
        };
        for record in records {
            take(finish_record(
                record,
                &replaced,
                &note,
                bank,
                context,
                place.clone(),
            ))?;
        }
        Ok(())
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
            let begun = match (structured.begin)(
                adapters::Header {
                    members: std::mem::take(&mut header),
                    index: None,
                },
                context,
            ) {
                Ok(begun) => begun,
                Err(error) => return Ok(Err(header_problem(error))),
            };
            for name in names.iter().filter(|n| item(n)) {
                let bytes = match zip.read(name, MAX_ITEM_BYTES as u64) {
                    Ok(bytes) => bytes,
                    Err(error) => return Ok(Err((error.to_string(), None))),
                };
                normalize_item(&bytes, Locator::Member(name.clone()), &begun)?;
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
                normalize_item(item, locator, &begun)
            }) {
                Ok(()) => Ok(Ok(begun.producer)),
                Err(error) => shape(error).map(Err),
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
            let begun = match (structured.begin)(
                adapters::Header {
                    members: std::mem::take(&mut header),
                    index: None,
                },
                context,
            ) {
                Ok(begun) => begun,
                Err(error) => return Ok(Err(header_problem(error))),
            };
            let second = document_items(open()?, items, |item, locator| {
                normalize_item(item, locator, &begun)
            });
            match second {
                Ok(()) => Ok(Ok(begun.producer)),
                Err(error) => shape(error).map(Err),
            }
        }
    }
}

/// The identity set of the records already in the run.
fn existing_identities(
    session: &WriteSession<'_>,
    run: &RunId,
    manifest: &RunManifest,
) -> Result<DigestMap<Seen>, ArchiveError> {
    let mut seen =
        DigestMap::with_capacity_and_hasher(manifest.record_count() as usize, Default::default());
    let strict = manifest.is_strict();
    for entry in &manifest.imports {
        for batch in read::batches(session.archive(), run, entry, Columns::KEY)? {
            let batch = batch?;
            for row in 0..batch.len() {
                seen.insert(
                    batch.identity(row).record_digest(strict),
                    Seen {
                        seq: entry.seq,
                        place: batch
                            .locator(row)
                            .map_or(Place::Line(0), |locator| Place::of(&locator)),
                    },
                );
            }
        }
    }
    Ok(seen)
}
