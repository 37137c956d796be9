//! The commit sequence every write follows: journal the files it will create; write and
//! fsync them; write the new manifest beside the old one, and the history's next log and
//! head beside theirs, and journal the manifest's hash; rename the manifest into place
//! (the commit point); fsync the folder; rename the history into place; clear the
//! journal.
//!
//! A failure before the rename undoes everything (`abort`, or recovery at the next write
//! if the process died); after the rename the write stands.

use std::fs;
use std::io;

use std::collections::BTreeMap;

use super::faults;
use super::history;
use super::journal::{self, JournalEntry};
use super::layout::Layout;
use super::{ArchiveError, WriteSession};
use crate::durable::{self, io_at};

/// One write under way. Dropped before its commit point (an error, a full disk), it
/// undoes itself, so a failed write leaves nothing pending; past the commit point it
/// stands, and anything left (a journal, an unpublished history) is finished by the next
/// write's recovery.
pub struct Transaction<'s> {
    layout: &'s Layout,
    entry: JournalEntry,
    /// Past the commit point, or undone.
    finished: bool,
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.finished {
            // If the undo fails too, the journal stays and the next write finishes it.
            let _ = journal::recover(self.layout);
        }
    }
}

impl<'s> Transaction<'s> {
    /// Journals a write that will create `files` (ROOT-relative, in new or existing
    /// folders `dirs`, outermost first) and commit by replacing `commit_path`.
    /// The folders are created here.
    pub fn begin(
        session: &'s WriteSession<'_>,
        operation: &str,
        mut files: Vec<String>,
        mut dirs: Vec<String>,
        commit_path: String,
    ) -> Result<Self, ArchiveError> {
        let layout = session.layout();
        if !["init", "adopt"].contains(&operation) && !history::exists(layout) {
            return Err(ArchiveError::Usage {
                message: "this archive has no history yet (it was written before babel kept one)".into(),
                hint: Some("run `babel init` once: it checks the archive and starts its history from the manifests as they are".into()),
            });
        }
        files.extend(history::temps());
        dirs.insert(0, history::HISTORY.to_owned());
        let new_dirs: Vec<String> = dirs
            .into_iter()
            .filter(|dir| !layout.resolve(dir).is_dir())
            .collect();
        for file in files.iter().chain([&commit_path]) {
            let path = layout.resolve(file);
            if path.symlink_metadata().is_ok() && file != &commit_path {
                return Err(ArchiveError::Damaged {
                    path,
                    reason:
                        "a file that this write must create already exists (an untracked leftover?)"
                            .into(),
                });
            }
        }
        let entry = JournalEntry::new(operation, files, new_dirs, commit_path);
        journal::write(layout, &entry)?;
        faults::point("journal-written");
        let transaction = Self {
            layout,
            entry,
            finished: false,
        };
        for dir in &transaction.entry.dirs {
            let path = layout.resolve(dir);
            match fs::create_dir(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_at("creating", &path)(e).into()),
            }
            durable::sync_dir(durable::parent_of(&path))?;
        }
        Ok(transaction)
    }

    /// The filesystem path of a ROOT-relative path.
    pub fn path(&self, relative: &str) -> std::path::PathBuf {
        self.layout.resolve(relative)
    }

    /// Commits: writes `manifest` beside the commit-point file and renames it into place.
    pub fn commit(self, manifest: &[u8]) -> Result<(), ArchiveError> {
        self.commit_recording(manifest, BTreeMap::new())
    }

    /// Commits as [`Self::commit`], and records in the history entry, beside the
    /// commit-point manifest, the other manifests in `also` (path → SHA-256, or none for a
    /// manifest this copy of the archive no longer holds): how `adopt` records every
    /// manifest of an archive, and `hub-pull` the runs a publication left out.
    pub fn commit_recording(
        self,
        manifest: &[u8],
        also: BTreeMap<String, Option<String>>,
    ) -> Result<(), ArchiveError> {
        self.commit_from(manifest, also, None)
    }

    /// Commits as [`Self::commit_recording`], naming in the history entry the release
    /// bundle the write came from (`import-bundle`).
    pub fn commit_from(
        mut self,
        manifest: &[u8],
        mut also: BTreeMap<String, Option<String>>,
        bundle: Option<history::BundleRef>,
    ) -> Result<(), ArchiveError> {
        faults::point("data-written");
        let temp = self.layout.resolve(&self.entry.commit.temp);
        let target = self.layout.resolve(&self.entry.commit.path);
        journal::remove_if_present(&temp)?;
        let written = durable::write_new(&temp, manifest)?;
        faults::point("manifest-temp-written");
        let subject = durable::parent_of(std::path::Path::new(&self.entry.commit.path))
            .to_string_lossy()
            .into_owned();
        also.insert(self.entry.commit.path.clone(), Some(written.sha256.clone()));
        let entry = history::next_entry(
            self.layout,
            &self.entry.operation,
            if subject.is_empty() { "." } else { &subject },
            also,
            bundle,
        )?;
        history::prepare(self.layout, &entry)?;
        faults::point("history-prepared");
        self.entry.commit.sha256 = Some(written.sha256);
        journal::write(self.layout, &self.entry)?;
        faults::point("commit-hash-journalled");
        fs::rename(&temp, &target).map_err(io_at("renaming into place", &target))?;
        self.finished = true;
        faults::point("manifest-renamed");
        durable::sync_dir(durable::parent_of(&target))?;
        faults::point("directory-synced");
        history::publish(self.layout)?;
        faults::point("history-published");
        journal::clear(self.layout)?;
        faults::point("journal-cleared");
        Ok(())
    }

    /// Undoes the write: removes what it created and clears the journal.
    pub fn abort(mut self) -> Result<(), ArchiveError> {
        self.finished = true;
        journal::recover(self.layout)?;
        Ok(())
    }
}

/// Aborts after a failure and returns the failure. If the abort itself fails, the journal
/// stays behind and the next write (or `babel init`) finishes the undo.
pub fn abort_after(transaction: Transaction<'_>, cause: ArchiveError) -> ArchiveError {
    let _ = transaction.abort();
    cause
}
