//! Import orchestration: a batch of input files becomes one transaction, and [`import`]
//! reads as its outline (check the request, open the inputs, plan their paths, begin,
//! read each file, publish). Each input is copied into the archive, and what is read is
//! what the copy holds (so a digest and a locator are always of the archived bytes): a
//! JSON Lines file in parallel batches, each written into the copy as it is read (`lines`),
//! a structured file item by item from its copy (`structured`, through `inputs::Shape`),
//! an output folder's units (`units`). Each record is checked against the run's identity
//! set (`identities`) in file order (`sink`) and written to `records/`. Any rejected line
//! rejects the whole batch and nothing is published; the problems of every file are
//! reported (up to a limit).

mod identities;
mod lines;
mod memory;
mod sink;
mod structured;
mod units;

use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::artifacts::contract::BankIndex;
use super::history::Change;
use super::layout::{self, RunId, run_relative};
use super::manifest::{
    BreakdownCounter, CountEntry, FileEntry, ImportEntry, RecordsEntry, RunManifest,
};
use super::read;
use super::records::Columns;
use super::runs::{
    FilesToVerify, PlannedAttachments, open_for_write, plan_attachments, run_context, verify_files,
};
use super::transaction::{Transaction, abort_after};
use super::{ArchiveError, WriteSession};
use crate::adapters::{self, AdapterOptions, Format, ImportContext, Layout, Reader, SourceFile};
use crate::clock::now_rfc3339;
use crate::durable::{CopiedFile, NewFile, io_at};
use crate::jsonl::NonFinitePolicy;
use identities::Identities;
use sink::{Origin, Place, Seen, Sink};

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
    /// `--ids NAME=FILE`: the dataset file whose line i names item i of the unit `NAME`
    /// (an OpenCompass dataset abbreviation), archived with that unit.
    pub ids: Vec<(String, PathBuf)>,
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
            ids: Vec::new(),
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
    /// The item at fault in a structured file: `!member` or `#pointer`, followed by the
    /// line and byte column inside the item (`!member:3:14`) when its JSON is broken.
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
    /// All problems, counted per file (as [`Rejection::file`] names it).
    rejected_per_file: HashMap<String, usize>,
}

