//! Renderers of a comparison: the item-level report as offline HTML, CSV or JSONL, and the
//! plain-text summary `babel compare` prints.
//!
//! Renderers write into any `impl Write` and never touch the filesystem themselves; a
//! report file is created only through [`write_new`], which goes through the one atomic
//! commit helper (`durable::write_new_atomically`: a temporary file in the destination
//! folder, fsynced, then linked into place without replacing anything). Where a report
//! may go (outside the archive) is the archive layer's rule, checked before rendering.

pub mod csv;
mod details;
pub mod embed;
pub mod html;
pub mod jsonl;
pub mod panel;
pub mod question;
pub mod text;

use std::io::{self, Write};
use std::path::Path;

use crate::compare::stats::ConfidenceLevel;
use crate::compare::summary::SideAlone;
use crate::compare::{Comparison, Item, Outcome, Side, Summary};
use crate::durable::{self, ContentDigest, PathIoError, io_at};
use crate::record::{Identity, StoredRecord};

/// The item-level report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// One self-contained HTML page with search and filters; works offline from file://.
    Html,
    /// One row per item, side-by-side columns, for spreadsheets.
    Csv,
    /// One JSON object per item with each side's full normalized record.
    Jsonl,
}

impl ReportFormat {
    /// Every format, for help texts.
    pub const ALL: [ReportFormat; 3] = [ReportFormat::Html, ReportFormat::Csv, ReportFormat::Jsonl];

    /// The name used by `--format` and as the file suffix.
    pub fn name(self) -> &'static str {
        match self {
            ReportFormat::Html => "html",
            ReportFormat::Csv => "csv",
            ReportFormat::Jsonl => "jsonl",
        }
    }

    /// Reads a format name (`html`, `csv`, `jsonl`).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|format| format.name() == name)
    }

    /// The format a file name's suffix selects (`.html`, `.csv`, `.jsonl`, any case).
    pub fn from_path(path: &Path) -> Option<Self> {
        let suffix = path.extension()?.to_str()?.to_ascii_lowercase();
        Self::parse(&suffix)
    }
}

/// Reads the full record of a side's row, as stored; called once per record, in item
/// order.
pub type Load<'l> = &'l mut dyn FnMut(Side, u32) -> io::Result<StoredRecord>;

/// One item with its full records as stored: the renderers copy their text (the HTML
/// report checks the nested values first, `details`), never parse them into trees.
pub struct LoadedItem {
    pub outcome: Outcome,
    pub baseline: Option<StoredRecord>,
    pub variant: Option<StoredRecord>,
}

impl LoadedItem {
    /// Reads the records of `item`.
    pub fn load(item: &Item, load: Load<'_>) -> io::Result<Self> {
        Ok(Self {
            outcome: item.outcome,
            baseline: item
                .baseline
                .map(|row| load(Side::Baseline, row))
                .transpose()?,
            variant: item
                .variant
                .map(|row| load(Side::Variant, row))
                .transpose()?,
        })
    }

    /// The bytes of text the item's records hold.
    pub fn size(&self) -> usize {
        [&self.baseline, &self.variant]
            .into_iter()
            .flatten()
            .map(StoredRecord::text_len)
            .sum()
    }

    /// The item's identity, from the baseline's record when there are two.
    pub fn identity(&self) -> Identity<'_> {
        self.baseline
            .as_ref()
            .or(self.variant.as_ref())
            .expect("an item has a record on at least one side")
            .identity()
    }
}

/// Renders the report of `comparison` in `format` into `out`, loading each full record
/// with `load` as its item is written.
pub fn render(
    format: ReportFormat,
    comparison: &Comparison,
    summary: &Summary,
    load: Load<'_>,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        ReportFormat::Html => html::render(comparison, summary, load, out),
        ReportFormat::Csv => csv::render(comparison, load, out),
        ReportFormat::Jsonl => jsonl::render(comparison, load, out),
    }
}

