//! The HELM adapter: a HELM run folder (`benchmark_output/runs/<suite>/<run>`, written by
//! `helm-run`; checked on crfm-helm 0.5.16). One record per request state, that is per
//! (instance, perturbation, train trial), joined with its `per_instance_stats.json` entry.
//!
//! Owns the HELM rules of the data contract: identity `(instance id, perturbation →
//! variant, train_trial_index → repeat_id)`; ids HELM renumbered by position (`id0`, ...)
//! are run-local; a multiple-choice prediction mapped through `output_mapping`;
//! correctness from one 0/1 stat (`exact_match` unless the run's `correctness_metric`
//! names another), a stat with `count: 0` unknown. The mapping is in FORMAT.md ("The HELM
//! adapter"). No filesystem access: the archive reads the folder and hands over its files.
//!
//! Request states and stats elements are read as the streaming reader's members
//! (canonical text): a value the record keeps is copied as written, and what a JSON
//! parser tells apart and canonical text does not (`1.0`, an integer no double holds) is
//! read from the scan.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::kit::{self, Found, whole_member, whole_number};
use super::stable_id::{self, QuestionIdentity};
use super::{AdapterError, Begun, ImportContext, Layout, MembersItem};
use crate::canonical_json::{Json, JsonKind, ObjectWriter};
use crate::jsonl::{FieldPath, Member, Members, PathSegment};

/// A HELM run folder.
pub const ADAPTER: super::Adapter = super::Adapter::new(
    "helm",
    "a HELM run folder (benchmark_output/runs/<suite>/<run>)",
    "helm/1",
    super::Reader::Items(super::Structured::new(
        layout,
        begin,
        kit::normalize_members::<Run>,
    )),
)
.with_option_rules(check_options);

/// The 0/1 stat that sets `correct` when the run names no `correctness_metric`.
pub const DEFAULT_CORRECTNESS_STAT: &str = "exact_match";

const RUN_SPEC: &str = "run_spec.json";
const SCENARIO: &str = "scenario.json";
const PER_INSTANCE_STATS: &str = "per_instance_stats.json";

/// Every HELM run folder has the same layout, whatever its name.
fn layout(_: &str) -> Result<Layout, String> {
    Ok(Layout::Folder {
        header: &[RUN_SPEC, SCENARIO],
        items_file: "scenario_state.json",
        items: crate::inputs::document::Items::Member("request_states"),
        indexed: Some(super::Indexed {
            file: PER_INSTANCE_STATS,
            new: || Box::new(Stats::default()),
            read: read_stats,
            add: add_stats,
        }),
    })
}

/// The per-instance stats, streamed from `per_instance_stats.json` (which can be far
/// larger than memory should hold as a tree): per (instance, trial, perturbation), each
/// stat's mean, with the stat names stored once.
#[derive(Default)]
struct Stats {
    entries: HashMap<StatsKey, Vec<(std::sync::Arc<str>, Mean)>>,
    names: HashMap<String, std::sync::Arc<str>>,
}

/// An entry's metrics (stat name → mean, null where there is none), and why each null
/// is null.
type Metrics<'a> = (Map<String, Value>, HashMap<&'a str, &'static str>);

/// A stat's mean for one item, or why there is none (in the words of the file).
#[derive(Debug, Clone)]
enum Mean {
    Known(serde_json::Number),
    Unknown(&'static str),
}

impl Stats {
    /// The metrics of one entry: stat name → mean (null where there is none), and why
    /// each unknown one is unknown.
    fn metrics(&self, key: &StatsKey) -> Option<Metrics<'_>> {
        self.entries.get(key).map(|values| {
            let mut why = HashMap::new();
            let metrics = values
                .iter()
                .map(|(name, mean)| {
                    let value = match mean {
                        Mean::Known(number) => Value::Number(number.clone()),
                        Mean::Unknown(reason) => {
                            why.insert(&**name, *reason);
                            Value::Null
                        }
                    };
                    (name.to_string(), value)
                })
                .collect();
            (metrics, why)
        })
    }
}

/// What the index keeps of one element of `per_instance_stats.json`: its key and each
/// stat's mean, by name (read on a worker from the element's canonical text: no tree).
struct StatsEntry {
    key: StatsKey,
    values: Vec<(String, Mean)>,
}

