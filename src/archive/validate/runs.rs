//! Validation of runs: each run's manifest (strict JSON, canonical bytes, schema, layout of
//! its paths); each raw, records and attachment file (present, regular, size, SHA-256);
//! each record read back strictly (schema v1, its run and model, its source file and
//! the item it points at, through the raw file's `inputs` shape); duplicate identities; record counts and breakdowns; files in the
//! run folder that no manifest registers.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{BufReader, Seek};
use std::path::Path;

use super::Collector;
use crate::adapters::{Format, Reader};
use crate::archive::layout::{self, RunId, run_relative};
use crate::archive::manifest::{
    BreakdownCounter, CountEntry, ImportEntry, RUN_MANIFEST_FORMAT, RunManifest,
};
use crate::archive::records::{Batch, Column, Columns, RecordsFile};
use crate::archive::{Archive, ArchiveError, read_json_object};
use crate::canonical_json::{is_canonical, to_canonical_bytes};
use crate::durable::{ContentDigest, HashingReader, io_at};
use crate::inputs::Index;
use crate::parallel;
use crate::record::{DigestMap, KeyDigest, Locator};

fn load_manifest(
    archive: &Archive,
    run: &RunId,
    out: &mut Collector,
) -> Result<Option<RunManifest>, ArchiveError> {
    let relative = run_relative(run, layout::MANIFEST);
    let path = archive.layout().resolve(&relative);
    let (bytes, value) = match read_json_object(&path) {
        Ok(read) => read,
        Err(ArchiveError::Damaged { reason, .. }) => {
            out.add(relative, None, "manifest", reason);
            return Ok(None);
        }
        Err(other) => return Err(other),
    };
    out.files += 1;
    if !is_canonical(&bytes, &value) {
        out.add(
            &relative,
            None,
            "canonical",
            "the manifest is not RFC 8785 canonical JSON followed by LF",
        );
    }
    let manifest: RunManifest = match serde_json::from_value(value.clone()) {
        Ok(manifest) => manifest,
        Err(error) => {
            out.add(
                relative,
                None,
                "manifest",
                format!("not a run manifest: {error}"),
            );
            return Ok(None);
        }
    };
    let mut problem = |message: String| out.add(&relative, None, "manifest", message);
    if manifest.format != RUN_MANIFEST_FORMAT || manifest.schema_version != 1 {
        problem(format!(
            "unknown manifest format {:?} version {}",
            manifest.format, manifest.schema_version
        ));
    }
    if manifest.run_id != run.as_str() {
        problem(format!(
            "it names run {:?} but lives in runs/{run}",
            manifest.run_id
        ));
    }
    for message in manifest.contract_problems() {
        problem(message);
    }
    // A key babel does not write, or a value it writes otherwise, reads into the same
    // structure but does not write back the same.
    if manifest
        .to_bytes()
        .is_ok_and(|written| written != to_canonical_bytes(&value).unwrap_or_default())
    {
        problem("it holds fields babel does not write (missing keys read as null?)".into());
    }
    let unsafe_layout = manifest.layout_problems();
    let broken = !unsafe_layout.is_empty();
    for message in unsafe_layout {
        problem(message);
    }
    if broken {
        // Its paths cannot be trusted, so none of its files is opened.
        return Ok(None);
    }
    Ok(Some(manifest))
}

/// Opens a registered file for checking: it must be a regular file, not a symlink.
fn open_registered(archive: &Archive, relative: &str, out: &mut Collector) -> Option<File> {
    let path = archive.layout().resolve(relative);
    match path.symlink_metadata() {
        Err(_) => {
            out.add(relative, None, "missing", "a registered file is missing");
            None
        }
        Ok(meta) if !meta.file_type().is_file() => {
            out.add(
                relative,
                None,
                "file-type",
                "a registered file is not a regular file (a symlink or folder)",
            );
            None
        }
        Ok(_) => match File::open(&path) {
            Ok(file) => {
                out.files += 1;
                Some(file)
            }
            Err(error) => {
                out.add(relative, None, "unreadable", error.to_string());
                None
            }
        },
    }
}

fn compare_digest(
    relative: &str,
    expected_sha: &str,
    expected_bytes: u64,
    found: &crate::durable::ContentDigest,
    out: &mut Collector,
) {
    if found.bytes != expected_bytes {
        out.add(
            relative,
            None,
            "size",
            format!(
                "{} bytes, but the manifest registers {expected_bytes}",
                found.bytes
            ),
        );
    }
    if found.sha256 != expected_sha {
        out.add(
            relative,
            None,
            "sha256",
            format!(
                "SHA-256 {} does not match the registered {expected_sha}",
                found.sha256
            ),
        );
    }
}

