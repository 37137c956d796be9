//! Release bundles: sealed runs and every artifact they depend on as one deterministic,
//! verifiable file (`babel export`, `babel verify-bundle`, `babel import-bundle`). FORMAT.md ("Release
//! bundles") is the contract; this module owns it: the layout, the bundle manifest, the
//! hash envelopes, `checksums.sha256` and the transport ([`tar`] inside one zstd frame).
//!
//! The envelopes follow the corpus-package ADR: a record's row hash is the SHA-256 of its
//! RFC 8785 canonical JSON (so it does not depend on how records files encode it); a
//! records file's row root, a component's root and the bundle root hash canonical JSON
//! envelopes, never concatenated bytes, and nothing hashes itself. A bundle holds no wall
//! clock, host, user or random value: the same archive state exports the same bytes.
//!
//! Export reads the archive only through its readers, under the writer lock (so nothing
//! changes while a bundle is written), and writes only the output file, atomically and
//! never over an existing one. Import writes into the archive as one journalled write.

pub mod export;
pub mod import;
pub mod tar;
pub mod verify;

use std::fs::File;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::archive::records::{Batch, Columns, RecordsFile};
use crate::canonical_json::{to_canonical_bytes, write_string};
use crate::durable::{digest_of, hex};
use crate::jsonl::{self, CanonicalScratch};
use crate::record::{StoredRecord, push_integer};

/// The one top-level folder of every bundle.
pub const TOP: &str = "babel-bundle";
/// `manifest.json`'s `format`.
pub const FORMAT: &str = "babel-bundle";
/// `manifest.json`'s `format_version`.
pub const FORMAT_VERSION: u64 = 1;
/// The zstd level of the transport (`zstd-frame-v1`): fixed, never chosen by size.
pub const ZSTD_LEVEL: i32 = 9;
/// The transport profiles, as the manifest names them.
pub const TRANSPORT: &str = "tar-ustar-v1+zstd-frame-v1";

/// The bundle's `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleManifest {
    pub format: String,
    pub format_version: u64,
    /// What was asked for: `{"runs": [...]}` or `{"release": ID}`.
    pub selection: Value,
    pub transport: Transport,
    /// Every component (a run or an artifact), sorted by name.
    pub components: Vec<Component>,
    pub bundle_root: String,
}

/// The transport profile and the pinned encoder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transport {
    pub profile: String,
    pub zstd_level: i32,
    /// The zstd library that compressed it (`libzstd 1.5.7`): another encoder may keep
    /// the content but not the transport bytes.
    pub encoder: String,
}

/// A run (`runs/<id>`) or an artifact (`<registry>/<id>`) and its files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    pub name: String,
    /// Files sorted by path bytes.
    pub files: Vec<BundleFile>,
    pub root: String,
}

/// Whether a file of this role is a run's or an artifact's manifest.
pub(crate) fn is_manifest(role: &str) -> bool {
    role == "run-manifest" || role == "artifact-manifest"
}

/// One file of a component (its path relative to the bundle's top folder).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleFile {
    pub path: String,
    /// `run-manifest`, `raw`, `raw-companion`, `records`, `attachment`,
    /// `artifact-manifest` or `artifact-payload`.
    pub role: String,
    pub sha256: String,
    pub bytes: u64,
    /// Records files: the row count and the ordered root over `[identity, row_sha256]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_root: Option<String>,
}

/// RFC 8785 canonical JSON of `value`, without a trailing LF: what every envelope and
/// row hash is computed over.
fn canonical(value: &impl Serialize) -> Result<Vec<u8>, String> {
    let value = serde_json::to_value(value).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    crate::canonical_json::write_value(&value, &mut bytes).map_err(|e| e.to_string())?;
    Ok(bytes)
}

fn sha256_of_canonical(value: &Value) -> String {
    digest_of(&canonical(value).expect("envelopes are canonical JSON")).sha256
}

/// `manifest.json`'s bytes: canonical JSON and one LF.
pub fn manifest_bytes(manifest: &BundleManifest) -> Vec<u8> {
    to_canonical_bytes(manifest).expect("a bundle manifest is canonical JSON")
}

/// A records file's row count and row root: `{"algorithm":"sha256-ordered-rows-v1",
/// "rows":[[identity, row_sha256], ...]}` in stored order, where identity is `[benchmark,
/// language, script, question_id, variant_id, filter, repeat_id]` and a row hash is the
/// SHA-256 of the record's canonical JSON. The envelope's canonical text is hashed as it
/// is written, a row at a time: built whole, a million rows took 3 GB.
pub fn row_root(file: File) -> Result<(u64, String), String> {
    let records = RecordsFile::open(file)?;
    let mut hasher = Sha256::new();
    hasher.update(ROWS_ENVELOPE_START);
    let mut count = 0u64;
    let mut rows = RowEntries::default();
    for batch in records.batches(Columns::ALL).map_err(|e| e.to_string())? {
        let batch = batch.map_err(|e| e.to_string())?;
        for row in 0..batch.len() {
            if count > 0 {
                hasher.update(b",");
            }
            hasher.update(rows.entry(&batch, row)?);
            count += 1;
        }
    }
    hasher.update(ROWS_ENVELOPE_END);
    Ok((count, hex(&hasher.finalize())))
}

