//! The run manifest (`runs/<run>/manifest.json`): the run's metadata, status, imports and
//! attachments, and the commit point of every write to the run. Stored as RFC 8785
//! canonical JSON plus LF; read strictly (duplicate keys and unknown fields refused).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, RandomState};

use super::layout;
use crate::canonical_json::{CanonicalError, to_canonical_bytes};

/// True for a version as babel writes them: `MAJOR.MINOR.PATCH`, each a decimal number
/// without leading zeros, optionally followed by `-` and a pre-release of ASCII letters,
/// digits, dots and hyphens (SemVer 2.0 without build metadata).
pub fn is_version(text: &str) -> bool {
    let (core, pre) = match text.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (text, None),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    numbers.len() == 3
        && numbers.iter().all(|n| {
            !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && (n.len() == 1 || !n.starts_with('0'))
        })
        && pre.is_none_or(|pre| {
            !pre.is_empty()
                && pre
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        })
}

/// The `format` value of a run manifest.
pub const RUN_MANIFEST_FORMAT: &str = "babel-run";

/// Whether a run still accepts writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Open,
    Sealed,
}

/// A stored file: its run-relative path, SHA-256 and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// Path relative to the run folder (`raw/0001-x.jsonl`).
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
}

/// The normalized records file of one import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordsEntry {
    /// Path relative to the run folder (`records/0001.parquet`).
    pub path: String,
    /// SHA-256 of the records file.
    pub sha256: String,
    pub bytes: u64,
    /// Number of records (rows).
    pub count: u64,
}

/// How many records of one import share a benchmark, language and variant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountEntry {
    pub benchmark: String,
    pub language: Option<String>,
    pub variant_id: String,
    pub records: u64,
}

/// Counts records per (benchmark, language, variant) as they stream by: a known
/// combination costs a hash and a comparison, no allocation.
#[derive(Debug, Default)]
pub struct BreakdownCounter {
    entries: Vec<CountEntry>,
    /// Entries by the hash of their combination.
    index: HashMap<u64, Vec<usize>>,
    hasher: RandomState,
}

impl BreakdownCounter {
    /// Counts one record.
    pub fn add(&mut self, benchmark: &str, language: Option<&str>, variant_id: &str) {
        let hash = self.hasher.hash_one((benchmark, language, variant_id));
        let candidates = self.index.entry(hash).or_default();
        for &index in candidates.iter() {
            let entry = &mut self.entries[index];
            if entry.benchmark == benchmark
                && entry.language.as_deref() == language
                && entry.variant_id == variant_id
            {
                entry.records += 1;
                return;
            }
        }
        candidates.push(self.entries.len());
        self.entries.push(CountEntry {
            benchmark: benchmark.to_owned(),
            language: language.map(str::to_owned),
            variant_id: variant_id.to_owned(),
            records: 1,
        });
    }

    /// The counts, sorted as manifests store them.
    pub fn finish(self) -> Vec<CountEntry> {
        let mut entries = self.entries;
        entries.sort();
        entries
    }
}

/// One imported input file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportEntry {
    /// 1, 2, 3, ... in import order.
    pub seq: u64,
    /// The adapter (`canonical`, `paired`, `harness`).
    pub format: String,
    /// The input's file name as given.
    pub source_basename: String,
    pub raw: FileEntry,
    pub records: RecordsEntry,
    /// Record counts per (benchmark, language, variant), sorted.
    pub breakdown: Vec<CountEntry>,
    /// `--variant`, when given.
    pub variant_override: Option<String>,
    /// `--id-field`, when given; null means the automatic stable-ID lookup.
    pub id_field: Option<String>,
    /// The other options that shaped the records (`benchmark`, `language`, `non_finite`).
    pub options: Map<String, Value>,
    /// The adapter's normalization rules version (`canonical/1`).
    pub normalizer_version: String,
    /// The babel version that imported it.
    pub babel_version: String,
    pub imported_at: String,
}

