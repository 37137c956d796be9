//! Replaying the history: every manifest rebuilt from the log alone, and every write
//! checked to be a legal transition.
//!
//! Each entry records what its write changed ([`Change`]): a manifest created whole, an
//! import or attachment appended, a seal, a run removed from a partial copy, or a
//! snapshot of every manifest when an archive's history is adopted. Applying them in
//! order gives the content of every manifest, whose SHA-256 must be the one the entry
//! records; and only these transitions are legal: nothing is written to a sealed run, no
//! registered file is ever replaced (its path, hash and size stay what its import or
//! attachment recorded), no run or artifact is created twice or deleted (a `hub-pull`
//! entry may record a run as absent from this copy, and `validate --since` reports it),
//! and a run's metadata, creation time and ID stay those of its `run create` entry.
//!
//! Entries written before babel recorded changes hold only the manifests' hashes: the
//! replay keeps those as opaque, and an `adopt` entry later snapshots each of them (its
//! content must hash to the recorded value). From the first entry that records changes
//! on, every entry must record them, so no later entry can slip an opaque hash in.
//!
//! This module owns the rules; `validate` reports the problems, and every write checks
//! the manifest it builds on against the replay before it writes anything.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::parts::RunParts;
use super::{Change, Entry};
use crate::archive::layout::{MANIFEST, MARKER, REGISTRIES, RUNS};
use crate::archive::manifest::{AttachmentEntry, ImportEntry, RunManifest, RunStatus};
use crate::canonical_json::to_canonical_bytes;
use crate::durable::digest_of;

/// What the history says a manifest is, after some entries.
#[derive(Debug, Clone)]
pub enum Recorded {
    /// Rebuilt from the entries' changes (a run's in parts, [`Replay`]'s `runs`).
    Known { sha256: String },
    /// Recorded by an entry from before babel recorded changes: only its hash.
    Opaque { sha256: String },
    /// Recorded as absent from this copy of the archive (`hub-pull` of a partial
    /// publication).
    Removed,
}

impl Recorded {
    /// The SHA-256 the manifest on disk must have; `None` when it must be absent.
    pub fn sha256(&self) -> Option<&str> {
        match self {
            Recorded::Known { sha256, .. } | Recorded::Opaque { sha256 } => Some(sha256),
            Recorded::Removed => None,
        }
    }
}

/// One manifest as the replay left it.
#[derive(Debug, Clone)]
pub struct State {
    pub recorded: Recorded,
    /// The entry that last changed it.
    pub seq: u64,
    /// The entry that first recorded it.
    pub since: u64,
    /// The entry that recorded it as absent, if one did.
    pub removed_at: Option<u64>,
}

/// Every manifest rebuilt from the log, and what in the log is not a legal write.
#[derive(Debug, Default)]
pub struct Replay {
    pub manifests: BTreeMap<String, State>,
    /// (entry number, problem), in log order.
    pub problems: Vec<(u64, String)>,
    /// The first entry that records its changes (none: the whole log is from before).
    pub replayable_from: Option<u64>,
    /// Each run manifest rebuilt from the changes, by path, in parts (`Err`: why the
    /// manifest an entry created or adopted is not a run manifest).
    runs: BTreeMap<String, Result<RunParts, String>>,
}

/// The kind of manifest a ROOT-relative path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind<'a> {
    Marker,
    Run(&'a str),
    Artifact,
}

fn kind_of(path: &str) -> Option<Kind<'_>> {
    if path == MARKER {
        return Some(Kind::Marker);
    }
    let (folder, rest) = path.split_once('/')?;
    let id = rest.strip_suffix(MANIFEST)?.strip_suffix('/')?;
    if id.is_empty() || id.contains('/') {
        return None;
    }
    if folder == RUNS {
        Some(Kind::Run(id))
    } else if REGISTRIES.contains(&folder) {
        Some(Kind::Artifact)
    } else {
        None
    }
}

/// The bytes a manifest value is stored as.
fn stored_bytes(value: &Value) -> Result<Vec<u8>, String> {
    to_canonical_bytes(value).map_err(|e| format!("its manifest cannot be stored: {e}"))
}

fn run_of(bytes: &[u8]) -> Result<RunManifest, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("not a run manifest: {e}"))
}

/// The operations whose one change is to the manifest of `subject`, and the change kinds
/// each allows.
fn allowed(operation: &str, change: &Change) -> bool {
    matches!(
        (operation, change),
        ("init", Change::Create { .. })
            | ("run create", Change::Create { .. })
            | ("artifact add", Change::Create { .. })
            | ("import-bundle", Change::Create { .. })
            | ("import", Change::Extend { .. })
            | ("attach", Change::Extend { .. })
            | ("seal", Change::Seal { .. })
            | ("hub-pull", Change::Remove { .. })
            | ("adopt", Change::Snapshot { .. })
    )
}

