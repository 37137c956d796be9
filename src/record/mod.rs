//! The schema-v1 normalized record, its identity key, and the strict reading of stored
//! records. Pure data: no filesystem, no knowledge of input formats or of the archive.

/// The [`Identity`] of a record whose identity fields carry the schema's names
/// ([`Record`], [`NewRecord`]): the seven fields spelled once for both.
macro_rules! identity_of {
    ($record:expr) => {
        Identity {
            benchmark: &$record.benchmark,
            language: $record.language.as_deref(),
            script: $record.script.as_deref(),
            question_id: &$record.question_id,
            variant_id: &$record.variant_id,
            filter: &$record.filter,
            repeat_id: $record.repeat_id,
        }
    };
}

pub mod fields;
mod new;
mod stored;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher, RandomState};
use std::sync::OnceLock;

use crate::jsonl::FieldPath;
pub use fields::{FieldError, Fields};
pub use new::NewRecord;
pub(crate) use stored::push_integer;
pub use stored::{JsonChecker, STORED_FIELDS, StoredField, StoredRecord};

/// The record schema version this build writes and reads.
pub const SCHEMA_VERSION: u64 = 1;

/// The `filter` of a record whose producer names none.
pub const DEFAULT_FILTER: &str = "none";

/// Whether an identity can be paired across variants and runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IdentityScope {
    /// A persistent question ID supplied by the producer: pairs across variants and runs.
    #[serde(rename = "stable")]
    Stable,
    /// Derived from a position (a harness `doc_id`, a source line): never paired.
    #[serde(rename = "run-local")]
    RunLocal,
}

impl IdentityScope {
    /// Reads `stable` or `run-local`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "stable" => Some(Self::Stable),
            "run-local" => Some(Self::RunLocal),
            _ => None,
        }
    }

    /// The name written in records.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stable => "stable",
            Self::RunLocal => "run-local",
        }
    }
}

/// Where a record came from: an archived raw file (path relative to ROOT) and the place of
/// the record's item inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `runs/<run>/raw/<seq>-<basename>`, relative to the archive root.
    pub path: String,
    pub locator: Locator,
}

/// The place of an item inside its raw file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locator {
    /// A one-based line of a JSON Lines file.
    Line(u64),
    /// A member of a ZIP archive (an Inspect `.eval` log: `samples/q001_epoch_1.json`).
    Member(String),
    /// An RFC 6901 JSON Pointer into a JSON document (`/samples/3` of an Inspect `.json`
    /// log, `/request_states/12` of a HELM `scenario_state.json`).
    Pointer(String),
}

impl Source {
    /// A line of a JSON Lines file.
    pub fn line(path: impl Into<String>, line: u64) -> Self {
        Self {
            path: path.into(),
            locator: Locator::Line(line),
        }
    }

    /// The line, when the locator is one.
    pub fn line_number(&self) -> Option<u64> {
        match self.locator {
            Locator::Line(line) => Some(line),
            _ => None,
        }
    }
}

impl Locator {
    /// What follows a file name to point at the item: `:12`, `!samples/q1_epoch_1.json`
    /// or `#/samples/3`.
    pub fn suffix(&self) -> String {
        match self {
            Locator::Line(line) => format!(":{line}"),
            Locator::Member(member) => format!("!{member}"),
            Locator::Pointer(pointer) => format!("#{pointer}"),
        }
    }
}

impl fmt::Display for Source {
    /// `path:line`, `path!member` or `path#pointer`, as messages and reports show a source.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.path, self.locator.suffix())
    }
}

impl Serialize for Source {
    /// `{"path": ..., "line": N}`, `{"path": ..., "member": "..."}` or `{"path": ...,
    /// "pointer": "..."}`: the form `babel records` and the JSONL report write.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("path", &self.path)?;
        match &self.locator {
            Locator::Line(line) => map.serialize_entry("line", line)?,
            Locator::Member(member) => map.serialize_entry("member", member)?,
            Locator::Pointer(pointer) => map.serialize_entry("pointer", pointer)?,
        }
        map.end()
    }
}