/// Reads one element of `per_instance_stats.json`, as the streaming reader wrote its
/// members, into what the index keeps of it. What a JSON parser tells apart and canonical
/// text does not is read from the scan: a count written `1.0` is no whole number, a count
/// beyond 2^53 is the whole number written, and a mean keeps the number the parser reads
/// (`1.0` is printed so in a warning; an integer no double holds keeps its digits, to be
/// refused where the record is stored; only `-0` is read as `0`, stored alike).
fn read_stats(members: &Members) -> Result<super::IndexEntry, AdapterError> {
    let key = stats_key(members)?;
    let mut values: Vec<(String, Mean)> = Vec::new();
    let Some(stats) = members.get("stats") else {
        return Ok(Box::new(StatsEntry { key, values }));
    };
    let list = stats.peek();
    for (i, stat) in list.iter_elements().into_iter().flatten().enumerate() {
        let Some(name) = stat_name(&stat) else {
            continue;
        };
        let is_double = |field: &str| {
            stats
                .integral_doubles
                .iter()
                .any(|(_, below)| is_stat_field(below, i, field))
        };
        let count = stat.get("count");
        let whole_count = whole_number(
            count.as_ref(),
            written_integer(&stats, i, "count"),
            is_double("count"),
        );
        let mean = stat.get("mean");
        let mean = match (count.as_ref().map(Json::kind), mean) {
            (None | Some(JsonKind::Null), _) => Mean::Unknown("has no count"),
            (Some(_), _) if whole_count == Some(0) => Mean::Unknown("has count 0"),
            (Some(_), _) if whole_count.is_none() => {
                Mean::Unknown("has a count that is not a whole number")
            }
            (_, None) => Mean::Unknown("has no mean"),
            (_, Some(mean)) => match mean.kind() {
                JsonKind::Null => Mean::Unknown("has no mean"),
                JsonKind::Number => Mean::Known(parsed_number(&stats, i, &mean, is_double("mean"))),
                _ => Mean::Unknown("has a mean that is not a number"),
            },
        };
        // As in a JSON object, a stat named twice keeps its last value.
        values.retain(|(known, _)| *known != name);
        values.push((name, mean));
    }
    Ok(Box::new(StatsEntry { key, values }))
}

/// Whether `below` (a path inside the `stats` member) is `[i].field`.
fn is_stat_field(below: &FieldPath, i: usize, field: &str) -> bool {
    matches!(below.segments(), [PathSegment::Index(at), PathSegment::Key(key)] if *at == i && key == field)
}

/// The digits of `[i].field` of the `stats` member as written, when it is an integer no
/// double holds (its canonical text is its nearest double).
fn written_integer<'a>(stats: &Member<'a>, i: usize, field: &str) -> Option<&'a str> {
    stats
        .unsafe_integers
        .iter()
        .find(|(_, (below, _))| is_stat_field(below, i, field))
        .map(|(_, (_, written))| written.as_str())
}

/// A stat's `name.name`, when it is a string.
fn stat_name(stat: &Json<'_>) -> Option<String> {
    let name = stat.get("name")?;
    let name = name.get("name")?;
    name.as_string().map(Cow::into_owned)
}

/// The mean of the `i`th stat as the number a JSON parser reads: a double where it reads
/// one (`double`), the integer as written where no double holds it.
fn parsed_number(
    stats: &Member<'_>,
    i: usize,
    mean: &Json<'_>,
    double: bool,
) -> serde_json::Number {
    match (written_integer(stats, i, "mean"), kit::parsed(mean, double)) {
        (Some(digits), _) => digits.parse().expect("an integer's digits"),
        (None, Value::Number(number)) => number,
        (None, other) => unreachable!("a mean is a number, not {other}"),
    }
}

/// Adds what [`read_stats`] kept of one element to the index, each stat name stored once;
/// a second entry for the same (instance, trial, perturbation) is refused, as a repeated
/// key is.
fn add_stats(
    index: &mut (dyn std::any::Any + Send + Sync),
    entry: super::IndexEntry,
) -> Result<(), AdapterError> {
    let stats: &mut Stats = index.downcast_mut().expect("made by this adapter");
    let StatsEntry { key, values } = *entry.downcast().expect("read by this adapter");
    let values = values
        .into_iter()
        .map(|(name, mean)| {
            let name = match stats.names.get(&name) {
                Some(interned) => interned.clone(),
                None => {
                    let interned: std::sync::Arc<str> = name.as_str().into();
                    stats.names.insert(name, interned.clone());
                    interned
                }
            };
            (name, mean)
        })
        .collect();
    if stats.entries.insert(key.clone(), values).is_some() {
        return Err(AdapterError::new(
            FieldPath::root(),
            format!(
                "a second entry for instance {:?}, train trial {}, perturbation {}: which one scores the instance is ambiguous",
                key.0,
                key.1,
                key.2.as_deref().unwrap_or("(none)")
            ),
        ));
    }
    Ok(())
}

