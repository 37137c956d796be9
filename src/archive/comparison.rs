//! The archive's part of `babel compare`: selecting the two sides (a run and a variant
//! each, with the run's manifest), the rule saying whether they may be compared, reading
//! their rows (the join columns only, both runs at once), reading the full records of a
//! report's items back, and keeping derived reports out of the archive.
//!
//! Reads only, and takes no lock: a comparison never changes or reseals a run. The join
//! itself is `crate::compare`'s (pure); this module only hands it rows.
//!
//! Full records are read for a report in one sequential pass over each run: every row of
//! a side is written, as its JSON line, to an unnamed temporary file (the spill), and a
//! report item reads its two lines back by offset. Items are written in identity order,
//! records files hold rows in input order; the spill keeps memory flat whatever the two
//! orders are, at the cost of one temporary copy on disk.

use serde_json::Value;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::artifacts::contract::NotComparable;
use super::layout::RunId;
use super::manifest::RunManifest;
use super::read;
use super::records::{Batch, Column, Columns, RecordsFile};
use super::{Archive, ArchiveError};
use crate::compare::Rows;
use crate::compare::keys::{Interner, RowKey};
use crate::durable::io_at;
use crate::jsonl::{self, NonFinitePolicy};
use crate::record::{Identity, IdentityScope, Record};

/// The variant the baseline side selects unless `--baseline` says otherwise.
pub const DEFAULT_BASELINE_VARIANT: &str = "original";
/// The variant the variant side selects within one run unless `--variant` says otherwise.
pub const DEFAULT_VARIANT_VARIANT: &str = "rephrased";

/// One side as asked for: a run and the variant of its records to take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideRequest {
    pub run: RunId,
    pub variant_id: String,
}

/// One selected side: the run, the variant, and the run's manifest (its metadata decides
/// whether the sides may be compared).
#[derive(Debug, Clone)]
pub struct ComparisonSide {
    pub run: RunId,
    pub variant_id: String,
    pub manifest: RunManifest,
}

/// The two sides of a comparison: `baseline` is compared against `variant`.
#[derive(Debug, Clone)]
pub struct ComparisonSides {
    pub baseline: ComparisonSide,
    pub variant: ComparisonSide,
}

/// The join columns of a run: its batches, and which records file each came from.
struct RunRows {
    batches: Vec<Batch>,
    /// Each records file and the index of its first batch, in order.
    files: Vec<(PathBuf, usize)>,
}

/// The rows of one side: the batches of its run (join columns only) and which of their
/// rows hold the side's variant, in file order.
pub struct SideRows {
    run: Arc<RunRows>,
    rows: Vec<(u32, u32)>,
}

impl SideRows {
    fn at(&self, row: usize) -> (&Batch, usize) {
        let (batch, offset) = self.rows[row];
        (&self.run.batches[batch as usize], offset as usize)
    }

    /// The source of a row, read again from its records file (the join does not keep
    /// sources; only a message about a row needs one).
    fn read_source(&self, row: usize) -> Result<String, String> {
        let (batch_index, offset) = self.rows[row];
        let (path, first) = self
            .run
            .files
            .iter()
            .rev()
            .find(|(_, first)| *first <= batch_index as usize)
            .ok_or("no records file")?;
        let file = File::open(path).map_err(|e| e.to_string())?;
        let columns = Columns::of(&[Column::SourcePath, Column::SourceLine]);
        let batch = RecordsFile::open(file)?
            .batches(columns)
            .map_err(|e| e.to_string())?
            .nth(batch_index as usize - first)
            .ok_or("the records file is shorter than when it was read")?
            .map_err(|e| e.to_string())?;
        let offset = offset as usize;
        Ok(format!(
            "{}:{}",
            batch.text(Column::SourcePath, offset).unwrap_or_default(),
            batch
                .integer(Column::SourceLine, offset)
                .unwrap_or_default()
        ))
    }
}

impl Rows for SideRows {
    fn len(&self) -> usize {
        self.rows.len()
    }