/// Where the items of a raw file are: what a record's `source` locator may point at.
enum RawIndex {
    /// The items of the file, as its shape locates them.
    Shape(Index),
    /// The file cannot be read as its format says; no locator resolves.
    Unreadable(String),
}

impl RawIndex {
    /// Why `locator` does not resolve in the raw file `raw_rel`, if it does not.
    fn problem(&self, locator: &Locator, raw_rel: &str) -> Option<String> {
        let resolves = match self {
            RawIndex::Shape(index) => index.resolves(locator),
            RawIndex::Unreadable(reason) => {
                return Some(format!(
                    "source {raw_rel}{} cannot be resolved: the raw file {reason}",
                    locator.suffix()
                ));
            }
        };
        match (resolves, locator) {
            (Some(true), _) => None,
            (Some(false), Locator::Line(line)) => Some(format!(
                "source line {line} is not a nonblank line of {raw_rel}"
            )),
            (Some(false), Locator::Member(name)) => Some(format!(
                "source member {name:?} is not an item member of {raw_rel}"
            )),
            (Some(false), Locator::Pointer(pointer)) => Some(format!(
                "source pointer {pointer:?} is not an item of {raw_rel}"
            )),
            (None, _) => Some(format!(
                "source {raw_rel}{} is not the kind of locator {raw_rel}'s format has",
                locator.suffix()
            )),
        }
    }
}

/// Hashes a raw file and indexes its items as its import's format reads them (as JSON
/// Lines for a format this babel does not know, which the manifest check reports). A
/// structured file is hashed apart from its indexing, in two reads: ZIP and Parquet are
/// read from their end, and every shape indexes a file the same way, from its start.
fn scan_raw(
    mut file: File,
    relative: &str,
    entry: &ImportEntry,
) -> Result<(RawIndex, ContentDigest), ArchiveError> {
    let path = Path::new(relative);
    let layout = match Format::parse(&entry.format).map(|f| &f.adapter().reader) {
        Some(Reader::Items(structured)) => (structured.layout)(&entry.source_basename),
        _ => return scan_lines(file, path),
    };
    let mut hashing = HashingReader::new(file.try_clone().map_err(io_at("reading", path))?);
    std::io::copy(&mut hashing, &mut std::io::sink()).map_err(io_at("reading", path))?;
    file.rewind().map_err(io_at("reading", path))?;
    let index = match layout {
        Ok(layout) => layout
            .shape()
            .index(file)
            .map_or_else(RawIndex::Unreadable, RawIndex::Shape),
        Err(reason) => RawIndex::Unreadable(reason),
    };
    Ok((index, hashing.finish()))
}

fn scan_lines(file: File, path: &Path) -> Result<(RawIndex, ContentDigest), ArchiveError> {
    let mut reader = BufReader::with_capacity(256 * 1024, HashingReader::new(file));
    let index = crate::inputs::lines::index(&mut reader).map_err(io_at("reading", path))?;
    Ok((RawIndex::Shape(index), reader.into_inner().finish()))
}

