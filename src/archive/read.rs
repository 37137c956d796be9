//! Reading a run's stored records back for a comparison: first a light [`Entry`] per
//! record (identity, correctness, source, and a handle to its line), then, while a report
//! is written, each full record again by its handle, read strictly with
//! [`Record::from_stored`]. So comparing 200,000 items holds entries, not records.
//!
//! Also the byte-for-byte copy of a run's stored records behind `babel records`.
//!
//! Reads only: no lock, no hashing (that is `validate`'s job), no writes under ROOT.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::PathBuf;

use super::layout::{RunId, run_relative};
use super::manifest::RunManifest;
use super::{Archive, ArchiveError};
use crate::durable::io_at;
use crate::jsonl::{self, NonFinitePolicy};
use crate::record::{Entry, IdentityScope, Record, Source, StoredKey};

/// The fields of a stored record line that a comparison keeps (the rest is skipped here
/// and read again, strictly, when a report needs the full record).
#[derive(serde::Deserialize)]
struct StoredEntry<'a> {
    #[serde(borrow)]
    benchmark: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    language: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    script: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    question_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    variant_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    filter: std::borrow::Cow<'a, str>,
    repeat_id: u64,
    identity_scope: IdentityScope,
    correct: Option<bool>,
    source: StoredSource,
}

#[derive(serde::Deserialize)]
struct StoredSource {
    path: String,
    line: u64,
}

/// Bits of an entry handle that hold the byte offset; the rest numbers the file.
const OFFSET_BITS: u32 = 40;

/// The records files of a comparison, open for reading single records again by the handle
/// of their [`Entry`].
pub struct RecordStore {
    files: Vec<(PathBuf, BufReader<File>)>,
    line: Vec<u8>,
}

impl RecordStore {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            files: Vec::new(),
            line: Vec::new(),
        }
    }

    /// Reads the entries of every record of `run`, handing each with its variant to
    /// `keep`. Each entry's handle finds its line in this store again.
    pub fn read_entries(
        &mut self,
        archive: &Archive,
        run: &RunId,
        manifest: &RunManifest,
        keep: &mut dyn FnMut(&str, Entry),
    ) -> Result<(), ArchiveError> {
        for import in &manifest.imports {
            let path = archive
                .layout()
                .resolve(&run_relative(run, &import.records.path));
            let file = File::open(&path).map_err(io_at("opening", &path))?;
            let index = self.files.len() as u64;
            let mut reader = BufReader::with_capacity(256 * 1024, file);
            let mut offset = 0u64;
            let mut number = 0u64;
            loop {
                self.line.clear();
                let read = reader
                    .read_until(b'\n', &mut self.line)
                    .map_err(io_at("reading", &path))?;
                if read == 0 {
                    break;
                }
                number += 1;
                let stored: StoredEntry<'_> =
                    serde_json::from_slice(&self.line).map_err(|e| ArchiveError::Damaged {
                        path: path.clone(),
                        reason: format!("line {number}: {e}"),
                    })?;
                keep(
                    &stored.variant_id,
                    Entry {
                        benchmark: stored.benchmark.into_owned(),
                        language: stored.language.map(|l| l.into_owned()),
                        script: stored.script.map(|s| s.into_owned()),
                        question_id: stored.question_id.into_owned(),
                        filter: stored.filter.into_owned(),
                        repeat_id: stored.repeat_id,
                        identity_scope: stored.identity_scope,
                        correct: stored.correct,
                        source: Source {
                            path: stored.source.path,
                            line: stored.source.line,
                        },
                        handle: index << OFFSET_BITS | offset,
                    },
                );
                offset += read as u64;
            }
            self.files.push((path, BufReader::new(reader.into_inner())));
        }
        Ok(())
    }

    /// Reads the full record an entry stands for, strictly (as `validate` would).
    pub fn load(&mut self, entry: &Entry) -> Result<Record, ArchiveError> {
        let index = (entry.handle >> OFFSET_BITS) as usize;
        let offset = entry.handle & ((1 << OFFSET_BITS) - 1);
        let (path, reader) = self
            .files
            .get_mut(index)
            .ok_or_else(|| ArchiveError::Usage {
                message: "a comparison entry from another record store".into(),
                hint: None,
            })?;
        reader
            .seek(SeekFrom::Start(offset))
            .and_then(|_| {
                self.line.clear();
                reader.read_until(b'\n', &mut self.line)
            })
            .map_err(io_at("reading", path))?;
        let damaged = |reason: String| ArchiveError::Damaged {
            path: path.clone(),
            reason,
        };
        let line = jsonl::parse_bytes(
            jsonl::strip_line_ending(&self.line),
            1,
            NonFinitePolicy::Reject,
        )
        .map_err(|e| damaged(format!("the record at byte {offset}: {}", e.message())))?;
        Record::from_stored(line.object)
            .map_err(|e| damaged(format!("the record at byte {offset}: {e}")))
    }
}

impl Default for RecordStore {
    fn default() -> Self {
        Self::new()
    }
}

/// Which stored records [`copy_records`] passes on (`None` keeps every value).
#[derive(Debug, Clone, Default)]
pub struct RecordFilter {
    pub variant: Option<String>,
    pub benchmark: Option<String>,
    pub language: Option<String>,
}

impl RecordFilter {
    fn is_empty(&self) -> bool {
        self.variant.is_none() && self.benchmark.is_none() && self.language.is_none()
    }

    fn keeps(&self, key: &StoredKey<'_>) -> bool {
        self.variant.as_deref().is_none_or(|v| v == key.variant_id)
            && self.benchmark.as_deref().is_none_or(|b| b == key.benchmark)
            && self
                .language
                .as_deref()
                .is_none_or(|l| key.language.as_deref() == Some(l))
    }
}

/// Copies the run's stored record lines, byte for byte and in import order, to `out`,
/// keeping those `filter` selects; returns how many were copied. A failed write to `out`
/// is an I/O error on "standard output" (a closed pipe shows as `BrokenPipe`).
pub fn copy_records(
    archive: &Archive,
    run: &RunId,
    manifest: &RunManifest,
    filter: &RecordFilter,
    out: &mut dyn Write,
) -> Result<u64, ArchiveError> {
    let stdout = std::path::Path::new("standard output");
    let mut copied = 0;
    let mut line = Vec::new();
    for import in &manifest.imports {
        let path = archive
            .layout()
            .resolve(&run_relative(run, &import.records.path));
        let file = File::open(&path).map_err(io_at("opening", &path))?;
        let mut reader = BufReader::with_capacity(256 * 1024, file);
        let mut number = 0u64;
        loop {
            line.clear();
            if reader
                .read_until(b'\n', &mut line)
                .map_err(io_at("reading", &path))?
                == 0
            {
                break;
            }
            number += 1;
            if !filter.is_empty() {
                let key: StoredKey<'_> =
                    serde_json::from_slice(&line).map_err(|e| ArchiveError::Damaged {
                        path: path.clone(),
                        reason: format!("line {number}: {e}"),
                    })?;
                if !filter.keeps(&key) {
                    continue;
                }
            }
            out.write_all(&line).map_err(io_at("writing", stdout))?;
            copied += 1;
        }
    }
    out.flush().map_err(io_at("writing", stdout))?;
    Ok(copied)
}
