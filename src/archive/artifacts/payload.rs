//! The payload schemas of the five artifact kinds (ARTIFACTS.md is their prose form): one
//! strict, field-precise reading of an `artifact.json` object per kind, and the pins each
//! payload makes to other artifacts and to runs.
//!
//! Pure: nothing here reads the disk or knows whether a pin resolves; the registry
//! (`super`) and validation resolve what [`Payload::dependencies`] lists.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::Kind;
use crate::archive::layout::check_portable_id;
use crate::jsonl::FieldPath;
use crate::record::fields::describe;
use crate::record::{FieldError, Fields};

/// The payload schema version this build reads and writes.
pub const PAYLOAD_SCHEMA_VERSION: u64 = 1;

/// Column names of the response matrix and its item sidecar that item IDs and group keys
/// may not take, so every CSV header stays unambiguous.
pub const RESERVED_COLUMNS: [&str; 8] = [
    "run_id",
    "model",
    "checkpoint",
    "language",
    "script",
    "item_id",
    "family",
    "split",
];

/// A pin to a registered artifact: its ID and the SHA-256 of its exact `artifact.json` bytes.
/// Serialized, it is the pin as a payload writes it, `{"id": …, "sha256": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct ArtifactPin {
    pub id: String,
    /// Lowercase hex SHA-256 of the referenced `artifact.json`.
    pub sha256: String,
}

/// A pin to a run: its ID and the SHA-256 of its exact `manifest.json` bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunPin {
    pub run_id: String,
    /// Lowercase hex SHA-256 of `runs/<run_id>/manifest.json`.
    pub manifest_sha256: String,
}

/// A pin to an artifact, with the kind it must be and where the payload makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactDependency {
    pub at: FieldPath,
    pub kind: Kind,
    pub pin: ArtifactPin,
}

/// A pin to a run, with where the payload makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDependency {
    pub at: FieldPath,
    pub pin: RunPin,
}

/// Everything a payload pins, in payload order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dependencies {
    pub artifacts: Vec<ArtifactDependency>,
    pub runs: Vec<RunDependency>,
}

/// One language/script form of a global item: the record identity that carries it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Instance {
    pub language: String,
    pub script: String,
    pub question_id: String,
}

/// One global item of a bank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankItem {
    /// The global item ID, shared by all its language/script instances.
    pub id: String,
    pub family: Option<String>,
    pub split: Option<String>,
    /// Grouping identifiers (`subject`, `source`, ...), key to value.
    pub groups: BTreeMap<String, String>,
    pub instances: Vec<Instance>,
}

/// An item bank: the global items and their per-language instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemBank {
    pub items: Vec<BankItem>,
}

/// A protocol: how the bank's items were put to a model and scored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol {
    pub item_bank: ArtifactPin,
    /// The names of its filters (`filters[].name`), in payload order: the only `filter`
    /// values a strict run's records may carry.
    pub filters: Vec<String>,
    /// The metric whose binary value is a record's `correct`.
    pub correctness_metric: String,
    /// The filter whose records carry that correctness.
    pub correctness_filter: String,
}

/// One model of a panel with the checkpoints the study evaluates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanelModel {
    /// The model as runs name it (`babel run create --model`).
    pub model: String,
    pub checkpoints: Vec<String>,
}

/// A model panel: the models and checkpoints of a study.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPanel {
    pub models: Vec<PanelModel>,
}

/// A calibration: results computed elsewhere, with the inputs they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calibration {
    pub item_bank: ArtifactPin,
    pub protocol: ArtifactPin,
    pub model_panel: Option<ArtifactPin>,
    pub input_runs: Vec<RunPin>,
    /// The global item IDs that `item_parameters` names.
    pub parameterized_items: Vec<String>,
}

/// A release member artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseArtifact {
    pub kind: Kind,
    pub pin: ArtifactPin,
}

