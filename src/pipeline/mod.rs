//! The library form of the commands that wire layers together: `babel compare` (here)
//! and `babel panel` ([`panel`]).
//!
//! `babel compare`: select two sides → read their join columns → join
//! → summarize → optionally write the item-level report, its full records spilled from
//! both runs while the join columns are read, joined and sorted. The CLI parses
//! arguments and prints what [`compare()`] returns; the demo and the tests call the same
//! function.
//!
//! It wires layers together and owns no rule of its own: side selection and the
//! comparability rules are `archive::comparison`'s, the join and statistics `compare`'s,
//! the rendering `report`'s.

pub mod panel;

use std::path::PathBuf;

use serde::Serialize;

use crate::archive::comparison::{ComparisonSides, FullRecords, SideRequest};
use crate::archive::layout::{RunId, run_relative};
use crate::archive::{Archive, ArchiveError};
use crate::compare::stats::ConfidenceLevel;
use crate::compare::{self, CompareError, Rows, Side, SideInput, SideLabel, Summary};
use crate::report::{self, ReportFormat};

/// Where and how to write the item-level report.
#[derive(Debug, Clone)]
pub struct ReportRequest {
    /// A new file outside the archive.
    pub path: PathBuf,
    pub format: ReportFormat,
}

/// A comparison to run.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    pub baseline: SideRequest,
    pub variant: SideRequest,
    /// The confidence level of every interval.
    pub confidence: ConfidenceLevel,
    pub report: Option<ReportRequest>,
}

/// A report that was written.
#[derive(Debug, Clone, Serialize)]
pub struct ReportWritten {
    pub path: PathBuf,
    pub format: &'static str,
    pub items: usize,
    pub bytes: u64,
    pub sha256: String,
}

/// What a comparison found, and the report it wrote: `babel compare --json` prints it,
/// the summary's fields then `report` (null without `--items`).
#[derive(Debug, Clone, Serialize)]
pub struct CompareOutcome {
    #[serde(flatten)]
    pub summary: Summary,
    pub report: Option<ReportWritten>,
}

/// Runs a comparison: checks the report's destination before any work, selects both sides
/// (refusing what may not be compared), joins their rows, summarizes, and writes the
/// report when one is asked for.
pub fn compare(
    archive: &Archive,
    request: &CompareRequest,
) -> Result<CompareOutcome, ArchiveError> {
    let destination = request
        .report
        .as_ref()
        .map(|report| {
            archive
                .layout()
                .derived_destination(&report.path, false)
                .map(|path| (path, report.format))
        })
        .transpose()?;
    let sides =
        ComparisonSides::select(archive, request.baseline.clone(), request.variant.clone())?;
    let label = |side: &crate::archive::comparison::ComparisonSide| SideLabel {
        run_id: side.run.to_string(),
        variant_id: side.variant_id.clone(),
        model: side.manifest.model().to_owned(),
    };
    let (baseline_label, variant_label) = (label(&sides.baseline), label(&sides.variant));
    let join = |baseline: &dyn Rows, variant: &dyn Rows| {
        compare::compare(
            SideInput {
                label: &baseline_label,
                rows: baseline,
            },
            SideInput {
                label: &variant_label,
                rows: variant,
            },
        )
        .map_err(|error| damaged(archive, error))
    };
    let Some((path, format)) = destination else {
        // A summary only: the rows are streamed while they are keyed.
        let (baseline, variant) = sides.rows(archive);
        let comparison = join(&baseline, &variant)?;
        return Ok(CompareOutcome {
            summary: Summary::of(&comparison, request.confidence),
            report: None,
        });
    };
    // A report sorts its items by identity: the join columns stay in memory for that.
    // The full records are spilled meanwhile (the two do not depend on each other, and
    // joining and sorting keep one core busy).
    let (joined, spilled) = std::thread::scope(|scope| {
        let spilling = scope.spawn(|| sides.full_records(archive));
        let joined = sides.load(archive).and_then(|(baseline, variant)| {
            let mut comparison = join(&baseline, &variant)?;
            let summary = Summary::of(&comparison, request.confidence);
            comparison.sort_by_identity(&baseline, &variant);
            Ok((comparison, summary))
        });
        let spilled = spilling
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (joined, spilled)
    });
    let (comparison, summary) = joined?;
    let (baseline, variant) = spilled?;
    let spilled = Spilled { baseline, variant };
    let digest = report::write_new(&path, format, &comparison, &summary, &spilled)
        .map_err(ArchiveError::Io)?;
    Ok(CompareOutcome {
        summary,
        report: Some(ReportWritten {
            path,
            format: format.name(),
            items: comparison.items.len(),
            bytes: digest.bytes,
            sha256: digest.sha256,
        }),
    })
}

/// Both sides' full records, spilled: what a report reads.
struct Spilled {
    baseline: FullRecords,
    variant: FullRecords,
}

impl Spilled {
    fn side(&self, side: Side) -> &FullRecords {
        match side {
            Side::Baseline => &self.baseline,
            Side::Variant => &self.variant,
        }
    }
}

impl report::Records for Spilled {
    fn load(&self, side: Side, row: u32) -> std::io::Result<report::StoredRecord> {
        self.side(side).load(row)
    }

    fn size(&self, side: Side, row: u32) -> usize {
        self.side(side).size(row)
    }
}

/// Duplicate identities within a side mean the run breaks its own key rule; unreadable
/// rows, that its records are damaged.
fn damaged(archive: &Archive, error: CompareError) -> ArchiveError {
    let path = match &error {
        CompareError::DuplicateIdentity(duplicate) => match RunId::parse(&duplicate.run_id) {
            Ok(run) => archive.layout().resolve(&run_relative(&run, "")),
            Err(_) => archive.layout().root().to_owned(),
        },
        CompareError::Unreadable { .. } => archive.layout().root().to_owned(),
    };
    ArchiveError::Damaged {
        path,
        reason: error.to_string(),
    }
}