    fn keys(&self, interner: &Interner) -> Vec<RowKey> {
        let mut keys = Vec::with_capacity(self.rows.len());
        let mut rows = self.rows.iter().peekable();
        let mut row_number = 0u32;
        while let Some(&&(batch_index, _)) = rows.peek() {
            let batch = &self.run.batches[batch_index as usize];
            let symbols = |column| batch.per_label(column, |label| interner.intern(label));
            let (benchmark, language, script, filter) = (
                symbols(Column::Benchmark),
                symbols(Column::Language),
                symbols(Column::Script),
                symbols(Column::Filter),
            );
            let stable = batch.per_label(Column::IdentityScope, |scope| {
                scope == Some(IdentityScope::Stable.as_str())
            });
            while let Some(&&(index, row)) = rows.peek() {
                if index != batch_index {
                    break;
                }
                rows.next();
                let row = row as usize;
                keys.push(RowKey {
                    question: interner.question(
                        benchmark[row],
                        language[row],
                        script[row],
                        batch.text(Column::QuestionId, row).unwrap_or_default(),
                    ),
                    filter: filter[row],
                    benchmark: benchmark[row],
                    language: language[row],
                    repeat_id: batch.integer(Column::RepeatId, row).unwrap_or_default(),
                    row: row_number,
                    correct: batch.correct(row),
                    stable: stable[row],
                });
                row_number += 1;
            }
        }
        keys
    }

    fn identity(&self, row: usize) -> Identity<'_> {
        let (batch, offset) = self.at(row);
        batch.identity(offset)
    }

    fn source(&self, row: usize) -> String {
        self.read_source(row)
            .unwrap_or_else(|reason| format!("row {} of the side ({reason})", row + 1))
    }
}

/// The rows of both sides.
pub struct SidesRows {
    pub baseline: SideRows,
    pub variant: SideRows,
}

/// Reads every records file of `side`'s run, the join columns only; a row whose
/// `identity_scope` is neither value makes the run damaged.
fn read_run(archive: &Archive, side: &ComparisonSide) -> Result<RunRows, ArchiveError> {
    let mut run = RunRows {
        batches: Vec::new(),
        files: Vec::new(),
    };
    for entry in &side.manifest.imports {
        let path = archive
            .layout()
            .resolve(&super::layout::run_relative(&side.run, &entry.records.path));
        run.files.push((path.clone(), run.batches.len()));
        for batch in read::batches(archive, &side.run, entry, Columns::JOIN)? {
            let batch = batch?;
            for row in 0..batch.len() {
                if let Err(error) = batch.identity_scope(row) {
                    return Err(ArchiveError::Damaged {
                        path,
                        reason: format!("row {}: {error}", row + 1),
                    });
                }
            }
            run.batches.push(batch);
        }
    }
    Ok(run)
}

fn side_rows(run: &Arc<RunRows>, variant_id: &str) -> SideRows {
    let mut rows = Vec::new();
    for (index, batch) in run.batches.iter().enumerate() {
        rows.extend(
            batch
                .rows_with(Column::VariantId, variant_id)
                .into_iter()
                .map(|row| (index as u32, row as u32)),
        );
    }
    SideRows {
        run: Arc::clone(run),
        rows,
    }
}

/// The full records of one side, spilled in row order, read back one by one.
pub struct FullRecords {
    spill: File,
    /// Where each row's JSON line starts; one more entry marks the end.
    offsets: Vec<u64>,
    line: Vec<u8>,
    /// The records files, for messages.
    origin: String,
}

impl FullRecords {
    /// The full record of a side's row, read strictly.
    pub fn load(&mut self, row: u32) -> io::Result<Record> {
        let row = row as usize;
        let (start, end) = (self.offsets[row], self.offsets[row + 1]);
        self.line.resize((end - start) as usize, 0);
        self.spill.read_exact_at(&mut self.line, start)?;
        let damaged = |message: String| {
            io::Error::other(format!(
                "a record of {} cannot be read back: {message}",
                self.origin
            ))
        };
        let line = jsonl::parse_bytes(
            jsonl::strip_line_ending(&self.line),
            1,
            NonFinitePolicy::Reject,
        )
        .map_err(|e| damaged(e.message()))?;
        Record::from_json(line.object).map_err(|e| damaged(e.to_string()))
    }
}

struct Spill {
    file: io::BufWriter<File>,
    written: u64,
    offsets: Vec<u64>,
    variant_id: String,
}

