//! `babel validate`: proves that everything registered is present and true, and lists
//! every problem found (not just the first), each with its path.
//!
//! Checks, per run: the manifest (strict JSON, canonical bytes, schema, layout of its
//! paths); each raw, records and attachment file (present, regular, size, SHA-256); each
//! record (schema v1, its run and model, its source file and the item it
//! points at: a nonblank line, a ZIP member, a JSON Pointer);
//! duplicate identities; record counts and per-benchmark/language/variant breakdowns;
//! files in the run folder that no manifest registers. And, for the archive: the marker,
//! its own folders (folders, not links out of ROOT), stray entries in `runs/`, a pending
//! journal, and (in `artifacts`) every
//! registered artifact and every strict run's contract. Validation reads only; it takes no
//! lock and never reruns adapters (the raw files stay the authority, records are not
//! rebuilt).

mod artifacts;
mod history;
mod runs;

use serde::Serialize;
use std::collections::HashMap;
use std::fs;
use std::path::Path;

use super::history::Head;
use super::layout::{self, Layout, RunId};
use super::{Archive, ArchiveError, journal, read_json_object};
use crate::canonical_json::is_canonical;
use crate::durable::io_at;

/// One problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// ROOT-relative path of the file (or folder) at fault.
    pub path: String,
    /// One-based line inside it, when the problem is a line (of a raw file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// One-based row inside it, when the problem is a row of a records file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<u64>,
    /// A stable name for the kind of check (`sha256`, `untracked`, ...).
    pub check: &'static str,
    pub message: String,
}

/// As `babel validate` prints it: `path:line: [check] message` (`path row N: ...` for a
/// row of a records file).
impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.row) {
            (Some(line), _) => write!(f, "{}:{line}: ", self.path)?,
            (None, Some(row)) => write!(f, "{} row {row}: ", self.path)?,
            (None, None) => write!(f, "{}: ", self.path)?,
        }
        write!(f, "[{}] {}", self.check, self.message)
    }
}

/// Something validation saw that is not damage but that the user should know: an entry
/// at ROOT that is not part of the archive, a run this copy does not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    /// ROOT-relative path it is about.
    pub path: String,
    pub message: String,
}

/// What validation looked at and found.
#[derive(Debug, Default, Serialize)]
pub struct ValidationReport {
    pub ok: bool,
    pub runs: usize,
    pub files: u64,
    pub records: u64,
    pub findings: Vec<Finding>,
    /// What is worth knowing but is not a finding (it does not make `ok` false).
    pub notes: Vec<Note>,
}

#[derive(Default)]
pub(super) struct Collector {
    findings: Vec<Finding>,
    notes: Vec<Note>,
    files: u64,
    records: u64,
}

impl Collector {
    /// What was found, over `runs` runs.
    fn report(self, runs: usize) -> ValidationReport {
        ValidationReport {
            ok: self.findings.is_empty(),
            runs,
            files: self.files,
            records: self.records,
            findings: self.findings,
            notes: self.notes,
        }
    }

    pub(super) fn add(
        &mut self,
        path: impl Into<String>,
        line: Option<u64>,
        check: &'static str,
        message: impl Into<String>,
    ) {
        self.findings.push(Finding {
            path: path.into(),
            line,
            row: None,
            check,
            message: message.into(),
        });
    }

    pub(super) fn note(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.notes.push(Note {
            path: path.into(),
            message: message.into(),
        });
    }

    pub(super) fn add_row(&mut self, path: &str, row: u64, check: &'static str, message: String) {
        self.findings.push(Finding {
            path: path.to_owned(),
            line: None,
            row: Some(row),
            check,
            message,
        });
    }
}

/// Validates the whole archive (`runs` empty) or the named runs.
pub fn validate(archive: &Archive, runs: &[RunId]) -> Result<ValidationReport, ArchiveError> {
    validate_selection(archive, runs, runs.is_empty(), None)
}

/// Validates as [`validate`] does, and also that the history still holds `since`, an
/// entry recorded earlier (the archive grew from it; nothing before it was rewritten).
pub fn validate_since(
    archive: &Archive,
    runs: &[RunId],
    since: &Head,
) -> Result<ValidationReport, ArchiveError> {
    validate_selection(archive, runs, runs.is_empty(), Some(since))
}

/// Validates the named runs and every registered artifact: what a partial Hub push
/// publishes.
pub fn validate_runs_and_registries(
    archive: &Archive,
    runs: &[RunId],
) -> Result<ValidationReport, ArchiveError> {
    validate_selection(archive, runs, true, None)
}

/// Validates a folder laid out as an archive that holds no marker and no history (a
/// bundle unpacked for verification, [`crate::bundle::verify`]): every artifact it
/// registers, and each run in it, as [`validate`] checks them. A bundle's hashes prove only
/// that it holds what its maker packed, so what it brings must pass these checks (records
/// that belong to their run, sources that resolve, counts that agree) before an archive
/// takes it in.
pub fn validate_unpacked(root: &Path) -> Result<ValidationReport, ArchiveError> {
    let archive = Archive {
        layout: Layout::new(root),
    };
    let mut out = Collector::default();
    check_folders_are_folders(&archive, &mut out);
    let registries = artifacts::check_registries(&archive)?;
    out.findings.extend(registries.findings);
    out.files += registries.files;
    // A release of artifacts alone brings no runs, and no runs folder.
    if archive.layout().runs().exists() {
        check_runs_folder(&archive, &mut out)?;
    }
    let runs = archive.run_ids()?;
    for run in &runs {
        runs::validate_run(&archive, run, &mut out)?;
    }
    Ok(out.report(runs.len()))
}

