//! Many sides at once: `babel panel`'s paired analysis of a whole model panel.
//!
//! Items are joined once into a dense item index ([`ItemIndex`]): an item is the
//! comparison identity `(benchmark, language, script, question_id, filter, repeat_id)`,
//! as in `compare`; run-local records never join and are only counted. Each side's
//! correctness then becomes two bit columns of a [`grid::Grid`], so every pairwise 2×2
//! table is a few popcounts and memory is bits per item per side. [`summary`] computes
//! every figure from the grid; [`stats`] holds the statistics `compare` does not.
//!
//! Pure: rows come in as keys and identity strings (the archive reads them), figures go
//! out as values (the report layer writes them). It must not touch the filesystem.

pub mod grid;
pub mod stats;
pub mod summary;

use std::collections::HashMap;

use crate::compare::keys::{Interner, NULL_SYMBOL, RowKey};
use grid::{Cell, Grid};
use summary::ItemLabels;

/// The identity of one item, its labels interned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemIdentity {
    pub benchmark: u32,
    pub language: u32,
    pub script: u32,
    pub question_id: String,
    pub filter: u32,
    pub repeat_id: u64,
}

/// One side's rows as the join reads them: each row's key, and its script and
/// question_id (the key holds only a hash of the question).
#[derive(Debug, Default)]
pub struct KeyedRows {
    pub keys: Vec<RowKey>,
    pub scripts: Vec<u32>,
    /// Every row's question_id, concatenated; row r's is `ids[ends[r - 1]..ends[r]]`.
    pub ids: String,
    pub ends: Vec<u32>,
}

impl KeyedRows {
    /// Appends one row.
    pub fn push(&mut self, key: RowKey, script: u32, question_id: &str) {
        self.keys.push(key);
        self.scripts.push(script);
        self.ids.push_str(question_id);
        self.ends.push(self.ids.len() as u32);
    }

    fn question_id(&self, row: usize) -> &str {
        let start = if row == 0 {
            0
        } else {
            self.ends[row - 1] as usize
        };
        &self.ids[start..self.ends[row] as usize]
    }
}

/// Two records of one side with the same item identity: the side's run breaks its own
/// key rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("side {side} holds two records of item {item} (rows {first} and {second} of its records)")]
pub struct DuplicateItem {
    /// The side (`run:variant`).
    pub side: String,
    /// The item identity, as `compare` prints it.
    pub item: String,
    pub first: usize,
    pub second: usize,
}

/// The item of a run-local row: none.
pub const RUN_LOCAL: u32 = u32::MAX;

/// The items of a panel, in the order first seen, each with the cells of the sides added
/// so far.
#[derive(Default)]
pub struct ItemIndex {
    by_key: HashMap<(u128, u32, u64), u32>,
    items: Vec<ItemIdentity>,
    /// Per side: (item, cell) of each of its rows, in order; the item is [`RUN_LOCAL`]
    /// for a run-local row.
    cells: Vec<Vec<(u32, Cell)>>,
    /// Per item: the side that last set it, plus one, and its row (duplicate check).
    seen: Vec<(u32, u32)>,
    /// Per side: records, and of those run-local.
    counts: Vec<(u64, u64)>,
}

impl ItemIndex {
    /// Adds the next side's rows; `label` names it in a duplicate error.
    pub fn add_side(
        &mut self,
        rows: &KeyedRows,
        label: &str,
        interner: &Interner,
    ) -> Result<(), DuplicateItem> {
        let side = self.cells.len() as u32 + 1;
        let mut cells = Vec::with_capacity(rows.keys.len());
        let mut run_local = 0;
        for (row, key) in rows.keys.iter().enumerate() {
            if !key.stable {
                run_local += 1;
                cells.push((RUN_LOCAL, Cell::Unknown));
                continue;
            }
            let next = self.items.len() as u32;
            let item = *self.by_key.entry(key.item()).or_insert(next);
            if item == next {
                self.items.push(ItemIdentity {
                    benchmark: key.benchmark,
                    language: key.language,
                    script: rows.scripts[row],
                    question_id: rows.question_id(row).to_owned(),
                    filter: key.filter,
                    repeat_id: key.repeat_id,
                });
                self.seen.push((0, 0));
            }
            let (last, first) = self.seen[item as usize];
            if last == side {
                let identity = &self.items[item as usize];
                let name = |symbol| interner.name(symbol).unwrap_or_else(|| "null".into());
                return Err(DuplicateItem {
                    side: label.to_owned(),
                    item: format!(
                        "benchmark={} language={} script={} question_id={} filter={} repeat_id={}",
                        name(identity.benchmark),
                        name(identity.language),
                        name(identity.script),
                        identity.question_id,
                        name(identity.filter),
                        identity.repeat_id
                    ),
                    first: first as usize + 1,
                    second: row + 1,
                });
            }
            self.seen[item as usize] = (side, row as u32);
            cells.push((item, Cell::of(key.correct)));
        }
        self.cells.push(cells);
        self.counts.push((rows.keys.len() as u64, run_local));
        Ok(())
    }

