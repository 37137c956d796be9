//! The archive side of `babel matrix`: selects the strict runs of one item bank (named, or
//! a release's), checks that they were measured under one protocol, streams their records
//! into the pure [`crate::matrix`] builder and hands back the matrix; then writes the matrix
//! and its item sidecar, both outside the archive, all or nothing.
//!
//! Reads the archive only; the two files it writes are derived, like comparison reports,
//! and go through [`crate::archive::layout::Layout::derived_destination`] and [`durable::write_new_atomically`].

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::contract::{BenchmarkContract, NotComparable, check_comparable};
use super::payload::{ItemBank, Payload};
use super::{ArtifactError, Kind, load, release_members};
use crate::archive::layout::{self, RunId};
use crate::archive::manifest::RunManifest;
use crate::archive::read;
use crate::archive::records::{Column, Columns};
use crate::archive::{Archive, ArchiveError};
use crate::durable::{self, io_at};
use crate::matrix::{InstanceKey, ItemColumn, MatrixBuilder, Observed, ResponseMatrix, RunRow};

/// Which runs fill the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunSelection {
    /// These runs, in this order.
    Runs(Vec<RunId>),
    /// The runs of this release that pin the bank, in release order.
    Release(String),
}

/// What `babel matrix` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixRequest {
    /// The item bank ID.
    pub bank: String,
    pub runs: RunSelection,
    /// The variant whose records fill the cells (`original` by default).
    pub variant: String,
    /// The filter whose records fill the cells; the protocol's correctness filter when
    /// not given.
    pub filter: Option<String>,
    /// The repeat whose records fill the cells.
    pub repeat: u64,
}

/// A built matrix and how it was selected.
#[derive(Debug, Clone)]
pub struct BuiltMatrix {
    pub matrix: ResponseMatrix,
    /// The runs it holds, in row order.
    pub runs: Vec<String>,
    /// The filter used.
    pub filter: String,
    /// Records that matched no instance of the bank (always 0 for intact strict runs).
    pub outside_bank: u64,
}

/// A matrix that cannot be built from what the archive holds.
fn refuse(message: String, hint: &str) -> ArchiveError {
    ArtifactError::Matrix {
        message,
        hint: Some(hint.to_owned()),
    }
    .into()
}

/// A selection of runs or records that makes no matrix: a usage error (exit 2), as
/// compare and panel refuse theirs.
fn refuse_selection(message: String, hint: &str) -> ArchiveError {
    ArchiveError::Usage {
        message,
        hint: Some(hint.to_owned()),
    }
}

/// What the matrix reads of each record: its identity, correctness and source.
const OBSERVATION: Columns = Columns::IDENTITY
    .with(Columns::of(&[Column::Correct]))
    .with(Columns::SOURCE);

fn selected_runs(
    archive: &Archive,
    request: &MatrixRequest,
    bank_sha: &str,
) -> Result<Vec<RunManifest>, ArchiveError> {
    match &request.runs {
        RunSelection::Runs(runs) => {
            if runs.is_empty() {
                return Err(refuse_selection(
                    "no runs were selected".into(),
                    "name runs with --runs R1,R2 or a release with --release ID",
                ));
            }
            // A run named twice would be two respondents with the same subject_id.
            let mut seen = HashSet::new();
            if let Some(repeated) = runs.iter().find(|run| !seen.insert(*run)) {
                return Err(ArchiveError::Usage {
                    message: format!("run {repeated} is named twice in --runs"),
                    hint: Some(
                        "name each run once: a run is one respondent per language and script"
                            .into(),
                    ),
                });
            }
            runs.iter().map(|run| archive.run_manifest(run)).collect()
        }
        RunSelection::Release(release) => {
            let members = release_members(archive, release)?;
            let mut manifests = Vec::new();
            for pin in &members.runs {
                let run = RunId::parse(&pin.run_id)?;
                let path = archive.layout().run_dir(&run).join(layout::MANIFEST);
                let found = durable::digest_file(&path)?.sha256;
                if found != pin.manifest_sha256 {
                    return Err(refuse(
                        format!(
                            "release {release:?} pins run {run} at manifest SHA-256 {}, but it now has {found}",
                            pin.manifest_sha256
                        ),
                        "`babel validate` lists what changed",
                    ));
                }
                let manifest = archive.run_manifest(&run)?;
                let pins_bank = BenchmarkContract::of(&manifest.metadata)
                    .ok()
                    .flatten()
                    .is_some_and(|c| {
                        c.item_bank.id == request.bank && c.item_bank.sha256 == bank_sha
                    });
                if pins_bank {
                    manifests.push(manifest);
                }
            }
            if manifests.is_empty() {
                return Err(refuse_selection(
                    format!(
                        "release {release:?} holds no strict run of item bank {:?}",
                        request.bank
                    ),
                    "`babel artifact show release ID` lists its runs and their contracts",
                ));
            }
            Ok(manifests)
        }
    }
}

