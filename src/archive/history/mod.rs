//! The archive's history: a hash-chained log of every committed write, and its head.
//!
//! `history/log.jsonl` holds one entry per write, each RFC 8785 canonical JSON plus LF:
//! its sequence number, the SHA-256 of the previous entry's line (`prev`; null for the
//! first), the time, the babel version, the operation, its subject, and the SHA-256 of
//! every manifest the write produced. An entry's hash is the SHA-256 of its line.
//! `history/HEAD` names the last entry `{"seq", "sha256"}`: the value to cite, as a git
//! commit ID is cited. Like a git ref it only moves forward from the value last seen:
//! an archive that still holds an entry someone recorded (`validate --since SEQ:SHA256`,
//! a Hub commit that names it) has not had that part of its past rewritten.
//!
//! Replaying the log gives the expected SHA-256 of every manifest; `validate` compares it
//! with the disk, so a changed, dropped or added manifest (a reopened seal, a dropped
//! import, a rehashed record, a deleted run or artifact) is a finding, and manifests
//! commit to every other file by hash. A changed, dropped or reordered entry breaks the
//! chain or the head.
//!
//! A write prepares the next log and head beside the current ones before its commit point
//! (the manifest's rename) and renames them into place after it; the journal lists the
//! prepared files, so recovery removes them when the write did not commit and renames them
//! when it did. A committed write therefore always ends in the history, and a full disk
//! stops a write before its commit point. This module owns the two files; the
//! transaction calls it, validate checks it.

mod parts;
pub mod replay;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::io;

use super::layout::Layout;
use super::manifest::{AttachmentEntry, ImportEntry};
use crate::canonical_json::{is_canonical, to_canonical_bytes};
use crate::clock::now_rfc3339;
use crate::durable::{self, PathIoError, digest_of, io_at, is_sha256};

/// The history folder, at ROOT.
pub const HISTORY: &str = "history";
/// The log, ROOT-relative.
pub const LOG: &str = "history/log.jsonl";
/// The head, ROOT-relative.
pub const HEAD: &str = "history/HEAD";

/// The operations a history entry can name. `adopt` starts the history of an archive
/// written before babel kept one (`babel init` records its manifests as they are);
/// `hub-pull` records, in an archive restored from a publication of some runs, the runs
/// that were not published; `import-bundle` records the runs and artifacts a release
/// bundle brought, and the bundle (its SHA-256 and root).
pub const OPERATIONS: [&str; 9] = [
    "init",
    "run create",
    "import",
    "seal",
    "attach",
    "artifact add",
    "adopt",
    "hub-pull",
    "import-bundle",
];

/// One committed write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub seq: u64,
    /// SHA-256 of the previous entry's line; null for the first.
    pub prev: Option<String>,
    /// RFC 3339 UTC.
    pub at: String,
    pub babel_version: String,
    /// One of [`OPERATIONS`].
    pub operation: String,
    /// ROOT-relative folder the write was about (`runs/r1`, `item-banks/b1`, `.`).
    pub subject: String,
    /// ROOT-relative path → SHA-256 of every manifest the write produced, or null for a
    /// manifest the write removed from this copy of the archive (`hub-pull`).
    pub manifests: BTreeMap<String, Option<String>>,
    /// The release bundle an `import-bundle` write came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<BundleRef>,
    /// What the write changed in each manifest, so that the log replays ([`replay`]).
    /// Absent only in entries an older babel wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<Change>>,
}

/// What one write changed in one manifest (ROOT-relative `path`): enough for the log
/// alone to rebuild every manifest, so that [`replay`] can hold each write to the
/// transitions a babel write can make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Change {
    /// A manifest that did not exist, whole: the marker (`init`), a new run (`run
    /// create`), an artifact (`artifact add`), a run or artifact a bundle brought.
    Create { path: String, manifest: Value },
    /// A manifest as it stood when an archive's history was adopted (`adopt`).
    Snapshot { path: String, manifest: Value },
    /// Imports and attachments appended to a run (`import`, `attach`).
    Extend {
        path: String,
        imports: Vec<ImportEntry>,
        attachments: Vec<AttachmentEntry>,
    },
    /// A run sealed (`seal`).
    Seal { path: String, sealed_at: String },
    /// A run this copy of the archive does not hold (`hub-pull` of a partial
    /// publication).
    Remove { path: String },
}

/// A release bundle as the history names it: the SHA-256 of the bundle file and its
/// bundle root (FORMAT.md, "Release bundles").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleRef {
    pub sha256: String,
    pub root: String,
}

impl Entry {
    /// The entry's line: canonical JSON and LF.
    pub fn line(&self) -> Vec<u8> {
        to_canonical_bytes(self).expect("a history entry holds strings and small integers")
    }
}

/// The last entry: what an archive's history is cited by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Head {
    pub seq: u64,
    pub sha256: String,
}

impl std::fmt::Display for Head {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.seq, self.sha256)
    }
}

