//! The run manifest (`runs/<run>/manifest.json`): the run's metadata, status, imports and
//! attachments, and the commit point of every write to the run. Stored as RFC 8785
//! canonical JSON plus LF; read strictly (duplicate keys and unknown fields refused).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, RandomState};

use super::layout;
use super::metadata::RunMetadata;
use crate::adapters::Format;
use crate::canonical_json::{CanonicalError, to_canonical_bytes};
use crate::durable::is_sha256;
use crate::jsonl::key_tag;

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

impl RunManifest {
    /// Every file the run registers, as (run-relative path, SHA-256, size, whether it is
    /// a records file): each import's raw file, companions and records, then the
    /// attachments.
    pub fn registered_files(&self) -> impl Iterator<Item = (&str, &str, u64, bool)> {
        let imports = self.imports.iter().flat_map(|import| {
            import
                .raw_files()
                .map(|f| (f.path.as_str(), f.sha256.as_str(), f.bytes, false))
                .chain(std::iter::once((
                    import.records.path.as_str(),
                    import.records.sha256.as_str(),
                    import.records.bytes,
                    true,
                )))
        });
        let attached = self
            .attachments
            .iter()
            .map(|a| (a.path.as_str(), a.sha256.as_str(), a.bytes, false));
        imports.chain(attached)
    }
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

impl CountEntry {
    /// The combination the entry counts.
    fn key(&self) -> (&str, Option<&str>, &str) {
        (&self.benchmark, self.language.as_deref(), &self.variant_id)
    }
}

/// Counts records per (benchmark, language, variant) as they stream by: a known
/// combination costs a few comparisons (a hash and a comparison once there are many), no
/// allocation.
#[derive(Debug, Default)]
pub struct BreakdownCounter {
    entries: Vec<CountEntry>,
    /// The first [`LINEAR_ENTRIES`] entries' [`tags`], compared before their strings.
    tags: Vec<[u64; 3]>,
    /// Entries by the hash of their combination, once there are more than
    /// [`LINEAR_ENTRIES`].
    index: HashMap<u64, Vec<usize>>,
    hasher: RandomState,
}

/// A combination's strings as [`key_tag`]s (an absent language and an empty one differ
/// in their strings, which are compared once the tags agree).
fn tags((benchmark, language, variant_id): (&str, Option<&str>, &str)) -> [u64; 3] {
    [
        key_tag(benchmark),
        key_tag(language.unwrap_or("")),
        key_tag(variant_id),
    ]
}

/// Up to this many combinations, [`BreakdownCounter::add`] compares instead of hashing.
const LINEAR_ENTRIES: usize = 16;

impl BreakdownCounter {
    /// Counts one record.
    pub fn add(&mut self, benchmark: &str, language: Option<&str>, variant_id: &str) {
        let key = (benchmark, language, variant_id);
        let same = |index: &usize| self.entries[*index].key() == key;
        // Most files hold a few combinations: comparing them is cheaper than hashing
        // (SipHash of the three was a sixth of the reading thread's time), and comparing
        // their tags cheaper than their strings.
        let found = match self.entries.len() <= LINEAR_ENTRIES {
            true => {
                let tags = tags(key);
                (0..self.entries.len()).find(|index| self.tags[*index] == tags && same(index))
            }
            false => self
                .index
                .get(&self.hasher.hash_one(key))
                .and_then(|candidates| candidates.iter().copied().find(same)),
        };
        if let Some(index) = found {
            self.entries[index].records += 1;
            return;
        }
        // A new combination (rare): its tags again, for the scan.
        if self.entries.len() < LINEAR_ENTRIES {
            self.tags.push(tags(key));
        }
        self.entries.push(CountEntry {
            benchmark: benchmark.to_owned(),
            language: language.map(str::to_owned),
            variant_id: variant_id.to_owned(),
            records: 1,
        });
        // The index is built once the entries outgrow the scan, then kept.
        let indexed = match self.entries.len() {
            n if n <= LINEAR_ENTRIES => 0..0,
            n if n == LINEAR_ENTRIES + 1 => 0..n,
            n => n - 1..n,
        };
        for index in indexed {
            let hash = self.hasher.hash_one(self.entries[index].key());
            self.index.entry(hash).or_default().push(index);
        }
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
    /// The input's file (or folder) name as given.
    pub source_basename: String,
    /// The archived input file; of a folder input, the file whose items became records.
    pub raw: FileEntry,
    /// The other files of a folder input (a HELM run's `run_spec.json`, ...), archived
    /// beside `raw` in the same folder; absent for a file input.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub companions: Vec<FileEntry>,
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
    /// What a structured input's header says of its producer (framework and version,
    /// model, task, dataset, revision); absent for JSON Lines inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<Map<String, Value>>,
    /// The babel version that imported it.
    pub babel_version: String,
    pub imported_at: String,
}

/// The option keys an import records, with the values each may take (`None`: a
/// non-empty string or null).
const OPTIONS: [(&str, Option<&[&str]>); 3] = [
    ("benchmark", None),
    ("language", None),
    ("non_finite", Some(&["reject", "null"])),
];

impl ImportEntry {
    /// Whether the import's raw files are in a folder of their own: a run folder (HELM),
    /// or a unit of an output folder (lighteval, OpenCompass) with its header files.
    pub fn raw_is_a_folder(&self) -> bool {
        Format::parse(&self.format).is_some_and(|f| f.reads_folders() || f.units().is_some())
    }