/// A release: a named set of pinned artifacts and runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub name: String,
    pub artifacts: Vec<ReleaseArtifact>,
    pub runs: Vec<RunPin>,
}

/// A parsed, schema-valid payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    ItemBank(ItemBank),
    Protocol(Protocol),
    ModelPanel(ModelPanel),
    Calibration(Calibration),
    Release(Release),
}

impl Payload {
    /// Reads `object` as a payload of `kind`, refusing anything the schema does not allow.
    pub fn parse(kind: Kind, object: Map<String, Value>) -> Result<Self, FieldError> {
        let mut f = Fields::new(object, FieldPath::root());
        let format = f.required_string("format")?;
        if format != kind.format() {
            return Err(FieldError::new(
                f.path("format"),
                format!(
                    "a {} payload has format {:?}, found {format:?}",
                    kind.name(),
                    kind.format()
                ),
            ));
        }
        match f.optional_index("schema_version")? {
            Some(PAYLOAD_SCHEMA_VERSION) => {}
            other => {
                return Err(FieldError::new(
                    f.path("schema_version"),
                    format!(
                        "expected {PAYLOAD_SCHEMA_VERSION}, found {}",
                        other.map_or("nothing".into(), |v| v.to_string())
                    ),
                ));
            }
        }
        f.optional_string("description")?;
        f.object("extra", false)?;
        let payload = match kind {
            Kind::ItemBank => Self::ItemBank(item_bank(&mut f)?),
            Kind::Protocol => Self::Protocol(protocol(&mut f)?),
            Kind::ModelPanel => Self::ModelPanel(model_panel(&mut f)?),
            Kind::Calibration => Self::Calibration(calibration(&mut f)?),
            Kind::Release => Self::Release(release(&mut f)?),
        };
        f.deny_unknown()?;
        Ok(payload)
    }

    /// The artifacts and runs this payload pins.
    pub fn dependencies(&self) -> Dependencies {
        let root = FieldPath::root();
        let artifact = |at: FieldPath, kind, pin: &ArtifactPin| ArtifactDependency {
            at,
            kind,
            pin: pin.clone(),
        };
        let mut out = Dependencies::default();
        match self {
            Self::ItemBank(_) | Self::ModelPanel(_) => {}
            Self::Protocol(p) => out.artifacts.push(artifact(
                root.key("item_bank"),
                Kind::ItemBank,
                &p.item_bank,
            )),
            Self::Calibration(c) => {
                out.artifacts.push(artifact(
                    root.key("item_bank"),
                    Kind::ItemBank,
                    &c.item_bank,
                ));
                out.artifacts
                    .push(artifact(root.key("protocol"), Kind::Protocol, &c.protocol));
                if let Some(panel) = &c.model_panel {
                    out.artifacts
                        .push(artifact(root.key("model_panel"), Kind::ModelPanel, panel));
                }
                for (i, pin) in c.input_runs.iter().enumerate() {
                    out.runs.push(RunDependency {
                        at: root.key("input_runs").index(i),
                        pin: pin.clone(),
                    });
                }
            }
            Self::Release(r) => {
                for (i, member) in r.artifacts.iter().enumerate() {
                    out.artifacts.push(artifact(
                        root.key("artifacts").index(i),
                        member.kind,
                        &member.pin,
                    ));
                }
                for (i, pin) in r.runs.iter().enumerate() {
                    out.runs.push(RunDependency {
                        at: root.key("runs").index(i),
                        pin: pin.clone(),
                    });
                }
            }
        }
        out
    }
}

fn wrong(path: FieldPath, expected: &str, found: &Value) -> FieldError {
    FieldError::new(
        path,
        format!("expected {expected}, found {}", describe(found)),
    )
}

