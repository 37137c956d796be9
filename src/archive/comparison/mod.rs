//! The archive's part of `babel compare`: selecting the two sides (a run and a variant
//! each, with the run's manifest), the rule saying whether they may be compared, handing
//! the join its rows (`rows`), reading the full records of a report's items back
//! (`spill`), and keeping derived reports out of the archive.
//!
//! Reads only, and takes no lock: a comparison never changes or reseals a run. The join
//! itself is `crate::compare`'s (pure); this module only hands it rows.

pub mod panel;
mod rows;
mod spill;

use std::sync::Arc;

use super::artifacts::contract::NotComparable;
use super::layout::RunId;
use super::manifest::RunManifest;
use super::{Archive, ArchiveError};
use rows::RunBatches;

pub use rows::{LoadedRows, SideRows};
pub use spill::FullRecords;

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

    /// Both sides as rows streamed from their records files: what a summary needs.
    pub fn rows(&self, archive: &Archive) -> (SideRows, SideRows) {
        (
            SideRows::new(archive, &self.baseline),
            SideRows::new(archive, &self.variant),
        )
    }

    /// Both sides with their join columns in memory (each run read once, the two runs
    /// on two threads): what sorting a report's items needs.
    pub fn load(&self, archive: &Archive) -> Result<(LoadedRows, LoadedRows), ArchiveError> {
        if self.same_run() {
            let run = Arc::new(RunBatches::read(archive, &self.baseline)?);
            return Ok((
                LoadedRows::new(&run, archive, &self.baseline),
                LoadedRows::new(&run, archive, &self.variant),
            ));
        }
        let (baseline, variant) = std::thread::scope(|scope| {
            let baseline = scope.spawn(|| RunBatches::read(archive, &self.baseline));
            let variant = RunBatches::read(archive, &self.variant);
            (
                baseline.join().expect("reading a run does not panic"),
                variant,
            )
        });
        let (baseline, variant) = (Arc::new(baseline?), Arc::new(variant?));
        Ok((
            LoadedRows::new(&baseline, archive, &self.baseline),
            LoadedRows::new(&variant, archive, &self.variant),
        ))
    }

    /// The full records of both sides, spilled for a report: one sequential pass over
    /// each run, every record of a side's variant written as its JSON line, in the order
    /// of the side's rows.
    pub fn full_records(
        &self,
        archive: &Archive,
    ) -> Result<(FullRecords, FullRecords), ArchiveError> {
        spill::full_records(archive, self)
    }
}

fn side(archive: &Archive, request: SideRequest) -> Result<ComparisonSide, ArchiveError> {
    let manifest = archive.run_manifest(&request.run)?;
    let variants = manifest.variants();
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
    let revision = |manifest: &RunManifest| manifest.metadata.dataset_revision.clone();
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
    // differ). Those refusals are selections, so they exit 2 like the revision rule.
    super::artifacts::contract::check_comparable(baseline, variant)
        .map_err(NotComparable::into_archive_error)
}
