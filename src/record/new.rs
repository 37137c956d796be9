//! A record as an adapter makes it ([`NewRecord`]): the identity and scalar fields as
//! values, every nested value already RFC 8785 canonical text ([`Json`]), borrowed from
//! the line where an adapter passes a member through. The records store encodes it into
//! columns by copying; nothing is parsed or written again.
//!
//! [`Record`] is the same record read back, its nested values as trees: the form readers,
//! reports and `babel records` use. [`NewRecord::from_record`] and [`NewRecord::to_record`]
//! convert between them (tests compare an adapter's output as a [`Record`]).

use std::borrow::Cow;

use serde_json::Value;

use super::{Identity, IdentityScope, Locator, Record, SCHEMA_VERSION, Source};
use crate::canonical_json::{CanonicalError, Json};

/// One schema-v1 record on its way into a records file.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRecord<'a> {
    pub run_id: Cow<'a, str>,
    pub benchmark: Cow<'a, str>,
    pub script: Option<Cow<'a, str>>,
    pub language: Option<Cow<'a, str>>,
    pub question_id: Cow<'a, str>,
    pub variant_id: Cow<'a, str>,
    pub filter: Cow<'a, str>,
    pub repeat_id: u64,
    pub identity_scope: IdentityScope,
    pub model: Cow<'a, str>,
    pub rephrasing_model: Option<Cow<'a, str>>,
    pub input: Json<'a>,
    pub target: Json<'a>,
    pub prediction: Json<'a>,
    pub correct: Option<bool>,
    /// An object.
    pub scores: Json<'a>,
    /// An object.
    pub metrics: Json<'a>,
    pub response: Json<'a>,
    /// The archived raw file, relative to the archive root.
    pub source_path: Cow<'a, str>,
    pub locator: Locator,
    pub warnings: Vec<String>,
    /// An object: additional producer fields, kept as given and never interpreted.
    pub extra: Json<'a>,
}

impl NewRecord<'_> {
    /// The record's identity fields.
    pub fn identity(&self) -> Identity<'_> {
        identity_of!(self)
    }

    /// The record with its nested values as trees.
    pub fn to_record(&self) -> Record {
        let object = |json: &Json<'_>| match json.to_value() {
            Value::Object(map) => map,
            other => unreachable!("scores, metrics and extra are objects, not {other}"),
        };
        Record {
            schema_version: SCHEMA_VERSION,
            run_id: self.run_id.to_string(),
            benchmark: self.benchmark.to_string(),
            script: self.script.as_deref().map(str::to_owned),
            language: self.language.as_deref().map(str::to_owned),
            question_id: self.question_id.to_string(),
            variant_id: self.variant_id.to_string(),
            filter: self.filter.to_string(),
            repeat_id: self.repeat_id,
            identity_scope: self.identity_scope,
            model: self.model.to_string(),
            rephrasing_model: self.rephrasing_model.as_deref().map(str::to_owned),
            input: self.input.to_value(),
            target: self.target.to_value(),
            prediction: self.prediction.to_value(),
            correct: self.correct,
            scores: object(&self.scores),
            metrics: object(&self.metrics),
            response: self.response.to_value(),
            source: Source {
                path: self.source_path.to_string(),
                locator: self.locator.clone(),
            },
            warnings: self.warnings.clone(),
            extra: object(&self.extra),
        }
    }
}

impl NewRecord<'static> {
    /// A record's canonical form; refuses an integer no double holds exactly (its path
    /// starts with the record field: `input.doc.n`).
    pub fn from_record(record: Record) -> Result<Self, CanonicalError> {
        let json = |field: &str, value: Value| {
            Json::of(&value).map_err(|error| match error {
                CanonicalError::UnsafeInteger { path, value } => CanonicalError::UnsafeInteger {
                    path: path.under(field),
                    value,
                },
                other => other,
            })
        };
        Ok(Self {
            input: json("input", record.input)?,
            target: json("target", record.target)?,
            prediction: json("prediction", record.prediction)?,
            scores: json("scores", Value::Object(record.scores))?,
            metrics: json("metrics", Value::Object(record.metrics))?,
            response: json("response", record.response)?,
            extra: json("extra", Value::Object(record.extra))?,
            run_id: record.run_id.into(),
            benchmark: record.benchmark.into(),
            script: record.script.map(Cow::Owned),
            language: record.language.map(Cow::Owned),
            question_id: record.question_id.into(),
            variant_id: record.variant_id.into(),
            filter: record.filter.into(),
            repeat_id: record.repeat_id,
            identity_scope: record.identity_scope,
            model: record.model.into(),
            rephrasing_model: record.rephrasing_model.map(Cow::Owned),
            correct: record.correct,
            source_path: record.source.path.into(),
            locator: record.source.locator,
            warnings: record.warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_survives_the_trip_through_its_canonical_form() {
        let mut record = crate::record::tests::sample();
        record.extra = json!({"b": [1.5, "x"], "a": null})
            .as_object()
            .unwrap()
            .clone();
        record.scores = json!({"logprob": -0.25}).as_object().unwrap().clone();
        record.source = Source {
            path: "runs/r1/raw/0001-a.eval".into(),
            locator: Locator::Member("samples/q1_epoch_1.json".into()),
        };
        let new = NewRecord::from_record(record.clone()).unwrap();
        assert_eq!(new.extra.as_str(), r#"{"a":null,"b":[1.5,"x"]}"#);
        assert_eq!(new.to_record(), record);
    }

    #[test]
    fn an_integer_no_double_holds_is_refused_with_its_record_path() {
        let mut record = crate::record::tests::sample();
        record.input = json!({"doc": {"n": 9007199254740993u64}});
        let error = NewRecord::from_record(record).unwrap_err();
        assert!(
            error.to_string().starts_with("field input.doc.n:"),
            "{error}"
        );
    }
}