/// Takes an array field that must be present and hold objects; each comes with its path.
fn objects(
    f: &mut Fields,
    name: &str,
    non_empty: bool,
) -> Result<Vec<(FieldPath, Fields)>, FieldError> {
    let path = f.path(name);
    let items = match f.take(name) {
        None => return Err(FieldError::new(path, "required field is missing")),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(wrong(path, "an array of objects", &other)),
    };
    if non_empty && items.is_empty() {
        return Err(FieldError::new(path, "must not be empty"));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let at = path.index(i);
            match item {
                Value::Object(map) => Ok((at.clone(), Fields::new(map, at))),
                other => Err(wrong(at, "an object", &other)),
            }
        })
        .collect()
}

/// A required object field, read field by field.
fn object_fields(f: &mut Fields, name: &str) -> Result<Fields, FieldError> {
    let path = f.path(name);
    Ok(Fields::new(f.object(name, true)?, path))
}

/// A portable ID (the rule runs and artifacts share).
fn portable_id(f: &mut Fields, name: &str) -> Result<String, FieldError> {
    let path = f.path(name);
    let id = f.required_string(name)?;
    check_portable_id(&id).map_err(|v| FieldError::new(path, v.0))?;
    Ok(id)
}

fn sha256_hex(f: &mut Fields, name: &str) -> Result<String, FieldError> {
    let path = f.path(name);
    let text = f.required_string(name)?;
    if text.len() != 64 || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(FieldError::new(
            path,
            format!("expected 64 lowercase hex digits (a SHA-256), found {text:?}"),
        ));
    }
    Ok(text)
}

/// Reads `{"id": ..., "sha256": ...}`.
pub fn artifact_pin(mut f: Fields) -> Result<ArtifactPin, FieldError> {
    let pin = ArtifactPin {
        id: portable_id(&mut f, "id")?,
        sha256: sha256_hex(&mut f, "sha256")?,
    };
    f.deny_unknown()?;
    Ok(pin)
}

/// Reads the required pin object `name` of `f`.
pub fn pin_field(f: &mut Fields, name: &str) -> Result<ArtifactPin, FieldError> {
    artifact_pin(object_fields(f, name)?)
}

fn run_pins(f: &mut Fields, name: &str) -> Result<Vec<RunPin>, FieldError> {
    let mut seen = BTreeSet::new();
    let mut pins = Vec::new();
    for (at, mut entry) in objects(f, name, false)? {
        let pin = RunPin {
            run_id: portable_id(&mut entry, "run_id")?,
            manifest_sha256: sha256_hex(&mut entry, "manifest_sha256")?,
        };
        entry.deny_unknown()?;
        if !seen.insert(pin.run_id.clone()) {
            return Err(FieldError::new(
                at.key("run_id"),
                format!("run {:?} is listed twice", pin.run_id),
            ));
        }
        pins.push(pin);
    }
    Ok(pins)
}

fn not_reserved(path: FieldPath, name: &str, what: &str) -> Result<(), FieldError> {
    if RESERVED_COLUMNS.contains(&name) {
        return Err(FieldError::new(
            path,
            format!(
                "{name:?} cannot be {what}: it is a column name of the response matrix ({})",
                RESERVED_COLUMNS.join(", ")
            ),
        ));
    }
    Ok(())
}