fn columns(bank: &ItemBank) -> (Vec<ItemColumn>, Vec<(InstanceKey, usize)>) {
    let mut items = Vec::with_capacity(bank.items.len());
    let mut instances = Vec::new();
    for (column, item) in bank.items.iter().enumerate() {
        items.push(ItemColumn {
            id: item.id.clone(),
            family: item.family.clone(),
            split: item.split.clone(),
            groups: item.groups.clone(),
        });
        for instance in &item.instances {
            instances.push((
                (
                    instance.language.clone(),
                    instance.script.clone(),
                    instance.question_id.clone(),
                ),
                column,
            ));
        }
    }
    (items, instances)
}

/// Builds the response matrix of `request`. Every run must be a strict run pinning the
/// bank, and all of them the same protocol (the comparison rule); cells come from the
/// records of the selected variant, filter and repeat, one record per cell at most.
pub fn build(archive: &Archive, request: &MatrixRequest) -> Result<BuiltMatrix, ArchiveError> {
    let registered = load(archive, Kind::ItemBank, &request.bank)?;
    let Payload::ItemBank(bank) = &registered.payload else {
        unreachable!("load parses an item bank payload for Kind::ItemBank")
    };
    let manifests = selected_runs(archive, request, &registered.sha256)?;
    let mut contracts = Vec::with_capacity(manifests.len());
    for manifest in &manifests {
        let contract = BenchmarkContract::of(&manifest.metadata).map_err(|e| {
            refuse(
                format!("run {}: {e}", manifest.run_id),
                "`babel validate` lists what is wrong with the run",
            )
        })?;
        match contract {
            Some(c) if c.item_bank == registered.pin() => contracts.push(c),
            Some(c) => {
                return Err(refuse_selection(
                    format!(
                        "run {} pins item bank {:?} at {}, not {:?} at {}",
                        manifest.run_id,
                        c.item_bank.id,
                        c.item_bank.sha256,
                        request.bank,
                        registered.sha256
                    ),
                    "a matrix holds the strict runs of one item bank",
                ));
            }
            None => {
                return Err(refuse_selection(
                    format!("run {} is not a strict benchmark run", manifest.run_id),
                    "a matrix holds strict runs only: their records are checked against the bank at import",
                ));
            }
        }
        check_comparable(&manifests[0], manifest).map_err(NotComparable::into_archive_error)?;
    }
    // selected_runs never returns an empty list, so there is a first contract.
    let filter = match &request.filter {
        Some(filter) => filter.clone(),
        None => match load(archive, Kind::Protocol, &contracts[0].protocol.id)?.payload {
            Payload::Protocol(protocol) => protocol.correctness_filter,
            _ => unreachable!("load parses a protocol payload for Kind::Protocol"),
        },
    };
    let (items, instances) = columns(bank);
    let mut builder = MatrixBuilder::new(items, instances);
    let mut outside_bank = 0;
    for manifest in &manifests {
        let run = RunId::parse(&manifest.run_id)?;
        builder.begin_run(RunRow {
            run_id: manifest.run_id.clone(),
            model: manifest.model().to_owned(),
            checkpoint: manifest.metadata.checkpoint.clone(),
        });
        for entry in &manifest.imports {
            for batch in read::batches(archive, &run, entry, OBSERVATION)? {
                let batch = batch?;
                for row in 0..batch.len() {
                    let identity = batch.identity(row);
                    if identity.variant_id != request.variant
                        || identity.filter != filter
                        || identity.repeat_id != request.repeat
                    {
                        continue;
                    }
                    let (Some(language), Some(script)) = (identity.language, identity.script)
                    else {
                        outside_bank += 1;
                        continue;
                    };
                    let source = batch
                        .source(row)
                        .map_or_else(|error| error.to_string(), |source| source.to_string());
                    let observed = builder
                        .observe(
                            language,
                            script,
                            identity.question_id,
                            batch.correct(row),
                            &source,
                        )
                        .map_err(|e| {
                            refuse_selection(
                                e.to_string(),
                                "select one record per item with --variant, --filter and --repeat",
                            )
                        })?;
                    if observed == Observed::NotInBank {
                        outside_bank += 1;
                    }
                }
            }
        }
    }
    Ok(BuiltMatrix {
        matrix: builder.finish(),
        runs: manifests.iter().map(|m| m.run_id.clone()).collect(),
        filter,
        outside_bank,
    })
}

/// The two layouts of a matrix file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatrixFormat {
    /// `run_id,model,checkpoint,language,script,<items>` (R mirt, girth/pandas).
    Csv,
    /// py-irt's JSON Lines.
    Jsonl,
}

impl MatrixFormat {
    /// The format named `csv` or `jsonl` (also the file suffix that selects it).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "csv" => Some(Self::Csv),
            "jsonl" => Some(Self::Jsonl),
            _ => None,
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Jsonl => "jsonl",
        }
    }
}

/// One of the matrix renderers.
type Render = fn(&ResponseMatrix, &mut dyn Write) -> std::io::Result<()>;