    /// Every archived input file of the import: the raw file, then its companions.
    pub fn raw_files(&self) -> impl Iterator<Item = &FileEntry> {
        std::iter::once(&self.raw).chain(&self.companions)
    }

    fn contract_problems(&self, metadata: &RunMetadata) -> Vec<String> {
        let mut problems = Vec::new();
        let format = Format::parse(&self.format);
        self.version_problems(format, &mut problems);
        self.path_problems(&mut problems);
        self.option_problems(&mut problems);
        self.breakdown_problems(format, metadata, &mut problems);
        problems
    }

    /// The format is known, the normalizer version is one of its, and `babel_version` is a
    /// version.
    fn version_problems(&self, format: Option<Format>, problems: &mut Vec<String>) {
        match format {
            None => problems.push(format!(
                "unknown format {:?} (one of {})",
                self.format,
                Format::all()
                    .map(Format::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Some(format) => {
                if !is_normalizer_version_of(format, &self.normalizer_version) {
                    problems.push(format!(
                        "normalizer_version {:?} is not one of format {}'s (up to {})",
                        self.normalizer_version,
                        format.name(),
                        format.normalizer_version()
                    ));
                }
            }
        }
        if !is_version(&self.babel_version) {
            problems.push(format!(
                "babel_version {:?} is not a version",
                self.babel_version
            ));
        }
    }

    /// The raw path is the one `source_basename` gives, companions are other files of a
    /// folder input, and every hash is a SHA-256.
    fn path_problems(&self, problems: &mut Vec<String>) {
        let expected_raw =
            layout::raw_path(self.seq, &layout::stored_basename(&self.source_basename));
        // A file input is the raw path itself; a folder input's files are in it.
        let folder_is = |path: &str| {
            path.strip_prefix(&expected_raw)
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|name| !name.is_empty() && !name.contains('/'))
        };
        let folder = self.raw_is_a_folder();
        if !(if folder {
            folder_is(&self.raw.path)
        } else {
            self.raw.path == expected_raw
        }) {
            problems.push(format!(
                "raw path {:?} is not the one source_basename {:?} gives ({expected_raw:?}{})",
                self.raw.path,
                self.source_basename,
                if folder { "/<file>" } else { "" }
            ));
        }
        if !folder && !self.companions.is_empty() {
            problems.push("a file input has companions, which only folder inputs have".into());
        }
        for companion in &self.companions {
            if !folder_is(&companion.path) || companion.path == self.raw.path {
                problems.push(format!(
                    "companion path {:?} is not another file of {expected_raw:?}",
                    companion.path
                ));
            }
            if !is_sha256(&companion.sha256) {
                problems.push("a sha256 is not 64 lowercase hex digits".into());
            }
        }
        if !is_sha256(&self.raw.sha256) || !is_sha256(&self.records.sha256) {
            problems.push("a sha256 is not 64 lowercase hex digits".into());
        }
    }

    /// Exactly the known options, each with an allowed value, and a valid `id_field`.
    fn option_problems(&self, problems: &mut Vec<String>) {
        for key in self.options.keys() {
            if !OPTIONS.iter().any(|(known, _)| known == key) {
                problems.push(format!("unknown option {key:?}"));
            }
        }
        for (key, allowed) in OPTIONS {
            match (self.options.get(key), allowed) {
                (None, _) => problems.push(format!("option {key:?} is missing")),
                (Some(Value::Null), None) => {}
                (Some(Value::String(s)), None) if !s.is_empty() => {}
                (Some(Value::String(s)), Some(allowed)) if allowed.contains(&s.as_str()) => {}
                (Some(value), None) => problems.push(format!(
                    "option {key:?} is {value}, not a non-empty string or null"
                )),
                (Some(value), Some(allowed)) => problems.push(format!(
                    "option {key:?} is {value}, not one of {}",
                    allowed.join(", ")
                )),
            }
        }
        if let Some(field) = &self.id_field
            && crate::jsonl::FieldPath::parse_dotted(field).is_err()
        {
            problems.push(format!("id_field {field:?} is not a dotted field path"));
        }
    }

    /// The breakdown is sorted, counts the records, and agrees with the variant override,
    /// `--benchmark`, the run's benchmark and `--language`.
    fn breakdown_problems(
        &self,
        format: Option<Format>,
        metadata: &RunMetadata,
        problems: &mut Vec<String>,
    ) {
        if self.breakdown.windows(2).any(|pair| pair[0] >= pair[1]) {
            problems.push("the breakdown is not sorted, or lists a combination twice".into());
        }
        let counted: u64 = self.breakdown.iter().map(|entry| entry.records).sum();
        if counted != self.records.count || self.breakdown.iter().any(|entry| entry.records == 0) {
            problems.push(format!(
                "the breakdown counts {counted} records, the records entry {}",
                self.records.count
            ));
        }
        let option = |key: &str| self.options.get(key).and_then(Value::as_str);
        for entry in &self.breakdown {
            if let Some(override_) = &self.variant_override {
                // A paired import's --variant names its rephrased side; its original side
                // keeps the variant "original".
                let fixed = format.is_some_and(|format| {
                    format
                        .adapter()
                        .fixed_variants
                        .contains(&entry.variant_id.as_str())
                });
                if entry.variant_id != *override_ && !fixed {
                    problems.push(format!(
                        "records of variant {:?} contradict its variant_override {override_:?}",
                        entry.variant_id
                    ));
                }
            }
            for (what, expected) in [
                ("--benchmark", option("benchmark")),
                ("the run's benchmark", metadata.benchmark.as_deref()),
            ] {
                if let Some(expected) = expected
                    && entry.benchmark != expected
                {
                    problems.push(format!(
                        "records of benchmark {:?} contradict {what} {expected:?}",
                        entry.benchmark
                    ));
                }
            }
            if let Some(language) = option("language")
                && entry.language.as_deref() != Some(language)
            {
                problems.push(format!(
                    "records of language {:?} contradict --language {language:?}",
                    entry.language
                ));
            }
        }
    }
}

/// True for `<format>/<n>` with `n` from 1 up to the format's current version: an import
/// made by an older babel keeps the version it was normalized with.
fn is_normalizer_version_of(format: Format, text: &str) -> bool {
    let number = |text: &str| -> Option<u64> {
        let n = text.strip_prefix(format.name())?.strip_prefix('/')?;
        (!n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit()))
            .then(|| n.parse().ok())
            .flatten()
    };
    match (number(text), number(format.normalizer_version())) {
        (Some(n), Some(current)) => n >= 1 && n <= current,
        _ => false,
    }
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
    /// Run metadata (`model` always; see [`RunMetadata`]).
    pub metadata: RunMetadata,
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
        &self.metadata.model
    }