fn item_bank(f: &mut Fields) -> Result<ItemBank, FieldError> {
    let mut ids: HashMap<String, FieldPath> = HashMap::new();
    let mut instances: HashMap<Instance, FieldPath> = HashMap::new();
    let mut items = Vec::new();
    for (at, mut entry) in objects(f, "items", true)? {
        let id = portable_id(&mut entry, "id")?;
        not_reserved(at.key("id"), &id, "an item ID")?;
        if let Some(first) = ids.insert(id.clone(), at.clone()) {
            return Err(FieldError::new(
                at.key("id"),
                format!("item ID {id:?} is already used at {first}"),
            ));
        }
        let family = entry.optional_string("family")?;
        let split = entry.optional_string("split")?;
        let groups_path = at.key("groups");
        let mut groups = BTreeMap::new();
        for (key, value) in entry.object("groups", false)? {
            let key_path = groups_path.key(&key);
            if key.is_empty() {
                return Err(FieldError::new(key_path, "a group key is a non-empty name"));
            }
            not_reserved(key_path.clone(), &key, "a group key")?;
            match value {
                Value::String(text) if !text.is_empty() => {
                    groups.insert(key, text);
                }
                other => return Err(wrong(key_path, "a non-empty string", &other)),
            }
        }
        let mut own = BTreeSet::new();
        let mut item_instances = Vec::new();
        for (instance_at, mut form) in objects(&mut entry, "instances", true)? {
            let instance = Instance {
                language: form.required_string("language")?,
                script: form.required_string("script")?,
                question_id: form.required_string("question_id")?,
            };
            form.deny_unknown()?;
            if !own.insert((instance.language.clone(), instance.script.clone())) {
                return Err(FieldError::new(
                    instance_at,
                    format!(
                        "item {id:?} has two instances in language {:?}, script {:?}; one item has one instance per language and script",
                        instance.language, instance.script
                    ),
                ));
            }
            if let Some(first) = instances.insert(instance.clone(), instance_at.clone()) {
                return Err(FieldError::new(
                    instance_at.key("question_id"),
                    format!(
                        "(language {:?}, script {:?}, question_id {:?}) is already an instance at {first}; an instance belongs to one item",
                        instance.language, instance.script, instance.question_id
                    ),
                ));
            }
            item_instances.push(instance);
        }
        entry.object("extra", false)?;
        entry.deny_unknown()?;
        items.push(BankItem {
            id,
            family,
            split,
            groups,
            instances: item_instances,
        });
    }
    Ok(ItemBank { items })
}

/// Reads an array of objects that each have a unique non-empty `name`; other keys are the
/// producer's own and kept as given. `also` lists further required string fields.
fn named_entries(f: &mut Fields, name: &str, also: &[&str]) -> Result<Vec<String>, FieldError> {
    let mut names: Vec<String> = Vec::new();
    for (at, mut entry) in objects(f, name, true)? {
        let entry_name = entry.required_string("name")?;
        if names.contains(&entry_name) {
            return Err(FieldError::new(
                at.key("name"),
                format!("{entry_name:?} is defined twice"),
            ));
        }
        for field in also {
            entry.required_string(field)?;
        }
        names.push(entry_name);
    }
    Ok(names)
}

fn protocol(f: &mut Fields) -> Result<Protocol, FieldError> {
    let item_bank = pin_field(f, "item_bank")?;
    let mut prompt = object_fields(f, "prompt")?;
    prompt.required_string("template")?;
    let mut few_shot = object_fields(f, "few_shot")?;
    let count_path = few_shot.path("count");
    if few_shot.peek("count").is_none() {
        return Err(FieldError::new(count_path, "required field is missing"));
    }
    few_shot.optional_index("count")?.ok_or_else(|| {
        FieldError::new(count_path, "expected a non-negative integer, found null")
    })?;
    f.object("decoding", true)?;
    let filters = named_entries(f, "filters", &[])?;
    let metrics = named_entries(f, "metrics", &["definition"])?;
    let mut correctness = object_fields(f, "correctness")?;
    let metric_path = correctness.path("metric");
    let filter_path = correctness.path("filter");
    let correctness_metric = correctness.required_string("metric")?;
    let correctness_filter = correctness.required_string("filter")?;
    correctness.deny_unknown()?;
    if !metrics.contains(&correctness_metric) {
        return Err(FieldError::new(
            metric_path,
            format!(
                "{correctness_metric:?} is not one of the protocol's metrics ({})",
                metrics.join(", ")
            ),
        ));
    }
    if !filters.contains(&correctness_filter) {
        return Err(FieldError::new(
            filter_path,
            format!(
                "{correctness_filter:?} is not one of the protocol's filters ({})",
                filters.join(", ")
            ),
        ));
    }
    Ok(Protocol {
        item_bank,
        filters,
        correctness_metric,
        correctness_filter,
    })
}