/// One model result for one question, variant, filter and repeat within a run.
///
/// Field order here is the order `babel records` writes. `correct` is `Option<bool>`
/// because null means unknown, never wrong.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    pub schema_version: u64,
    pub run_id: String,
    pub benchmark: String,
    pub script: Option<String>,
    pub language: Option<String>,
    pub question_id: String,
    pub variant_id: String,
    pub filter: String,
    pub repeat_id: u64,
    pub identity_scope: IdentityScope,
    pub model: String,
    pub rephrasing_model: Option<String>,
    pub input: Value,
    pub target: Value,
    pub prediction: Value,
    pub correct: Option<bool>,
    pub scores: Map<String, Value>,
    pub metrics: Map<String, Value>,
    pub response: Value,
    pub source: Source,
    pub warnings: Vec<String>,
    /// Additional producer fields, kept as given and never interpreted.
    pub extra: Map<String, Value>,
}

/// The identity fields of a record, borrowed: the one identity type of the crate.
///
/// Within a run the record key is all of it (`script` only in strict runs, where it is
/// part of the key: [`Identity::record_digest`]); a comparison item and a response-matrix
/// cell are the same without `variant_id` ([`Identity::item_cmp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Identity<'r> {
    pub benchmark: &'r str,
    pub language: Option<&'r str>,
    pub script: Option<&'r str>,
    pub question_id: &'r str,
    pub variant_id: &'r str,
    pub filter: &'r str,
    pub repeat_id: u64,
}

/// A fixed-size digest of a record key, so a run's identity set stays small in memory.
pub type KeyDigest = u128;

/// The two SipHash keys of [`Identity::record_digest`], drawn once per process: digests
/// are compared within one process only (they are never stored), and random keys mean no
/// input can be crafted to collide.
fn digest_hashers() -> &'static [RandomState; 2] {
    static HASHERS: OnceLock<[RandomState; 2]> = OnceLock::new();
    HASHERS.get_or_init(|| [RandomState::new(), RandomState::new()])
}

/// The room [`KEY_BYTES`] keeps between keys.
const KEY_BYTES_KEPT: usize = 4096;

thread_local! {
    /// Each thread's buffer for the bytes of the record key being digested.
    static KEY_BYTES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A `HashMap` hasher for [`KeyDigest`] keys, which are hashes already: it passes their
/// bits through instead of hashing them again.
#[derive(Debug, Clone, Copy, Default)]
pub struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u128(&mut self, value: u128) {
        self.0 = value as u64;
    }
}

/// A map keyed by record-key digests.
pub type DigestMap<V> = std::collections::HashMap<KeyDigest, V, BuildHasherDefault<DigestHasher>>;

