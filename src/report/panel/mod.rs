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

use std::collections::HashMap;
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
///
/// Every distinct prediction or response text is held once and each cell holds two
/// numbers of texts: two `String`s per cell were 1.3 GB at 100 sides × 100,000 items,
/// whose multiple-choice predictions and responses are a few hundred texts.
#[derive(Debug, Default)]
pub struct Details {
    /// Per item.
    pub question: Vec<String>,
    /// Per side, per item: the numbers of its prediction and response, or [`NO_RECORD`].
    sides: Vec<Vec<[u32; 2]>>,
    texts: Vec<Box<str>>,
    numbers: HashMap<Box<str>, u32>,
}

/// The cell of a side without a record of the item.
const NO_RECORD: [u32; 2] = [u32::MAX; 2];

impl Details {
    /// Details of `items` items and no side yet.
    pub fn new(items: usize) -> Self {
        Self {
            question: vec![String::new(); items],
            ..Self::default()
        }
    }

    /// Adds a side whose every cell is empty; gives its number.
    pub fn add_side(&mut self) -> usize {
        self.sides.push(vec![NO_RECORD; self.question.len()]);
        self.sides.len() - 1
    }

    /// Sets the prediction and response `side` shows for `item`.
    pub fn set(&mut self, side: usize, item: usize, prediction: &str, response: &str) {
        let cell = [self.number(prediction), self.number(response)];
        self.sides[side][item] = cell;
    }

    /// The number of `text`, given it when it is new.
    fn number(&mut self, text: &str) -> u32 {
        if let Some(&number) = self.numbers.get(text) {
            return number;
        }
        // Each text held costs some forty bytes of memory or more: memory runs out long
        // before 2^32 - 1 of them.
        let number = u32::try_from(self.texts.len())
            .ok()
            .filter(|&n| n != u32::MAX)
            .expect("fewer distinct texts than memory holds");
        self.texts.push(text.into());
        self.numbers.insert(text.into(), number);
        number
    }

    /// How many sides there are.
    pub fn side_count(&self) -> usize {
        self.sides.len()
    }

    /// The numbers of the prediction and response `side` shows for `item`, none without
    /// a record.
    pub fn cell(&self, side: usize, item: usize) -> Option<[u32; 2]> {
        let cell = self.sides[side][item];
        (cell != NO_RECORD).then_some(cell)
    }

    /// Text `number`.
    pub fn text(&self, number: u32) -> &str {
        &self.texts[number as usize]
    }

    /// How many distinct texts there are: every number is below it.
    pub fn text_count(&self) -> usize {
        self.texts.len()
    }
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