/// A HELM run's variants are its perturbations, so `--variant` has nothing to name.
fn check_options(options: &super::AdapterOptions) -> Result<(), String> {
    match &options.variant {
        Some(_) => Err(
            "--variant does not apply to HELM runs: their variants are their perturbations \
             (original, lowercase, ...); compare two HELM runs with `babel compare --other-run`"
                .into(),
        ),
        None => Ok(()),
    }
}

/// The key that joins a request state with its stats.
type StatsKey = (String, u64, Option<String>);

/// What every request state of one run needs.
struct Run {
    benchmark: String,
    /// Every instance id is `id<n>`: HELM's positions, renumbered over all splits.
    positional_ids: bool,
    /// Per (instance, trial, perturbation): stat name → mean (null when `count` is 0).
    stats: Box<Stats>,
    correctness_stat: String,
    /// The warning every record carries when the run's own model is not the babel run's
    /// (`--allow-other-model`).
    model_warning: Option<String>,
    /// A language-modeling run (`adapter_spec.method`): HELM splits a long instance into
    /// windows, one request state each; the instances already given their record.
    windows_seen: Option<std::sync::Mutex<std::collections::HashSet<StatsKey>>>,
}

fn begin(header: super::Header, context: &ImportContext<'_>) -> Result<Begun, AdapterError> {
    let super::Header {
        members: header,
        index,
    } = header;
    let header = &header;
    let file = |name: &str| -> Result<&Map<String, Value>, AdapterError> {
        header.get(name).and_then(Value::as_object).ok_or_else(|| {
            AdapterError::new(
                FieldPath::root(),
                format!("the run folder has no {name} (or it is not a JSON object)"),
            )
            .with_hint(
                "import the whole folder helm-run wrote: benchmark_output/runs/<suite>/<run>",
            )
        })
    };
    let run_spec = file(RUN_SPEC)?;
    let scenario_name = header
        .get(SCENARIO)
        .and_then(|s| s.get("name"))
        .and_then(Value::as_str);
    let benchmark = super::named_benchmark(
        context,
        scenario_name,
        "scenario.json's name",
        &format!(
            "no benchmark: the run folder has no {SCENARIO} naming one, and neither --benchmark nor the run's metadata gives one"
        ),
    )?;
    let stats = stats(index)?;
    let positional_ids =
        !stats.entries.is_empty() && stats.entries.keys().all(|(id, _, _)| is_position(id));
    let correctness_stat = context
        .run
        .correctness_metric
        .clone()
        .unwrap_or_else(|| DEFAULT_CORRECTNESS_STAT.to_owned());
    let adapter_spec = run_spec.get("adapter_spec");
    let model_warning = super::check_model(
        adapter_spec
            .and_then(|a| a.get("model"))
            .and_then(Value::as_str),
        FieldPath::root()
            .key(RUN_SPEC)
            .key("adapter_spec")
            .key("model"),
        "the HELM run's model (run_spec.json adapter_spec.model)",
        context,
    )?;
    Ok(Begun {
        state: Box::new(Run {
            benchmark,
            positional_ids,
            stats,
            correctness_stat,
            model_warning,
            windows_seen: (adapter_spec
                .and_then(|a| a.get("method"))
                .and_then(Value::as_str)
                == Some("language_modeling"))
            .then(Default::default),
        }),
        producer: producer(run_spec, scenario_name),
    })
}

