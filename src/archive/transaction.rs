//! The commit sequence every write follows: journal the files it will create; write and
//! fsync them; write the new manifest beside the old one, and the history's next log and
//! head beside theirs, and journal the manifest's hash; rename the manifest into place
//! (the commit point); fsync the folder; rename the history into place; clear the
//! journal.
//!
//! A failure before the rename undoes everything (`abort`, or recovery at the next write
//! if the process died); after the rename the write stands.
//!
//! Before a write creates anything it verifies what it builds on: the history reads and
//! replays without a problem, and the manifest it replaces is on disk exactly as the
//! replay rebuilds it (so an edit made outside babel is refused, never written over and
//! laundered into the history). A write that reads the manifest before it begins checks
//! those very bytes the same way first ([`verify_manifest`]), and one that builds on other
//! manifests without replacing them (a registration's pins) checks each against the same
//! replay ([`check_recorded`]). Before it commits, its own history entry is replayed on
//! top: a write that is not a legal transition is refused too.

use std::fs;
use std::io;

use std::collections::BTreeMap;

use super::faults;
use super::history::{self, Change, replay::Replay};
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
    /// The history as it stood when the write began, replayed.
    replay: Replay,
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
        files: Vec<String>,
        dirs: Vec<String>,
        commit_path: String,
    ) -> Result<Self, ArchiveError> {
        Self::begin_publishing(session, operation, files, dirs, commit_path, Vec::new())
    }

    /// Begins as [`Self::begin`] a write that also creates files under a temporary name
    /// (each `from`, written by the caller) renamed to their final name (`to`) only once
    /// the write has committed.
    pub fn begin_publishing(
        session: &'s WriteSession<'_>,
        operation: &str,
        mut files: Vec<String>,
        mut dirs: Vec<String>,
        commit_path: String,
        publish: Vec<journal::Rename>,
    ) -> Result<Self, ArchiveError> {
        let layout = session.layout();
        if !["init", "adopt"].contains(&operation) && !history::exists(layout) {
            return Err(ArchiveError::Usage {
                message: "this archive has no history yet (it was written before babel kept one)".into(),
                hint: Some("run `babel init` once: it checks the archive and starts its history from the manifests as they are".into()),
            });
        }
        let replay = verify_base(layout, operation, &commit_path)?;
        files.extend(history::temps());
        dirs.insert(0, history::HISTORY.to_owned());
        let new_dirs: Vec<String> = dirs
            .into_iter()
            .filter(|dir| !layout.resolve(dir).is_dir())
            .collect();
        files.extend(publish.iter().map(|rename| rename.from.clone()));
        let finals = publish.iter().map(|rename| &rename.to);
        for file in files.iter().chain(finals).chain([&commit_path]) {
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
        let mut entry = JournalEntry::new(operation, files, new_dirs, commit_path);
        entry.publish = publish;
        journal::write(layout, &entry)?;
        faults::point("journal-written");
        let transaction = Self {
            layout,
            entry,
            replay,
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

    /// Commits: writes `manifest` beside the commit-point file and renames it into place;
    /// the history entry records `change`, what the write changed in it.
    pub fn commit(self, manifest: &[u8], change: Change) -> Result<(), ArchiveError> {
        self.commit_from(manifest, BTreeMap::new(), vec![change], None)
    }

    /// Commits as [`Self::commit`], and records in the history entry, beside the
    /// commit-point manifest, the other manifests in `also` (path → SHA-256, or none for a
    /// manifest this copy of the archive no longer holds) and every change in `changes`:
    /// how `adopt` records every manifest of an archive, `hub-pull` the runs a
    /// publication left out, and `import-bundle` (with `bundle`, the release bundle the
    /// write came from) the runs and artifacts it published.
    pub fn commit_from(
        mut self,
        manifest: &[u8],
        mut also: BTreeMap<String, Option<String>>,
        changes: Vec<Change>,
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
            changes,
        )?;
        let before = self.replay.problems.len();
        self.replay.apply(&entry);
        if let Some((_, problem)) = self.replay.problems.get(before) {
            return Err(ArchiveError::Damaged {
                path: self.layout.resolve(history::LOG),
                reason: format!(
                    "this {} would not be a legal write on top of the history ({problem}); nothing was written",
                    self.entry.operation
                ),
            });
        }
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
        journal::publish_after_commit(self.layout, &self.entry)?;
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

/// Checks, before a write uses them, that `manifest` (the bytes of the manifest at
/// `path`, as read to be parsed) are the manifest the history recorded, as
/// [`Transaction::begin`] checks the file later: a manifest changed outside babel is
/// refused before anything is sized or planned from it.
pub fn verify_manifest(layout: &Layout, path: &str, manifest: &[u8]) -> Result<(), ArchiveError> {
    match replay_for_write(layout)? {
        Some(replay) => check_recorded(
            layout,
            &replay,
            path,
            Some(&durable::digest_of(manifest).sha256),
        ),
        None => Ok(()),
    }
}

/// Checks what a write builds on, before it creates anything: the history reads and
/// replays without a problem, and the manifest at `commit_path` is on disk exactly as the
/// replay rebuilds it (absent where the replay holds none). Returns the replay.
fn verify_base(
    layout: &Layout,
    operation: &str,
    commit_path: &str,
) -> Result<Replay, ArchiveError> {
    let Some(replay) = replay_for_write(layout)? else {
        // A new archive (`init`), or one from before babel kept a history (`adopt`).
        return Ok(Replay::default());
    };
    let found = match durable::digest_file(&layout.resolve(commit_path)) {
        Ok(digest) => Some(digest.sha256),
        Err(error) if error.source.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(error.into()),
    };
    check_recorded(layout, &replay, commit_path, found.as_deref())?;
    let state = replay.manifests.get(commit_path);
    let opaque = matches!(
        state.map(|s| &s.recorded),
        Some(history::replay::Recorded::Opaque { .. })
    );
    if opaque && !["adopt", "hub-pull"].contains(&operation) {
        return Err(ArchiveError::Usage {
            message: format!("{commit_path} is recorded in the history by its hash alone (an older babel wrote it), so this write could not be checked against it"),
            hint: Some("run `babel init` once: it adopts the archive's history so that every later write replays".into()),
        });
    }
    Ok(replay)
}

/// The history read and replayed for a write, which refuses a damaged or illegal one
/// (`None`: the archive keeps no history yet).
pub fn replay_for_write(layout: &Layout) -> Result<Option<Replay>, ArchiveError> {
    if !history::exists(layout) {
        return Ok(None);
    }
    let read = history::read(layout)?;
    if let Some((file, line, problem)) = read.problems.first() {
        let at = line.map(|line| format!(" line {line}")).unwrap_or_default();
        return Err(damaged(
            layout,
            file,
            format!("the history is damaged ({file}{at}: {problem})"),
        ));
    }
    let replay = read.replay();
    if let Some((seq, problem)) = replay.problems.first() {
        return Err(damaged(
            layout,
            history::LOG,
            format!("history entry {seq} is not a legal write ({problem})"),
        ));
    }
    Ok(Some(replay))
}

/// Refuses a write that builds on the manifest at `path` when its SHA-256 (`found`;
/// `None`: the file is absent) is not the one `replay` recorded.
pub fn check_recorded(
    layout: &Layout,
    replay: &Replay,
    path: &str,
    found: Option<&str>,
) -> Result<(), ArchiveError> {
    let state = replay.manifests.get(path);
    let recorded = state.and_then(|s| s.recorded.sha256());
    if recorded == found {
        return Ok(());
    }
    let seq = state.map_or(0, |s| s.seq);
    Err(damaged(
        layout,
        path,
        match (recorded, found) {
            (Some(_), Some(_)) => format!(
                "it differs from the manifest history entry {seq} recorded: it was changed outside babel"
            ),
            (Some(_), None) => format!("history entry {seq} recorded it, but it is gone"),
            (None, Some(_)) if state.is_some() => {
                format!("history entry {seq} recorded it as absent from this copy, but it is here")
            }
            _ => "no history entry recorded it: it was written outside babel".into(),
        },
    ))
}

/// The refusal of a write whose base is damaged at `path`.
fn damaged(layout: &Layout, path: &str, reason: String) -> ArchiveError {
    ArchiveError::Damaged {
        path: layout.resolve(path),
        reason: format!("{reason}; nothing was written"),
    }
}