fn model_panel(f: &mut Fields) -> Result<ModelPanel, FieldError> {
    let mut models: Vec<PanelModel> = Vec::new();
    for (at, mut entry) in objects(f, "models", true)? {
        let model = entry.required_string("model")?;
        if models.iter().any(|m| m.model == model) {
            return Err(FieldError::new(
                at.key("model"),
                format!("model {model:?} is listed twice"),
            ));
        }
        let checkpoints = entry.strings("checkpoints", false)?;
        let mut seen = BTreeSet::new();
        for (i, checkpoint) in checkpoints.iter().enumerate() {
            let path = at.key("checkpoints").index(i);
            if checkpoint.is_empty() {
                return Err(FieldError::new(path, "a checkpoint is a non-empty string"));
            }
            if !seen.insert(checkpoint) {
                return Err(FieldError::new(
                    path,
                    format!("checkpoint {checkpoint:?} is listed twice"),
                ));
            }
        }
        entry.object("extra", false)?;
        entry.deny_unknown()?;
        models.push(PanelModel { model, checkpoints });
    }
    Ok(ModelPanel { models })
}

fn calibration(f: &mut Fields) -> Result<Calibration, FieldError> {
    let item_bank = pin_field(f, "item_bank")?;
    let protocol = pin_field(f, "protocol")?;
    let model_panel = match f.peek("model_panel") {
        None | Some(Value::Null) => {
            f.take("model_panel");
            None
        }
        Some(_) => Some(pin_field(f, "model_panel")?),
    };
    let mut method = object_fields(f, "method")?;
    method.required_string("software")?;
    method.required_string("model")?;
    let input_runs_path = f.path("input_runs");
    let input_runs = run_pins(f, "input_runs")?;
    if input_runs.is_empty() {
        return Err(FieldError::new(
            input_runs_path,
            "a calibration names the runs it was computed from",
        ));
    }
    let parameters_path = f.path("item_parameters");
    let parameters = f.object("item_parameters", true)?;
    if parameters.is_empty() {
        return Err(FieldError::new(parameters_path, "must not be empty"));
    }
    let mut parameterized_items = Vec::new();
    for (item, values) in parameters {
        let item_path = parameters_path.key(&item);
        let Value::Object(values) = values else {
            return Err(wrong(
                item_path,
                "an object of parameter names to numbers",
                &values,
            ));
        };
        for (name, value) in &values {
            if !(value.is_number() || value.is_null()) {
                return Err(wrong(item_path.key(name), "a number or null", value));
            }
        }
        parameterized_items.push(item);
    }
    Ok(Calibration {
        item_bank,
        protocol,
        model_panel,
        input_runs,
        parameterized_items,
    })
}

