//! A side's rows as the join reads them: the records of one variant of a run, in import
//! order, the join columns only.
//!
//! [`SideRows`] streams its run's records files while the join keys them, so a summary of
//! two million records holds keys, not rows; [`LoadedRows`] keeps the join columns in
//! memory, for a report, whose items are sorted by their identity strings. Either reads
//! a row's source again from its file when a message needs one.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use super::ComparisonSide;
use crate::archive::layout::run_relative;
use crate::archive::records::{Batch, Column, Columns, RecordsFile};
use crate::archive::{Archive, ArchiveError, read};
use crate::compare::keys::{Interner, RowKey};
use crate::compare::{Identities, Rows};
use crate::record::{Identity, IdentityScope};

/// The records files of a side's run, in import order.
#[derive(Debug, Clone)]
pub(super) struct SideFiles {
    files: Vec<PathBuf>,
    variant_id: String,
}

impl SideFiles {
    pub(super) fn new(archive: &Archive, side: &ComparisonSide) -> Self {
        Self {
            files: side
                .manifest
                .imports
                .iter()
                .map(|entry| {
                    archive
                        .layout()
                        .resolve(&run_relative(&side.run, &entry.records.path))
                })
                .collect(),
            variant_id: side.variant_id.clone(),
        }
    }

    /// Calls `each` with every batch of `columns` and the side's rows in it, in order.
    pub(super) fn scan(
        &self,
        columns: Columns,
        mut each: impl FnMut(&Batch, &[usize]) -> Result<bool, String>,
    ) -> Result<(), String> {
        for path in &self.files {
            let failed = |reason: String| format!("{}: {reason}", path.display());
            let file = File::open(path).map_err(|e| failed(e.to_string()))?;
            let batches = RecordsFile::open(file)
                .map_err(failed)?
                .batches(columns.with(Columns::of(&[Column::VariantId])))
                .map_err(|e| failed(e.to_string()))?;
            for batch in batches {
                let batch = batch.map_err(|e| failed(e.to_string()))?;
                let rows = batch.rows_with(Column::VariantId, &self.variant_id);
                if !each(&batch, &rows)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Row `row` of the side as a message shows it: its item identity and its source,
    /// read again from its records file.
    fn describe(&self, row: usize) -> (String, String) {
        let columns = Columns::JOIN.with(Columns::SOURCE);
        let mut seen = 0;
        let mut found = None;
        let scanned = self.scan(columns, |batch, rows| {
            if let Some(&at) = rows.get(row - seen) {
                found = Some((
                    batch.identity(at).item_key(),
                    batch
                        .source(at)
                        .map_or_else(|error| error.to_string(), |source| source.to_string()),
                ));
                return Ok(false);
            }
            seen += rows.len();
            Ok(true)
        });
        match (found, scanned) {
            (Some(found), _) => found,
            (None, Err(reason)) => (format!("row {}", row + 1), reason),
            (None, Ok(())) => (format!("row {}", row + 1), "no longer in its file".into()),
        }
    }
}

/// Hands `out` the key of each of `rows` of `batch` (numbered from `next`), with the
/// row's script symbol and question_id, which the key only hashes.
pub(super) fn each_key(
    batch: &Batch,
    rows: &[usize],
    interner: &Interner,
    next: &mut u32,
    out: &mut impl FnMut(RowKey, u32, &str),
) -> Result<(), String> {
    let symbols = |column| batch.per_label(column, |label| interner.intern(label));
    let (benchmark, language, script, filter) = (
        symbols(Column::Benchmark),
        symbols(Column::Language),
        symbols(Column::Script),
        symbols(Column::Filter),
    );
    for &row in rows {
        let stable = batch
            .identity_scope(row)
            .map_err(|error| format!("row {}: {error}", *next + 1))?
            == IdentityScope::Stable;
        let question_id = batch.text(Column::QuestionId, row).unwrap_or_default();
        let key = RowKey {
            question: interner.question(benchmark[row], language[row], script[row], question_id),
            filter: filter[row],
            benchmark: benchmark[row],
            language: language[row],
            repeat_id: batch.integer(Column::RepeatId, row).unwrap_or_default(),
            row: *next,
            correct: batch.correct(row),
            stable,
        };
        out(key, script[row], question_id);
        *next += 1;
    }
    Ok(())
}

/// Appends the keys of `rows` of `batch` to `out`, numbering them from `next`.
fn append_keys(
    batch: &Batch,
    rows: &[usize],
    interner: &Interner,
    next: &mut u32,
    out: &mut Vec<RowKey>,
) -> Result<(), String> {
    each_key(batch, rows, interner, next, &mut |key, _, _| out.push(key))
}

/// A side whose rows are streamed from its records files each time they are keyed.
pub struct SideRows {
    files: SideFiles,
}

impl SideRows {
    pub(super) fn new(archive: &Archive, side: &ComparisonSide) -> Self {
        Self {
            files: SideFiles::new(archive, side),
        }
    }
}

impl Rows for SideRows {
    fn keys(&self, interner: &Interner) -> Result<Vec<RowKey>, String> {
        let mut keys = Vec::new();
        let mut next = 0;
        self.files.scan(Columns::JOIN, |batch, rows| {
            append_keys(batch, rows, interner, &mut next, &mut keys).map(|()| true)
        })?;
        Ok(keys)
    }

    fn describe(&self, row: usize) -> (String, String) {
        self.files.describe(row)
    }
}

/// The join columns of a run, read into memory.
pub(super) struct RunBatches {
    batches: Vec<Batch>,
}

impl RunBatches {
    pub(super) fn read(archive: &Archive, side: &ComparisonSide) -> Result<Self, ArchiveError> {
        let mut batches = Vec::new();
        for entry in &side.manifest.imports {
            for batch in read::batches(archive, &side.run, entry, Columns::JOIN)? {
                batches.push(batch?);
            }
        }
        Ok(Self { batches })
    }
}

/// A side whose join columns are in memory, so that its identities can be read at
/// random (to sort a report's items).
pub struct LoadedRows {
    run: Arc<RunBatches>,
    /// (batch, row) of each row of the side.
    rows: Vec<(u32, u32)>,
    files: SideFiles,
}

impl LoadedRows {
    pub(super) fn new(run: &Arc<RunBatches>, archive: &Archive, side: &ComparisonSide) -> Self {
        let mut rows = Vec::new();
        for (index, batch) in run.batches.iter().enumerate() {
            rows.extend(
                batch
                    .rows_with(Column::VariantId, &side.variant_id)
                    .into_iter()
                    .map(|row| (index as u32, row as u32)),
            );
        }
        Self {
            run: Arc::clone(run),
            rows,
            files: SideFiles::new(archive, side),
        }
    }
}

impl Rows for LoadedRows {
    fn keys(&self, interner: &Interner) -> Result<Vec<RowKey>, String> {
        let mut keys = Vec::with_capacity(self.rows.len());
        let mut next = 0;
        let mut start = 0;
        while start < self.rows.len() {
            let batch_index = self.rows[start].0;
            let end = start
                + self.rows[start..]
                    .iter()
                    .take_while(|(index, _)| *index == batch_index)
                    .count();
            let rows: Vec<usize> = self.rows[start..end]
                .iter()
                .map(|&(_, row)| row as usize)
                .collect();
            append_keys(
                &self.run.batches[batch_index as usize],
                &rows,
                interner,
                &mut next,
                &mut keys,
            )?;
            start = end;
        }
        Ok(keys)
    }

    fn describe(&self, row: usize) -> (String, String) {
        self.files.describe(row)
    }
}

impl Identities for LoadedRows {
    fn identity(&self, row: usize) -> Identity<'_> {
        let (batch, offset) = self.rows[row];
        self.run.batches[batch as usize].identity(offset as usize)
    }
}