/// What checking one records file found.
struct RecordsOutcome {
    digest: ContentDigest,
    /// Rows in the file (valid records or not); `None` when the file is not a records file.
    rows: Option<u64>,
    /// Records that passed the schema.
    records: u64,
    /// Findings about the file as a whole.
    file_findings: Vec<(&'static str, String)>,
    /// Findings about single rows: (row, check, message).
    findings: Vec<(u64, &'static str, String)>,
    /// (row, source locator) pairs to check against the raw file.
    sources: Vec<(u64, Locator)>,
    breakdown: Vec<CountEntry>,
}

/// What one import's records must agree with.
struct RecordsContext<'a> {
    run: &'a RunId,
    model: &'a str,
    strict: bool,
    raw_rel: &'a str,
    seq: u64,
}

/// Checks one records file: hashed whole (on its own thread), its schema, and every row
/// read strictly, on all cores, in order.
fn check_records(
    file: File,
    archive: &Archive,
    records_rel: &str,
    context: &RecordsContext<'_>,
    identities: &mut DigestMap<(u64, u64)>,
) -> Result<RecordsOutcome, ArchiveError> {
    let path = Path::new(records_rel);
    // Its own open file: a cloned descriptor would share the read offset with the
    // Parquet reader's.
    let hashed = std::thread::spawn(move || -> std::io::Result<ContentDigest> {
        let mut reader = HashingReader::new(file);
        std::io::copy(&mut reader, &mut std::io::sink())?;
        Ok(reader.finish())
    });
    let mut outcome = RecordsOutcome {
        digest: ContentDigest {
            sha256: String::new(),
            bytes: 0,
        },
        rows: None,
        records: 0,
        file_findings: Vec::new(),
        findings: Vec::new(),
        sources: Vec::new(),
        breakdown: Vec::new(),
    };
    let second = archive.layout().resolve(records_rel);
    let second = File::open(&second).map_err(io_at("opening", &second))?;
    match RecordsFile::open(second) {
        Err(reason) => outcome.file_findings.push(("records", reason)),
        Ok(records) => check_rows(records, context, identities, &mut outcome)?,
    }
    outcome.digest = hashed
        .join()
        .expect("hashing does not panic")
        .map_err(io_at("reading", path))?;
    Ok(outcome)
}

fn check_rows(
    records: RecordsFile,
    context: &RecordsContext<'_>,
    identities: &mut DigestMap<(u64, u64)>,
    outcome: &mut RecordsOutcome,
) -> Result<(), ArchiveError> {
    let footer_rows = records.rows();
    // A file that does not decode (a changed byte inside a compressed page) is a finding
    // about the file, not a failure of validation.
    let mut batches = match records.batches(Columns::ALL) {
        Ok(batches) => batches,
        Err(error) => {
            outcome
                .file_findings
                .push(("records", format!("the records cannot be read: {error}")));
            return Ok(());
        }
    };
    let mut breakdown = BreakdownCounter::default();
    let mut first_row = 0u64;
    let mut read_rows = 0u64;
    let mut undecodable = None;
    parallel::map_ordered(
        parallel::workers(),
        || match batches.next() {
            None => Ok(None),
            Some(Ok(batch)) => {
                let first = first_row;
                first_row += batch.len() as u64;
                Ok(Some((first, batch)))
            }
            Some(Err(error)) => {
                undecodable = Some(format!(
                    "the records cannot be read after row {first_row}: {error}"
                ));
                Ok(None)
            }
        },
        |(first, batch): (u64, Batch)| {
            (0..batch.len())
                .map(|row| check_record(&batch, row, first + row as u64 + 1, context))
                .collect::<Vec<_>>()
        },
        |checked| {
            for checked in checked {
                read_rows += 1;
                outcome.take(checked, context, identities, &mut breakdown);
            }
            Ok::<(), ArchiveError>(())
        },
    )?;
    if let Some(message) = undecodable {
        outcome.file_findings.push(("records", message));
        return Ok(());
    }
    if read_rows != footer_rows {
        outcome.file_findings.push((
            "records",
            format!("its footer says {footer_rows} rows, but {read_rows} were read"),
        ));
    }
    outcome.rows = Some(read_rows);
    outcome.breakdown = breakdown.finish();
    Ok(())
}

impl RecordsOutcome {
    /// What a worker found on one row, in file order: its findings, its identity against
    /// every earlier one, its source, and its count.
    fn take(
        &mut self,
        checked: Checked,
        context: &RecordsContext<'_>,
        identities: &mut DigestMap<(u64, u64)>,
        breakdown: &mut BreakdownCounter,
    ) {
        let (row, digest, key, source, counted, findings) = match checked {
            Checked::Unreadable { row, message } => {
                self.findings.push((row, "schema", message));
                return;
            }
            Checked::Record {
                row,
                digest,
                key,
                source,
                counted,
                findings,
            } => (row, digest, key, source, counted, findings),
        };
        self.records += 1;
        (self.findings).extend(findings.into_iter().map(|(check, m)| (row, check, m)));
        if let Some((first_seq, first_row)) = identities.insert(digest, (context.seq, row)) {
            self.findings.push((
                row,
                "duplicate",
                format!("duplicate record identity ({key}); first at row {first_row} of import {first_seq}'s records"),
            ));
        }
        if let Some(locator) = source {
            self.sources.push((row, locator));
        }
        let (benchmark, language, variant_id) = &counted;
        breakdown.add(benchmark, language.as_deref(), variant_id);
    }
}

/// What a worker found on one row of a records file.
enum Checked {
    /// The row breaks the schema: it yields no record.
    Unreadable { row: u64, message: String },
    /// A record, with what is wrong with it besides duplicates and source lines (which
    /// need the whole run and the raw file).
    Record {
        row: u64,
        digest: KeyDigest,
        key: String,
        source: Option<Locator>,
        counted: (String, Option<String>, String),
        findings: Vec<(&'static str, String)>,
    },
}

/// The row-local checks of one stored record, on its stored text.
fn check_record(batch: &Batch, row: usize, number: u64, context: &RecordsContext<'_>) -> Checked {
    if let Err(error) = batch.check_row(row) {
        return Checked::Unreadable {
            row: number,
            message: error.to_string(),
        };
    }
    let text = |column: Column| batch.text(column, row).unwrap_or_default();
    let mut findings = Vec::new();
    if text(Column::RunId) != context.run.as_str() {
        findings.push((
            "record",
            format!("run_id {:?} is not this run", text(Column::RunId)),
        ));
    }
    if text(Column::Model) != context.model {
        findings.push((
            "record",
            format!(
                "model {:?} differs from the run's model {:?}",
                text(Column::Model),
                context.model
            ),
        ));
    }
    if context.strict && batch.text(Column::Script, row).is_none() {
        findings.push((
            "record",
            "a strict benchmark run's record has no script".into(),
        ));
    }
    let source = if text(Column::SourcePath) == context.raw_rel {
        batch.locator(row).ok()
    } else {
        findings.push((
            "source",
            format!(
                "source {:?} is not this import's raw file {}",
                text(Column::SourcePath),
                context.raw_rel
            ),
        ));
        None
    };
    let identity = batch.identity(row);
    Checked::Record {
        row: number,
        digest: identity.record_digest(context.strict),
        key: identity.record_key(context.strict),
        source,
        counted: (
            identity.benchmark.to_owned(),
            identity.language.map(str::to_owned),
            identity.variant_id.to_owned(),
        ),
        findings,
    }
}

pub(super) fn validate_run(
    archive: &Archive,
    run: &RunId,
    out: &mut Collector,
) -> Result<(), ArchiveError> {
    let Some(manifest) = load_manifest(archive, run, out)? else {
        check_untracked(archive, run, None, out)?;
        return Ok(());
    };
    out.findings.extend(super::artifacts::check_run_contract(
        archive, run, &manifest,
    )?);
    let model = manifest.model().to_owned();
    let mut identities: DigestMap<(u64, u64)> = DigestMap::default();
    for entry in &manifest.imports {
        let raw_rel = run_relative(run, &entry.raw.path);
        let context = RecordsContext {
            run,
            model: &model,
            strict: manifest.is_strict(),
            raw_rel: &raw_rel,
            seq: entry.seq,
        };
        validate_import(archive, entry, &context, &mut identities, out)?;
    }
    check_whole_files(archive, run, &manifest, out)?;
    check_untracked(archive, run, Some(&manifest), out)
}

/// One import: its raw file hashed and indexed on its own thread while its records are
/// checked, then every record's source resolved in the raw file.
fn validate_import(
    archive: &Archive,
    entry: &ImportEntry,
    context: &RecordsContext<'_>,
    identities: &mut DigestMap<(u64, u64)>,
    out: &mut Collector,
) -> Result<(), ArchiveError> {
    let raw_rel = context.raw_rel;
    let records_rel = run_relative(context.run, &entry.records.path);
    let raw_file = open_registered(archive, raw_rel, out);
    let records_file = open_registered(archive, &records_rel, out);
    let (raw_outcome, records_outcome) = std::thread::scope(|scope| {
        let raw = scope.spawn(|| {
            raw_file
                .map(|file| scan_raw(file, raw_rel, entry))
                .transpose()
        });
        let records = records_file
            .map(|file| check_records(file, archive, &records_rel, context, identities))
            .transpose();
        (raw.join().expect("the raw scan does not panic"), records)
    });
    let index = match raw_outcome? {
        Some((index, digest)) => {
            compare_digest(raw_rel, &entry.raw.sha256, entry.raw.bytes, &digest, out);
            Some(index)
        }
        None => None,
    };
    let Some(outcome) = records_outcome? else {
        return Ok(());
    };
    out.records += outcome.records;
    for (check, message) in outcome.file_findings {
        out.add(&records_rel, None, check, message);
    }
    for (row, check, message) in outcome.findings {
        out.add_row(&records_rel, row, check, message);
    }
    if let Some(index) = &index {
        for (row, locator) in &outcome.sources {
            if let Some(problem) = index.problem(locator, raw_rel) {
                out.add_row(&records_rel, *row, "source", problem);
            }
        }
    }
    let records = &entry.records;
    compare_digest(
        &records_rel,
        &records.sha256,
        records.bytes,
        &outcome.digest,
        out,
    );
    if let Some(rows) = outcome.rows {
        if rows != records.count {
            let message = format!(
                "{rows} records, but the manifest registers {}",
                records.count
            );
            out.add(&records_rel, None, "count", message);
        }
        if outcome.breakdown != entry.breakdown {
            out.add(&records_rel, None, "count", "record counts per benchmark, language and variant differ from the manifest's breakdown");
        }
    }
    Ok(())
}

/// The files registered whole (a folder input's companions, the attachments): each
/// hashed against its registered digest.
fn check_whole_files(
    archive: &Archive,
    run: &RunId,
    manifest: &RunManifest,
    out: &mut Collector,
) -> Result<(), ArchiveError> {
    let companions = manifest.imports.iter().flat_map(|i| &i.companions);
    let whole_files = companions.map(|c| (&c.path, &c.sha256, c.bytes)).chain(
        manifest
            .attachments
            .iter()
            .map(|a| (&a.path, &a.sha256, a.bytes)),
    );
    for (path, sha256, bytes) in whole_files {
        let relative = run_relative(run, path);
        if let Some(file) = open_registered(archive, &relative, out) {
            let mut reader = HashingReader::new(file);
            std::io::copy(&mut reader, &mut std::io::sink())
                .map_err(io_at("reading", Path::new(&relative)))?;
            compare_digest(&relative, sha256, bytes, &reader.finish(), out);
        }
    }
    Ok(())
}

/// Reports files in the run folder that the manifest does not register.
fn check_untracked(
    archive: &Archive,
    run: &RunId,
    manifest: Option<&RunManifest>,
    out: &mut Collector,
) -> Result<(), ArchiveError> {
    let mut registered: BTreeSet<String> = BTreeSet::new();
    // The raw folders of folder inputs.
    let mut folders: BTreeSet<String> = BTreeSet::new();
    registered.insert(layout::MANIFEST.to_owned());
    if let Some(manifest) = manifest {
        for entry in &manifest.imports {
            registered.extend(entry.raw_files().map(|f| f.path.clone()));
            registered.insert(entry.records.path.clone());
            if entry.raw_is_a_folder()
                && let Some((folder, _)) = entry.raw.path.rsplit_once('/')
            {
                folders.insert(folder.to_owned());
            }
        }
        for attachment in &manifest.attachments {
            registered.insert(attachment.path.clone());
        }
    }
    let managed_dirs = [layout::RAW, layout::RECORDS, layout::ATTACHMENTS];
    let run_dir = archive.layout().run_dir(run);
    let mut stack = vec![String::new()];
    while let Some(inside) = stack.pop() {
        let dir = if inside.is_empty() {
            run_dir.clone()
        } else {
            run_dir.join(&inside)
        };
        let entries = fs::read_dir(&dir).map_err(io_at("listing", &dir))?;
        let mut names: Vec<_> = entries
            .map(|e| e.map_err(io_at("listing", &dir)))
            .collect::<Result<_, _>>()?;
        names.sort_by_key(|e| e.file_name());
        for entry in names {
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if inside.is_empty() {
                name.clone()
            } else {
                format!("{inside}/{name}")
            };
            let file_type = entry.file_type().map_err(io_at("reading", &entry.path()))?;
            if file_type.is_dir()
                && ((inside.is_empty() && managed_dirs.contains(&name.as_str()))
                    || folders.contains(&relative))
            {
                stack.push(relative);
            } else if !registered.contains(&relative) || !file_type.is_file() {
                let what = if file_type.is_dir() {
                    "a folder no manifest registers"
                } else if file_type.is_symlink() {
                    "a symlink in a managed run folder"
                } else if relative.ends_with(layout::NEW_SUFFIX) {
                    "an uncommitted manifest (an interrupted write; `babel init` removes it)"
                } else {
                    "a file no manifest registers"
                };
                out.add(run_relative(run, &relative), None, "untracked", what);
            }
        }
    }
    Ok(())
}
