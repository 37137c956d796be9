//! Run metadata, the `metadata` object of a run manifest: the one place that reads it.
//!
//! The keys babel interprets are typed fields, checked when a manifest is read (so
//! `babel run create`, every reader and `validate` apply the same rules); every other key
//! (`metric_definitions`, the user's own `--meta` keys) is kept as given in `other`. It
//! is stored as one JSON object, so a manifest round-trips byte for byte. This module
//! knows the types; what a strict run's `benchmark_contract` pins is read by
//! `artifacts::contract`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The keys that must be non-empty strings when present (`model` always is).
const STRING_KEYS: [&str; 6] = [
    "model",
    "benchmark",
    "dataset_revision",
    "correctness_metric",
    "producer_version",
    "checkpoint",
];
/// `shared_answer_key`: a boolean.
const SHARED_ANSWER_KEY: &str = "shared_answer_key";
/// `benchmark_contract`: an object (a strict benchmark run).
pub const CONTRACT_KEY: &str = "benchmark_contract";

/// A run's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Map<String, Value>", into = "Map<String, Value>")]
pub struct RunMetadata {
    /// The evaluated model; every record's `model` must equal it.
    pub model: String,
    /// The benchmark of records that name none; records naming another are refused.
    pub benchmark: Option<String>,
    /// Cross-run comparisons refuse different revisions.
    pub dataset_revision: Option<String>,
    /// The binary producer metric that sets `correct`.
    pub correctness_metric: Option<String>,
    /// Kept; not interpreted.
    pub producer_version: Option<String>,
    /// The model checkpoint (model panels and the response matrix read it).
    pub checkpoint: Option<String>,
    /// Allows a paired rephrase to use the shared answer key.
    pub shared_answer_key: Option<bool>,
    /// What a strict benchmark run pins (read by `artifacts::contract`).
    pub benchmark_contract: Option<Map<String, Value>>,
    /// Every other key, as given.
    pub other: BTreeMap<String, Value>,
}

impl RunMetadata {
    /// Metadata naming only the model.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            benchmark: None,
            dataset_revision: None,
            correctness_metric: None,
            producer_version: None,
            checkpoint: None,
            shared_answer_key: None,
            benchmark_contract: None,
            other: BTreeMap::new(),
        }
    }

    /// Reads metadata from its keys, checking the type of each key babel interprets.
    pub fn from_map(mut map: Map<String, Value>) -> Result<Self, String> {
        let mut text = |key: &'static str| -> Result<Option<String>, String> {
            match map.remove(key) {
                None => Ok(None),
                Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
                Some(Value::Number(n)) => Err(format!(
                    "metadata {key} must be a non-empty string, not the number {n} (--meta reads a value as JSON when it can: write --meta '{key}=\"{n}\"')"
                )),
                Some(_) => Err(format!("metadata {key} must be a non-empty string")),
            }
        };
        let [
            model,
            benchmark,
            dataset_revision,
            correctness_metric,
            producer_version,
            checkpoint,
        ] = STRING_KEYS.map(&mut text);
        let model = model?.ok_or("metadata model is required")?;
        let shared_answer_key = match map.remove(SHARED_ANSWER_KEY) {
            None => None,
            Some(Value::Bool(b)) => Some(b),
            Some(_) => return Err("metadata shared_answer_key must be true or false".into()),
        };
        let benchmark_contract = match map.remove(CONTRACT_KEY) {
            None => None,
            Some(Value::Object(object)) => Some(object),
            Some(_) => return Err("metadata benchmark_contract must be an object".into()),
        };
        Ok(Self {
            model,
            benchmark: benchmark?,
            dataset_revision: dataset_revision?,
            correctness_metric: correctness_metric?,
            producer_version: producer_version?,
            checkpoint: checkpoint?,
            shared_answer_key,
            benchmark_contract,
            other: map.into_iter().collect(),
        })
    }

    /// The metadata as one JSON object, keys sorted.
    pub fn to_map(&self) -> Map<String, Value> {
        let mut map: Map<String, Value> = self
            .other
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let text = [
            ("model", Some(&self.model)),
            ("benchmark", self.benchmark.as_ref()),
            ("dataset_revision", self.dataset_revision.as_ref()),
            ("correctness_metric", self.correctness_metric.as_ref()),
            ("producer_version", self.producer_version.as_ref()),
            ("checkpoint", self.checkpoint.as_ref()),
        ];
        for (key, value) in text {
            if let Some(value) = value {
                map.insert(key.into(), Value::String(value.clone()));
            }
        }
        if let Some(shared) = self.shared_answer_key {
            map.insert(SHARED_ANSWER_KEY.into(), Value::Bool(shared));
        }
        if let Some(contract) = &self.benchmark_contract {
            map.insert(CONTRACT_KEY.into(), Value::Object(contract.clone()));
        }
        map.sort_keys();
        map
    }

    /// Sets a key given on the command line (`--meta KEY=VALUE`); refuses a key already
    /// set and a value of the wrong type for a key babel interprets.
    pub fn set(&mut self, key: String, value: Value) -> Result<(), String> {
        let mut map = self.to_map();
        if map.contains_key(&key) {
            return Err(format!("metadata {key} is given twice"));
        }
        map.insert(key, value);
        *self = Self::from_map(map)?;
        Ok(())
    }

    /// True for a strict benchmark run.
    pub fn is_strict(&self) -> bool {
        self.benchmark_contract.is_some()
    }
}

