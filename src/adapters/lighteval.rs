//! The lighteval adapter: an output folder `out/<run>/` written with `--save-details`
//! (checked on lighteval 0.13.0), or one of its details Parquet files. Each
//! `details/<model>/<date>/details_<task>|<fewshot>_<date>.parquet` is one import, with the
//! `results/<model>/results_<date>.json` of its run beside it (the model is only there).
//!
//! Owns the lighteval rules of the data contract: `doc.id` is the row's position in the
//! evaluated split (lighteval overwrites every dataset id), so by default it is run-local;
//! `--id-field` names a kept id (`doc.specific.id`). The rows are shuffled: nothing is
//! ever joined on row order. Correctness is `metric.acc` or `metric.em` (0/1 integers), or
//! the run's `correctness_metric`; continuous metrics stay in `metrics`; no multiple-choice
//! answer is inferred from the logprobs. The mapping is in FORMAT.md ("The lighteval
//! adapter"). No filesystem access: the archive reads the files and hands over rows, each
//! as its columns' canonical text (`inputs::parquet`), read here through [`kit::Found`].

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::kit::{self, Found};
use super::stable_id::{self, QuestionIdentity};
use super::{AdapterError, Begun, ImportContext, Layout, Listing, MembersItem, Rows, Unit};
use crate::canonical_json::{Json, JsonKind, ObjectWriter};
use crate::jsonl::{FieldPath, Members, PathSegment};
use crate::record::{IdentityScope, NewRecord};

/// lighteval details, one Parquet file per task.
pub const ADAPTER: super::Adapter = super::Adapter::new(
    "lighteval",
    "lighteval output (out/<run>/ or one details_<task>|<n>_<date>.parquet)",
    "lighteval/1",
    super::Reader::Items(
        super::Structured::new(layout, begin, kit::normalize_members::<Details>).with_units(units),
    ),
);

/// The binary metrics that set `correct`, in order, when the run names none.
pub const CORRECTNESS_METRICS: [&str; 2] = ["acc", "em"];

const RESULTS: &str = "results";

fn layout(_: &str) -> Result<Layout, String> {
    Ok(Layout::Rows(Rows::Parquet))
}

/// A details file's name split: (`<task>|<fewshot>`, `<date>`).
fn details_name(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("details_")?
        .strip_suffix(".parquet")?
        .rsplit_once('_')
}

/// Every details file of the folder (or the file alone) is a unit, with its run's
/// results file.
fn units(listing: &Listing<'_>) -> Result<Vec<Unit>, String> {
    listing.units(
        "holds no details/<model>/<date>/details_<task>|<n>_<date>.parquet (was it run with --save-details?)",
        |path| unit(path, listing),
    )
}

/// The unit of a details file `details/<model>/<date>/details_...`: its results are
/// `results/<model>/results_<date>.json`, where `<model>` is the model_name, folders and
/// all (`org/name`).
fn unit(path: &str, listing: &Listing<'_>) -> Result<Option<Unit>, String> {
    let parts: Vec<&str> = path.split('/').collect();
    let name = parts.last().copied().unwrap_or_default();
    let Some((task, date)) = details_name(name) else {
        return listing.not_a_unit(format!(
            "{name:?} is not a lighteval details file (details_<task>|<n>_<date>.parquet)"
        ));
    };
    let n = parts.len();
    let Some(details) = parts[..n.saturating_sub(2)]
        .iter()
        .rposition(|part| *part == "details")
        .filter(|at| at + 3 < n)
    else {
        return Err(format!(
            "{path} is not inside details/<model>/<date>/, so its results file cannot be found"
        ));
    };
    let model = parts[details + 1..n - 2].join("/");
    let results = format!("results/{model}/results_{date}.json");
    let header = if listing.folder {
        let beside = format!(
            "{}{results}",
            parts[..details]
                .iter()
                .map(|p| format!("{p}/"))
                .collect::<String>()
        );
        if listing.files.binary_search(&beside).is_err() {
            return Err(format!(
                "{path} has no results file {beside}: the model is named only there"
            ));
        }
        beside
    } else {
        format!("{}{results}", "../".repeat(n - 1 - details))
    };
    Ok(Some(Unit {
        name: task.to_owned(),
        items: path.to_owned(),
        header: vec![(RESULTS, header)],
        takes_ids: false,
    }))
}