fn release(f: &mut Fields) -> Result<Release, FieldError> {
    let name = f.required_string("name")?;
    let mut artifacts: Vec<ReleaseArtifact> = Vec::new();
    for (at, mut entry) in objects(f, "artifacts", false)? {
        let kind_path = entry.path("kind");
        let kind_name = entry.required_string("kind")?;
        let kind = Kind::parse(&kind_name).ok_or_else(|| {
            FieldError::new(
                kind_path.clone(),
                format!(
                    "unknown artifact kind {kind_name:?} (one of {})",
                    Kind::names()
                ),
            )
        })?;
        if kind == Kind::Release {
            return Err(FieldError::new(
                kind_path,
                "a release lists item banks, protocols, model panels and calibrations, not other releases",
            ));
        }
        let pin = ArtifactPin {
            id: portable_id(&mut entry, "id")?,
            sha256: sha256_hex(&mut entry, "sha256")?,
        };
        entry.deny_unknown()?;
        if artifacts
            .iter()
            .any(|a| a.kind == kind && a.pin.id == pin.id)
        {
            return Err(FieldError::new(
                at,
                format!("{} {:?} is listed twice", kind.name(), pin.id),
            ));
        }
        artifacts.push(ReleaseArtifact { kind, pin });
    }
    let runs = run_pins(f, "runs")?;
    if artifacts.is_empty() && runs.is_empty() {
        return Err(FieldError::new(
            FieldPath::root(),
            "a release names at least one artifact or run",
        ));
    }
    Ok(Release {
        name,
        artifacts,
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SHA: &str = "0000000000000000000000000000000000000000000000000000000000000000";

    fn parse(kind: Kind, value: Value) -> Result<Payload, FieldError> {
        let Value::Object(map) = value else { panic!() };
        Payload::parse(kind, map)
    }

    fn bank() -> Value {
        json!({
            "format": "babel-item-bank", "schema_version": 1,
            "items": [
                {"id": "cap-fr", "family": "capitals", "split": "test", "groups": {"region": "europe"},
                 "instances": [{"language": "en", "script": "Latn", "question_id": "cap-fr"},
                               {"language": "tr", "script": "Latn", "question_id": "cap-fr-tr"}]},
                {"id": "cap-jp", "instances": [{"language": "en", "script": "Latn", "question_id": "cap-jp"}]}
            ]
        })
    }

    fn protocol_value() -> Value {
        json!({
            "format": "babel-protocol", "schema_version": 1,
            "item_bank": {"id": "bank", "sha256": SHA},
            "prompt": {"template": "Q: {{question}}\nA:"},
            "few_shot": {"count": 0},
            "decoding": {"method": "loglikelihood"},
            "filters": [{"name": "none"}],
            "metrics": [{"name": "acc", "definition": "argmax loglikelihood equals the key"}],
            "correctness": {"metric": "acc", "filter": "none"}
        })
    }

    fn error_at(kind: Kind, value: Value) -> String {
        parse(kind, value).unwrap_err().path.to_string()
    }

    #[test]
    fn an_item_bank_keeps_global_ids_families_splits_groups_and_instances() {
        let Payload::ItemBank(bank) = parse(Kind::ItemBank, bank()).unwrap() else {
            panic!()
        };
        assert_eq!(bank.items.len(), 2);
        assert_eq!(bank.items[0].family.as_deref(), Some("capitals"));
        assert_eq!(bank.items[0].groups["region"], "europe");
        assert_eq!(bank.items[0].instances[1].question_id, "cap-fr-tr");
        assert_eq!(bank.items[1].split, None);
    }

    #[test]
    fn bank_errors_name_the_field() {
        let mut value = bank();
        value["items"][1]["id"] = json!("cap-fr");
        assert_eq!(error_at(Kind::ItemBank, value), "items[1].id");

        let mut value = bank();
        value["items"][0]["instances"][1]["script"] = json!(7);
        assert_eq!(
            error_at(Kind::ItemBank, value),
            "items[0].instances[1].script"
        );

        let mut value = bank();
        value["items"][1]["instances"][0]["question_id"] = json!("cap-fr");
        assert_eq!(
            error_at(Kind::ItemBank, value),
            "items[1].instances[0].question_id",
            "an instance belongs to one item"
        );

        let mut value = bank();
        value["items"][0]["instances"][1]["language"] = json!("en");
        assert_eq!(error_at(Kind::ItemBank, value), "items[0].instances[1]");

        let mut value = bank();
        value["items"][0]["id"] = json!("language");
        assert_eq!(error_at(Kind::ItemBank, value), "items[0].id");

        let mut value = bank();
        value["items"][0]["colour"] = json!("red");
        assert_eq!(error_at(Kind::ItemBank, value), "items[0].colour");

        let mut value = bank();
        value["format"] = json!("babel-protocol");
        assert_eq!(error_at(Kind::ItemBank, value), "format");
    }

    #[test]
    fn a_protocol_pins_its_bank_and_its_correctness_names_a_defined_metric_and_filter() {
        let Payload::Protocol(p) = parse(Kind::Protocol, protocol_value()).unwrap() else {
            panic!()
        };
        assert_eq!(p.item_bank.id, "bank");
        assert_eq!(p.filters, ["none"]);
        assert_eq!(p.correctness_metric, "acc");
        let deps = Payload::Protocol(p).dependencies();
        assert_eq!(deps.artifacts[0].kind, Kind::ItemBank);
        assert_eq!(deps.artifacts[0].at.to_string(), "item_bank");

        let mut value = protocol_value();
        value["correctness"]["metric"] = json!("acc_norm");
        assert_eq!(error_at(Kind::Protocol, value), "correctness.metric");
        let mut value = protocol_value();
        value["correctness"]["filter"] = json!("strict-match");
        assert_eq!(error_at(Kind::Protocol, value), "correctness.filter");
        let mut value = protocol_value();
        value["item_bank"]["sha256"] = json!("ABC");
        assert_eq!(error_at(Kind::Protocol, value), "item_bank.sha256");
        let mut value = protocol_value();
        value["few_shot"] = json!({"count": -1});
        assert_eq!(error_at(Kind::Protocol, value), "few_shot.count");
        let mut value = protocol_value();
        value["metrics"][0]
            .as_object_mut()
            .unwrap()
            .remove("definition");
        assert_eq!(error_at(Kind::Protocol, value), "metrics[0].definition");
    }

    #[test]
    fn a_calibration_pins_its_inputs_and_a_release_its_members() {
        let calibration = json!({
            "format": "babel-calibration", "schema_version": 1,
            "item_bank": {"id": "bank", "sha256": SHA},
            "protocol": {"id": "proto", "sha256": SHA},
            "method": {"software": "mirt 1.41", "model": "Rasch"},
            "input_runs": [{"run_id": "r1", "manifest_sha256": SHA}],
            "item_parameters": {"cap-fr": {"b": -0.4}}
        });
        let payload = parse(Kind::Calibration, calibration.clone()).unwrap();
        let deps = payload.dependencies();
        assert_eq!(deps.artifacts.len(), 2);
        assert_eq!(deps.runs[0].pin.run_id, "r1");
        assert_eq!(deps.runs[0].at.to_string(), "input_runs[0]");

        let mut value = calibration.clone();
        value["input_runs"] = json!([]);
        assert_eq!(error_at(Kind::Calibration, value), "input_runs");
        let mut value = calibration;
        value["item_parameters"]["cap-fr"]["b"] = json!("high");
        assert_eq!(
            error_at(Kind::Calibration, value),
            "item_parameters.cap-fr.b"
        );

        let release = json!({
            "format": "babel-release", "schema_version": 1, "name": "v1",
            "artifacts": [{"kind": "item-bank", "id": "bank", "sha256": SHA}],
            "runs": [{"run_id": "r1", "manifest_sha256": SHA}]
        });
        assert_eq!(
            parse(Kind::Release, release.clone())
                .unwrap()
                .dependencies()
                .artifacts
                .len(),
            1
        );
        let mut value = release.clone();
        value["artifacts"][0]["kind"] = json!("release");
        assert_eq!(error_at(Kind::Release, value), "artifacts[0].kind");
        let mut value = release;
        value["runs"] = json!([{"run_id": "r1", "manifest_sha256": SHA}, {"run_id": "r1", "manifest_sha256": SHA}]);
        assert_eq!(error_at(Kind::Release, value), "runs[1].run_id");
    }

    #[test]
    fn a_model_panel_lists_models_and_their_checkpoints_once() {
        let panel = json!({
            "format": "babel-model-panel", "schema_version": 1,
            "models": [{"model": "m1", "checkpoints": ["step-1", "step-2"]}]
        });
        assert!(parse(Kind::ModelPanel, panel.clone()).is_ok());
        let mut value = panel;
        value["models"][0]["checkpoints"][1] = json!("step-1");
        assert_eq!(
            error_at(Kind::ModelPanel, value),
            "models[0].checkpoints[1]"
        );
    }
}