impl ImportReport {
    /// One line saying how bad it is.
    pub fn summary(&self) -> String {
        // Every file with a problem, listed or not (the list stops at MAX_REPORTED).
        let mut files: Vec<&str> = self.rejected_per_file.keys().map(String::as_str).collect();
        files.sort_unstable();
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
        *self
            .rejected_per_file
            .entry(rejection.file.clone())
            .or_default() += 1;
        if self.rejections.len() < MAX_REPORTED {
            self.rejections.push(rejection);
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
    let manifest = open_for_write(session, run)?;
    let context = run_context(&manifest);
    check_request(files, options)?;
    let attachments = plan_attachments(
        run,
        &manifest,
        &options.attachments,
        options.max_attachment_size,
    )?;
    let sources = open_sources(files, options)?;
    let first_seq = manifest.imports.last().map_or(1, |i| i.seq + 1);
    let planned = plan_files(&sources, first_seq);
    verify_files(session, run, &manifest, FilesToVerify::Records)?;
    let mut seen = existing_identities(session, run, &manifest)?;
    let origins = origins_of(run, &manifest, &sources, &planned);
    let bank = BankIndex::for_run(session.archive(), &manifest)?;
    let transaction = begin(session, run, &sources, &planned, &attachments)?;
    let mut report = ImportReport {
        run: run.to_string(),
        ..Default::default()
    };
    let mut entries = Vec::new();
    for ((path, input), planned) in sources.into_iter().zip(planned) {
        let plan = FilePlan {
            given_path: &path,
            given_name: &planned.given,
            seq: planned.seq,
            origins: &origins,
            raw_rel: run_relative(run, &planned.raw),
            records_rel: run_relative(run, &planned.records),
        };
        let importing = FileImport {
            transaction: &transaction,
            plan: &plan,
            context: &context,
            bank: bank.as_ref(),
            options,
            progress,
        };
        match importing.read(input, &mut seen, &mut report) {
            Ok(outcome) => entries.push(importing.entry(outcome, &planned, &mut report)),
            Err(fatal) => return Err(abort_after(transaction, fatal)),
        }
    }
    if report.rejected_total > 0 {
        name_reimports(&mut report, &manifest, &entries);
        // The rejection is what the user needs to see; if the clean-up fails, the journal
        // still names the files and the next write removes them.
        return Err(abort_after(
            transaction,
            ArchiveError::Rejected(Box::new(report)),
        ));
    }
    publish(transaction, run, manifest, entries, attachments, report)
}

/// What is wrong with the request itself, before anything is read.
fn check_request(files: &[PathBuf], options: &ImportOptions) -> Result<(), ArchiveError> {
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
    if !options.ids.is_empty() && options.format.units().is_none() {
        return Err(ArchiveError::Usage {
            message: format!("--ids does not apply to --format {}", options.format.name()),
            hint: Some(
                "--ids names the dataset file of an OpenCompass dataset; other formats carry their ids".into(),
            ),
        });
    }
    Ok(())
}

/// Every input opened, as given: a file, a run folder, or the units of an output folder.
fn open_sources(
    files: &[PathBuf],
    options: &ImportOptions,
) -> Result<Vec<(PathBuf, Input)>, ArchiveError> {
    let mut sources = Vec::new();
    for path in files {
        if let Some(plan) = options.format.units() {
            sources.extend(units::open_units(
                path,
                options.format.name(),
                plan,
                &options.ids,
            )?);
        } else if options.format.reads_folders() {
            sources.push((path.clone(), open_folder(path, options.format)?));
        } else {
            let (file, size) = super::open_input(path, None)?;
            sources.push((path.clone(), Input::File(file, size)));
        }
    }
    Ok(sources)
}

/// Where one input goes: its sequence number, its name as given, and the run-relative
/// paths of its raw copy and records file.
struct Planned {
    seq: u64,
    given: String,
    raw: String,
    records: String,
}

fn plan_files(sources: &[(PathBuf, Input)], first_seq: u64) -> Vec<Planned> {
    sources
        .iter()
        .enumerate()
        .map(|(i, (path, input))| {
            let seq = first_seq + i as u64;
            let given = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "input".into());
            let mut raw = layout::raw_path(seq, &layout::stored_basename(&given));
            if let Input::Folder(FolderInput { items_file, .. }) = input {
                raw = format!("{raw}/{items_file}");
            }
            Planned {
                seq,
                given,
                raw,
                records: layout::records_path(seq),
            }
        })
        .collect()
}

/// Where the records of every import sequence number came from: the published imports'
/// raw files, and this batch's files as given.
fn origins_of(
    run: &RunId,
    manifest: &RunManifest,
    sources: &[(PathBuf, Input)],
    planned: &[Planned],
) -> HashMap<u64, Origin> {
    let published = manifest.imports.iter().map(|entry| {
        let raw = run_relative(run, &entry.raw.path);
        (entry.seq, Origin::Published(raw))
    });
    let batch = sources
        .iter()
        .zip(planned)
        .enumerate()
        .map(|(i, ((path, _), plan))| (plan.seq, Origin::Batch(path.display().to_string(), i + 1)));
    published.chain(batch).collect()
}

/// The transaction, naming every file and folder the batch may create.
fn begin<'s>(
    session: &'s WriteSession<'_>,
    run: &RunId,
    sources: &[(PathBuf, Input)],
    planned: &[Planned],
    attachments: &PlannedAttachments,
) -> Result<Transaction<'s>, ArchiveError> {
    let mut created: Vec<String> = planned
        .iter()
        .flat_map(|plan| {
            [
                run_relative(run, &plan.raw),
                run_relative(run, &plan.records),
            ]
        })
        .collect();
    let mut dirs = vec![
        run_relative(run, layout::RAW),
        run_relative(run, layout::RECORDS),
    ];
    for ((_, input), plan) in sources.iter().zip(planned) {
        if let Input::Folder(FolderInput { companions, .. }) = input {
            let folder = folder_of(&plan.raw);
            dirs.push(run_relative(run, folder));
            created.extend(
                companions
                    .iter()
                    .map(|companion| run_relative(run, &format!("{folder}/{}", companion.stored))),
            );
        }
    }
    created.extend(attachments.files());
    dirs.extend(attachments.dirs());
    Transaction::begin(
        session,
        "import",
        created,
        dirs,
        run_relative(run, layout::MANIFEST),
    )
}