impl Head {
    /// Reads `SEQ:SHA256` as printed.
    pub fn parse(text: &str) -> Option<Self> {
        let (seq, sha256) = text.split_once(':')?;
        let seq = seq.parse().ok().filter(|&n| n > 0)?;
        (sha256.len() == 64
            && sha256
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
        .then(|| Self {
            seq,
            sha256: sha256.to_owned(),
        })
    }
}

/// The history as read from disk, and what is wrong with it.
#[derive(Debug, Default)]
pub struct History {
    /// The entries that read, in order (an unreadable line is left out and reported).
    pub entries: Vec<Entry>,
    /// The SHA-256 of each entry's line, beside `entries`.
    pub hashes: Vec<String>,
    /// The head the log's lines end at: the number of lines and the last line's hash.
    end: Option<Head>,
    /// (file, line or None for the whole file, message) of each problem. Each line is
    /// checked on its own and against the line before, so one changed entry is one
    /// finding, and the entries after it still say which manifests they recorded.
    pub problems: Vec<(&'static str, Option<u64>, String)>,
}

impl History {
    /// The head the log ends at, as `history/HEAD` should name it.
    pub fn head(&self) -> Option<Head> {
        self.end.clone()
    }

    /// Whether the log holds `anchor`: the entry of that number, with that hash.
    pub fn holds(&self, anchor: &Head) -> bool {
        self.entries
            .iter()
            .zip(&self.hashes)
            .any(|(entry, hash)| entry.seq == anchor.seq && *hash == anchor.sha256)
    }

