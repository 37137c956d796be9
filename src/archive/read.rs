//! Reading a run's stored records back: each import's `records/<seq>.jsonl`, in import
//! order, streamed through the strict JSON Lines reader and [`Record::from_stored`].
//!
//! Reads only: no lock, no hashing (that is `validate`'s job), no writes. One line is held
//! at a time; what the caller keeps is up to the caller.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use super::layout::{RunId, run_relative};
use super::manifest::RunManifest;
use super::{Archive, ArchiveError};
use crate::durable::io_at;
use crate::jsonl::{self, NonFinitePolicy, ReadError};
use crate::record::Record;

type LineReader = jsonl::Reader<BufReader<File>>;

/// The stored records of one run, in import order, as an iterator of [`Record`]s.
///
/// A records file that is missing or holds a line that is not a valid stored record ends
/// the iteration with [`ArchiveError::Damaged`] naming the file and line.
pub struct RunRecords<'a> {
    archive: &'a Archive,
    files: std::vec::IntoIter<String>,
    current: Option<(PathBuf, LineReader)>,
    failed: bool,
}

/// Streams the records of `run` as registered in its `manifest`.
pub fn run_records<'a>(
    archive: &'a Archive,
    run: &RunId,
    manifest: &RunManifest,
) -> RunRecords<'a> {
    let files: Vec<String> = manifest
        .imports
        .iter()
        .map(|entry| run_relative(run, &entry.records.path))
        .collect();
    RunRecords {
        archive,
        files: files.into_iter(),
        current: None,
        failed: false,
    }
}

impl RunRecords<'_> {
    fn open_next(&mut self) -> Result<bool, ArchiveError> {
        let Some(relative) = self.files.next() else {
            return Ok(false);
        };
        let path = self.archive.layout().resolve(&relative);
        let file = File::open(&path).map_err(io_at("opening", &path))?;
        let reader = jsonl::Reader::new(
            BufReader::with_capacity(256 * 1024, file),
            NonFinitePolicy::Reject,
        );
        self.current = Some((path, reader));
        Ok(true)
    }

    fn next_record(&mut self) -> Result<Option<Record>, ArchiveError> {
        loop {
            let Some((path, reader)) = &mut self.current else {
                if self.open_next()? {
                    continue;
                }
                return Ok(None);
            };
            let damaged = |reason: String| ArchiveError::Damaged {
                path: path.clone(),
                reason,
            };
            match reader.next() {
                None => self.current = None,
                Some(Ok(line)) => {
                    let number = line.number;
                    return Record::from_stored(line.object)
                        .map(Some)
                        .map_err(|e| damaged(format!("line {number}: {e}")));
                }
                Some(Err(ReadError::Line(error))) => return Err(damaged(error.to_string())),
                Some(Err(ReadError::Io(error))) => {
                    return Err(io_at("reading", path)(error).into());
                }
            }
        }
    }
}

impl Iterator for RunRecords<'_> {
    type Item = Result<Record, ArchiveError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.next_record();
        self.failed = next.is_err();
        next.transpose()
    }
}
