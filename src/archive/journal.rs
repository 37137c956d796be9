//! The recovery journal: before a write creates anything it names every file and folder it
//! will create and the manifest whose rename commits it; recovery at the start of the next
//! write (or `babel init`) keeps a committed write and removes an uncommitted one.
//!
//! Committed means the commit-point file now holds exactly the bytes the writer recorded
//! (`commit.sha256`, journalled just before the rename). This needs no knowledge of what a
//! manifest contains, so runs and artifacts share it.

use serde::{Deserialize, Serialize};
use std::fs;
use std::io;
use std::path::Path;

use super::layout::{Layout, check_package_path};
use crate::canonical_json::to_canonical_bytes;
use crate::durable::{self, PathIoError, io_at};

/// The commit point of a write: the temporary file renamed over the target.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CommitPoint {
    /// ROOT-relative path of the file the rename replaces (or creates).
    pub path: String,
    /// ROOT-relative path of the temporary file written first.
    pub temp: String,
    /// SHA-256 of the temporary file, recorded once it is complete and synced.
    pub sha256: Option<String>,
}

/// One pending write.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct JournalEntry {
    pub format: String,
    /// What the write was (`import`, `run create`, `seal`, ...), for messages.
    pub operation: String,
    /// ROOT-relative files the write creates (besides the commit temp).
    pub files: Vec<String>,
    /// ROOT-relative folders the write creates, outermost first.
    pub dirs: Vec<String>,
    pub commit: CommitPoint,
    /// Files written under a temporary name (listed in `files`) and renamed to their
    /// final name only once the write has committed: the manifests of the runs and
    /// artifacts an `import-bundle` publishes, so that no reader sees a manifest before
    /// the files it registers, or a manifest of a write that never committed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publish: Vec<Rename>,
}

/// A file renamed into place after the commit point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Rename {
    /// ROOT-relative temporary name.
    pub from: String,
    /// ROOT-relative final name.
    pub to: String,
}

const JOURNAL_FORMAT: &str = "babel-journal";

/// Problems with the journal itself.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(transparent)]
    Io(#[from] PathIoError),
    #[error("the journal {} is unreadable ({reason}); it was not written by babel or was edited", path.display())]
    Unreadable {
        path: std::path::PathBuf,
        reason: String,
    },
}

/// What recovery did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// The interrupted operation, if there was one.
    pub operation: Option<String>,
    /// True when that operation had committed (its files were kept).
    pub committed: bool,
    /// ROOT-relative paths removed.
    pub removed: Vec<String>,
}

impl JournalEntry {
    /// A new entry for `operation`.
    pub fn new(
        operation: &str,
        files: Vec<String>,
        dirs: Vec<String>,
        commit_path: String,
    ) -> Self {
        let temp = format!("{commit_path}{}", super::layout::NEW_SUFFIX);
        Self {
            format: JOURNAL_FORMAT.to_owned(),
            operation: operation.to_owned(),
            files,
            dirs,
            commit: CommitPoint {
                path: commit_path,
                temp,
                sha256: None,
            },
            publish: Vec::new(),
        }
    }
}

/// Writes the journal (atomically: temp, fsync, rename, fsync `.babel/`).
pub fn write(layout: &Layout, entry: &JournalEntry) -> Result<(), PathIoError> {
    let path = layout.journal();
    let temp = path.with_extension("json.tmp");
    let bytes = to_canonical_bytes(entry).expect("a journal entry holds only strings");
    remove_if_present(&temp)?;
    durable::write_new(&temp, &bytes)?;
    durable::rename_replacing(&temp, &path)
}

/// Removes the journal once the write is complete.
pub fn clear(layout: &Layout) -> Result<(), PathIoError> {
    let path = layout.journal();
    remove_if_present(&path)?;
    durable::sync_dir(&layout.operational())
}

/// Reads a pending journal entry, if any.
pub fn pending(layout: &Layout) -> Result<Option<JournalEntry>, JournalError> {
    let path = layout.journal();
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_at("reading", &path)(e).into()),
    };
    let unreadable = |reason: String| JournalError::Unreadable {
        path: path.clone(),
        reason,
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| unreadable(e.to_string()))?;
    let line = crate::jsonl::parse_line(text.trim_end(), 1, Default::default())
        .map_err(|e| unreadable(e.to_string()))?;
    let entry: JournalEntry = serde_json::from_value(serde_json::Value::Object(line.object))
        .map_err(|e| unreadable(e.to_string()))?;
    if entry.format != JOURNAL_FORMAT {
        return Err(unreadable(format!("unknown format {:?}", entry.format)));
    }
    let renames = entry.publish.iter().flat_map(|r| [&r.from, &r.to]);
    let paths = entry.files.iter().chain(&entry.dirs).chain(renames);
    for path in paths.chain([&entry.commit.path, &entry.commit.temp]) {
        check_package_path(path).map_err(|e| unreadable(e.to_string()))?;
    }
    Ok(Some(entry))
}