impl Identity<'_> {
    /// A collision-resistant digest of the record key within a run: two keyed SipHash
    /// hashes of the fields written one after the other (each string closed by 0xFF,
    /// which no UTF-8 text holds, so `("a", "bc")` and `("ab", "c")` differ; each optional
    /// one led by whether it is there, so null differs from ""). `with_script` for strict
    /// runs, whose key includes the script. The fields are gathered into one buffer so
    /// each hash takes them in one write, not a dozen.
    pub fn record_digest(&self, with_script: bool) -> KeyDigest {
        KEY_BYTES.with_borrow_mut(|bytes| {
            bytes.clear();
            let text = |bytes: &mut Vec<u8>, text: &str| {
                bytes.extend_from_slice(text.as_bytes());
                bytes.push(0xFF);
            };
            let optional = |bytes: &mut Vec<u8>, value: Option<&str>| match value {
                Some(value) => {
                    bytes.push(1);
                    text(bytes, value);
                }
                None => bytes.push(0),
            };
            text(bytes, self.benchmark);
            optional(bytes, self.language);
            if with_script {
                optional(bytes, self.script);
            }
            text(bytes, self.question_id);
            text(bytes, self.variant_id);
            text(bytes, self.filter);
            bytes.extend_from_slice(&self.repeat_id.to_le_bytes());
            let half = |state: &RandomState| {
                let mut hasher = state.build_hasher();
                hasher.write(bytes);
                hasher.finish()
            };
            let [a, b] = digest_hashers();
            let digest = (u128::from(half(a)) << 64) | u128::from(half(b));
            // A key of a huge line leaves no huge buffer behind.
            bytes.shrink_to(KEY_BYTES_KEPT);
            digest
        })
    }

    /// The record key as messages show it; `with_script` for strict runs.
    pub fn record_key(&self, with_script: bool) -> String {
        let mut text = format!(
            "benchmark={} language={} ",
            self.benchmark,
            self.language.unwrap_or("null")
        );
        if with_script {
            text.push_str(&format!("script={} ", self.script.unwrap_or("null")));
        }
        text.push_str(&format!(
            "question_id={} variant_id={} filter={} repeat_id={}",
            self.question_id, self.variant_id, self.filter, self.repeat_id
        ));
        text
    }

    /// The item identity as messages show it:
    /// `(benchmark=… language=… script=… question_id=… filter=… repeat_id=…)`.
    pub fn item_key(&self) -> String {
        format!(
            "(benchmark={} language={} script={} question_id={} filter={} repeat_id={})",
            self.benchmark,
            self.language.unwrap_or("null"),
            self.script.unwrap_or("null"),
            self.question_id,
            self.filter,
            self.repeat_id
        )
    }

    /// The order of comparison items: by `(benchmark, language, script, question_id,
    /// filter, repeat_id)`, null language and script first; `variant_id` is not part of it.
    pub fn item_cmp(&self, other: &Identity<'_>) -> std::cmp::Ordering {
        (
            self.benchmark,
            self.language,
            self.script,
            self.question_id,
            self.filter,
            self.repeat_id,
        )
            .cmp(&(
                other.benchmark,
                other.language,
                other.script,
                other.question_id,
                other.filter,
                other.repeat_id,
            ))
    }

    /// The same comparison item (every identity field but `variant_id` equal).
    pub fn same_item(&self, other: &Identity<'_>) -> bool {
        self.item_cmp(other).is_eq()
    }

    /// The question an item asks, whatever its filter and repeat: `(benchmark, language,
    /// script, question_id)`.
    pub fn same_question(&self, other: &Identity<'_>) -> bool {
        (self.benchmark, self.language, self.script, self.question_id)
            == (
                other.benchmark,
                other.language,
                other.script,
                other.question_id,
            )
    }
}

impl Serialize for Identity<'_> {
    /// The item identity as reports write it: every field but `variant_id`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut item = serializer.serialize_struct("ItemIdentity", 6)?;
        item.serialize_field("benchmark", self.benchmark)?;
        item.serialize_field("language", &self.language)?;
        item.serialize_field("script", &self.script)?;
        item.serialize_field("question_id", self.question_id)?;
        item.serialize_field("filter", self.filter)?;
        item.serialize_field("repeat_id", &self.repeat_id)?;
        item.end()
    }
}

impl Record {
    /// The record's identity fields.
    pub fn identity(&self) -> Identity<'_> {
        identity_of!(self)
    }
}

impl Record {
    /// Reads a record in its JSON form (what `babel records` prints): every field present
    /// with its schema type, nothing unknown.
    pub fn from_json(object: Map<String, Value>) -> Result<Self, FieldError> {
        let mut f = Fields::new(object, FieldPath::root());
        let schema_version = f.optional_index("schema_version")?;
        if schema_version != Some(SCHEMA_VERSION) {
            return Err(FieldError::new(
                f.path("schema_version"),
                format!("expected {SCHEMA_VERSION}"),
            ));
        }
        let record = Self {
            schema_version: SCHEMA_VERSION,
            run_id: f.required_string("run_id")?,
            benchmark: f.required_string("benchmark")?,
            script: f.required_nullable_string("script")?,
            language: f.required_nullable_string("language")?,
            question_id: f.required_string("question_id")?,
            variant_id: f.required_string("variant_id")?,
            filter: f.required_string("filter")?,
            repeat_id: required_index(&mut f, "repeat_id")?,
            identity_scope: identity_scope(&mut f, true)?.expect("required"),
            model: f.required_string("model")?,
            rephrasing_model: f.required_nullable_string("rephrasing_model")?,
            input: f.object_or_null("input", true)?,
            target: f.required("target")?,
            prediction: f.required("prediction")?,
            correct: f.nullable_bool("correct", true)?,
            scores: f.object("scores", true)?,
            metrics: f.object("metrics", true)?,
            response: f.required("response")?,
            source: json_source(&mut f)?,
            warnings: f.strings("warnings", true)?,
            extra: f.object("extra", true)?,
        };
        f.deny_unknown()?;
        Ok(record)
    }
}

