//! The archive: the only code that writes under ROOT.
//!
//! Owns the layout and path rules, the writer lock, the journal and the commit sequence,
//! run manifests, import orchestration, seal, attachments and validation. Every write is
//! one [`transaction::Transaction`] taken inside a [`WriteSession`] (lock held, interrupted
//! writes recovered). Readers take no lock. It calls adapters for meaning and never
//! renders reports or talks to the network.

pub mod artifacts;
pub mod comparison;
pub mod faults;
pub mod history;
pub mod import;
pub mod journal;
pub mod layout;
pub mod lock;
pub mod manifest;
pub mod metadata;
pub mod read;
pub mod records;
pub mod runs;
pub mod transaction;
pub mod validate;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::canonical_json::{CanonicalError, to_canonical_bytes};
use crate::durable::{self, PathIoError, io_at};
use crate::jsonl;
use journal::{JournalError, Recovery};
use layout::{
    ARCHIVE_SCHEMA_VERSION, Layout, MARKER, MARKER_FORMAT, REGISTRIES, RuleViolation, RunId,
};
use lock::{LockError, LockHeld, WriterLock};
use manifest::{Marker, RunManifest};

pub use import::{ImportOptions, ImportReport, Rejection};

/// Everything that can go wrong in the archive layer.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{} is not a babel archive (no {MARKER})", root.display())]
    NotAnArchive { root: PathBuf },
    #[error("the archive marker {} is invalid: {reason}", path.display())]
    BadMarker { path: PathBuf, reason: String },
    #[error("{0}")]
    InvalidId(#[from] RuleViolation),
    #[error("no run {run:?} in this archive")]
    UnknownRun { run: String },
    #[error("run {run:?} already exists")]
    RunExists { run: String },
    #[error("run {run:?} differs from existing run {existing:?} only in letter case")]
    RunCaseClash { run: String, existing: String },
    #[error("run {run:?} is sealed; it accepts no further writes")]
    RunSealed { run: String },
    #[error("{message}")]
    Usage {
        message: String,
        hint: Option<String>,
    },
    #[error(transparent)]
    Busy(#[from] LockHeld),
    #[error(transparent)]
    Io(#[from] PathIoError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("{} is damaged: {reason}", path.display())]
    Damaged { path: PathBuf, reason: String },
    #[error("{0}")]
    Canonical(#[from] CanonicalError),
    #[error("import rejected: {}", .0.summary())]
    Rejected(Box<ImportReport>),
    #[error(transparent)]
    Artifact(Box<artifacts::ArtifactError>),
    /// What a command was about to read is not whole: the findings of validate.
    #[error("{what}: validate finds {} problem(s) in what it reads; nothing was written", .report.findings.len())]
    Faulty {
        what: String,
        report: Box<validate::ValidationReport>,
    },
}

impl From<LockError> for ArchiveError {
    fn from(error: LockError) -> Self {
        match error {
            LockError::Held(held) => Self::Busy(held),
            LockError::Io(io) => Self::Io(io),
        }
    }
}

impl ArchiveError {
    /// What the user can do next, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::NotAnArchive { .. } => {
                "pass --root DIR (or set BABEL_ROOT), or create one here with `babel init`".into()
            }
            Self::UnknownRun { .. } => "`babel list` shows the runs".into(),
            Self::RunSealed { .. } => "create a new run for further data".into(),
            Self::RunCaseClash { .. } => {
                "run IDs that differ only in case collide on macOS and Windows; choose another"
                    .into()
            }
            Self::Busy(held) if held.wait_limit.is_none() => {
                "wait for it to finish, or pass --wait SECONDS to queue behind it".into()
            }
            Self::Busy(_) => "the other writer is still running; try again later".into(),
            Self::Damaged { .. } | Self::Faulty { .. } => {
                "`babel validate` lists every problem".into()
            }
            Self::Usage { hint, .. } => return hint.clone(),
            Self::Rejected(report) => return report.hint(),
            Self::Artifact(error) => return error.hint(),
            Self::Journal(JournalError::Unreadable { .. }) => {
                "babel cannot tell which files that interrupted write created; look at the journal, \
                 move it aside, then run `babel validate` and remove the untracked files it lists"
                    .into()
            }
            _ => return None,
        })
    }
}