/// Stores the attachments and commits the run's manifest with the batch's imports.
fn publish(
    transaction: Transaction<'_>,
    run: &RunId,
    mut manifest: RunManifest,
    entries: Vec<ImportEntry>,
    attachments: PlannedAttachments,
    mut report: ImportReport,
) -> Result<ImportReport, ArchiveError> {
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

/// A refused file that is byte for byte an earlier import of the run (or of this batch)
/// under the same format and variant is refused as that, in one line, instead of once
/// per duplicate record.
fn name_reimports(report: &mut ImportReport, manifest: &RunManifest, entries: &[ImportEntry]) {
    for (index, entry) in entries.iter().enumerate() {
        let same = |earlier: &&ImportEntry| {
            earlier.raw.sha256 == entry.raw.sha256
                && earlier.raw.bytes == entry.raw.bytes
                && earlier.format == entry.format
                && earlier.variant_override == entry.variant_override
        };
        let published = manifest.imports.iter().find(same).map(|earlier| {
            format!(
                "this file is already import {} of run {} ({}), byte for byte: its records are in the run",
                earlier.seq, report.run, earlier.raw.path
            )
        });
        // An earlier file of this batch is named as given: it is not an import (yet).
        let in_batch = || {
            let earlier = entries[..index].iter().find(same)?;
            let position = entries.iter().position(|e| e.seq == earlier.seq)? + 1;
            let given = report.files.iter().find(|f| f.seq == earlier.seq)?;
            Some(format!(
                "this file is byte for byte {} (file {position} of this batch)",
                given.given.display()
            ))
        };
        let Some(message) = published.or_else(in_batch) else {
            continue;
        };
        let Some(given) = report.files.iter().find(|f| f.seq == entry.seq) else {
            continue;
        };
        let label = given.given.display().to_string();
        // A folder input's problems name a file in it (`<folder>/<items file>`).
        let of_this = |file: &str| {
            file.strip_prefix(label.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        let of_file: Vec<String> = report
            .rejected_per_file
            .keys()
            .filter(|file| of_this(file))
            .cloned()
            .collect();
        if of_file.is_empty() {
            continue;
        }
        for file in of_file {
            report.rejected_total -= report.rejected_per_file.remove(&file).unwrap_or(0);
        }
        report.rejections.retain(|r| !of_this(&r.file));
        report.reject(Rejection {
            file: label,
            line: None,
            column: None,
            item: None,
            field: None,
            message,
            hint: Some(
                "import a file once; to keep the same results as another variant, pass --variant"
                    .into(),
            ),
        });
    }
}

/// One input as opened: a file, or a folder's files.
enum Input {
    File(File, u64),
    Folder(FolderInput),
}

/// A file archived beside a folder input's items file.
struct Companion {
    /// Its name in the archive.
    stored: String,
    /// Where it was opened.
    path: PathBuf,
    file: File,
    bytes: u64,
}

/// A folder's files: the items file and the others, sorted by stored name, with the
/// header roles of a unit's.
struct FolderInput {
    items_file: String,
    items: File,
    /// Where the items file was opened.
    items_path: PathBuf,
    companions: Vec<Companion>,
    /// A unit's header files: (role, stored name).
    roles: Vec<(&'static str, String)>,
    bytes: u64,
}

impl Input {
    fn bytes(&self) -> u64 {
        match self {
            Input::File(_, bytes) | Input::Folder(FolderInput { bytes, .. }) => *bytes,
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
    // Each stored name in lower case, and the name it was given: two names may store as
    // one, or as two that differ only in letter case (one file on macOS and Windows).
    let mut stored_names: HashMap<String, String> = HashMap::new();
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
        let stored = layout::stored_basename(&name);
        if let Some(other) = stored_names.insert(stored.to_lowercase(), name.clone()) {
            return Err(usage(
                format!(
                    "{} holds {other:?} and {name:?}, which would be stored under one name, or two that differ only in letter case",
                    path.display()
                ),
                "a stored name keeps only characters safe on every filesystem, no trailing dot or space, and is one file whatever the letter case; rename one of the two",
            ));
        }
        let (file, bytes) = super::open_input(&entry.path(), None).map_err(|error| {
            match error {
                ArchiveError::Io(io) if io.source.raw_os_error() == Some(rustix::io::Errno::MFILE.raw_os_error()) => usage(
                    format!(
                        "{} holds more files than this process may keep open ({} opened)",
                        path.display(),
                        entries.len()
                    ),
                    "babel holds a run folder's files open while it imports them; raise the limit (`ulimit -n`) and import again",
                ),
                other => other,
            }
        })?;
        entries.push(Companion {
            stored,
            path: entry.path(),
            file,
            bytes,
        });
    }
    entries.sort_by(|a, b| a.stored.cmp(&b.stored));
    let total = entries.iter().map(|companion| companion.bytes).sum();
    let Some(at) = entries
        .iter()
        .position(|companion| companion.stored == items_file)
    else {
        return Err(usage(
            format!("{} has no {items_file}", path.display()),
            "is this a complete run folder? the items are read from that file",
        ));
    };
    let items = entries.remove(at);
    Ok(Input::Folder(FolderInput {
        items_file: items_file.to_owned(),
        items: items.file,
        items_path: items.path,
        companions: entries,
        roles: Vec::new(),
        bytes: total,
    }))
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

impl FileImport<'_, '_> {
    fn import_context(&self) -> ImportContext<'_> {
        ImportContext {
            run: self.context,
            options: &self.options.adapter,
            source: SourceFile {
                raw_path: &self.plan.raw_rel,
                basename: self.plan.given_name,
                folder: self
                    .plan
                    .given_path
                    .parent()
                    .and_then(Path::file_name)
                    .and_then(|name| name.to_str())
                    .unwrap_or_default(),
            },
        }
    }

    fn sink<'s>(&'s self, seen: &'s mut Identities) -> Sink<'s> {
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

    /// Reads one input into its raw copy and records file, as its format's reader does.
    fn read(
        &self,
        input: Input,
        seen: &mut Identities,
        report: &mut ImportReport,
    ) -> Result<FileOutcome, ArchiveError> {
        // A structured input is read twice, copied whole and then item by item: its
        // progress counts both passes.
        let passes = match self.options.format.adapter().reader {
            Reader::Items(_) => 2,
            Reader::Lines(_) => 1,
        };
        self.progress
            .begin_file(self.plan.given_name, passes * input.bytes());
        let outcome = match (&self.options.format.adapter().reader, input) {
            (Reader::Lines(normalize), Input::File(file, _)) => {
                self.lines(*normalize, file, seen, report)
            }
            (Reader::Items(structured), Input::File(file, _)) => {
                let source = (file, self.plan.given_path);
                self.items(structured, source, Vec::new(), &[], seen, report)
            }
            (Reader::Items(structured), Input::Folder(folder)) => self.items(
                structured,
                (folder.items, &folder.items_path),
                folder.companions,
                &folder.roles,
                seen,
                report,
            ),
            (Reader::Lines(_), Input::Folder(_)) => {
                unreachable!("only a format that reads folders opens one")
            }
        };
        self.progress.end_file();
        outcome
    }

    /// The manifest entry of an imported file, which the report lists too.
    fn entry(
        &self,
        outcome: FileOutcome,
        planned: &Planned,
        report: &mut ImportReport,
    ) -> ImportEntry {
        let options = self.options;
        report.files.push(ImportedFile {
            seq: planned.seq,
            given: self.plan.given_path.to_path_buf(),
            raw_path: self.plan.raw_rel.clone(),
            records: outcome.records.count,
        });
        let folder = folder_of(&planned.raw);
        let companions: Vec<FileEntry> = (outcome.companions.into_iter())
            .map(|(name, digest)| FileEntry {
                path: format!("{folder}/{name}"),
                sha256: digest.sha256,
                bytes: digest.bytes,
            })
            .collect();
        ImportEntry {
            seq: planned.seq,
            format: options.format.name().into(),
            source_basename: planned.given.clone(),
            raw: FileEntry {
                path: planned.raw.clone(),
                sha256: outcome.raw.sha256,
                bytes: outcome.raw.bytes,
            },
            companions,
            records: RecordsEntry {
                path: planned.records.clone(),
                ..outcome.records
            },
            breakdown: outcome.breakdown,
            variant_override: options.adapter.variant.clone(),
            id_field: options.adapter.id_field.as_ref().map(|f| f.to_string()),
            options: options.recorded_options(),
            normalizer_version: options.format.normalizer_version().into(),
            producer: outcome.producer,
            babel_version: env!("CARGO_PKG_VERSION").into(),
            imported_at: now_rfc3339(),
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

    /// Copies `source` (opened at `source_path`) whole to the new file `to`, hashing what
    /// it writes and reporting progress: the digest is of the bytes the archive holds.
    /// `scan` reads those bytes meanwhile on a thread of its own
    /// ([`CopiedFile::copy_hashed`]).
    fn copy_whole<T: Send>(
        &self,
        (mut source, source_path): (File, &Path),
        to: &Path,
        scan: impl FnOnce(crate::durable::Copied) -> T + Send,
    ) -> Result<(crate::durable::ContentDigest, T), ArchiveError> {
        let progress = self.progress;
        let (copy, digest, scanned) = CopiedFile::copy_hashed(
            to,
            &mut source,
            source_path,
            |bytes| progress.advance(bytes),
            scan,
        )?;
        copy.finish()?;
        Ok((digest, scanned))
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
}

/// The identity set of the records already in the run.
fn existing_identities(
    session: &WriteSession<'_>,
    run: &RunId,
    manifest: &RunManifest,
) -> Result<Identities, ArchiveError> {
    // Sized by the manifest's count, but no further ahead than the sink reserves: the
    // set grows by doubling if the records files hold more (a run of millions of records
    // rebuilds its table a few times more), and a count the files do not hold costs
    // nothing.
    let mut seen =
        Identities::with_capacity(manifest.record_count().min(sink::RESERVE_AHEAD as u64) as usize);
    let strict = manifest.is_strict();
    for entry in &manifest.imports {
        let mut rows = 0;
        for batch in read::batches(session.archive(), run, entry, Columns::KEY)? {
            let batch = batch?;
            rows += batch.len() as u64;
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
        // The files' hashes were checked against the manifest, and the manifest against
        // the history; its counts are checked here, where every row is read anyway.
        if rows != entry.records.count {
            return Err(ArchiveError::Damaged {
                path: session
                    .layout()
                    .resolve(&run_relative(run, layout::MANIFEST)),
                reason: format!(
                    "import {} registers {} records, but {} (whose SHA-256 is the one registered) holds {rows}; the history records the manifest as it is, so the history was rewritten with it; nothing was written",
                    entry.seq, entry.records.count, entry.records.path
                ),
            });
        }
    }
    Ok(seen)
}