    /// Every manifest rebuilt from the entries, and the writes that are not legal.
    pub fn replay(&self) -> replay::Replay {
        replay::Replay::of(&self.entries)
    }
}

/// Reads and checks the history: every line canonical, every entry of the schema, numbered
/// 1, 2, 3, ..., chained to the line before, and the head naming the last.
pub fn read(layout: &Layout) -> Result<History, PathIoError> {
    let mut history = History::default();
    let log_path = layout.resolve(LOG);
    let bytes = match fs::read(&log_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            history.problems.push((
                LOG,
                None,
                "the archive has no history: it was written before babel kept one (run `babel init` once to start it from the manifests as they are), or its history/ folder was deleted".into(),
            ));
            return Ok(history);
        }
        Err(e) => return Err(io_at("reading", &log_path)(e)),
    };
    let mut previous: Option<(String, bool)> = None;
    for (index, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let number = index as u64 + 1;
        let hash = digest_of(line).sha256;
        let mut fine = true;
        let mut problem = |message: String| {
            history.problems.push((LOG, Some(number), message));
            fine = false;
        };
        if line.last() != Some(&b'\n') {
            problem("the last line has no LF (cut short?)".into());
        } else {
            match check_line(line) {
                Err(message) => problem(message),
                Ok(entry) => {
                    if entry.seq != number {
                        problem(format!("entry {} stands at line {number}", entry.seq));
                    }
                    // After a line that is itself at fault, a broken link says nothing new.
                    let after_fine_line = previous.as_ref().is_none_or(|(_, fine)| *fine);
                    if entry.prev != previous.as_ref().map(|(hash, _)| hash.clone())
                        && after_fine_line
                    {
                        problem(match previous {
                            None => "the first entry names a previous one".into(),
                            Some(_) => "its prev is not the SHA-256 of the entry before it (an entry was changed, dropped or moved)".into(),
                        });
                    }
                    history.entries.push(entry);
                    history.hashes.push(hash.clone());
                }
            }
        }
        history.end = Some(Head {
            seq: number,
            sha256: hash.clone(),
        });
        previous = Some((hash, fine));
    }
    let head_path = layout.resolve(HEAD);
    match fs::read(&head_path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            history
                .problems
                .push((HEAD, None, "the history head is missing".into()));
        }
        Err(e) => return Err(io_at("reading", &head_path)(e)),
        Ok(bytes) => {
            let parsed = serde_json::from_slice::<Head>(&bytes).ok().filter(|head| {
                serde_json::to_value(head).is_ok_and(|value| is_canonical(&bytes, &value))
            });
            match (parsed, history.head()) {
                (None, _) => history.problems.push((
                    HEAD,
                    None,
                    "not a history head ({\"seq\", \"sha256\"} as canonical JSON)".into(),
                )),
                (Some(head), last) if Some(&head) != last.as_ref() => {
                    history.problems.push((
                        HEAD,
                        None,
                        match &last {
                            Some(last) => {
                                format!("it names entry {head}, but the log ends at {last}")
                            }
                            None => format!("it names entry {head}, but the log is empty"),
                        },
                    ));
                    // Either file may be the changed one: name the log's end too.
                    if let Some(last) = last {
                        history.problems.push((
                            LOG,
                            Some(last.seq),
                            format!("the log ends here, but history/HEAD names entry {head}: this entry or the head was changed, or entries were dropped"),
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(history)
}

fn check_line(line: &[u8]) -> Result<Entry, String> {
    let value: serde_json::Value =
        serde_json::from_slice(line).map_err(|e| format!("not JSON: {e}"))?;
    if !is_canonical(line, &value) {
        return Err("not RFC 8785 canonical JSON followed by LF".into());
    }
    let entry: Entry =
        serde_json::from_value(value).map_err(|e| format!("not a history entry: {e}"))?;
    if !OPERATIONS.contains(&entry.operation.as_str()) {
        return Err(format!("unknown operation {:?}", entry.operation));
    }
    if !crate::clock::is_rfc3339_utc(&entry.at) {
        return Err(format!("time {:?} is not RFC 3339 UTC", entry.at));
    }
    if !super::manifest::is_version(&entry.babel_version) {
        return Err(format!(
            "babel_version {:?} is not a version",
            entry.babel_version
        ));
    }
    if entry.bundle.is_some() != (entry.operation == "import-bundle")
        || entry
            .bundle
            .as_ref()
            .is_some_and(|b| !is_sha256(&b.sha256) || !is_sha256(&b.root))
    {
        return Err("only an import-bundle entry names a bundle, by two SHA-256".into());
    }
    if entry.manifests.iter().any(|(path, sha)| {
        super::layout::check_package_path(path).is_err()
            || sha.as_deref().is_some_and(|sha| !is_sha256(sha))
    }) {
        return Err("a manifest path or SHA-256 is malformed".into());
    }
    Ok(entry)
}

/// The entry a write will append: the next number, chained to the current head.
pub fn next_entry(
    layout: &Layout,
    operation: &str,
    subject: &str,
    manifests: BTreeMap<String, Option<String>>,
    bundle: Option<BundleRef>,
    changes: Vec<Change>,
) -> Result<Entry, PathIoError> {
    let head = read_head(layout)?;
    Ok(Entry {
        seq: head.as_ref().map_or(1, |h| h.seq + 1),
        prev: head.map(|h| h.sha256),
        at: now_rfc3339(),
        babel_version: env!("CARGO_PKG_VERSION").into(),
        operation: operation.into(),
        subject: subject.into(),
        manifests,
        bundle,
        changes: Some(changes),
    })
}

/// The head as `history/HEAD` states it (none in an archive without history yet).
pub fn read_head(layout: &Layout) -> Result<Option<Head>, PathIoError> {
    let path = layout.resolve(HEAD);
    match fs::read(&path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_at("reading", &path)(e)),
    }
}

/// The files a write prepares before its commit point: the next log and the next head.
pub fn temps() -> [String; 2] {
    [
        format!("{LOG}{}", super::layout::NEW_SUFFIX),
        format!("{HEAD}{}", super::layout::NEW_SUFFIX),
    ]
}

/// Writes the log with `entry` appended, and the head naming it, beside the current ones
/// ([`temps`]), synced: everything that needs disk space happens before the commit point,
/// so a full disk can only stop a write before it commits.
pub fn prepare(layout: &Layout, entry: &Entry) -> Result<Head, PathIoError> {
    let log = layout.resolve(LOG);
    let mut bytes = match fs::read(&log) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io_at("reading", &log)(e)),
    };
    let line = entry.line();
    bytes.extend_from_slice(&line);
    let head = Head {
        seq: entry.seq,
        sha256: digest_of(&line).sha256,
    };
    let head_bytes = to_canonical_bytes(&head).expect("a head holds a number and a string");
    let [log_temp, head_temp] = temps().map(|temp| layout.resolve(&temp));
    durable::write_new(&log_temp, &bytes)?;
    durable::write_new(&head_temp, &head_bytes)?;
    Ok(head)
}

/// Whether the archive has a history (a log file; an archive written before babel kept
/// one has none until `babel init` adopts it).
pub fn exists(layout: &Layout) -> bool {
    layout.resolve(LOG).symlink_metadata().is_ok()
}

/// Every manifest on disk, ROOT-relative: the marker, each run's and each artifact's.
pub fn manifests_on_disk(layout: &Layout) -> Result<Vec<String>, PathIoError> {
    let root = layout.root();
    let mut found = Vec::new();
    if layout.marker().is_file() {
        found.push(super::layout::MARKER.to_owned());
    }
    for folder in std::iter::once(super::layout::RUNS).chain(super::layout::REGISTRIES) {
        let dir = root.join(folder);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_at("listing", &dir)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(io_at("listing", &dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry
                .path()
                .join(super::layout::MANIFEST)
                .symlink_metadata()
                .is_ok()
            {
                found.push(format!("{folder}/{name}/{}", super::layout::MANIFEST));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Renames the prepared log and head into place (after the commit point; no-op when they
/// are already in place). Renames need no space, so this completes on a full disk too.
pub fn publish(layout: &Layout) -> Result<(), PathIoError> {
    let [log_temp, head_temp] = temps().map(|temp| layout.resolve(&temp));
    let mut moved = false;
    if log_temp.exists() {
        durable::rename_replacing(&log_temp, &layout.resolve(LOG))?;
        moved = true;
    }
    if head_temp.exists() {
        durable::rename_replacing(&head_temp, &layout.resolve(HEAD))?;
        moved = true;
    }
    if moved {
        durable::sync_dir(&layout.resolve(HISTORY))?;
    }
    Ok(())
}