/// Refuses to go on when validation found a problem: `what` names the command (`export
/// of run r1`), the report lists the findings.
pub fn require_whole(what: &str, report: validate::ValidationReport) -> Result<(), ArchiveError> {
    if report.ok {
        Ok(())
    } else {
        Err(ArchiveError::Faulty {
            what: what.to_owned(),
            report: Box::new(report),
        })
    }
}

/// Reads and checks a JSON file written by babel (manifest, marker): one strict object.
pub(crate) fn read_json_object(path: &Path) -> Result<(Vec<u8>, serde_json::Value), ArchiveError> {
    let damaged = |reason: String| ArchiveError::Damaged {
        path: path.to_owned(),
        reason,
    };
    let bytes = match durable::read_small(path) {
        Ok(bytes) => bytes,
        Err(error) if error.source.kind() == io::ErrorKind::NotFound => {
            return Err(damaged("the file is missing".into()));
        }
        Err(error) => return Err(error.into()),
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| damaged(format!("not UTF-8 ({e})")))?;
    let text = text.strip_suffix('\n').unwrap_or(text);
    let line = jsonl::parse_line(text, 1, jsonl::NonFinitePolicy::Reject)
        .map_err(|e| damaged(e.to_string()))?;
    Ok((bytes, serde_json::Value::Object(line.object)))
}

/// An archive on disk.
#[derive(Debug, Clone)]
pub struct Archive {
    layout: Layout,
}

/// What `babel init` did.
#[derive(Debug, Default)]
pub struct InitReport {
    /// True when the marker was written now (a new archive).
    pub created: bool,
    /// Folders that were missing and were created.
    pub created_dirs: Vec<String>,
    /// Recovery of an interrupted write.
    pub recovery: Recovery,
    /// The number of manifests recorded when the history of an archive written before
    /// babel kept one was started now (`adopt`).
    pub adopted: Option<usize>,
}

/// Adopts an archive's history, trusting it on first use where it has none: one
/// `adopt` entry snapshots every manifest, so that the log replays from there on. An
/// archive written before babel kept a history gets its first entry, recording every
/// manifest as it is now (validate still checks everything they register); one whose
/// history an older babel wrote (hashes only) gets each manifest the history holds by
/// its hash alone, whose bytes must still be that hash. The marker, rewritten with its
/// own bytes, is the commit point, so the entry is journalled like any write. Returns the
/// manifests recorded.
fn adopt(session: &WriteSession<'_>) -> Result<usize, ArchiveError> {
    let layout = session.layout();
    let paths: Vec<String> = if history::exists(layout) {
        history::read(layout)?
            .replay()
            .manifests
            .into_iter()
            .filter(|(_, state)| matches!(state.recorded, history::replay::Recorded::Opaque { .. }))
            .map(|(path, _)| path)
            .collect()
    } else {
        history::manifests_on_disk(layout)?
    };
    let mut manifests = std::collections::BTreeMap::new();
    let mut changes = Vec::new();
    for path in paths {
        let (bytes, manifest) = read_json_object(&layout.resolve(&path))?;
        manifests.insert(path.clone(), Some(durable::digest_of(&bytes).sha256));
        changes.push(history::Change::Snapshot { path, manifest });
    }
    let count = manifests.len();
    let marker = fs::read(layout.marker()).map_err(io_at("reading", &layout.marker()))?;
    let transaction =
        transaction::Transaction::begin(session, "adopt", Vec::new(), Vec::new(), MARKER.into())?;
    transaction.commit_from(&marker, manifests, changes, None)?;
    Ok(count)
}

/// Whether the history holds a manifest by its hash alone (an older babel wrote it), so
/// that `babel init` must adopt it before the next write.
fn needs_adoption(layout: &Layout) -> Result<bool, ArchiveError> {
    Ok(history::read(layout)?
        .replay()
        .manifests
        .values()
        .any(|state| matches!(state.recorded, history::replay::Recorded::Opaque { .. })))
}