    /// True for a strict benchmark run (metadata carries `benchmark_contract`).
    pub fn is_strict(&self) -> bool {
        self.metadata.is_strict()
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

    /// The variants the run holds records of, sorted.
    pub fn variants(&self) -> Vec<String> {
        let mut variants: Vec<String> = self
            .totals()
            .into_iter()
            .map(|count| count.variant_id)
            .collect();
        variants.sort();
        variants.dedup();
        variants
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
            let depth = if entry.raw_is_a_folder() { 1 } else { 0 };
            if raw_name.is_none_or(|name| name.is_empty() || name.matches('/').count() != depth) {
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
            .flat_map(|i| {
                [&i.raw.path, &i.records.path]
                    .into_iter()
                    .chain(i.companions.iter().map(|c| &c.path))
            })
            .chain(self.attachments.iter().map(|a| &a.path));
        for path in paths {
            if let Err(violation) = layout::check_package_path(path) {
                problems.push(violation.to_string());
            }
        }
        problems
    }

    /// Everything in this manifest that babel would not have written, beyond its types:
    /// timestamps that are not RFC 3339 UTC instants, status and `sealed_at` that
    /// disagree, an unknown import format, a normalizer version that is not one of the
    /// format's, a version outside its grammar, a raw file name not derived from
    /// `source_basename`, option keys and values outside their sets, malformed hashes,
    /// and breakdowns that contradict the import's options, its variant override or the
    /// run's benchmark.
    pub fn contract_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut time = |what: String, text: &str| {
            if !crate::clock::is_rfc3339_utc(text) {
                problems.push(format!(
                    "{what} {text:?} is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)"
                ));
            }
        };
        time("created_at".into(), &self.created_at);
        if let Some(sealed_at) = &self.sealed_at {
            time("sealed_at".into(), sealed_at);
        }
        for entry in &self.imports {
            time(
                format!("import {} imported_at", entry.seq),
                &entry.imported_at,
            );
        }
        for attachment in &self.attachments {
            time(
                format!("attachment {:?} added_at", attachment.path),
                &attachment.added_at,
            );
        }
        if (self.status == RunStatus::Sealed) != self.sealed_at.is_some() {
            problems.push(format!(
                "status is {} but sealed_at is {}",
                match self.status {
                    RunStatus::Open => "open",
                    RunStatus::Sealed => "sealed",
                },
                self.sealed_at
                    .as_deref()
                    .map_or("null".into(), |t| format!("{t:?}"))
            ));
        }
        for entry in &self.imports {
            for problem in entry.contract_problems(&self.metadata) {
                problems.push(format!("import {}: {problem}", entry.seq));
            }
        }
        for attachment in &self.attachments {
            if !is_sha256(&attachment.sha256) {
                problems.push(format!(
                    "attachment {:?} sha256 is not 64 lowercase hex digits",
                    attachment.path
                ));
            }
        }
        let mut paths: Vec<&str> = self.attachments.iter().map(|a| a.path.as_str()).collect();
        paths.sort_unstable();
        if paths.windows(2).any(|pair| pair[0] == pair[1]) {
            problems.push("an attachment path is registered twice".into());
        }
        problems
    }

    /// Total records over all imports.
    pub fn record_count(&self) -> u64 {
        self.imports
            .iter()
            .fold(0, |sum, i| sum.saturating_add(i.records.count))
    }
}

/// The archive marker (`babel-archive.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Marker {
    pub format: String,
    pub schema_version: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_breakdown_counts_each_combination_however_many_there_are() {
        for combinations in [1, 15, 16, 17, 40] {
            let mut counter = BreakdownCounter::default();
            let mut expected = BTreeMap::new();
            for i in 0..1000u64 {
                let k = (i * 7919) % combinations;
                let benchmark = format!("b{}", k % 3);
                let language = (k % 2 == 0).then(|| format!("l{}", k / 2));
                let variant = format!("v{}", k / 6);
                counter.add(&benchmark, language.as_deref(), &variant);
                *expected
                    .entry((benchmark, language, variant))
                    .or_insert(0u64) += 1;
            }
            let counted: Vec<_> = counter
                .finish()
                .into_iter()
                .map(|e| ((e.benchmark, e.language, e.variant_id), e.records))
                .collect();
            let mut expected: Vec<_> = expected.into_iter().collect();
            expected.sort();
            assert_eq!(counted, expected, "{combinations} combinations");
        }
    }

    #[test]
    fn an_absent_language_and_an_empty_one_are_counted_apart() {
        let mut counter = BreakdownCounter::default();
        for language in [None, Some(""), None] {
            counter.add("b", language, "v");
        }
        let counted: Vec<_> = counter
            .finish()
            .into_iter()
            .map(|e| (e.language, e.records))
            .collect();
        assert_eq!(counted, vec![(None, 2), (Some(String::new()), 1)]);
    }
}