impl Spill {
    fn new(variant_id: &str) -> io::Result<Self> {
        Ok(Self {
            file: io::BufWriter::with_capacity(1 << 20, tempfile::tempfile()?),
            written: 0,
            offsets: vec![0],
            variant_id: variant_id.to_owned(),
        })
    }

    fn finish(self, origin: String) -> io::Result<FullRecords> {
        let spill = self.file.into_inner().map_err(|e| e.into_error())?;
        Ok(FullRecords {
            spill,
            offsets: self.offsets,
            line: Vec::new(),
            origin,
        })
    }
}

fn usage(message: String, hint: impl Into<String>) -> ArchiveError {
    ArchiveError::Usage {
        message,
        hint: Some(hint.into()),
    }
}

impl ComparisonSides {
    /// Loads both sides' manifests and checks that the selection makes sense: the runs
    /// exist, each holds records of its variant, the two sides are not the same records,
    /// and [`check_comparable`] accepts the pair.
    pub fn select(
        archive: &Archive,
        baseline: SideRequest,
        variant: SideRequest,
    ) -> Result<Self, ArchiveError> {
        if baseline == variant {
            return Err(usage(
                format!(
                    "both sides select variant {:?} of run {}; a comparison needs two different sets of records",
                    baseline.variant_id, baseline.run
                ),
                "choose another variant with --baseline/--variant, or another run with --other-run",
            ));
        }
        let baseline = side(archive, baseline)?;
        let variant = side(archive, variant)?;
        check_comparable(&baseline.manifest, &variant.manifest)?;
        Ok(Self { baseline, variant })
    }

    /// True when both sides are variants of one run.
    pub fn same_run(&self) -> bool {
        self.baseline.run == self.variant.run
    }

    /// Reads the rows of both sides: each run once (one pass when both sides are variants
    /// of one run), the two runs on two threads.
    pub fn read(&self, archive: &Archive) -> Result<SidesRows, ArchiveError> {
        let (baseline, variant) = if self.same_run() {
            let batches = Arc::new(read_run(archive, &self.baseline)?);
            (batches.clone(), batches)
        } else {
            let (baseline, variant) = std::thread::scope(|scope| {
                let baseline = scope.spawn(|| read_run(archive, &self.baseline));
                let variant = read_run(archive, &self.variant);
                (
                    baseline.join().expect("reading a run does not panic"),
                    variant,
                )
            });
            (Arc::new(baseline?), Arc::new(variant?))
        };
        Ok(SidesRows {
            baseline: side_rows(&baseline, &self.baseline.variant_id),
            variant: side_rows(&variant, &self.variant.variant_id),
        })
    }

    /// The full records of both sides, spilled for a report: one sequential pass over
    /// each run, every record of a side's variant written as its JSON line, in the order
    /// of the side's rows.
    pub fn full_records(
        &self,
        archive: &Archive,
    ) -> Result<(FullRecords, FullRecords), ArchiveError> {
        let spill_error = |error: io::Error| {
            ArchiveError::Io(io_at(
                "writing a temporary file",
                Path::new("the report's spill"),
            )(error))
        };
        let mut baseline = Spill::new(&self.baseline.variant_id).map_err(spill_error)?;
        let mut variant = Spill::new(&self.variant.variant_id).map_err(spill_error)?;
        let runs: Vec<(&ComparisonSide, Vec<&mut Spill>)> = if self.same_run() {
            vec![(&self.baseline, vec![&mut baseline, &mut variant])]
        } else {
            vec![
                (&self.baseline, vec![&mut baseline]),
                (&self.variant, vec![&mut variant]),
            ]
        };
        let mut line = Vec::with_capacity(1 << 16);
        for (side, mut spills) in runs {
            for entry in &side.manifest.imports {
                for batch in read::batches(archive, &side.run, entry, Columns::ALL)? {
                    let batch = batch?;
                    for row in 0..batch.len() {
                        let variant_id = batch.identity(row).variant_id;
                        for spill in spills.iter_mut().filter(|s| s.variant_id == variant_id) {
                            line.clear();
                            batch.write_json_line(row, &mut line);
                            spill.file.write_all(&line).map_err(spill_error)?;
                            spill.written += line.len() as u64;
                            spill.offsets.push(spill.written);
                        }
                    }
                }
            }
        }
        let origin = |side: &ComparisonSide| format!("run {}", side.run);
        Ok((
            baseline
                .finish(origin(&self.baseline))
                .map_err(spill_error)?,
            variant.finish(origin(&self.variant)).map_err(spill_error)?,
        ))
    }
}