/// Where a matrix and its item sidecar go, checked before any work is done: both outside
/// the archive, in an existing folder, and neither existing yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixDestination {
    pub format: MatrixFormat,
    /// The matrix file, its folder resolved.
    pub matrix: PathBuf,
    /// The item sidecar beside it: `responses.csv` → `responses.items.csv`.
    pub items: PathBuf,
}

impl MatrixDestination {
    /// Checks `out` and its sidecar; `format` overrides the suffix of `out`.
    pub fn check(
        archive: &Archive,
        out: &Path,
        format: Option<MatrixFormat>,
    ) -> Result<Self, ArchiveError> {
        let format = match format {
            Some(format) => format,
            None => out
                .extension()
                .and_then(|e| e.to_str())
                .and_then(MatrixFormat::parse)
                .ok_or_else(|| ArchiveError::Usage {
                    message: format!(
                        "cannot tell the format of {} from its suffix",
                        out.display()
                    ),
                    hint: Some("name the file .csv or .jsonl, or pass --format csv|jsonl".into()),
                })?,
        };
        let stem = out
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "matrix".into());
        let sidecar = out.with_file_name(format!("{stem}.items.{}", format.extension()));
        Ok(Self {
            format,
            matrix: archive.layout().derived_destination(out, false)?,
            items: archive.layout().derived_destination(&sidecar, false)?,
        })
    }

    /// Writes the matrix, then its sidecar, each atomically and without replacing
    /// anything. When the sidecar cannot be written the matrix is removed again, so a
    /// failure leaves neither file (only a process killed between the two renames can).
    pub fn write(&self, matrix: &ResponseMatrix) -> Result<(), ArchiveError> {
        let (body, items): (Render, Render) = match self.format {
            MatrixFormat::Csv => (ResponseMatrix::write_csv, ResponseMatrix::write_items_csv),
            MatrixFormat::Jsonl => (
                ResponseMatrix::write_jsonl,
                ResponseMatrix::write_items_jsonl,
            ),
        };
        write_file(&self.matrix, matrix, body)?;
        let Err(error) = write_file(&self.items, matrix, items) else {
            return Ok(());
        };
        match fs::remove_file(&self.matrix) {
            Ok(()) => Err(error),
            Err(cleanup) => Err(refuse(
                format!(
                    "{error}; and {} could not be removed again ({cleanup})",
                    self.matrix.display()
                ),
                "remove the matrix file by hand before writing it again",
            )),
        }
    }
}

fn write_file(dest: &Path, matrix: &ResponseMatrix, render: Render) -> Result<(), ArchiveError> {
    durable::write_new_atomically(dest, |out| {
        render(matrix, out).map_err(|e| ArchiveError::from(io_at("writing", dest)(e)))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::ItemColumn;

    fn small_matrix() -> ResponseMatrix {
        let item = ItemColumn {
            id: "i1".into(),
            family: None,
            split: None,
            groups: Default::default(),
        };
        let mut builder =
            MatrixBuilder::new(vec![item], [(("en".into(), "Latn".into(), "q1".into()), 0)]);
        builder.begin_run(RunRow {
            run_id: "r1".into(),
            model: "m".into(),
            checkpoint: None,
        });
        builder
            .observe("en", "Latn", "q1", Some(true), "a:1")
            .unwrap();
        builder.finish()
    }

    #[test]
    fn a_failed_sidecar_write_leaves_neither_file_and_keeps_what_was_there() {
        // ARTIFACTS.md: "Neither file may exist; both are written atomically." A sidecar that
        // appears after the destinations were checked makes its no-replace write fail.
        let dir = tempfile::tempdir().unwrap();
        let destination = MatrixDestination {
            format: MatrixFormat::Csv,
            matrix: dir.path().join("m.csv"),
            items: dir.path().join("m.items.csv"),
        };
        fs::write(&destination.items, "someone else's file\n").unwrap();
        assert!(destination.write(&small_matrix()).is_err());
        assert!(
            destination.matrix.symlink_metadata().is_err(),
            "the matrix written first is removed again"
        );
        assert_eq!(
            fs::read_to_string(&destination.items).unwrap(),
            "someone else's file\n"
        );
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["m.items.csv"], "no temporary file is left either");
    }

    #[test]
    fn both_files_are_written_when_nothing_fails() {
        let dir = tempfile::tempdir().unwrap();
        let destination = MatrixDestination {
            format: MatrixFormat::Jsonl,
            matrix: dir.path().join("m.jsonl"),
            items: dir.path().join("m.items.jsonl"),
        };
        let matrix = small_matrix();
        destination.write(&matrix).unwrap();
        let mut expected = Vec::new();
        matrix.write_jsonl(&mut expected).unwrap();
        assert_eq!(fs::read(&destination.matrix).unwrap(), expected);
        let mut expected = Vec::new();
        matrix.write_items_jsonl(&mut expected).unwrap();
        assert_eq!(fs::read(&destination.items).unwrap(), expected);
    }
}
