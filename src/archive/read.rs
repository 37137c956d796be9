//! Reading a run's stored records: the archive's side of the records store. It resolves an
//! import's records file under ROOT, opens it through [`super::records::RecordsFile`] (a file whose
//! schema is not the records schema is a damaged archive) and hands out batches of the
//! projected columns, each error naming the file.
//!
//! Also `babel records`: every stored record of a run as JSON Lines, in import order.
//!
//! Reads only: no lock, no hashing (that is `validate`'s job), no writes under ROOT.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use super::layout::{RunId, run_relative};
use super::manifest::{ImportEntry, RunManifest};
use super::records::{Batch, Columns, RecordsFile};
use super::{Archive, ArchiveError};
use crate::durable::{PathIoError, io_at};
use crate::record::StoredRecord;

/// Opens import `entry`'s records file of `run`.
pub fn open(
    archive: &Archive,
    run: &RunId,
    entry: &ImportEntry,
) -> Result<(PathBuf, RecordsFile), ArchiveError> {
    let path = archive
        .layout()
        .resolve(&run_relative(run, &entry.records.path));
    let file = File::open(&path).map_err(io_at("opening", &path))?;
    let records = RecordsFile::open(file).map_err(|reason| ArchiveError::Damaged {
        path: path.clone(),
        reason,
    })?;
    Ok((path, records))
}

/// The batches of import `entry`'s records, with the `columns` only.
pub fn batches(
    archive: &Archive,
    run: &RunId,
    entry: &ImportEntry,
    columns: Columns,
) -> Result<impl Iterator<Item = Result<Batch, ArchiveError>>, ArchiveError> {
    let (path, file) = open(archive, run, entry)?;
    let batches = file.batches(columns).map_err(io_at("reading", &path))?;
    Ok(batches.map(move |batch| {
        batch.map_err(|source| {
            ArchiveError::Io(PathIoError {
                action: "reading",
                path: path.clone(),
                source,
            })
        })
    }))
}

/// Which stored records [`copy_records`] passes on (`None` keeps every value).
#[derive(Debug, Clone, Default)]
pub struct RecordFilter {
    pub variant: Option<String>,
    pub benchmark: Option<String>,
    pub language: Option<String>,
}

impl RecordFilter {
    fn keeps(&self, batch: &Batch, row: usize) -> bool {
        let identity = batch.identity(row);
        self.variant
            .as_deref()
            .is_none_or(|v| v == identity.variant_id)
            && self
                .benchmark
                .as_deref()
                .is_none_or(|b| b == identity.benchmark)
            && self
                .language
                .as_deref()
                .is_none_or(|l| identity.language == Some(l))
    }
}

/// Writes the run's stored records as JSON Lines, in import order, to `out`, keeping those
/// `filter` selects; returns how many were written. A failed write to `out` is an I/O
/// error on "standard output" (a closed pipe shows as `BrokenPipe`).
pub fn copy_records(
    archive: &Archive,
    run: &RunId,
    manifest: &RunManifest,
    filter: &RecordFilter,
    out: &mut dyn Write,
) -> Result<u64, ArchiveError> {
    let stdout = std::path::Path::new("standard output");
    let mut copied = 0;
    let mut buffer = Vec::with_capacity(1 << 20);
    let mut record = StoredRecord::default();
    for entry in &manifest.imports {
        for batch in batches(archive, run, entry, Columns::ALL)? {
            let batch = batch?;
            for row in 0..batch.len() {
                if filter.keeps(&batch, row) {
                    batch.stored_record(row, &mut record);
                    record.write_json_line(&mut buffer);
                    copied += 1;
                }
            }
            out.write_all(&buffer).map_err(io_at("writing", stdout))?;
            buffer.clear();
        }
    }
    out.flush().map_err(io_at("writing", stdout))?;
    Ok(copied)
}