fn validate_selection(
    archive: &Archive,
    runs: &[RunId],
    registries: bool,
    since: Option<&Head>,
) -> Result<ValidationReport, ArchiveError> {
    let mut out = Collector::default();
    let layout = archive.layout();
    check_marker(archive, &mut out)?;
    check_folders_are_folders(archive, &mut out);
    check_journal(archive, &mut out);
    note_unmanaged(archive, &mut out)?;
    if registries {
        let registries = artifacts::check_registries(archive)?;
        out.findings.extend(registries.findings);
        out.files += registries.files;
    }
    let selected = if runs.is_empty() {
        check_runs_folder(archive, &mut out)?;
        archive.run_ids()?
    } else {
        for run in runs {
            if !layout.run_dir(run).join(layout::MANIFEST).is_file() {
                return Err(ArchiveError::UnknownRun {
                    run: run.to_string(),
                });
            }
        }
        runs.to_vec()
    };
    let scope = if runs.is_empty() {
        history::Scope::Whole
    } else {
        history::Scope::Runs {
            runs: &selected,
            registries,
        }
    };
    history::check(archive, scope, since, &mut out)?;
    for run in &selected {
        runs::validate_run(archive, run, &mut out)?;
    }
    Ok(out.report(selected.len()))
}

/// Names each entry at ROOT that is not part of the archive (notes, a `.env`, exported
/// files): babel never publishes or bundles it, and the user should know it is there.
fn note_unmanaged(archive: &Archive, out: &mut Collector) -> Result<(), ArchiveError> {
    let root = archive.layout().root();
    let entries = fs::read_dir(root).map_err(io_at("listing", root))?;
    let mut names: Vec<String> = entries
        .map(|entry| {
            entry
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .map_err(io_at("listing", root))
        })
        .collect::<Result<_, _>>()?;
    names.sort();
    for name in names {
        if !layout::is_managed_at_root(&name) {
            out.note(
                name,
                "not part of the archive: babel never publishes, bundles or validates it",
            );
        }
    }
    Ok(())
}

/// The marker was read when the archive was opened; what is left to check is its bytes.
fn check_marker(archive: &Archive, out: &mut Collector) -> Result<(), ArchiveError> {
    let (bytes, value) = match read_json_object(&archive.layout().marker()) {
        Ok(read) => read,
        Err(ArchiveError::Damaged { reason, .. }) => {
            out.add(layout::MARKER, None, "marker", reason);
            return Ok(());
        }
        Err(other) => return Err(other),
    };
    out.files += 1;
    if let Err(ArchiveError::BadMarker { reason, .. }) = Archive::open(archive.layout().root()) {
        out.add(layout::MARKER, None, "marker", reason);
    }
    if !is_canonical(&bytes, &value) {
        out.add(
            layout::MARKER,
            None,
            "canonical",
            "the archive marker is not RFC 8785 canonical JSON followed by LF",
        );
    }
    Ok(())
}

/// The archive's own folders (runs, the history, the registries, the operational folder)
/// must be folders inside ROOT: through a link in their place babel would read, validate
/// and publish files that lie outside it.
fn check_folders_are_folders(archive: &Archive, out: &mut Collector) {
    let folders = [layout::RUNS, super::history::HISTORY, layout::OPERATIONAL]
        .into_iter()
        .chain(layout::REGISTRIES);
    for folder in folders {
        let linked = archive
            .layout()
            .resolve(folder)
            .symlink_metadata()
            .is_ok_and(|meta| meta.file_type().is_symlink());
        if linked {
            out.add(
                folder,
                None,
                "layout",
                "a symbolic link, not a folder: babel reads and publishes only what lies inside ROOT; \
                 put the folder it points to in its place",
            );
        }
    }
}

fn check_journal(archive: &Archive, out: &mut Collector) {
    let path = format!("{}/journal.json", layout::OPERATIONAL);
    match journal::pending(archive.layout()) {
        Ok(None) => {}
        Ok(Some(entry)) => out.add(
            path,
            None,
            "journal",
            format!(
                "an interrupted or running write ({}) is pending; `babel init` or the next write finishes or undoes it",
                entry.operation
            ),
        ),
        Err(error) => out.add(path, None, "journal", error.to_string()),
    }
}

fn check_runs_folder(archive: &Archive, out: &mut Collector) -> Result<(), ArchiveError> {
    let runs = archive.layout().runs();
    let Ok(entries) = fs::read_dir(&runs) else {
        out.add(layout::RUNS, None, "layout", "the runs folder is missing");
        return Ok(());
    };
    let mut folded: HashMap<String, String> = HashMap::new();
    let mut names: Vec<_> = entries
        .map(|e| e.map_err(io_at("listing", &runs)))
        .collect::<Result<_, _>>()?;
    names.sort_by_key(|e| e.file_name());
    for entry in names {
        let name = entry.file_name().to_string_lossy().into_owned();
        let relative = format!("{}/{name}", layout::RUNS);
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if !is_dir {
            out.add(relative, None, "untracked", "not a run folder");
        } else if let Err(violation) = RunId::parse(&name) {
            out.add(relative, None, "layout", violation.to_string());
        } else if !entry.path().join(layout::MANIFEST).is_file() {
            out.add(relative, None, "layout", "a run folder without manifest.json: restore the manifest from a copy of the archive (`babel hub-pull` restores a published one), or remove the folder if it holds nothing you need");
        } else if let Some(first) = folded.insert(name.to_ascii_lowercase(), name.clone()) {
            out.add(
                relative,
                None,
                "layout",
                format!("differs from run {first:?} only in letter case; the two collide on macOS and Windows"),
            );
        }
    }
    Ok(())
}