/// What every row of one details file needs.
struct Details {
    task: String,
    benchmark: String,
    fewshot: Option<u64>,
    metric: Option<String>,
    model_warning: Option<String>,
}

fn begin(header: super::Header, context: &ImportContext<'_>) -> Result<Begun, AdapterError> {
    let results = header.members.get(RESULTS).and_then(Value::as_object);
    let Some(results) = results else {
        return Err(AdapterError::new(
            FieldPath::root(),
            "the results JSON beside the details file is missing or not a JSON object",
        )
        .with_hint("import the run's output folder whole (out/<run>/)"));
    };
    let (task, _) = details_name(context.source.basename).ok_or_else(|| {
        AdapterError::new(
            FieldPath::root(),
            format!(
                "{:?} is not a lighteval details file name",
                context.source.basename
            ),
        )
    })?;
    let (name, fewshot) = match task.rsplit_once('|') {
        Some((name, n)) => (name, n.parse::<u64>().ok()),
        None => (task, None),
    };
    let benchmark = super::named_benchmark(
        context,
        Some(name),
        "the task name",
        "no benchmark: the details file names no task",
    )?;
    let at_results = FieldPath::root().key("config_general");
    let model_name = results
        .get("config_general")
        .and_then(|c| c.get("model_name"))
        .and_then(Value::as_str);
    if model_name.is_none() {
        return Err(AdapterError::new(
            at_results.key("model_name"),
            "the results JSON names no model",
        )
        .with_hint("this is not a results file lighteval wrote; import the whole output folder"));
    }
    let model_warning = super::check_model(
        model_name,
        at_results.key("model_name"),
        "the lighteval run's model (results JSON config_general.model_name)",
        context,
    )?;
    Ok(Begun {
        state: Box::new(Details {
            task: task.to_owned(),
            benchmark,
            fewshot,
            metric: context.run.correctness_metric.clone(),
            model_warning,
        }),
        producer: producer(results, task, model_name),
    })
}

/// What the manifest keeps about the producer: the task, the model, the task's version,
/// dataset and hashes, lighteval's commit.
fn producer(
    results: &Map<String, Value>,
    task: &str,
    model_name: Option<&str>,
) -> Map<String, Value> {
    let mut producer = Map::new();
    producer.insert("framework".into(), "lighteval".into());
    producer.insert("task".into(), task.into());
    if let Some(model) = model_name {
        producer.insert("model".into(), model.into());
    }
    let config = results.get("config_tasks").and_then(|c| c.get(task));
    kit::add_facts(
        &mut producer,
        [
            ("task_version", config.and_then(|c| c.get("version"))),
            ("hf_repo", config.and_then(|c| c.get("hf_repo"))),
            (
                "hashes",
                results
                    .get("summary_tasks")
                    .and_then(|s| s.get(task))
                    .and_then(|s| s.get("hashes")),
            ),
            (
                "lighteval_sha",
                results
                    .get("config_general")
                    .and_then(|c| c.get("lighteval_sha")),
            ),
        ],
    );
    producer
}

impl kit::ItemMembers for Details {
    fn record<'a>(
        &'a self,
        item: MembersItem<'a>,
        context: &'a ImportContext<'a>,
    ) -> kit::ItemRecord<'a> {
        let members = item.members;
        let doc = Fields::of(Some(&doc_of_task(members, &self.task)?));
        let object = |name: &str| Found::top(members, name).filter(Found::is_object);
        let (metric, response) = (object("metric"), object("model_response"));
        let response = response.as_ref().map(|r| Fields::of(Some(r)));
        let mut warnings: Vec<String> = self.model_warning.iter().cloned().collect();
        let at_id = FieldPath::root().key("doc").key("id");
        let row_id = kit::required_string(doc.get("id"), at_id, "lighteval's doc.id")?;
        let identity = identity(members, &row_id, context, &mut warnings)?;
        let locator = item.locator.clone();
        let mut record =
            kit::new_record(context, Cow::Borrowed(&self.benchmark), identity, locator);
        record.correct = correctness(metric.as_ref(), self.metric.as_deref(), &mut warnings);
        let target = target(&doc)?;
        reply(&doc, response.as_ref(), &mut record)?;
        record.target = target;
        record.metrics = metric.map_or(Ok(Json::EMPTY_OBJECT), |m| m.stored())?;
        record.warnings = warnings;
        record.extra = extra(self, &doc, row_id)?;
        Ok(Some(record))
    }
}