    /// Each side's (records, run-local records), in the order added.
    pub fn counts(&self) -> &[(u64, u64)] {
        &self.counts
    }

    /// Sorts the items by identity — text order of benchmark, language, script,
    /// question_id, filter, then repeat_id, a null label first, as `compare` lists its
    /// items — and returns them with the grid of every side's cells and their labels;
    /// with `rows`, also each side's rows' items in that order ([`RUN_LOCAL`] for none).
    pub fn finish(self, interner: &Interner, rows: bool) -> Finished {
        let names: HashMap<u32, Option<String>> = self
            .items
            .iter()
            .flat_map(|i| [i.benchmark, i.language, i.script, i.filter])
            .map(|symbol| (symbol, interner.name(symbol)))
            .collect();
        let name = |symbol: u32| names[&symbol].as_deref();
        let mut order: Vec<u32> = (0..self.items.len() as u32).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (&self.items[a as usize], &self.items[b as usize]);
            (
                name(a.benchmark),
                name(a.language),
                name(a.script),
                a.question_id.as_str(),
                name(a.filter),
                a.repeat_id,
            )
                .cmp(&(
                    name(b.benchmark),
                    name(b.language),
                    name(b.script),
                    b.question_id.as_str(),
                    name(b.filter),
                    b.repeat_id,
                ))
        });
        let mut position = vec![0u32; self.items.len()];
        for (at, &item) in order.iter().enumerate() {
            position[item as usize] = at as u32;
        }
        let mut grid = Grid::new(self.cells.len(), self.items.len());
        for (side, cells) in self.cells.iter().enumerate() {
            for &(item, cell) in cells.iter().filter(|(item, _)| *item != RUN_LOCAL) {
                grid.set(side, position[item as usize] as usize, cell);
            }
        }
        let row_items = if rows {
            self.cells
                .iter()
                .map(|cells| {
                    cells
                        .iter()
                        .map(|&(item, _)| {
                            if item == RUN_LOCAL {
                                RUN_LOCAL
                            } else {
                                position[item as usize]
                            }
                        })
                        .collect()
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut items = self.items;
        let mut sorted = Vec::with_capacity(items.len());
        let mut taken: Vec<Option<ItemIdentity>> = items.drain(..).map(Some).collect();
        for &item in &order {
            sorted.push(taken[item as usize].take().expect("each item once"));
        }
        let labels = labels_of(&sorted, |symbol| name(symbol).map(str::to_owned));
        (sorted, grid, labels, row_items)
    }
}

/// What [`ItemIndex::finish`] gives: the items in order, the grid, their labels, and
/// (when asked) each side's rows' items.
pub type Finished = (Vec<ItemIdentity>, Grid, ItemLabels, Vec<Vec<u32>>);

/// The benchmark and language of every item, interned densely (sorted by name).
fn labels_of(items: &[ItemIdentity], name: impl Fn(u32) -> Option<String>) -> ItemLabels {
    let mut benchmarks: Vec<String> = items.iter().filter_map(|i| name(i.benchmark)).collect();
    benchmarks.sort();
    benchmarks.dedup();
    let mut languages: Vec<Option<String>> = items
        .iter()
        .map(|i| {
            (i.language != NULL_SYMBOL)
                .then(|| name(i.language))
                .flatten()
        })
        .collect();
    languages.sort();
    languages.dedup();
    ItemLabels {
        benchmark: items
            .iter()
            .map(|i| {
                let name = name(i.benchmark).unwrap_or_default();
                benchmarks.binary_search(&name).unwrap_or_default() as u32
            })
            .collect(),
        language: items
            .iter()
            .map(|i| {
                let name = (i.language != NULL_SYMBOL)
                    .then(|| name(i.language))
                    .flatten();
                languages.binary_search(&name).unwrap_or_default() as u32
            })
            .collect(),
        benchmarks,
        languages,
    }
}

#[cfg(test)]
mod tests;