/// Finishes or undoes an interrupted write. Call with the writer lock held.
pub fn recover(layout: &Layout) -> Result<Recovery, JournalError> {
    let leftover = layout.journal().with_extension("json.tmp");
    remove_if_present(&leftover)?;
    let Some(entry) = pending(layout)? else {
        return Ok(Recovery::default());
    };
    let commit_path = layout.resolve(&entry.commit.path);
    let committed = match &entry.commit.sha256 {
        Some(expected) => match durable::digest_file(&commit_path) {
            Ok(found) => &found.sha256 == expected,
            Err(e) if e.source.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(e.into()),
        },
        None => false,
    };
    if committed {
        // The write committed: its history, and any file it renames into place once
        // committed, are prepared beside their final names.
        publish_after_commit(layout, &entry)?;
    }
    let mut removed = Vec::new();
    let temp = layout.resolve(&entry.commit.temp);
    if remove_if_present(&temp)? {
        removed.push(entry.commit.temp.clone());
    }
    if !committed {
        for file in &entry.files {
            if remove_if_present(&layout.resolve(file))? {
                removed.push(file.clone());
            }
        }
        for dir in entry.dirs.iter().rev() {
            let path = layout.resolve(dir);
            match fs::remove_dir(&path) {
                Ok(()) => removed.push(dir.clone()),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::DirectoryNotEmpty
                    ) => {}
                Err(e) => return Err(io_at("removing", &path)(e).into()),
            }
        }
    }
    for file in entry.files.iter().chain([&entry.commit.temp]) {
        let dir = durable::parent_of(Path::new(file))
            .to_string_lossy()
            .into_owned();
        let dir_path = layout.resolve(&dir);
        if dir_path.is_dir() {
            durable::sync_dir(&dir_path)?;
        }
    }
    clear(layout)?;
    Ok(Recovery {
        operation: Some(entry.operation),
        committed,
        removed,
    })
}

/// The steps after a write's commit point: the files it publishes renamed into place,
/// then its prepared history. Each is a rename, so a full disk cannot stop them, and each
/// is skipped when done already (recovery may repeat them).
pub fn publish_after_commit(layout: &Layout, entry: &JournalEntry) -> Result<(), PathIoError> {
    for rename in &entry.publish {
        let from = layout.resolve(&rename.from);
        if from.symlink_metadata().is_ok() {
            durable::rename_replacing(&from, &layout.resolve(&rename.to))?;
        }
    }
    super::history::publish(layout)
}

/// Removes a file; true when there was one.
pub fn remove_if_present(path: &Path) -> Result<bool, PathIoError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_at("removing", path)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> (tempfile::TempDir, Layout) {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        fs::create_dir_all(layout.operational()).unwrap();
        fs::create_dir_all(layout.resolve("runs/r1")).unwrap();
        (dir, layout)
    }

    fn entry() -> JournalEntry {
        JournalEntry::new(
            "import",
            vec!["runs/r1/raw/0001-a.jsonl".into()],
            vec!["runs/r1/raw".into()],
            "runs/r1/manifest.json".into(),
        )
    }

    #[test]
    fn an_uncommitted_write_is_removed() {
        let (_dir, layout) = layout();
        let entry = entry();
        write(&layout, &entry).unwrap();
        fs::create_dir(layout.resolve("runs/r1/raw")).unwrap();
        fs::write(layout.resolve("runs/r1/raw/0001-a.jsonl"), b"x").unwrap();
        fs::write(layout.resolve("runs/r1/manifest.json.new"), b"new").unwrap();
        fs::write(layout.resolve("runs/r1/manifest.json"), b"old").unwrap();
        let recovery = recover(&layout).unwrap();
        assert!(!recovery.committed);
        assert_eq!(
            recovery.removed,
            [
                "runs/r1/manifest.json.new",
                "runs/r1/raw/0001-a.jsonl",
                "runs/r1/raw"
            ]
        );
        assert_eq!(
            fs::read(layout.resolve("runs/r1/manifest.json")).unwrap(),
            b"old"
        );
        assert!(
            pending(&layout).unwrap().is_none(),
            "the journal is cleared"
        );
    }

    #[test]
    fn a_committed_write_is_kept() {
        let (_dir, layout) = layout();
        let mut entry = entry();
        entry.commit.sha256 = Some(durable::digest_of(b"new").sha256);
        write(&layout, &entry).unwrap();
        fs::create_dir(layout.resolve("runs/r1/raw")).unwrap();
        fs::write(layout.resolve("runs/r1/raw/0001-a.jsonl"), b"x").unwrap();
        fs::write(layout.resolve("runs/r1/manifest.json"), b"new").unwrap();
        let recovery = recover(&layout).unwrap();
        assert!(recovery.committed);
        assert!(recovery.removed.is_empty());
        assert!(layout.resolve("runs/r1/raw/0001-a.jsonl").exists());
    }

    #[test]
    fn a_recorded_hash_that_the_manifest_does_not_match_means_not_committed() {
        let (_dir, layout) = layout();
        let mut entry = entry();
        entry.commit.sha256 = Some(durable::digest_of(b"new").sha256);
        write(&layout, &entry).unwrap();
        fs::write(layout.resolve("runs/r1/manifest.json"), b"old").unwrap();
        fs::write(layout.resolve("runs/r1/manifest.json.new"), b"new").unwrap();
        let recovery = recover(&layout).unwrap();
        assert!(!recovery.committed);
        assert!(!layout.resolve("runs/r1/manifest.json.new").exists());
    }

    #[test]
    fn a_tampered_journal_is_reported_not_guessed_at() {
        let (_dir, layout) = layout();
        fs::write(
            layout.journal(),
            b"{\"format\": \"babel-journal\", \"files\": [\"../../etc/x\"]}",
        )
        .unwrap();
        assert!(matches!(
            recover(&layout),
            Err(JournalError::Unreadable { .. })
        ));
    }
}