fn required_index(f: &mut Fields, name: &str) -> Result<u64, FieldError> {
    if f.peek(name).is_none() {
        return Err(FieldError::new(f.path(name), "required field is missing"));
    }
    f.optional_index(name)?
        .ok_or_else(|| FieldError::new(f.path(name), "expected a non-negative integer, found null"))
}

fn json_source(f: &mut Fields) -> Result<Source, FieldError> {
    let base = f.path("source");
    let mut inner = Fields::new(f.object("source", true)?, base.clone());
    let path = inner.required_string("path")?;
    let present = ["line", "member", "pointer"].map(|key| inner.peek(key).is_some());
    let locator = match present {
        [true, false, false] => {
            let line = required_index(&mut inner, "line")?;
            if line == 0 {
                return Err(FieldError::new(
                    base.key("line"),
                    "line numbers are one-based",
                ));
            }
            Locator::Line(line)
        }
        [false, true, false] => Locator::Member(inner.required_string("member")?),
        [false, false, true] => {
            let pointer = inner.required_string("pointer")?;
            if !pointer.starts_with('/') {
                return Err(FieldError::new(
                    base.key("pointer"),
                    "a JSON Pointer starts with /",
                ));
            }
            Locator::Pointer(pointer)
        }
        _ => {
            return Err(FieldError::new(
                base,
                "a source names exactly one of line, member and pointer",
            ));
        }
    };
    inner.deny_unknown()?;
    Ok(Source { path, locator })
}

