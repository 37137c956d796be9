//! The schema-v1 normalized record, its identity key, and the strict reading of stored
//! records. Pure data: no filesystem, no knowledge of input formats or of the archive.

pub mod fields;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::fmt;

use crate::jsonl::FieldPath;
pub use fields::{FieldError, Fields};

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

/// Where a record came from: an archived raw file (path relative to ROOT) and its line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// `runs/<run>/raw/<seq>-<basename>`, relative to the archive root.
    pub path: String,
    /// One-based line number in that file.
    pub line: u64,
}

/// One model result for one question, variant, filter and repeat within a run.
///
/// Field order here is the order written to `records/<seq>.jsonl`. `correct` is
/// `Option<bool>` because null means unknown, never wrong.
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

/// The unique key of a record within a run: `(benchmark, language, question_id, variant_id,
/// filter, repeat_id)`, plus `script` for strict benchmark runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordKey<'r> {
    pub benchmark: &'r str,
    pub language: Option<&'r str>,
    /// Present only when the run's identity includes the script.
    pub script: Option<Option<&'r str>>,
    pub question_id: &'r str,
    pub variant_id: &'r str,
    pub filter: &'r str,
    pub repeat_id: u64,
}

/// A fixed-size digest of a [`RecordKey`], so a run's identity set stays small in memory.
pub type KeyDigest = [u8; 16];

impl RecordKey<'_> {
    /// A collision-resistant digest of the key (truncated SHA-256 of a length-prefixed
    /// encoding, so `("a", "bc")` and `("ab", "c")` differ, and null differs from "").
    pub fn digest(&self) -> KeyDigest {
        let mut hasher = Sha256::new();
        let mut field = |value: Option<&str>| match value {
            None => hasher.update([0u8]),
            Some(text) => {
                hasher.update([1u8]);
                hasher.update((text.len() as u64).to_le_bytes());
                hasher.update(text.as_bytes());
            }
        };
        field(Some(self.benchmark));
        field(self.language);
        match self.script {
            None => field(None),
            Some(script) => {
                field(Some("script"));
                field(script);
            }
        }
        field(Some(self.question_id));
        field(Some(self.variant_id));
        field(Some(self.filter));
        hasher.update(self.repeat_id.to_le_bytes());
        let full = hasher.finalize();
        let mut digest = [0u8; 16];
        digest.copy_from_slice(&full[..16]);
        digest
    }
}

impl fmt::Display for RecordKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "benchmark={} language={} ",
            self.benchmark,
            self.language.unwrap_or("null")
        )?;
        if let Some(script) = self.script {
            write!(f, "script={} ", script.unwrap_or("null"))?;
        }
        write!(
            f,
            "question_id={} variant_id={} filter={} repeat_id={}",
            self.question_id, self.variant_id, self.filter, self.repeat_id
        )
    }
}

/// A record reduced to what the join needs, plus a `handle` by which whoever read it can
/// read the full record again. Comparing 200,000 items keeps only these in memory; the
/// reports load each full record when they write its item. (Defined here, beside
/// [`Record`], so that the archive can produce entries without depending on `compare`.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub benchmark: String,
    pub language: Option<String>,
    pub script: Option<String>,
    pub question_id: String,
    pub filter: String,
    pub repeat_id: u64,
    pub identity_scope: IdentityScope,
    pub correct: Option<bool>,
    pub source: Source,
    /// Opaque to this module: chosen by the reader of the records.
    pub handle: u64,
}

/// Just the key fields of a stored record line, borrowed where possible: how a run's
/// identity set is rebuilt quickly (everything else on the line is skipped, not checked).
#[derive(Debug, Deserialize)]
pub struct StoredKey<'a> {
    #[serde(borrow)]
    pub benchmark: Cow<'a, str>,
    #[serde(borrow)]
    pub language: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub script: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub question_id: Cow<'a, str>,
    #[serde(borrow)]
    pub variant_id: Cow<'a, str>,
    #[serde(borrow)]
    pub filter: Cow<'a, str>,
    pub repeat_id: u64,
    pub source: StoredLine,
}

/// The source line of a stored record.
#[derive(Debug, Deserialize)]
pub struct StoredLine {
    pub line: u64,
}