/// In an archive restored from a publication of some of its runs, records in the
/// history (one `hub-pull` entry) that the runs whose folders are absent were left out, so
/// that their absence is the history's and not a deletion. Returns their IDs, sorted;
/// writes nothing when every recorded run is present.
pub fn record_runs_left_out(session: &WriteSession<'_>) -> Result<Vec<String>, ArchiveError> {
    let layout = session.layout();
    let mut left_out = std::collections::BTreeMap::new();
    let mut changes = Vec::new();
    let mut runs = Vec::new();
    for (path, state) in history::read(layout)?.replay().manifests {
        let Some(run) = path
            .strip_prefix("runs/")
            .and_then(|rest| rest.strip_suffix("/manifest.json"))
        else {
            continue;
        };
        let folder = layout.resolve(&format!("{}/{run}", layout::RUNS));
        if state.recorded.sha256().is_some() && folder.symlink_metadata().is_err() {
            runs.push(run.to_owned());
            left_out.insert(path.clone(), None);
            changes.push(history::Change::Remove { path });
        }
    }
    if !left_out.is_empty() {
        let marker = fs::read(layout.marker()).map_err(io_at("reading", &layout.marker()))?;
        let transaction = transaction::Transaction::begin(
            session,
            "hub-pull",
            Vec::new(),
            Vec::new(),
            MARKER.into(),
        )?;
        transaction.commit_from(&marker, left_out, changes, None)?;
    }
    Ok(runs)
}

/// The default ceiling for one attachment: 1 GiB (`--max-attachment-size` raises it).
pub const DEFAULT_MAX_ATTACHMENT_SIZE: u64 = 1 << 30;

/// Opens a file the user named as input (to import, attach or register). It must be a
/// regular file (a symlink to one is fine), checked before it is opened, so that a FIFO
/// cannot block the write holding the lock and a device (`/dev/zero`) cannot stream
/// without end; and, with `ceiling` (its size and the option that raises it), no larger.
/// Returns the open file and its size.
pub fn open_input(
    path: &Path,
    ceiling: Option<(u64, &str)>,
) -> Result<(fs::File, u64), ArchiveError> {
    let not_regular = |kind: &str| ArchiveError::Usage {
        message: format!("{} is {kind}, not a regular file", path.display()),
        hint: Some("give a file's path; to keep a stream, save it to a file first".into()),
    };
    let kind_of = |meta: &fs::Metadata| {
        use std::os::unix::fs::FileTypeExt;
        let kind = meta.file_type();
        if kind.is_file() {
            None
        } else if kind.is_dir() {
            Some("a folder")
        } else if kind.is_fifo() {
            Some("a FIFO (named pipe)")
        } else if kind.is_char_device() || kind.is_block_device() {
            Some("a device")
        } else if kind.is_socket() {
            Some("a socket")
        } else {
            Some("a special file")
        }
    };
    let meta = fs::metadata(path).map_err(io_at("opening", path))?;
    if let Some(kind) = kind_of(&meta) {
        return Err(not_regular(kind));
    }
    let file = fs::File::open(path).map_err(io_at("opening", path))?;
    let meta = file.metadata().map_err(io_at("reading", path))?;
    if let Some(kind) = kind_of(&meta) {
        return Err(not_regular(kind));
    }
    if let Some((ceiling, option)) = ceiling
        && meta.len() > ceiling
    {
        return Err(too_large(path, meta.len(), ceiling, option));
    }
    Ok((file, meta.len()))
}

/// The error for an input beyond its ceiling.
pub fn too_large(path: &Path, size: u64, ceiling: u64, option: &str) -> ArchiveError {
    ArchiveError::Usage {
        message: format!(
            "{} is {size} bytes, more than the ceiling of {ceiling} bytes",
            path.display()
        ),
        hint: Some(format!(
            "if it belongs in the archive, raise the ceiling with {option} SIZE (e.g. {option} 20GiB)"
        )),
    }
}