/// Writes the report to `dest`, which must not exist yet, atomically: a reader sees no
/// file or the whole report, never part of one, and an existing file is never replaced.
pub fn write_new(
    dest: &Path,
    format: ReportFormat,
    comparison: &Comparison,
    summary: &Summary,
    load: Load<'_>,
) -> Result<ContentDigest, PathIoError> {
    durable::write_new_atomically(dest, |out| {
        render(format, comparison, summary, load, out).map_err(io_at("writing the report", dest))
    })
}

/// An item's identity columns, in the order every CSV report writes them.
pub const IDENTITY_COLUMNS: [&str; 6] = [
    "benchmark",
    "language",
    "script",
    "question_id",
    "filter",
    "repeat_id",
];

/// What "each side alone" covers, as the text summary and the HTML report say it.
pub const EACH_SIDE_ALONE: &str = "Each side alone (all its records with known correctness, unmatched and run-local too; unpaired)";

/// Each side alone, `baseline 47.1% of 17 [26.2%, 69.0%]  variant ... (95% Wilson)`, when a
/// side has scored records the known pairs leave out (unmatched, paired with an unknown,
/// or run-local); `None` when it would only repeat the paired accuracies.
pub fn each_side_alone(summary: &Summary) -> Option<String> {
    let pairs = summary.overall.statistics.as_ref().map_or(0, |s| s.pairs);
    if summary.baseline.alone.scored == pairs && summary.variant.alone.scored == pairs {
        return None;
    }
    let side = |alone: &SideAlone| match (alone.accuracy, alone.ci_low, alone.ci_high) {
        (Some(accuracy), Some(low), Some(high)) => format!(
            "{} of {} [{}, {}]",
            percent(accuracy),
            alone.scored,
            percent(low),
            percent(high)
        ),
        _ => "none scored".to_owned(),
    };
    Some(format!(
        "baseline {}  variant {}  ({} Wilson)",
        side(&summary.baseline.alone),
        side(&summary.variant.alone),
        level(summary.confidence_level)
    ))
}

/// A share as a percentage with one decimal (`62.5%`).
pub fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// A confidence level as a percentage without needless digits (`95%`, `99.9%`).
pub fn level(confidence: ConfidenceLevel) -> String {
    let digits = format!("{:.4}", confidence.level() * 100.0);
    format!("{}%", digits.trim_end_matches('0').trim_end_matches('.'))
}

/// A difference of shares in percentage points, signed (`+12.5 pp`).
pub fn points(delta: f64) -> String {
    let value = delta * 100.0;
    // -0.0 would print as "-0.0".
    let value = if value == 0.0 { 0.0 } else { value };
    format!("{value:+.1} pp")
}

/// A p-value: three decimals, or scientific notation below 0.001 (`0.031`, `2.4e-7`).
pub fn p_value(p: f64) -> String {
    if p == 0.0 {
        "< 1e-300".to_owned()
    } else if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suffix_selects_the_format_and_unknown_suffixes_select_none() {
        // "`.html`, `.csv`, and `.jsonl` select the format."
        assert_eq!(
            ReportFormat::from_path(Path::new("out/r.HTML")),
            Some(ReportFormat::Html)
        );
        assert_eq!(
            ReportFormat::from_path(Path::new("r.csv")),
            Some(ReportFormat::Csv)
        );
        assert_eq!(
            ReportFormat::from_path(Path::new("r.jsonl")),
            Some(ReportFormat::Jsonl)
        );
        assert_eq!(ReportFormat::from_path(Path::new("r.json")), None);
        assert_eq!(ReportFormat::from_path(Path::new("report")), None);
    }

    #[test]
    fn numbers_are_shown_as_people_read_them() {
        assert_eq!(percent(0.625), "62.5%");
        assert_eq!(points(0.125), "+12.5 pp");
        assert_eq!(points(-0.0), "+0.0 pp");
        assert_eq!(points(-0.2), "-20.0 pp");
        assert_eq!(p_value(0.0312), "0.031");
        assert_eq!(p_value(2.4e-7), "2.4e-7");
        assert_eq!(p_value(0.0), "< 1e-300");
        let at = |l: f64| level(ConfidenceLevel::new(l).unwrap());
        assert_eq!(
            [at(0.95), at(0.9), at(0.999), at(0.5)],
            ["95%", "90%", "99.9%", "50%"]
        );
    }
}
