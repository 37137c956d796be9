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

use std::hash::{BuildHasher, RandomState};
use std::io::Write;
use std::path::Path;

use hashbrown::{HashTable, hash_table};

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
/// Every distinct prediction or response text is held once, in one buffer, and each cell
/// holds two numbers of texts: two `String`s per cell were 1.3 GB at 100 sides × 100,000
/// items, whose multiple-choice predictions and responses are a few hundred texts. A
/// distinct text costs its bytes and about 14 more (where it ends, its place in the
/// table), so texts that never repeat cost less than two `String`s did too.
#[derive(Debug, Default)]
pub struct Details {
    /// Per item.
    pub question: Vec<String>,
    /// Per side, per item: the numbers of its prediction and response, or [`NO_RECORD`].
    sides: Vec<Vec<[u32; 2]>>,
    /// Every distinct text, one after another.
    texts: String,
    /// Where each text ends in `texts` (each starts where the one before ends).
    ends: Vec<usize>,
    /// The numbers of the texts, found by the texts' hashes.
    numbers: HashTable<u32>,
    hasher: RandomState,
}

/// The cell of a side without a record of the item (no text has this number).
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
        let Self {
            texts,
            ends,
            numbers,
            hasher,
            ..
        } = self;
        let of = |number: u32| text_in(texts, ends, number);
        let hash = hasher.hash_one(text);
        match numbers.entry(hash, |&n| of(n) == text, |&n| hasher.hash_one(of(n))) {
            hash_table::Entry::Occupied(entry) => *entry.get(),
            hash_table::Entry::Vacant(entry) => {
                // A number is a text held: memory runs out long before 2^32 - 1 of them
                // (the last number is `NO_RECORD`'s).
                let number = u32::try_from(ends.len())
                    .ok()
                    .filter(|&n| n != u32::MAX)
                    .expect("fewer distinct texts than memory holds");
                texts.push_str(text);
                ends.push(texts.len());
                entry.insert(number);
                number
            }
        }
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
        text_in(&self.texts, &self.ends, number)
    }

    /// How many distinct texts there are: every number is below it.
    pub fn text_count(&self) -> usize {
        self.ends.len()
    }
}

/// Text `number` of `texts`, whose texts end at `ends`.
fn text_in<'t>(texts: &'t str, ends: &[usize], number: u32) -> &'t str {
    let number = number as usize;
    let start = number.checked_sub(1).map_or(0, |before| ends[before]);
    &texts[start..ends[number]]
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