impl Archive {
    /// Opens the archive at `root` (its marker must be present and valid).
    pub fn open(root: &Path) -> Result<Self, ArchiveError> {
        let layout = Layout::new(root);
        let marker = layout.marker();
        if !marker.is_file() {
            return Err(ArchiveError::NotAnArchive {
                root: root.to_owned(),
            });
        }
        let (_, value) = read_json_object(&marker)?;
        let bad = |reason: String| ArchiveError::BadMarker {
            path: marker.clone(),
            reason,
        };
        let parsed: Marker = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        if parsed.format != MARKER_FORMAT {
            return Err(bad(format!("unknown format {:?}", parsed.format)));
        }
        if parsed.schema_version != ARCHIVE_SCHEMA_VERSION {
            return Err(bad(format!(
                "archive schema version {} is not supported by this babel (it reads version {ARCHIVE_SCHEMA_VERSION})",
                parsed.schema_version
            )));
        }
        Ok(Self { layout })
    }

    /// Opens the archive at `root` for validation: a damaged marker, or a missing one in a
    /// folder that holds an archive history, is a finding of validate, not a refusal.
    pub fn open_for_validation(root: &Path) -> Result<Self, ArchiveError> {
        let layout = Layout::new(root);
        match Self::open(root) {
            Err(ArchiveError::BadMarker { .. } | ArchiveError::Damaged { .. }) => {
                Ok(Self { layout })
            }
            Err(ArchiveError::NotAnArchive { .. }) if history::exists(&layout) => {
                Ok(Self { layout })
            }
            other => other,
        }
    }

    /// Creates an archive at `root`, or recreates the empty operational folders of an
    /// existing one (after a download, say) and finishes an interrupted write. Registered
    /// data is never created, changed or "repaired".
    pub fn init(
        root: &Path,
        wait: Option<Duration>,
        announce: &mut dyn FnMut(&LockHeld),
    ) -> Result<InitReport, ArchiveError> {
        let layout = Layout::new(root);
        let mut report = InitReport::default();
        let ensure =
            |path: PathBuf, name: &str, report: &mut InitReport| -> Result<(), ArchiveError> {
                match fs::create_dir(&path) {
                    Ok(()) => {
                        report.created_dirs.push(name.to_owned());
                        Ok(())
                    }
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
                    Err(e) => Err(io_at("creating", &path)(e).into()),
                }
            };
        fs::create_dir_all(root).map_err(io_at("creating", root))?;
        ensure(layout.operational(), layout::OPERATIONAL, &mut report)?;
        let lock = WriterLock::acquire(&layout.lock(), "babel init", wait, announce)?;
        report.recovery = journal::recover(&layout)?;
        ensure(layout.staging(), ".babel/staging", &mut report)?;
        let archive = Self {
            layout: layout.clone(),
        };
        let session = WriteSession {
            archive: &archive,
            _lock: lock,
            recovery: Recovery::default(),
        };
        if layout.marker().exists() {
            Self::open(root)?;
            if !history::exists(&layout) || needs_adoption(&layout)? {
                report.adopted = Some(adopt(&session)?);
            }
        } else {
            // The marker is the archive's first commit, and the history's first entry.
            let marker = Marker {
                format: MARKER_FORMAT.to_owned(),
                schema_version: ARCHIVE_SCHEMA_VERSION,
            };
            let bytes = to_canonical_bytes(&marker)?;
            let transaction = transaction::Transaction::begin(
                &session,
                "init",
                Vec::new(),
                Vec::new(),
                MARKER.to_owned(),
            )?;
            let manifest = serde_json::to_value(&marker).map_err(CanonicalError::from)?;
            let change = history::Change::Create {
                path: MARKER.to_owned(),
                manifest,
            };
            transaction.commit(&bytes, change)?;
            report.created = true;
        }
        ensure(layout.runs(), layout::RUNS, &mut report)?;
        for registry in REGISTRIES {
            ensure(root.join(registry), registry, &mut report)?;
        }
        durable::sync_dir(root)?;
        drop(session);
        Ok(report)
    }