/// What the manifest keeps about the producer: the run, its scenario, model, method and
/// groups.
fn producer(run_spec: &Map<String, Value>, scenario_name: Option<&str>) -> Map<String, Value> {
    let adapter_spec = |key: &str| run_spec.get("adapter_spec").and_then(|a| a.get(key));
    let mut producer = Map::new();
    producer.insert("framework".into(), "helm".into());
    kit::add_facts(
        &mut producer,
        [
            ("run", run_spec.get("name")),
            ("scenario", run_spec.get("scenario_spec")),
            ("scenario_name", scenario_name.map(Value::from).as_ref()),
            ("model", adapter_spec("model")),
            ("model_deployment", adapter_spec("model_deployment")),
            ("method", adapter_spec("method")),
            ("num_train_trials", adapter_spec("num_train_trials")),
            ("groups", run_spec.get("groups")),
        ],
    );
    producer
}

/// The per-instance stats the archive indexed from `per_instance_stats.json`.
fn stats(index: Option<Box<dyn std::any::Any + Send + Sync>>) -> Result<Box<Stats>, AdapterError> {
    let Some(index) = index else {
        return Err(AdapterError::new(
            FieldPath::root(),
            format!("the run folder has no {PER_INSTANCE_STATS}"),
        )
        .with_hint("import the whole folder helm-run wrote: benchmark_output/runs/<suite>/<run>"));
    };
    index
        .downcast()
        .map_err(|_| AdapterError::new(FieldPath::root(), "the stats index is not this adapter's"))
}

/// `id` followed by digits: what HELM gives every instance when any lacks an id.
fn is_position(id: &str) -> bool {
    id.strip_prefix("id")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The (instance, trial, perturbation) of a stats element.
fn stats_key(members: &Members) -> Result<StatsKey, AdapterError> {
    let at = FieldPath::root();
    let id = members
        .get("instance_id")
        .and_then(|id| id.peek().as_string().map(Cow::into_owned))
        .ok_or_else(|| AdapterError::new(at.key("instance_id"), "expected a string"))?;
    let trial = members
        .get("train_trial_index")
        .and_then(|trial| whole_member(&trial))
        .ok_or_else(|| AdapterError::new(at.key("train_trial_index"), "expected an integer ≥ 0"))?;
    let perturbation = match members.get("perturbation") {
        None => None,
        Some(p) if p.peek().is_null() => None,
        Some(p) => {
            let name = p
                .peek()
                .get("name")
                .and_then(|name| name.as_string().map(Cow::into_owned));
            named_perturbation(
                name.as_deref(),
                || kit::describe(&p),
                &at.key("perturbation"),
            )?
        }
    };
    Ok((id, trial, perturbation))
}

/// A perturbation's `name`, which must be a non-empty string (`found` describes the
/// perturbation otherwise).
fn named_perturbation(
    name: Option<&str>,
    found: impl FnOnce() -> String,
    at: &FieldPath,
) -> Result<Option<String>, AdapterError> {
    match name {
        Some(name) if !name.is_empty() => Ok(Some(name.to_owned())),
        _ => Err(AdapterError::new(
            at.key("name"),
            format!("expected the perturbation's name, found {}", found()),
        )),
    }
}

impl kit::ItemMembers for Run {
    fn record<'a>(
        &'a self,
        item: MembersItem<'a>,
        context: &'a ImportContext<'a>,
    ) -> kit::ItemRecord<'a> {
        let members = item.members;
        let top = |key: &str| Found::top(members, key);
        // Multiple choice asked one request per choice (`multiple_choice_separate_*`): the
        // instance is one item, carried by its first choice's request; the other choices'
        // requests and the calibration requests make no record (they stay in the raw file).
        let per_choice = members
            .get("reference_index")
            .and_then(|m| whole_member(&m));
        let calibration = top("request_mode").is_some_and(|mode| mode.is_string("calibration"));
        if calibration || per_choice.is_some_and(|index| index > 0) {
            return Ok(None);
        }
        let (instance, key) = request(members)?;
        let mut warnings: Vec<String> = self.model_warning.iter().cloned().collect();
        if !self.first_window(&key, &mut warnings) {
            return Ok(None);
        }
        if per_choice.is_some() {
            warnings.push(
                "HELM scored each choice in its own request (multiple_choice_separate): no prediction is \
                 reconstructed; correctness comes from the instance's stats"
                    .to_owned(),
            );
        }
        let (id, trial, perturbation) = &key;
        let identity = match stable_id::selected(members, context.options)? {
            Some(selected) => selected,
            None if self.positional_ids => {
                warnings.push(format!(
                    "instance id {id} is HELM's position (it renumbers every instance id<n> when any lacks an id): run-local, it never pairs"
                ));
                stable_id::run_local(context.source, id)
            }
            None => QuestionIdentity::stable(id.clone()),
        };
        let locator = item.locator.clone();
        let mut record =
            kit::new_record(context, Cow::Borrowed(&self.benchmark), identity, locator);
        record.variant_id = Cow::Owned(
            perturbation
                .clone()
                .unwrap_or_else(|| kit::ORIGINAL.to_owned()),
        );
        // The test split is HELM's headline; instances of another split (valid) are items of
        // their own filter, so accuracy per filter is HELM's per split.
        if let Some(split) = instance.key("split").and_then(|split| split.string())
            && split != "test"
        {
            record.filter = Cow::Owned(split);
        }
        record.repeat_id = *trial;
        let output_mapping = top("output_mapping").filter(Found::is_object);
        let result = top("result");
        let completions = completions(result.as_ref());
        let (input, target) = question(&instance, top("request"), &output_mapping, per_choice);
        let response = match per_choice {
            Some(_) => None,
            None => completions.first().cloned(),
        };
        let prediction = match (&output_mapping, &response) {
            (Some(mapping), Some(text)) => text
                .string()
                .and_then(|text| mapping.key(text.trim()))
                .or_else(|| response.clone()),
            _ => response.clone(),
        };
        let (correct, metrics) = self.correctness(&key, result.as_ref(), &mut warnings);
        record.correct = correct;
        record.input = input?;
        record.target = target?;
        record.prediction = kit::stored(prediction)?;
        record.metrics = kit::stored_tree("metrics", &Value::Object(metrics))?;
        record.response = kit::stored(response)?;
        record.warnings = warnings;
        record.extra = extra(&instance, &top, completions)?;
        Ok(Some(record))
    }
}