impl Replay {
    /// Replays `entries` (in log order).
    pub fn of(entries: &[Entry]) -> Self {
        let mut replay = Self::default();
        for entry in entries {
            replay.apply(entry);
        }
        replay
    }

    fn problem(&mut self, seq: u64, message: String) {
        self.problems.push((seq, message));
    }

    /// The paths recorded at entry `seq` or before that a later entry recorded as absent
    /// from this copy: what an anchor at `seq` vouched for and this copy no longer holds.
    pub fn removed_after(&self, seq: u64) -> Vec<(&str, u64)> {
        self.manifests
            .iter()
            .filter_map(|(path, state)| match state.removed_at {
                Some(at) if at > seq && state.since <= seq => Some((path.as_str(), at)),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn apply(&mut self, entry: &Entry) {
        let seq = entry.seq;
        let Some(changes) = &entry.changes else {
            self.apply_hashes_only(entry);
            return;
        };
        self.replayable_from.get_or_insert(seq);
        if changes.is_empty() {
            self.problem(
                seq,
                format!("the {} entry records no change", entry.operation),
            );
            return;
        }
        let mut touched = BTreeSet::new();
        for change in changes {
            let path = change.path();
            if !allowed(&entry.operation, change) {
                self.problem(
                    seq,
                    format!(
                        "a {} entry cannot {} {path}",
                        entry.operation,
                        change.verb()
                    ),
                );
                continue;
            }
            if !touched.insert(path) {
                self.problem(seq, format!("the entry changes {path} twice"));
                continue;
            }
            if let Err(message) = self.change(entry, change) {
                self.problem(seq, format!("{path}: {message}"));
            }
        }
        if entry.operation == "adopt" {
            self.check_adoption(entry, &touched);
        }
        self.check_subject(entry, changes);
        self.check_recorded_hashes(entry, &touched);
    }

    /// An entry from before babel recorded changes: its manifests are known by their
    /// hashes alone, which no entry after the first that records changes may do.
    fn apply_hashes_only(&mut self, entry: &Entry) {
        let seq = entry.seq;
        if let Some(first) = self.replayable_from {
            self.problem(
                seq,
                format!("the entry does not record what its {} changed, but every entry from entry {first} on must: it was not written by this babel", entry.operation),
            );
        }
        for (path, sha256) in &entry.manifests {
            let recorded = match sha256 {
                Some(sha256) => Recorded::Opaque {
                    sha256: sha256.clone(),
                },
                None => Recorded::Removed,
            };
            self.set(path, recorded, seq);
        }
    }

    /// An entry of a single-manifest write changes one manifest, and its subject is that
    /// manifest's folder; any other entry's subject is the archive (`.`).
    fn check_subject(&mut self, entry: &Entry, changes: &[Change]) {
        let seq = entry.seq;
        let single = matches!(
            entry.operation.as_str(),
            "run create" | "artifact add" | "import" | "attach" | "seal"
        );
        if single && changes.len() != 1 {
            self.problem(
                seq,
                format!("a {} entry changes one manifest", entry.operation),
            );
        }
        let expected_subject = match (single, changes.first()) {
            (true, Some(change)) => change
                .path()
                .rsplit_once('/')
                .map_or(".", |(folder, _)| folder),
            _ => ".",
        };
        if entry.subject != expected_subject {
            self.problem(
                seq,
                format!(
                    "its subject {:?} is not the folder it changed ({expected_subject:?})",
                    entry.subject
                ),
            );
        }
    }

    fn check_recorded_hashes(&mut self, entry: &Entry, touched: &BTreeSet<&str>) {
        let seq = entry.seq;
        // Every manifest the entry names is one it changed (or the marker, rewritten with
        // its own bytes as the commit point of an archive-wide write), with the hash the
        // replay gives it.
        for (path, sha256) in &entry.manifests {
            let replayed = self.manifests.get(path).map(|s| s.recorded.sha256());
            let unchanged_marker = path == MARKER && !touched.contains(path.as_str());
            if !touched.contains(path.as_str()) && !unchanged_marker {
                self.problem(seq, format!("it records {path} without a change to it"));
            } else if replayed.flatten() != sha256.as_deref() {
                self.problem(
                    seq,
                    format!("it records {path} with a SHA-256 its changes do not produce: the entry or its change was edited"),
                );
            }
        }
        for path in touched {
            if !entry.manifests.contains_key(*path) {
                self.problem(
                    seq,
                    format!("it changes {path} without recording its SHA-256"),
                );
            }
        }
    }

    /// An `adopt` that is not the archive's first entry snapshots exactly the manifests
    /// the history holds only as hashes.
    fn check_adoption(&mut self, entry: &Entry, touched: &BTreeSet<&str>) {
        if entry.seq == 1 {
            return;
        }
        let opaque_left: Vec<String> = self
            .manifests
            .iter()
            .filter(|(_, s)| matches!(s.recorded, Recorded::Opaque { .. }))
            .map(|(path, _)| path.clone())
            .filter(|path| !touched.contains(path.as_str()))
            .collect();
        for path in opaque_left {
            self.problem(
                entry.seq,
                format!("the adoption leaves {path} recorded only by its hash"),
            );
        }
    }

    fn set(&mut self, path: &str, recorded: Recorded, seq: u64) {
        let removed = matches!(recorded, Recorded::Removed);
        match self.manifests.get_mut(path) {
            Some(state) => {
                state.recorded = recorded;
                state.seq = seq;
                if removed {
                    state.removed_at = Some(seq);
                }
            }
            None => {
                self.manifests.insert(
                    path.to_owned(),
                    State {
                        recorded,
                        seq,
                        since: seq,
                        removed_at: removed.then_some(seq),
                    },
                );
            }
        }
    }

    /// Records `bytes` as the manifest at `path`, of `kind`: a run's is kept in parts.
    fn known(&mut self, path: &str, kind: Kind<'_>, bytes: &[u8], seq: u64) {
        if let Kind::Run(_) = kind {
            let parts = run_of(bytes).and_then(RunParts::of);
            self.runs.insert(path.to_owned(), parts);
        }
        let sha256 = digest_of(bytes).sha256;
        self.set(path, Recorded::Known { sha256 }, seq);
    }

    /// The parts of the run at `path`, which [`Self::open_run`] found open.
    fn run_mut(&mut self, path: &str) -> &mut RunParts {
        match self.runs.get_mut(path) {
            Some(Ok(run)) => run,
            _ => unreachable!("open_run found the run's parts"),
        }
    }

    /// Applies one change, or says why it is not a legal one.
    fn change(&mut self, entry: &Entry, change: &Change) -> Result<(), String> {
        let path = change.path();
        let kind = kind_of(path)
            .ok_or_else(|| "not the path of a marker, run or artifact manifest".to_owned())?;
        let current = self.manifests.get(path).map(|s| s.recorded.clone());
        match change {
            Change::Create { manifest, .. } => {
                let bytes = created(entry, kind, current, manifest)?;
                self.known(path, kind, &bytes, entry.seq);
            }
            Change::Snapshot { manifest, .. } => {
                let bytes = snapshotted(entry, current, manifest)?;
                self.known(path, kind, &bytes, entry.seq);
            }
            Change::Extend {
                imports,
                attachments,
                ..
            } => {
                let Kind::Run(_) = kind else {
                    return Err("only a run takes imports and attachments".into());
                };
                extended(entry, self.open_run(path, current)?, imports, attachments)?;
                let run = self.run_mut(path);
                run.append(imports, attachments)?;
                let sha256 = run.sha256();
                self.set(path, Recorded::Known { sha256 }, entry.seq);
            }
            Change::Seal { sealed_at, .. } => {
                let Kind::Run(_) = kind else {
                    return Err("only a run is sealed".into());
                };
                self.open_run(path, current)?;
                let run = self.run_mut(path);
                run.seal(sealed_at)?;
                let sha256 = run.sha256();
                self.set(path, Recorded::Known { sha256 }, entry.seq);
            }
            Change::Remove { .. } => {
                let Kind::Run(_) = kind else {
                    return Err("only a run is recorded as absent from a copy".into());
                };
                match current {
                    Some(Recorded::Known { .. } | Recorded::Opaque { .. }) => {}
                    Some(Recorded::Removed) => return Err("it is already absent".into()),
                    None => return Err("no entry created it".into()),
                }
                self.set(path, Recorded::Removed, entry.seq);
            }
        }
        Ok(())
    }

    /// The run at `path` a change extends or seals: known to the replay and open.
    fn open_run(&self, path: &str, current: Option<Recorded>) -> Result<&RunParts, String> {
        match current {
            Some(Recorded::Known { .. }) => {}
            Some(Recorded::Opaque { .. }) => {
                return Err("the history holds only its hash (an older babel wrote it): `babel init` adopts it before any write".into());
            }
            Some(Recorded::Removed) => {
                return Err("it was recorded as absent from this copy".into());
            }
            None => return Err("no entry created it".into()),
        }
        let run = match self.runs.get(path) {
            Some(Ok(run)) => run,
            Some(Err(message)) => return Err(message.clone()),
            None => return Err("no entry created it as a run".into()),
        };
        if run.status() == RunStatus::Sealed {
            return Err(format!(
                "run {} is sealed: nothing may be written to it",
                run.run_id()
            ));
        }
        Ok(run)
    }
}

/// The bytes of a manifest `entry` creates: never one that exists or existed, the marker
/// only by the first `init`, a new run open and empty unless a bundle brings it sealed.
fn created(
    entry: &Entry,
    kind: Kind<'_>,
    current: Option<Recorded>,
    manifest: &Value,
) -> Result<Vec<u8>, String> {
    if let Some(current) = current {
        return Err(match current {
            Recorded::Removed => "created again after an entry recorded it as absent".into(),
            _ => "created again: it already exists (a manifest is created once)".into(),
        });
    }
    let bytes = stored_bytes(manifest)?;
    match (kind, entry.operation.as_str()) {
        (Kind::Marker, "init") if entry.seq == 1 => {}
        (Kind::Marker, _) => {
            return Err("the marker is created by the first entry, `init`".into());
        }
        (Kind::Run(id), "run create" | "import-bundle") => {
            let run = run_of(&bytes)?;
            if run.run_id != id {
                return Err(format!("the manifest names run {:?}", run.run_id));
            }
            let bundle = entry.operation == "import-bundle";
            if bundle && run.status != RunStatus::Sealed {
                return Err("a bundle brings only sealed runs".into());
            }
            if !bundle
                && (run.status != RunStatus::Open
                    || run.sealed_at.is_some()
                    || !run.imports.is_empty()
                    || !run.attachments.is_empty())
            {
                return Err("a new run is open and holds nothing yet".into());
            }
        }
        (Kind::Artifact, "artifact add" | "import-bundle") => {}
        _ => return Err(format!("a {} entry cannot create it", entry.operation)),
    }
    Ok(bytes)
}

/// The bytes of an adopted manifest: at the first entry, or one the history holds by the
/// same hash alone.
fn snapshotted(
    entry: &Entry,
    current: Option<Recorded>,
    manifest: &Value,
) -> Result<Vec<u8>, String> {
    let bytes = stored_bytes(manifest)?;
    let sha256 = digest_of(&bytes).sha256;
    match current {
        None if entry.seq == 1 => {}
        Some(Recorded::Opaque { sha256: recorded }) if recorded == sha256 => {}
        Some(Recorded::Opaque { .. }) => {
            return Err("the snapshot differs from the manifest the history recorded".into());
        }
        _ => {
            return Err("only a manifest the history holds by its hash alone is adopted".into());
        }
    }
    // The snapshot is the manifest as it stood; whether that is a valid manifest is
    // validate's check of the manifest itself.
    Ok(bytes)
}

/// Checks that `imports` and `attachments` may be appended to the open `run`: an import
/// adds imports numbered on from the run's, an attach only attachments, and no registered
/// file is registered again.
fn extended(
    entry: &Entry,
    run: &RunParts,
    imports: &[ImportEntry],
    attachments: &[AttachmentEntry],
) -> Result<(), String> {
    let import = entry.operation == "import";
    let needs = if import {
        !imports.is_empty()
    } else {
        imports.is_empty() && !attachments.is_empty()
    };
    if !needs {
        return Err(format!(
            "a{} {} adds {}",
            if import { "n" } else { "" },
            entry.operation,
            if import {
                "at least one import"
            } else {
                "attachments and no import"
            }
        ));
    }
    let mut new: BTreeSet<&str> = BTreeSet::new();
    let mut last = run.last_import;
    for import in imports {
        let next = last + 1;
        if import.seq != next {
            return Err(format!(
                "import {} follows import {} (imports are numbered 1, 2, 3, ...)",
                import.seq,
                next - 1
            ));
        }
        let files = import
            .raw_files()
            .map(|f| f.path.as_str())
            .chain([import.records.path.as_str()]);
        for file in files {
            if run.taken.contains(file) || !new.insert(file) {
                return Err(format!(
                    "import {} registers {file} again: a registered file is never replaced",
                    import.seq
                ));
            }
        }
        last = import.seq;
    }
    for attachment in attachments {
        let path = attachment.path.as_str();
        if run.taken.contains(path) || !new.insert(path) {
            return Err(format!(
                "it attaches {} again: a registered file is never replaced",
                attachment.path
            ));
        }
    }
    Ok(())
}

impl Change {
    /// The ROOT-relative manifest the change is to.
    pub fn path(&self) -> &str {
        match self {
            Change::Create { path, .. }
            | Change::Snapshot { path, .. }
            | Change::Extend { path, .. }
            | Change::Seal { path, .. }
            | Change::Remove { path } => path,
        }
    }

    fn verb(&self) -> &'static str {
        match self {
            Change::Create { .. } => "create",
            Change::Snapshot { .. } => "snapshot",
            Change::Extend { .. } => "extend",
            Change::Seal { .. } => "seal",
            Change::Remove { .. } => "remove",
        }
    }
}