impl TryFrom<Map<String, Value>> for RunMetadata {
    type Error = String;
    fn try_from(map: Map<String, Value>) -> Result<Self, String> {
        Self::from_map(map)
    }
}

impl From<RunMetadata> for Map<String, Value> {
    fn from(metadata: RunMetadata) -> Self {
        metadata.to_map()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn known_keys_are_typed_and_other_keys_kept_as_given() {
        let given = map(json!({
            "model": "m", "benchmark": "b", "shared_answer_key": true,
            "metric_definitions": {"acc": "exact"}, "note": [1, 2],
            "benchmark_contract": {"item_bank": {"id": "x"}},
        }));
        let metadata = RunMetadata::from_map(given.clone()).unwrap();
        assert_eq!(metadata.model, "m");
        assert_eq!(metadata.benchmark.as_deref(), Some("b"));
        assert_eq!(metadata.shared_answer_key, Some(true));
        assert!(metadata.is_strict());
        assert_eq!(metadata.other.len(), 2);
        assert_eq!(Value::Object(metadata.to_map()), Value::Object(given));
    }

    #[test]
    fn wrong_types_are_refused_with_the_key() {
        for (value, message) in [
            (json!({}), "metadata model is required"),
            (
                json!({"model": ""}),
                "metadata model must be a non-empty string",
            ),
            (
                json!({"model": "m", "dataset_revision": 123}),
                "not the number 123",
            ),
            (
                json!({"model": "m", "checkpoint": null}),
                "metadata checkpoint must be",
            ),
            (
                json!({"model": "m", "shared_answer_key": "yes"}),
                "true or false",
            ),
            (
                json!({"model": "m", "benchmark_contract": []}),
                "must be an object",
            ),
        ] {
            let error = RunMetadata::from_map(map(value.clone())).unwrap_err();
            assert!(error.contains(message), "{value}: {error}");
        }
    }

    #[test]
    fn a_key_is_set_once() {
        let mut metadata = RunMetadata::new("m");
        metadata.set("benchmark".into(), json!("b")).unwrap();
        assert!(
            metadata
                .set("benchmark".into(), json!("c"))
                .unwrap_err()
                .contains("twice")
        );
        assert!(metadata.set("model".into(), json!("n")).is_err());
        assert!(metadata.set("checkpoint".into(), json!(5)).is_err());
        assert_eq!(metadata.benchmark.as_deref(), Some("b"));
    }
}