/// A request state's instance and the key that joins it with its stats.
fn request(members: &Members) -> Result<(Found<'_>, StatsKey), AdapterError> {
    let root = FieldPath::root();
    let at_instance = root.key("instance");
    let Some(instance) = Found::top(members, "instance").filter(Found::is_object) else {
        return Err(AdapterError::new(at_instance, "required object is missing"));
    };
    let id = kit::required_string(
        instance.key("id"),
        at_instance.key("id"),
        "the instance's id",
    )?;
    let trial = members
        .get("train_trial_index")
        .and_then(|trial| whole_member(&trial))
        .ok_or_else(|| {
            AdapterError::new(root.key("train_trial_index"), "expected an integer ≥ 0")
        })?;
    let perturbation = match instance.key("perturbation") {
        None => None,
        Some(p) if p.value.is_null() => None,
        Some(p) => {
            let name = p.key("name").and_then(|name| name.string());
            named_perturbation(name.as_deref(), || p.describe(), &p.path())?
        }
    };
    Ok((instance, (id, trial, perturbation)))
}

impl Run {
    /// Whether the request is the record of its instance: in a language-modeling run
    /// only the first window of each instance is (with a warning saying so).
    fn first_window(&self, key: &StatsKey, warnings: &mut Vec<String>) -> bool {
        let Some(seen) = &self.windows_seen else {
            return true;
        };
        if !seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone())
        {
            return false;
        }
        warnings.push(
            "a language-modeling instance is one record, from its first window's request (HELM scores \
             the windows together in its stats)"
                .to_owned(),
        );
        true
    }

    /// `correct` from the instance's correctness stat: 1 right, 0 wrong, anything else
    /// (a failed request, no entry, no stat, a stat without a mean) unknown. The entry's
    /// stats go into `metrics`.
    fn correctness(
        &self,
        key: &StatsKey,
        result: Option<&Found<'_>>,
        warnings: &mut Vec<String>,
    ) -> (Option<bool>, Map<String, Value>) {
        let found = self.stats.metrics(key);
        let (metrics, unknown_because) = found.clone().unwrap_or_default();
        let correct = self.correct(
            found.is_some(),
            &metrics,
            &unknown_because,
            result,
            warnings,
        );
        (correct, metrics)
    }

    /// [`Run::correctness`] of a request whose stats entry was `found` with `metrics`.
    fn correct(
        &self,
        found: bool,
        metrics: &Map<String, Value>,
        unknown_because: &HashMap<&str, &'static str>,
        result: Option<&Found<'_>>,
        warnings: &mut Vec<String>,
    ) -> Option<bool> {
        let stat = &self.correctness_stat;
        let field = |name: &str| result.and_then(|r| r.key(name));
        let succeeded = field("success").and_then(|s| s.value.as_bool()) != Some(false);
        if !succeeded {
            let error = field("error").and_then(|e| e.string());
            warnings.push(format!(
                "the request failed ({}): correctness is unknown",
                error.as_deref().unwrap_or("no message")
            ));
            return None;
        }
        if !found {
            warnings.push(
                "per_instance_stats.json has no entry for this instance, trial and perturbation: correctness is unknown"
                    .to_owned(),
            );
            return None;
        }
        let unknown = match metrics.get(stat) {
            None => format!("the run computed no {stat} stat for this item"),
            Some(Value::Null) => {
                let reason = unknown_because
                    .get(stat.as_str())
                    .copied()
                    .unwrap_or("has no mean");
                format!("stat {stat} {reason} for this item")
            }
            Some(value) => match value.as_f64() {
                Some(1.0) => return Some(true),
                Some(0.0) => return Some(false),
                _ => format!("stat {stat} is {value}, not 0 or 1"),
            },
        };
        warnings.push(format!("{unknown}: correctness is unknown"));
        None
    }
}