/// A struct's fields, read out of its canonical text once: a lookup in the text walks
/// every member before the one it finds, and a row's `doc` and `model_response` hold the
/// prompt, long, before the fields read after it.
struct Fields<'a> {
    of: Option<Found<'a>>,
    values: Vec<(Cow<'a, str>, Json<'a>)>,
}

impl<'a> Fields<'a> {
    fn of(found: Option<&Found<'a>>) -> Self {
        let values = found.and_then(|f| f.value.member_values());
        Self {
            of: found.cloned(),
            values: values.unwrap_or_default(),
        }
    }

    fn get(&self, key: &str) -> Option<Found<'a>> {
        let (_, value) = self.values.iter().find(|(name, _)| name == key)?;
        Some(self.of.as_ref()?.child(key, value.clone()))
    }
}

/// The row's `doc` struct, which must be of the file's task.
fn doc_of_task<'a>(members: &'a Members, task: &str) -> Result<Found<'a>, AdapterError> {
    let at = FieldPath::root().key("doc");
    let doc = Found::top(members, "doc");
    let Some(doc) = doc.clone().filter(Found::is_object) else {
        return Err(AdapterError::new(
            at,
            format!(
                "expected lighteval's doc struct, found {}",
                doc.map_or("nothing".into(), |d| d.describe())
            ),
        ));
    };
    if let Some(named) = doc.key("task_name").and_then(|n| n.string())
        && named != task
    {
        return Err(AdapterError::new(
            at.key("task_name"),
            format!("task {named:?}, but the file is of task {task:?}"),
        ));
    }
    Ok(doc)
}

/// The row's question ID: `--id-field`, unless it names `doc.id`, which, like no
/// `--id-field`, gives the run-local row position.
fn identity(
    members: &Members,
    row_id: &str,
    context: &ImportContext<'_>,
    warnings: &mut Vec<String>,
) -> Result<QuestionIdentity, AdapterError> {
    let positional_field = |field: &FieldPath| {
        field.segments()
            == [
                PathSegment::Key("doc".into()),
                PathSegment::Key("id".into()),
            ]
    };
    if let Some(field) = &context.options.id_field
        && !positional_field(field)
    {
        return stable_id::at_field(members, field);
    }
    warnings.push(format!(
        "doc.id {row_id} is lighteval's row position in the evaluated split (it replaces the dataset's id): run-local, it never pairs; --id-field names an id the task kept (e.g. doc.specific.id)"
    ));
    // The position alone: two files of one benchmark in a run (two few-shot settings of a
    // task) are then duplicates unless --variant tells them apart.
    Ok(QuestionIdentity {
        question_id: row_id.to_owned(),
        scope: IdentityScope::RunLocal,
        field: None,
    })
}

/// The target: the text of each `doc.gold_index` among `doc.choices`.
fn target(doc: &Fields<'_>) -> Result<Json<'static>, AdapterError> {
    let choices = doc
        .get("choices")
        .filter(|c| c.value.kind() == JsonKind::Array)
        .map(|c| c.elements());
    let at_gold = FieldPath::root().key("doc").key("gold_index");
    let text_of = |index: &Found<'_>| {
        let choice = index
            .whole()
            .and_then(|i| choices.as_ref().and_then(|c| c.get(i as usize)));
        let Some(choice) = choice else {
            return Err(AdapterError::new(
                at_gold.clone(),
                format!(
                    "{} is not an index of doc.choices ({} choices)",
                    index.parsed(),
                    choices.as_ref().map_or(0, Vec::len)
                ),
            ));
        };
        Ok(choice.stored()?.into_owned())
    };
    let gold = doc.get("gold_index");
    Ok(match gold.as_ref().map(|g| g.value.kind()) {
        Some(JsonKind::Array) => {
            let indices = gold.map(|g| g.elements()).unwrap_or_default();
            kit::array(indices.iter().map(text_of).collect::<Result<Vec<_>, _>>()?)
        }
        None | Some(JsonKind::Null) => Json::NULL,
        Some(_) => text_of(gold.as_ref().expect("a gold index"))?,
    })
}

