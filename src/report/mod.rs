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

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

use crate::compare::stats::ConfidenceLevel;
use crate::compare::summary::SideAlone;
use crate::compare::{Comparison, Item, Outcome, Side, Summary};
use crate::durable::{self, ContentDigest, PathIoError, io_at};
use crate::record::Identity;
/// What a [`Records`] source loads (named here for sources in the layers above).
pub use crate::record::StoredRecord;

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

/// Where a report's full records come from.
pub trait Records: Sync {
    /// The full record of a side's row, as stored; called once per record (by the JSONL
    /// and CSV reports from their worker threads, so not in item order).
    fn load(&self, side: Side, row: u32) -> io::Result<StoredRecord>;

    /// The stored bytes of a side's row, known before it is loaded: the JSONL and CSV
    /// reports cut their jobs by it, so that a job of large records stays small. 0 when
    /// the source cannot tell (jobs are then cut by count alone).
    fn size(&self, _side: Side, _row: u32) -> usize {
        0
    }
}

/// Any function from a side's row to its record is a source of records of unknown size.
impl<F> Records for F
where
    F: Fn(Side, u32) -> io::Result<StoredRecord> + Sync,
{
    fn load(&self, side: Side, row: u32) -> io::Result<StoredRecord> {
        self(side, row)
    }
}

/// The records a report reads.
pub type Load<'l> = &'l dyn Records;

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
                .map(|row| load.load(Side::Baseline, row))
                .transpose()?,
            variant: item
                .variant
                .map(|row| load.load(Side::Variant, row))
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

/// Strings numbered in the order they are first seen, each kept once: the tables a page
/// holds of repeated values (a panel's benchmarks, a detail chunk's long strings).
#[derive(Default)]
pub struct Names {
    index: HashMap<String, usize>,
    pub values: Vec<String>,
}

impl Names {
    /// The number of `name`, given it when it is new.
    pub fn id(&mut self, name: &str) -> usize {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        self.values.push(name.to_owned());
        self.index.insert(name.to_owned(), self.values.len() - 1);
        self.values.len() - 1
    }
}

/// At most how many consecutive items a worker loads and writes as one job of a
/// row-per-item report (JSONL, CSV): enough to make handing a job over cheap.
const ROW_JOB_ITEMS: usize = 256;
/// The stored bytes after which a job ends (its last item included). At most two jobs
/// per worker are in flight, the one being written among them (`parallel`), so about
/// 16 MiB of records on two cores however large they are, plus each job's last item.
const ROW_JOB_BYTES: usize = 4 << 20;