impl StoredKey<'_> {
    /// The record key these fields make.
    pub fn key(&self, with_script: bool) -> RecordKey<'_> {
        RecordKey {
            benchmark: &self.benchmark,
            language: self.language.as_deref(),
            script: with_script.then_some(self.script.as_deref()),
            question_id: &self.question_id,
            variant_id: &self.variant_id,
            filter: &self.filter,
            repeat_id: self.repeat_id,
        }
    }
}

/// The identity of one comparison item: the record key without `variant_id`, with `script`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ItemIdentity {
    pub benchmark: String,
    pub language: Option<String>,
    pub script: Option<String>,
    pub question_id: String,
    pub filter: String,
    pub repeat_id: u64,
}

impl Record {
    /// The record's key within its run; `with_script` for strict benchmark runs.
    pub fn key(&self, with_script: bool) -> RecordKey<'_> {
        RecordKey {
            benchmark: &self.benchmark,
            language: self.language.as_deref(),
            script: with_script.then_some(self.script.as_deref()),
            question_id: &self.question_id,
            variant_id: &self.variant_id,
            filter: &self.filter,
            repeat_id: self.repeat_id,
        }
    }

    /// The comparison identity of this record.
    pub fn item_identity(&self) -> ItemIdentity {
        ItemIdentity {
            benchmark: self.benchmark.clone(),
            language: self.language.clone(),
            script: self.script.clone(),
            question_id: self.question_id.clone(),
            filter: self.filter.clone(),
            repeat_id: self.repeat_id,
        }
    }

    /// Reads a record as stored in `records/<seq>.jsonl`: every field present with its
    /// schema type, nothing unknown.
    pub fn from_stored(object: Map<String, Value>) -> Result<Self, FieldError> {
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
            source: stored_source(&mut f)?,
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

fn stored_source(f: &mut Fields) -> Result<Source, FieldError> {
    let base = f.path("source");
    let mut inner = Fields::new(f.object("source", true)?, base.clone());
    let path = inner.required_string("path")?;
    let line = required_index(&mut inner, "line")?;
    if line == 0 {
        return Err(FieldError::new(
            base.key("line"),
            "line numbers are one-based",
        ));
    }
    inner.deny_unknown()?;
    Ok(Source { path, line })
}

#[cfg(test)]
mod tests {
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
            source: Source {
                path: "runs/r1/raw/0001-a.jsonl".into(),
                line: 1,
            },
            warnings: vec![],
            extra: Map::new(),
        }
    }

    fn as_object(record: &Record) -> Map<String, Value> {
        let Value::Object(map) = serde_json::to_value(record).unwrap() else {
            panic!()
        };
        map
    }

    #[test]
    fn a_stored_record_round_trips_and_null_correctness_stays_null() {
        let record = sample();
        let line = serde_json::to_string(&record).unwrap();
        assert!(line.contains("\"correct\":null"), "{line}");
        assert_eq!(Record::from_stored(as_object(&record)), Ok(record));
    }

    #[test]
    fn stored_records_refuse_unknown_and_missing_fields() {
        let mut object = as_object(&sample());
        object.insert("surprise".into(), json!(1));
        let error = Record::from_stored(object).unwrap_err();
        assert_eq!(error.path.to_string(), "surprise");

        let mut object = as_object(&sample());
        object.shift_remove("correct");
        assert_eq!(
            Record::from_stored(object).unwrap_err().to_string(),
            "field correct: required field is missing"
        );
    }

    #[test]
    fn stored_source_lines_are_one_based() {
        let mut object = as_object(&sample());
        object["source"] = json!({"path": "runs/r1/raw/0001-a.jsonl", "line": 0});
        assert_eq!(
            Record::from_stored(object).unwrap_err().path.to_string(),
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
        assert_eq!(a.key(false).digest(), same.key(false).digest());
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
            assert_ne!(a.key(false).digest(), other.key(false).digest());
        }
    }

    #[test]
    fn script_is_part_of_the_key_only_for_strict_runs() {
        let a = sample();
        let mut b = sample();
        b.script = Some("Latn".into());
        assert_eq!(a.key(false).digest(), b.key(false).digest());
        assert_ne!(a.key(true).digest(), b.key(true).digest());
    }

    #[test]
    fn null_language_differs_from_an_empty_looking_one() {
        let mut a = sample();
        a.language = None;
        let mut b = sample();
        b.language = Some("null".into());
        assert_ne!(a.key(false).digest(), b.key(false).digest());
    }
}