/// A file kept beside a run's data (producer results, configs, logs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachmentEntry {
    /// Path relative to the run folder (`attachments/<name>`).
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
    pub added_at: String,
}

/// The whole run manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunManifest {
    pub format: String,
    pub schema_version: u64,
    pub run_id: String,
    pub status: RunStatus,
    pub created_at: String,
    pub sealed_at: Option<String>,
    /// Run metadata: `model` always; `benchmark`, `dataset_revision`, `correctness_metric`,
    /// `shared_answer_key`, `producer_version`, `metric_definitions`, `benchmark_contract`
    /// and free keys as given.
    pub metadata: Map<String, Value>,
    pub imports: Vec<ImportEntry>,
    pub attachments: Vec<AttachmentEntry>,
}

impl RunManifest {
    /// The canonical bytes of this manifest.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CanonicalError> {
        to_canonical_bytes(self)
    }

    /// The evaluated model named in the metadata.
    pub fn model(&self) -> &str {
        self.metadata
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// True for a strict benchmark run (metadata carries `benchmark_contract`).
    pub fn is_strict(&self) -> bool {
        self.metadata.contains_key("benchmark_contract")
    }

    /// Record counts over all imports, per (benchmark, language, variant).
    pub fn totals(&self) -> Vec<CountEntry> {
        let mut totals: BTreeMap<(String, Option<String>, String), u64> = BTreeMap::new();
        for entry in self.imports.iter().flat_map(|i| &i.breakdown) {
            *totals
                .entry((
                    entry.benchmark.clone(),
                    entry.language.clone(),
                    entry.variant_id.clone(),
                ))
                .or_default() += entry.records;
        }
        totals
            .into_iter()
            .map(|((benchmark, language, variant_id), records)| CountEntry {
                benchmark,
                language,
                variant_id,
                records,
            })
            .collect()
    }

    /// Everything wrong with where this manifest says its files are: import numbers not
    /// 1, 2, 3, ...; raw, records and attachment paths not in their folders, or not safe
    /// package paths. A manifest with such problems must not be used to open files.
    pub fn layout_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for (index, entry) in self.imports.iter().enumerate() {
            let seq = index as u64 + 1;
            if entry.seq != seq {
                problems.push(format!(
                    "import {seq} has sequence number {} (expected {seq})",
                    entry.seq
                ));
            }
            let raw_prefix = format!("{}/{:04}-", layout::RAW, entry.seq);
            let raw_name = entry.raw.path.strip_prefix(&raw_prefix);
            if raw_name.is_none_or(|name| name.is_empty() || name.contains('/')) {
                problems.push(format!(
                    "import {} raw path {:?} is not {raw_prefix}<name>",
                    entry.seq, entry.raw.path
                ));
            }
            if entry.records.path != layout::records_path(entry.seq) {
                problems.push(format!(
                    "import {} records path {:?} is not {}",
                    entry.seq,
                    entry.records.path,
                    layout::records_path(entry.seq)
                ));
            }
        }
        for attachment in &self.attachments {
            let name = attachment.path.strip_prefix("attachments/").unwrap_or("");
            if name.is_empty() || name.contains('/') {
                problems.push(format!(
                    "attachment path {:?} is not attachments/<name>",
                    attachment.path
                ));
            }
        }
        let paths = self
            .imports
            .iter()
            .flat_map(|i| [&i.raw.path, &i.records.path])
            .chain(self.attachments.iter().map(|a| &a.path));
        for path in paths {
            if let Err(violation) = layout::check_package_path(path) {
                problems.push(violation.to_string());
            }
        }
        problems
    }

    /// Total records over all imports.
    pub fn record_count(&self) -> u64 {
        self.imports.iter().map(|i| i.records.count).sum()
    }
}

/// The archive marker (`babel-archive.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Marker {
    pub format: String,
    pub schema_version: u64,
}