/// Writes a report of one row per item: jobs of consecutive items (cut by count and by
/// the stored size `load` tells) are loaded and turned into bytes by `rows` on the
/// workers, and the bytes written to `out` in item order.
fn write_rows(
    items: &[Item],
    load: Load<'_>,
    out: &mut dyn Write,
    rows: impl Fn(&[Item]) -> io::Result<Vec<u8>> + Sync,
) -> io::Result<()> {
    let stored = |item: &Item| {
        item.baseline
            .map_or(0, |row| load.size(Side::Baseline, row))
            + item.variant.map_or(0, |row| load.size(Side::Variant, row))
    };
    let mut rest = items;
    let next_job = || {
        let mut bytes = 0;
        let mut count = 0;
        while count < rest.len().min(ROW_JOB_ITEMS) && bytes < ROW_JOB_BYTES {
            bytes += stored(&rest[count]);
            count += 1;
        }
        let (job, after) = rest.split_at(count);
        rest = after;
        Ok((!job.is_empty()).then_some(job))
    };
    crate::parallel::map_ordered(
        crate::parallel::workers(),
        next_job,
        rows,
        |bytes: io::Result<Vec<u8>>| out.write_all(&bytes?),
    )
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

    /// A comparison of `n` questions sorted for a report, every third one without a
    /// rephrased record.
    fn many_items(n: usize) -> crate::compare::tests::Joined {
        use crate::compare::tests::{join, record};
        let mut baseline = Vec::new();
        let mut variant = Vec::new();
        for q in 0..n {
            let b = record("original", &format!("q{q:05}"), "en", Some(q % 2 == 0));
            if q % 3 != 0 {
                let mut v = b.clone();
                v.variant_id = "rephrased".into();
                v.correct = Some(q % 5 == 0);
                variant.push(v);
            }
            baseline.push(b);
        }
        // Rows in another order than the report's, as records files hold them.
        baseline.reverse();
        let mut joined = join(baseline, variant).unwrap();
        joined
            .comparison
            .sort_by_identity(&joined.baseline[..], &joined.variant[..]);
        joined
    }

    /// The report of `joined` in `format`; loading the baseline row `fail_at` fails.
    fn render_many(
        joined: &crate::compare::tests::Joined,
        format: ReportFormat,
        fail_at: Option<u32>,
    ) -> io::Result<Vec<u8>> {
        let load = |side: Side, row: u32| match side {
            Side::Baseline if Some(row) == fail_at => Err(io::Error::other("row unreadable")),
            Side::Baseline => Ok(StoredRecord::of(&joined.baseline[row as usize]).unwrap()),
            Side::Variant => Ok(StoredRecord::of(&joined.variant[row as usize]).unwrap()),
        };
        let summary = Summary::of(&joined.comparison, ConfidenceLevel::NINETY_FIVE);
        let mut out = Vec::new();
        render(format, &joined.comparison, &summary, &load, &mut out)?;
        Ok(out)
    }

    #[test]
    fn row_reports_of_many_jobs_keep_the_item_order_and_stop_at_a_failed_load() {
        // Five jobs of items loaded and written on the workers.
        let n = ROW_JOB_ITEMS * 4 + 7;
        let joined = many_items(n);
        let expected: Vec<String> = (0..n).map(|q| format!("q{q:05}")).collect();

        let jsonl =
            String::from_utf8(render_many(&joined, ReportFormat::Jsonl, None).unwrap()).unwrap();
        let lines: Vec<serde_json::Value> = jsonl
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let ids: Vec<&str> = lines
            .iter()
            .map(|line| line["identity"]["question_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, expected);
        for (q, line) in lines.iter().enumerate() {
            assert_eq!(line["variant"].is_null(), q % 3 == 0, "item {q}");
            assert_eq!(line["baseline"]["question_id"], expected[q].as_str());
        }

        let csv = render_many(&joined, ReportFormat::Csv, None).unwrap();
        let mut reader = ::csv::Reader::from_reader(&csv[..]);
        let column = reader
            .headers()
            .unwrap()
            .iter()
            .position(|name| name == "question_id")
            .unwrap();
        let ids: Vec<String> = reader
            .records()
            .map(|row| row.unwrap()[column].to_owned())
            .collect();
        assert_eq!(ids, expected);

        // A record that cannot be read stops the report with its error, in any job.
        for format in [ReportFormat::Jsonl, ReportFormat::Csv] {
            for row in [0, (n / 2) as u32, n as u32 - 1] {
                let error = render_many(&joined, format, Some(row)).unwrap_err();
                assert_eq!(error.to_string(), "row unreadable", "{format:?} row {row}");
            }
        }
    }

    /// Records of a given stored size, for the job cutting alone.
    struct OfSize(fn(Side, u32) -> usize);

    impl Records for OfSize {
        fn load(&self, _side: Side, _row: u32) -> io::Result<StoredRecord> {
            Err(io::Error::other("not loaded here"))
        }

        fn size(&self, side: Side, row: u32) -> usize {
            (self.0)(side, row)
        }
    }

    /// The sizes of the jobs `write_rows` cuts from `n` items with both sides.
    fn job_sizes(n: u32, load: Load<'_>) -> Vec<usize> {
        let items: Vec<Item> = (0..n)
            .map(|row| Item {
                outcome: Outcome::BothCorrect,
                baseline: Some(row),
                variant: Some(row),
            })
            .collect();
        let mut out = Vec::new();
        write_rows(&items, load, &mut out, |job| {
            Ok(format!("{},", job.len()).into_bytes())
        })
        .unwrap();
        String::from_utf8(out)
            .unwrap()
            .split_terminator(',')
            .map(|n| n.parse().unwrap())
            .collect()
    }

    #[test]
    fn row_report_jobs_end_at_their_count_or_their_stored_bytes() {
        // Small records: jobs of ROW_JOB_ITEMS.
        let small = OfSize(|_, _| 300);
        assert_eq!(job_sizes(600, &small), [256, 256, 88]);
        // Records of 1 MiB a side: a job ends once it holds ROW_JOB_BYTES.
        let large = OfSize(|_, _| 1 << 20);
        let jobs = job_sizes(9, &large);
        assert_eq!(jobs, [2, 2, 2, 2, 1]);
        // A record beyond the limit ends the job it is in; the next jobs are whole again.
        let one = OfSize(|side, row| match (side, row) {
            (Side::Variant, 3) => 64 << 20,
            _ => 1 << 10,
        });
        assert_eq!(job_sizes(600, &one), [4, 256, 256, 84]);
        // A source that cannot tell sizes: by count alone.
        let unknown = |_: Side, _: u32| -> io::Result<StoredRecord> { unreachable!() };
        assert_eq!(job_sizes(300, &unknown), [256, 44]);
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