/// Writes the rows of a row root, keeping its buffers from row to row.
#[derive(Default)]
struct RowEntries {
    record: StoredRecord,
    line: Vec<u8>,
    scratch: CanonicalScratch,
    entry: Vec<u8>,
}

impl RowEntries {
    /// Record `row` of `batch` as a row of a row root, canonical: `[identity, row_sha256]`.
    ///
    /// The row is checked as reading it into a record checks it (a row that check
    /// refuses has no root). Its canonical JSON is then its stored JSON line put in
    /// canonical order by the streaming reader, without a tree (reading each record into
    /// one and writing it out again was most of an export's and a verification's time); a
    /// line the reader cannot order (one nested as deep as a record may be, two levels
    /// deeper inside the line) is read into a tree as before. Either way the hash is the
    /// tree path's.
    fn entry(&mut self, batch: &Batch, row: usize) -> Result<&[u8], String> {
        batch.check_row(row).map_err(|e| e.to_string())?;
        batch.stored_record(row, &mut self.record);
        self.line.clear();
        self.record.write_json_line(&mut self.line);
        self.line.pop();
        let line = std::str::from_utf8(&self.line).map_err(|e| e.to_string())?;
        let sha256 = match jsonl::canonical_text(line, &mut self.scratch) {
            Ok(canonical) => digest_of(canonical.as_bytes()).sha256,
            Err(_) => {
                let record = batch.record(row).map_err(|e| e.to_string())?;
                digest_of(&canonical(&record)?).sha256
            }
        };
        let entry = &mut self.entry;
        entry.clear();
        entry.extend_from_slice(b"[[");
        let identity = self.record.identity();
        for text in [
            Some(identity.benchmark),
            identity.language,
            identity.script,
            Some(identity.question_id),
            Some(identity.variant_id),
            Some(identity.filter),
        ] {
            match text {
                Some(text) => write_string(text, entry),
                None => entry.extend_from_slice(b"null"),
            }
            entry.push(b',');
        }
        push_integer(identity.repeat_id, entry);
        entry.extend_from_slice(b"],\"");
        entry.extend_from_slice(sha256.as_bytes());
        entry.extend_from_slice(b"\"]");
        Ok(entry)
    }
}

/// The row root envelope's canonical text around its rows (its keys in canonical order).
const ROWS_ENVELOPE_START: &[u8] = br#"{"algorithm":"sha256-ordered-rows-v1","rows":["#;
const ROWS_ENVELOPE_END: &[u8] = b"]}";

/// A component's root: `{"algorithm":"babel-bundle-component-v1","component":NAME,
/// "files":[[path, role, bytes, sha256, rows, row_root], ...]}` (files sorted by path;
/// rows and row_root null for files that are not records files).
pub fn component_root(name: &str, files: &[BundleFile]) -> String {
    let files: Vec<Value> = files
        .iter()
        .map(|f| json!([f.path, f.role, f.bytes, f.sha256, f.rows, f.row_root]))
        .collect();
    sha256_of_canonical(&json!({
        "algorithm": "babel-bundle-component-v1",
        "component": name,
        "files": files
    }))
}

/// The bundle root: `{"algorithm":"babel-bundle-v1","components":[[name, root], ...]}`
/// (sorted by name); it excludes `manifest.json` and `checksums.sha256`.
pub fn bundle_root(components: &[Component]) -> String {
    let components: Vec<Value> = components.iter().map(|c| json!([c.name, c.root])).collect();
    sha256_of_canonical(&json!({"algorithm": "babel-bundle-v1", "components": components}))
}

/// `checksums.sha256`: `<sha256>  <path>` for `manifest.json` and every component file,
/// sorted by path bytes, LF-terminated; paths relative to the top folder, so
/// `sha256sum -c checksums.sha256` run inside it checks every file but itself.
pub fn checksums(manifest_sha256: &str, components: &[Component]) -> String {
    let mut lines: Vec<(String, String)> = vec![("manifest.json".into(), manifest_sha256.into())];
    for component in components {
        for file in &component.files {
            lines.push((file.path.clone(), file.sha256.clone()));
        }
    }
    lines.sort();
    lines
        .iter()
        .map(|(path, sha256)| format!("{sha256}  {path}\n"))
        .collect()
}

/// The folders on the way to `path`, outermost first, each ending in `/` (`a/` and `a/b/`
/// for `a/b/c`).
pub(crate) fn folders_of(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(at, _)| &path[..=at])
}

/// The zstd library babel links (what `Transport::encoder` pins).
pub fn encoder() -> String {
    let n = zstd::zstd_safe::version_number();
    format!("libzstd {}.{}.{}", n / 10000, n / 100 % 100, n % 100)
}
