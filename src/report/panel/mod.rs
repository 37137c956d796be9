//! Renderers of a panel: its item file (`--items`) as CSV, JSONL, Parquet or a
//! single-file offline HTML dashboard, and the text `babel panel` prints.
//!
//! One row per item: its identity, each side's correctness (true, false, or none for
//! unknown or missing), how many sides know it and got it right, and its flags. As for
//! comparison reports, a file is created only through [`write_new`] (the one atomic
//! commit helper); where it may go is the archive layer's rule, checked before.

pub mod csv;
pub mod html;
pub mod jsonl;
pub mod parquet;
pub mod text;

use std::io::Write;
use std::path::Path;

use crate::durable::{self, ContentDigest, PathIoError, io_at};
use crate::panel::grid::Grid;
use crate::panel::summary::{ItemStats, PanelSummary};

/// The panel item-file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PanelFormat {
    /// One self-contained HTML dashboard; works offline from file://.
    Html,
    /// One row per item, a column per side, for spreadsheets.
    Csv,
    /// One JSON object per item.
    Jsonl,
    /// Apache Parquet: one row per item, a boolean column per side (DuckDB, pandas).
    Parquet,
}

impl PanelFormat {
    pub const ALL: [PanelFormat; 4] = [
        PanelFormat::Html,
        PanelFormat::Csv,
        PanelFormat::Jsonl,
        PanelFormat::Parquet,
    ];

    /// The name `--format` takes and the file suffix.
    pub fn name(self) -> &'static str {
        match self {
            PanelFormat::Html => "html",
            PanelFormat::Csv => "csv",
            PanelFormat::Jsonl => "jsonl",
            PanelFormat::Parquet => "parquet",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|format| format.name() == name)
    }

    /// The format a file name's suffix selects (any letter case).
    pub fn from_path(path: &Path) -> Option<Self> {
        Self::parse(&path.extension()?.to_str()?.to_ascii_lowercase())
    }
}

/// One item's identity, its labels as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemRow {
    pub benchmark: String,
    pub language: Option<String>,
    pub script: Option<String>,
    pub question_id: String,
    pub filter: String,
    pub repeat_id: u64,
}

/// What the HTML dashboard shows of an item when it is opened: its question text and,
/// per side, the prediction and response (each cut to [`DETAIL_CHARS`]).
#[derive(Debug, Default)]
pub struct Details {
    /// Per item.
    pub question: Vec<String>,
    /// Per side, per item: `(prediction, response)`, or none without a record.
    pub sides: Vec<Vec<Option<(String, String)>>>,
}

/// How much of a prediction or a response the dashboard shows, in characters.
pub const DETAIL_CHARS: usize = 300;

/// Everything an item file is made of.
pub struct PanelItems<'a> {
    pub summary: &'a PanelSummary,
    pub items: &'a [ItemRow],
    pub grid: &'a Grid,
    /// Only the HTML dashboard uses them.
    pub details: Option<&'a Details>,
    pub title: &'a str,
}

impl PanelItems<'_> {
    /// The column name of side `side`: `run:variant`.
    pub fn side_name(&self, side: usize) -> String {
        let side = &self.summary.sides[side];
        format!("{}:{}", side.run_id, side.variant_id)
    }

    fn stats(&self, item: usize) -> &ItemStats {
        &self.summary.item_stats[item]
    }
}

/// Renders `items` in `format` into `out`.
pub fn render(
    format: PanelFormat,
    items: &PanelItems<'_>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match format {
        PanelFormat::Html => html::render(items, out),
        PanelFormat::Csv => csv::render(items, out),
        PanelFormat::Jsonl => jsonl::render(items, out),
        PanelFormat::Parquet => parquet::render(items, out),
    }
}

/// Writes the item file to `dest`, which must not exist yet, atomically.
pub fn write_new(
    dest: &Path,
    format: PanelFormat,
    items: &PanelItems<'_>,
) -> Result<ContentDigest, PathIoError> {
    durable::write_new_atomically(dest, |out| {
        render(format, items, out).map_err(io_at("writing the panel's items", dest))
    })
}