    /// The archive's paths.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Takes the writer lock (waiting up to `wait`) and recovers any interrupted write.
    pub fn write_session(
        &self,
        command: &str,
        wait: Option<Duration>,
        announce: &mut dyn FnMut(&LockHeld),
    ) -> Result<WriteSession<'_>, ArchiveError> {
        let operational = self.layout.operational();
        if !operational.is_dir() {
            // Downloads cannot carry empty folders; the operational one holds no data.
            fs::create_dir(&operational).map_err(io_at("creating", &operational))?;
        }
        let lock = WriterLock::acquire(&self.layout.lock(), command, wait, announce)?;
        faults::point("lock-acquired");
        let recovery = journal::recover(&self.layout)?;
        Ok(WriteSession {
            archive: self,
            _lock: lock,
            recovery,
        })
    }

    /// The writer lock, for a reader that must see one committed state (`validate`): it
    /// waits up to `wait` for a write under way to finish, and keeps writers out until
    /// dropped. `None` when the archive cannot be locked because it is read-only (no one
    /// can write it then either). Unlike a write session it recovers nothing: a pending
    /// journal stays for validate to report.
    pub fn hold_still(
        &self,
        command: &str,
        wait: Option<Duration>,
        announce: &mut dyn FnMut(&LockHeld),
    ) -> Result<Option<WriterLock>, ArchiveError> {
        let read_only = |error: &io::Error| {
            matches!(
                error.kind(),
                io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied
            )
        };
        let operational = self.layout.operational();
        if !operational.is_dir() {
            match fs::create_dir(&operational) {
                Ok(()) => {}
                Err(e) if read_only(&e) => return Ok(None),
                Err(e) => return Err(io_at("creating", &operational)(e).into()),
            }
        }
        match WriterLock::acquire(&self.layout.lock(), command, wait, announce) {
            Ok(lock) => Ok(Some(lock)),
            Err(LockError::Io(error)) if read_only(&error.source) => Ok(None),
            Err(other) => Err(other.into()),
        }
    }

    /// The IDs of all runs, sorted.
    pub fn run_ids(&self) -> Result<Vec<RunId>, ArchiveError> {
        let runs = self.layout.runs();
        let entries = match fs::read_dir(&runs) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_at("listing", &runs)(e).into()),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_at("listing", &runs))?;
            let name = entry.file_name();
            if let Some(id) = name.to_str().and_then(|n| RunId::parse(n).ok())
                && entry.path().join(layout::MANIFEST).is_file()
            {
                ids.push(id);
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// Reads a run's manifest.
    pub fn run_manifest(&self, run: &RunId) -> Result<RunManifest, ArchiveError> {
        self.run_manifest_read(run).map(|(_, manifest)| manifest)
    }

    /// [`Archive::run_manifest`], with the bytes it was parsed from.
    pub(crate) fn run_manifest_read(
        &self,
        run: &RunId,
    ) -> Result<(Vec<u8>, RunManifest), ArchiveError> {
        let path = self.layout.run_dir(run).join(layout::MANIFEST);
        if !path.is_file() {
            return Err(ArchiveError::UnknownRun {
                run: run.to_string(),
            });
        }
        let (bytes, value) = read_json_object(&path)?;
        let manifest: RunManifest =
            serde_json::from_value(value).map_err(|e| ArchiveError::Damaged {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        if manifest.run_id != run.as_str() {
            return Err(ArchiveError::Damaged {
                path,
                reason: format!("it names run {:?}", manifest.run_id),
            });
        }
        if let Some(problem) = manifest.layout_problems().into_iter().next() {
            return Err(ArchiveError::Damaged {
                path,
                reason: problem,
            });
        }
        Ok((bytes, manifest))
    }
}

/// A write in progress: the writer lock is held until this is dropped.
pub struct WriteSession<'a> {
    archive: &'a Archive,
    _lock: WriterLock,
    /// What recovery did when the session started.
    pub recovery: Recovery,
}

impl WriteSession<'_> {
    /// The archive being written.
    pub fn archive(&self) -> &Archive {
        self.archive
    }

    /// The archive's paths.
    pub fn layout(&self) -> &Layout {
        &self.archive.layout
    }
}