/// The target: the text of every reference tagged correct (one text alone, several as a
/// list).
fn target(references: &[Found<'_>]) -> Result<Json<'static>, AdapterError> {
    let correct = |reference: &&Found<'_>| {
        let tags = reference.key("tags").map(|tags| tags.elements());
        tags.is_some_and(|tags| tags.iter().any(|tag| tag.is_string("correct")))
    };
    let mut texts = Vec::new();
    for text in references.iter().filter(correct).filter_map(reference_text) {
        texts.push(text.stored()?);
    }
    Ok(match texts.len() {
        0 => Json::NULL,
        1 => texts.remove(0).into_owned(),
        _ => kit::array(texts),
    })
}

/// A reference's text.
fn reference_text<'a>(reference: &Found<'a>) -> Option<Found<'a>> {
    reference.key("output")?.key("text")
}

/// What the model was asked (the instance's text, the choices of a multiple-choice
/// request, the prompt) and the target among the references.
fn question(
    instance: &Found<'_>,
    request: Option<Found<'_>>,
    output_mapping: &Option<Found<'_>>,
    per_choice: Option<u64>,
) -> (
    Result<Json<'static>, AdapterError>,
    Result<Json<'static>, AdapterError>,
) {
    let references = instance
        .key("references")
        .map(|r| r.elements())
        .unwrap_or_default();
    let input = || {
        let mut input = ObjectWriter::new();
        if let Some(text) = instance.key("input").and_then(|i| i.key("text")) {
            input.insert("question", text.stored()?);
        }
        if output_mapping.is_some() || per_choice.is_some() {
            let mut choices = Vec::new();
            for text in references.iter().filter_map(reference_text) {
                choices.push(text.stored()?);
            }
            input.insert("choices", kit::array(choices));
        }
        if let Some(prompt) = request.as_ref().and_then(|r| r.key("prompt")) {
            input.insert("prompt", prompt.stored()?);
        }
        Ok(input.finish())
    };
    (input(), target(&references))
}

/// The text of every completion of the result.
fn completions<'a>(result: Option<&Found<'a>>) -> Vec<Found<'a>> {
    let completions = result.and_then(|r| r.key("completions"));
    completions
        .map(|c| c.elements())
        .unwrap_or_default()
        .iter()
        .filter_map(|c| c.key("text"))
        .collect()
}