/// Reads `identity_scope` (`stable` or `run-local`); `None` when absent and not required.
pub fn identity_scope(f: &mut Fields, required: bool) -> Result<Option<IdentityScope>, FieldError> {
    let path = f.path("identity_scope");
    match f.take("identity_scope") {
        None if !required => Ok(None),
        None => Err(FieldError::new(path, "required field is missing")),
        Some(Value::String(text)) => IdentityScope::parse(&text).map(Some).ok_or_else(|| {
            FieldError::new(
                path,
                format!("expected \"stable\" or \"run-local\", found {text:?}"),
            )
        }),
        Some(other) => Err(FieldError::new(
            path,
            format!(
                "expected \"stable\" or \"run-local\", found {}",
                fields::describe(&other)
            ),
        )),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn sample() -> Record {
        Record {
            schema_version: 1,
            run_id: "r1".into(),
            benchmark: "mmlu".into(),
            script: None,
            language: Some("en".into()),
            question_id: "q1".into(),
            variant_id: "original".into(),
            filter: DEFAULT_FILTER.into(),
            repeat_id: 0,
            identity_scope: IdentityScope::Stable,
            model: "m".into(),
            rephrasing_model: None,
            input: json!({"question": "2+2?"}),
            target: json!("4"),
            prediction: json!("4"),
            correct: None,
            scores: Map::new(),
            metrics: Map::new(),
            response: Value::Null,
            source: Source::line("runs/r1/raw/0001-a.jsonl", 1),
            warnings: vec![],
            extra: Map::new(),
        }
    }

    #[test]
    fn null_correctness_serializes_as_null_and_the_source_as_path_and_line() {
        let line = serde_json::to_string(&sample()).unwrap();
        assert!(line.contains("\"correct\":null"), "{line}");
        assert!(
            line.contains("\"source\":{\"path\":\"runs/r1/raw/0001-a.jsonl\",\"line\":1}"),
            "{line}"
        );
    }

    #[test]
    fn the_json_form_reads_back_strictly() {
        let record = sample();
        let Value::Object(object) = serde_json::to_value(&record).unwrap() else {
            panic!()
        };
        assert_eq!(Record::from_json(object.clone()), Ok(record));
        let mut unknown = object.clone();
        unknown.insert("surprise".into(), json!(1));
        assert_eq!(
            Record::from_json(unknown).unwrap_err().path.to_string(),
            "surprise"
        );
        let mut zero = object;
        zero["source"] = json!({"path": "runs/r1/raw/0001-a.jsonl", "line": 0});
        assert_eq!(
            Record::from_json(zero).unwrap_err().path.to_string(),
            "source.line"
        );
    }

    #[test]
    fn the_key_is_benchmark_language_question_variant_filter_repeat() {
        // "Within a run, the unique key is (benchmark, language, question_id, variant_id,
        // filter, repeat_id)."
        let a = sample();
        let mut same = sample();
        same.correct = Some(true);
        same.model = "other".into();
        let digest = |r: &Record| r.identity().record_digest(false);
        assert_eq!(digest(&a), digest(&same));
        for change in [
            |r: &mut Record| r.benchmark = "x".into(),
            |r: &mut Record| r.language = None,
            |r: &mut Record| r.question_id = "q2".into(),
            |r: &mut Record| r.variant_id = "rephrased".into(),
            |r: &mut Record| r.filter = "strict".into(),
            |r: &mut Record| r.repeat_id = 1,
        ] {
            let mut other = sample();
            change(&mut other);
            assert_ne!(digest(&a), digest(&other));
        }
    }

    #[test]
    fn script_is_part_of_the_key_only_for_strict_runs() {
        let a = sample();
        let mut b = sample();
        b.script = Some("Latn".into());
        assert_eq!(
            a.identity().record_digest(false),
            b.identity().record_digest(false)
        );
        assert_ne!(
            a.identity().record_digest(true),
            b.identity().record_digest(true)
        );
    }

    #[test]
    fn fields_do_not_run_into_each_other() {
        // Moving a character across the boundary of two fields, or a null language
        // against an empty one, changes the key and so its digest.
        let identity = |benchmark, language, question_id, variant_id| Identity {
            benchmark,
            language,
            script: None,
            question_id,
            variant_id,
            filter: "none",
            repeat_id: 0,
        };
        let digests = [
            identity("ab", None, "c", "v"),
            identity("a", None, "bc", "v"),
            identity("a", Some(""), "bc", "v"),
            identity("a", Some("b"), "c", "v"),
            identity("a", None, "b", "cv"),
        ]
        .map(|identity| identity.record_digest(false));
        for (i, a) in digests.iter().enumerate() {
            for b in &digests[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // In a strict run's key, a language without a script is not the same script
        // without a language.
        let mut language_only = identity("a", Some("Latn"), "q", "v");
        let mut script_only = identity("a", None, "q", "v");
        (language_only.script, script_only.script) = (None, Some("Latn"));
        assert_ne!(
            language_only.record_digest(true),
            script_only.record_digest(true)
        );
    }

    #[test]
    fn null_language_differs_from_an_empty_looking_one() {
        let mut a = sample();
        a.language = None;
        let mut b = sample();
        b.language = Some("null".into());
        assert_ne!(
            a.identity().record_digest(false),
            b.identity().record_digest(false)
        );
    }

    #[test]
    fn items_ignore_the_variant_and_order_null_first() {
        // "A comparison joins the same key without variant_id."
        let a = sample();
        let mut b = sample();
        b.variant_id = "rephrased".into();
        assert!(a.identity().same_item(&b.identity()));
        let mut c = sample();
        c.language = None;
        assert!(c.identity().item_cmp(&a.identity()).is_lt());
        assert_eq!(
            serde_json::to_value(a.identity()).unwrap(),
            json!({"benchmark": "mmlu", "language": "en", "script": null, "question_id": "q1", "filter": "none", "repeat_id": 0})
        );
    }
}