fn side(archive: &Archive, request: SideRequest) -> Result<ComparisonSide, ArchiveError> {
    let manifest = archive.run_manifest(&request.run)?;
    let mut variants: Vec<String> = manifest
        .totals()
        .into_iter()
        .map(|count| count.variant_id)
        .collect();
    variants.sort();
    variants.dedup();
    if !variants.contains(&request.variant_id) {
        let present = if variants.is_empty() {
            "it has no records yet".to_owned()
        } else {
            format!("its variants are: {}", variants.join(", "))
        };
        return Err(usage(
            format!(
                "run {} has no records of variant {:?}; {present}",
                request.run, request.variant_id
            ),
            "select the variants with --baseline V and --variant V (`babel show RUN` lists them)",
        ));
    }
    Ok(ComparisonSide {
        run: request.run,
        variant_id: request.variant_id,
        manifest,
    })
}

/// Decides whether records of these two runs may be compared at all: the one place for
/// rules that look at both sides' manifests.
///
/// Known conflicting dataset revisions are rejected: when both runs declare
/// `dataset_revision` and the values differ, their items need not be the same questions.
/// A run that declares none is not in conflict. Strict benchmark runs must pin the same
/// item bank and protocol, and a strict run never compares with a general one.
pub fn check_comparable(baseline: &RunManifest, variant: &RunManifest) -> Result<(), ArchiveError> {
    let revision = |manifest: &RunManifest| {
        manifest
            .metadata
            .get("dataset_revision")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    if let (Some(left), Some(right)) = (revision(baseline), revision(variant))
        && left != right
    {
        return Err(usage(
            format!(
                "runs {} and {} declare different dataset revisions ({left:?} and {right:?}); their items need not be the same questions",
                baseline.run_id, variant.run_id
            ),
            "compare runs evaluated on the same dataset revision",
        ));
    }
    // Strict runs compare only under the same item bank and protocol (checkpoints may
    // differ). Those refusals are selections, so they exit 2 like the revision rule; a
    // contract that cannot be read is a damaged run and stays an artifact error (exit 1).
    super::artifacts::contract::check_comparable(baseline, variant).map_err(|refused| match refused
    {
        NotComparable::BadContract { .. } => ArchiveError::Artifact(Box::new(refused.into())),
        NotComparable::StrictAndGeneral { .. }
        | NotComparable::DifferentItemBanks { .. }
        | NotComparable::DifferentProtocols { .. } => usage(refused.to_string(), refused.hint()),
    })
}

/// Checks where a derived report may be written, before any work is done: its folder must
/// exist and lie outside the archive root (reports are never archive data, so `validate`
/// never sees them and a Hub upload never carries them), and the file must not exist yet.
///
/// Returns the destination with its folder resolved (symlinks and `..` followed).
pub fn report_destination(archive: &Archive, dest: &Path) -> Result<PathBuf, ArchiveError> {
    let name = dest.file_name().ok_or_else(|| {
        usage(
            format!("{} does not name a file", dest.display()),
            "give a file name such as report.html",
        )
    })?;
    let folder = crate::durable::parent_of(dest);
    let resolved_folder = folder.canonicalize().map_err(|error| {
        usage(
            format!("cannot write a report into {}: {error}", folder.display()),
            "create the folder first, or choose an existing one",
        )
    })?;
    let root = archive.layout().root();
    let resolved_root = root.canonicalize().map_err(io_at("resolving", root))?;
    if resolved_folder.starts_with(&resolved_root) {
        return Err(usage(
            format!(
                "{} is inside the archive {}; reports are derived files and are written outside it",
                dest.display(),
                root.display()
            ),
            "write the report to a folder outside the archive root",
        ));
    }
    let resolved = resolved_folder.join(name);
    if resolved.symlink_metadata().is_ok() {
        return Err(usage(
            format!(
                "{} already exists; babel never overwrites a report",
                dest.display()
            ),
            "choose a new file name, or remove the old report first",
        ));
    }
    Ok(resolved)
}