/// What the record keeps of the request state besides: the split, the perturbation, the
/// trial, the output mapping, the prompt's facts and, when there are several, every
/// completion.
fn extra<'a>(
    instance: &Found<'a>,
    top: &dyn Fn(&str) -> Option<Found<'a>>,
    completions: Vec<Found<'a>>,
) -> Result<Json<'static>, AdapterError> {
    let mut extra = ObjectWriter::new();
    for key in ["split", "perturbation"] {
        if let Some(value) = instance.key(key) {
            extra.insert(key, value.stored()?);
        }
    }
    for key in [
        "train_trial_index",
        "output_mapping",
        "num_train_instances",
        "prompt_truncated",
    ] {
        if let Some(value) = top(key) {
            extra.insert(key, value.stored()?);
        }
    }
    if completions.len() > 1 {
        let mut texts = Vec::new();
        for text in &completions {
            texts.push(text.stored()?);
        }
        extra.insert("completions", kit::array(texts));
    }
    Ok(extra.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonl::NonFinitePolicy;

    /// A stats element as the import's workers read it.
    fn scanned(text: &str) -> Members {
        let mut members = Members::new();
        crate::jsonl::scan_bytes(text.as_bytes(), 1, NonFinitePolicy::Null, &mut members).unwrap();
        members
    }

    /// What the index keeps of one element: its key, and each stat's mean as it prints
    /// (or why there is none).
    fn kept(text: &str) -> Result<(StatsKey, Vec<(String, String)>), String> {
        let entry = read_stats(&scanned(text))
            .map_err(|error| format!("{}: {}", error.path, error.message))?;
        let StatsEntry { key, values } = *entry.downcast().unwrap();
        let values = values
            .into_iter()
            .map(|(name, mean)| {
                let mean = match mean {
                    Mean::Known(number) => number.to_string(),
                    Mean::Unknown(why) => why.to_owned(),
                };
                (name, mean)
            })
            .collect();
        Ok((key, values))
    }

    /// Each stat's mean is the number a JSON parser reads, and a count must be a whole
    /// number as a parser reads it: `1.0` is a double to it, not the count 1.
    #[test]
    fn the_index_keeps_each_stats_mean_as_a_json_parser_reads_it() {
        let stat = |name: &str, rest: &str| {
            format!(r#"{{"name": {{"name": "{name}", "split": "test"}}{rest}}}"#)
        };
        let stats = [
            stat("a", r#", "count": 1, "mean": 1.0"#),
            stat("b", r#", "count": 2, "mean": 0.5"#),
            stat("c", r#", "count": 1, "mean": 3"#),
            stat("d", r#", "count": 0, "mean": 1"#),
            stat("e", r#", "count": 1.0, "mean": 1"#),
            stat("f", r#", "mean": 1"#),
            stat("g", r#", "count": null, "mean": 1"#),
            stat("h", r#", "count": 1"#),
            stat("i", r#", "count": 1, "mean": null"#),
            stat("j", r#", "count": 1, "mean": "1""#),
            stat("k", r#", "count": 1, "mean": 1e2"#),
            stat("l", r#", "count": -1, "mean": 1"#),
            stat(
                "m",
                r#", "count": 1, "mean": 9007199254740993, "sum": 9007199254740995"#,
            ),
            stat("n", r#", "count": 1, "mean": 9007199254740995"#),
            stat("p", r#", "count": 18446744073709551615, "mean": 1"#),
            stat("q", r#", "count": -9007199254740993, "mean": 1"#),
            stat("r", r#", "count": 18446744073709551616, "mean": 1"#),
            stat("a", r#", "count": 1, "mean": 0"#),
            r#"{"name": "o", "count": 1, "mean": 1}"#.to_owned(),
            "[1]".to_owned(),
        ];
        let text = format!(
            r#"{{"instance_id": "id7", "train_trial_index": 2, "perturbation": {{"name": "typos"}}, "stats": [{}]}}"#,
            stats.join(", ")
        );
        let (key, values) = kept(&text).unwrap();
        assert_eq!(key, ("id7".to_owned(), 2, Some("typos".to_owned())));
        let expected = [
            ("b", "0.5"),
            ("c", "3"),
            ("d", "has count 0"),
            ("e", "has a count that is not a whole number"),
            ("f", "has no count"),
            ("g", "has no count"),
            ("h", "has no mean"),
            ("i", "has no mean"),
            ("j", "has a mean that is not a number"),
            ("k", "100.0"),
            ("l", "has a count that is not a whole number"),
            ("m", "9007199254740993"),
            ("n", "9007199254740995"),
            ("p", "1"),
            ("q", "has a count that is not a whole number"),
            ("r", "has a count that is not a whole number"),
            ("a", "0"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(n, m)| (n.to_string(), m.to_string()))
            .collect();
        assert_eq!(
            values, expected,
            "a stat named twice keeps its last value, at the end"
        );
        let (_, one) = kept(&format!(
            r#"{{"instance_id": "x", "train_trial_index": 0, "stats": [{}]}}"#,
            stats[0]
        ))
        .unwrap();
        assert_eq!(
            one,
            [("a".to_owned(), "1.0".to_owned())],
            "a mean written 1.0 is a double"
        );
        let (_, none) =
            kept(r#"{"instance_id": "x", "train_trial_index": 0, "stats": {"a": 1}}"#).unwrap();
        assert!(none.is_empty(), "stats that are no array hold no stat");
    }

    #[test]
    fn an_elements_key_is_refused_at_its_field() {
        for (text, expected) in [
            (
                r#"{"train_trial_index": 0}"#,
                "instance_id: expected a string",
            ),
            (
                r#"{"instance_id": 7, "train_trial_index": 0}"#,
                "instance_id: expected a string",
            ),
            (
                r#"{"instance_id": "x", "train_trial_index": 0.0}"#,
                "train_trial_index: expected an integer ≥ 0",
            ),
            (
                r#"{"instance_id": "x", "train_trial_index": -1}"#,
                "train_trial_index: expected an integer ≥ 0",
            ),
            (
                r#"{"instance_id": "x", "train_trial_index": 0, "perturbation": {"name": ""}}"#,
                "perturbation.name: expected the perturbation's name, found an object",
            ),
            (
                r#"{"instance_id": "x", "train_trial_index": 0, "perturbation": 1.0}"#,
                "perturbation.name: expected the perturbation's name, found the number 1.0",
            ),
        ] {
            assert_eq!(kept(text).unwrap_err(), expected, "{text}");
        }
        let (key, _) = kept(
            r#"{"instance_id": "x", "train_trial_index": 9007199254740993, "perturbation": null}"#,
        )
        .unwrap();
        assert_eq!(
            key,
            ("x".to_owned(), 9007199254740993, None),
            "the trial as written"
        );
    }

    #[test]
    fn a_choice_per_request_is_one_record_from_the_instance_stats() {
        use crate::adapters::{AdapterOptions, kit::fixtures};
        use serde_json::json;
        let run = fixtures::run("r", "m");
        let options = AdapterOptions::default();
        let context =
            fixtures::context(&run, &options, "runs/r/raw/0001-x/scenario_state.json", "x");
        let mut header = Map::new();
        header.insert(RUN_SPEC.into(), json!({"name": "x"}));
        header.insert(SCENARIO.into(), json!({"name": "hellaswag"}));
        let stat =
            json!([{"name": {"name": "exact_match", "split": "test"}, "count": 1, "mean": 1.0}]);
        let mut index: Box<dyn std::any::Any + Send + Sync> = Box::new(Stats::default());
        let element = scanned(
            &json!({"instance_id": "h1", "train_trial_index": 0, "stats": stat}).to_string(),
        );
        let read = || read_stats(&element).unwrap();
        add_stats(index.as_mut(), read()).unwrap();
        assert!(
            add_stats(index.as_mut(), read()).is_err(),
            "a second entry for the same key is refused"
        );
        let header = crate::adapters::Header {
            members: header,
            index: Some(index),
        };
        let begun = begin(header, &context).unwrap();
        let instance = json!({"id": "h1", "split": "test", "input": {"text": "A man"},
            "references": [{"output": {"text": "runs"}, "tags": ["correct"]}, {"output": {"text": "flies"}, "tags": []}]});
        let mut out = Vec::new();
        for (index, mode) in [
            (0, "original"),
            (1, "original"),
            (0, "calibration"),
            (1, "calibration"),
        ] {
            let state = json!({"instance": instance, "train_trial_index": 0, "reference_index": index,
                "request_mode": mode, "result": {"success": true, "completions": [{"text": " runs"}]}});
            let members = scanned(&state.to_string());
            let locator = crate::record::Locator::Pointer(format!("/request_states/{index}"));
            let item = MembersItem {
                members: &members,
                locator: &locator,
            };
            let mut records = Vec::new();
            kit::normalize_members::<Run>(&begun, item, &context, &mut records).unwrap();
            out.extend(records.iter().map(crate::record::NewRecord::to_record));
        }
        assert_eq!(out.len(), 1, "one instance, one record");
        assert_eq!(out[0].correct, Some(true));
        assert_eq!(out[0].prediction, Value::Null);
        assert_eq!(out[0].input["choices"], json!(["runs", "flies"]));
    }

    #[test]
    fn positions_are_id_and_digits_only() {
        assert!(is_position("id0") && is_position("id17"));
        assert!(!is_position("id") && !is_position("q001") && !is_position("id1a"));
    }
}