/// What the model was asked and answered: the question, the choices it scored (multiple
/// choice scores each choice's logprob; generation's choices are references), the
/// prompt, the logprobs, the generated text and its post-processed prediction.
fn reply<'a>(
    doc: &Fields<'a>,
    response: Option<&Fields<'a>>,
    record: &mut NewRecord<'a>,
) -> Result<(), AdapterError> {
    let first_text = |key: &str| {
        let texts = response?.get(key)?;
        (texts.value.kind() == JsonKind::Array)
            .then(|| texts.elements().into_iter().next())
            .flatten()
            .filter(|text| text.value.kind() == JsonKind::String)
    };
    let generated = first_text("text");
    let logprobs = response
        .and_then(|r| r.get("logprobs"))
        .filter(|l| l.value.kind() == JsonKind::Array && l.value.as_str() != "[]");
    let mut input = ObjectWriter::new();
    if let Some(query) = doc.get("query") {
        input.insert("question", query.stored()?);
    }
    if generated.is_none()
        && logprobs.is_some()
        && let Some(choices) = doc
            .get("choices")
            .filter(|c| c.value.kind() == JsonKind::Array)
    {
        input.insert("choices", choices.stored()?);
    }
    if let Some(prompt) = response
        .and_then(|r| r.get("input"))
        .filter(|p| p.value.kind() == JsonKind::String)
    {
        input.insert("prompt", prompt.stored()?);
    }
    if let Some(logprobs) = logprobs {
        let mut scores = ObjectWriter::new();
        scores.insert("logprobs", logprobs.stored()?);
        record.scores = scores.finish();
    }
    record.input = input.finish();
    record.prediction =
        kit::stored(first_text("text_post_processed").or_else(|| generated.clone()))?;
    record.response = kit::stored(generated)?;
    Ok(())
}

/// What the record keeps of the row besides: the task, its few-shot count, the row
/// position, the gold indices and the task's own fields.
fn extra(
    details: &Details,
    doc: &Fields<'_>,
    row_id: String,
) -> Result<Json<'static>, AdapterError> {
    let mut extra = ObjectWriter::new();
    extra.insert("task", Json::string(&details.task));
    if let Some(fewshot) = details.fewshot {
        let at = FieldPath::root().key("extra").key("num_fewshot");
        extra.insert("num_fewshot", kit::whole(fewshot, at)?);
    }
    extra.insert("doc_id", Json::string(&row_id));
    for key in ["gold_index", "specific"] {
        if let Some(value) = doc.get(key).filter(|v| !v.value.is_null()) {
            extra.insert(key, value.stored()?.into_owned());
        }
    }
    Ok(extra.finish())
}

/// `correct` from the run's `correctness_metric`, else the first of
/// [`CORRECTNESS_METRICS`] the row has: 1 is right, 0 wrong, anything else unknown.
fn correctness(
    metric: Option<&Found<'_>>,
    named: Option<&str>,
    warnings: &mut Vec<String>,
) -> Option<bool> {
    let value = |name: &str| metric.and_then(|m| m.key(name));
    let name = match named {
        Some(name) => name,
        None => match CORRECTNESS_METRICS.iter().find(|m| value(m).is_some()) {
            Some(name) => name,
            None => {
                warnings.push(format!(
                    "the row has no {} metric and the run names no correctness_metric: correctness is unknown",
                    CORRECTNESS_METRICS.join(" or ")
                ));
                return None;
            }
        },
    };
    match value(name).map(|v| v.parsed()).map(|v| (v.as_f64(), v)) {
        // 1 and 0, whether the column is int64 or double.
        None => {
            warnings.push(format!(
                "the row has no metric {name}: correctness is unknown"
            ));
            None
        }
        Some((Some(1.0), _)) => Some(true),
        Some((Some(0.0), _)) => Some(false),
        Some((_, value)) => {
            warnings.push(format!(
                "metric {name} is {value}, not 0 or 1: correctness is unknown"
            ));
            None
        }
    }
}
