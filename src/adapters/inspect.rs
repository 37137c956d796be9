//! The Inspect AI adapter: eval logs, `.eval` (a ZIP archive, one member per sample and
//! epoch) or `.json` (one document with a `samples` array), log format version 2. One
//! record per sample and epoch.
//!
//! Owns the Inspect rules of the data contract: identity from `samples[].id`, where an
//! integer id is run-local (Inspect gives a sample without an id its position) unless
//! `--id-field` says otherwise; `epoch` as `repeat_id`;
//! correctness from one scorer's value (`C` right, `I` and `N` wrong, partial credit and
//! NaN unknown), the scorer chosen by the run's `correctness_metric` or by being the only
//! one. The field mapping and the traps are in FORMAT.md ("The Inspect adapter"). No
//! filesystem access: the archive reads the log and hands over its header and samples.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::kit::{self, Found};
use super::stable_id::{self, QuestionIdentity};
use super::{AdapterError, Begun, ImportContext, Layout, MembersItem};
use crate::canonical_json::{Json, JsonKind, ObjectWriter};
use crate::jsonl::{FieldPath, Members};
use crate::record::fields::describe;

/// Inspect AI eval logs.
pub const ADAPTER: super::Adapter = super::Adapter::new(
    "inspect",
    "Inspect AI eval logs (.eval or .json, log format 2)",
    "inspect/1",
    super::Reader::Items(super::Structured::new(
        layout,
        begin,
        kit::normalize_members::<Log>,
    )),
);

/// The header of a `.eval` log (`header.json` once the run has ended; only
/// `_journal/start.json` while it runs or after it was killed).
const ZIP_HEADER: &str = "header.json";
const ZIP_START: &str = "_journal/start.json";

/// A `.eval` file is a ZIP log, a `.json` file a JSON document.
fn layout(basename: &str) -> Result<Layout, String> {
    if basename.ends_with(".eval") {
        Ok(Layout::Zip {
            header: &[ZIP_HEADER, ZIP_START],
            item: |name| name.starts_with("samples/") && name.ends_with(".json"),
        })
    } else if basename.ends_with(".json") {
        Ok(Layout::Document {
            header: &["version", "status", "eval", "results"],
            items: crate::inputs::document::Items::Member("samples"),
        })
    } else {
        Err(format!(
            "{basename} is not an Inspect log: Inspect writes <date>_<task>_<id>.eval (or .json with --log-format json)"
        ))
    }
}

/// What every sample of one log needs.
struct Log {
    benchmark: String,
    scorer: Scorer,
    /// Warnings every record of the log carries.
    warnings: Vec<String>,
}

/// The scorer whose value sets `correct`.
enum Scorer {
    /// Named by the run's `correctness_metric`, or the log's only scorer.
    Chosen(String),
    /// The log has several scorers and the run names none of them.
    Ambiguous(Vec<String>),
    /// The header lists no scorers (a log that has not ended): a sample's only score.
    OnlyOfEachSample,
}

/// Reads the log's header: its task, dataset ids, scorers, status and producer facts.
fn begin(header: super::Header, context: &ImportContext<'_>) -> Result<Begun, AdapterError> {
    let (top, status, at) = log_header(&header.members)?;
    let eval_at = at.key("eval");
    let Some(Value::Object(eval)) = top.get("eval") else {
        return Err(AdapterError::new(eval_at, "required object is missing"));
    };
    let task = super::required_text(eval.get("task"), eval_at.key("task"), "the task's name")?;
    let benchmark = super::named_benchmark(context, Some(&task), "the log's eval.task", "")?;
    let scorer = choose_scorer(top, eval, context, &at)?;

    let mut warnings = Vec::new();
    let model = eval.get("model").and_then(Value::as_str);
    warnings.extend(super::check_model(
        model,
        eval_at.key("model"),
        "the log's model",
        context,
    )?);
    if status != "success" {
        warnings.push(format!(
            "the log's status is {status:?}, not \"success\": the evaluation did not finish, so its samples may be incomplete"
        ));
    }
    warnings.extend(reduced_epochs(top, eval));
    if let Scorer::Ambiguous(names) = &scorer {
        warnings.push(format!(
            "the log has {} scorers ({}) and the run's correctness_metric names none of them: correctness is unknown",
            names.len(),
            names.join(", ")
        ));
    }
    let task_args = eval
        .get("task_args")
        .filter(|a| a.as_object().is_some_and(|a| !a.is_empty()));
    if let (Some(args), None) = (task_args, &context.options.variant) {
        warnings.push(format!(
            "the task ran with arguments {args}, and no --variant was given: filed as variant {:?}",
            kit::ORIGINAL
        ));
    }
    Ok(Begun {
        state: Box::new(Log {
            benchmark,
            scorer,
            warnings,
        }),
        producer: producer(top, eval, status),
    })
}

/// The log's header (`header.json`, else `_journal/start.json` of a `.eval` log, else the
/// top level of a `.json` log), its status (`started` until it has one) and where it is;
/// a log format other than version 2 is refused.
fn log_header(
    header: &Map<String, Value>,
) -> Result<(&Map<String, Value>, &str, FieldPath), AdapterError> {
    let (top, status, at) = match (header.get(ZIP_HEADER), header.get(ZIP_START)) {
        (Some(Value::Object(top)), _) => {
            (top, top.get("status"), FieldPath::root().key(ZIP_HEADER))
        }
        (None, Some(Value::Object(start))) => (start, None, FieldPath::root().key(ZIP_START)),
        (None, None) if header.contains_key("eval") => {
            (header, header.get("status"), FieldPath::root())
        }
        _ => {
            return Err(AdapterError::new(
                FieldPath::root(),
                "no eval header (a .eval log has header.json or _journal/start.json; a .json log an \"eval\" member)",
            )
            .with_hint("is this a log written by Inspect AI?"));
        }
    };
    let status = match status {
        None => "started",
        Some(Value::String(status)) => status.as_str(),
        Some(other) => {
            return Err(AdapterError::new(
                at.key("status"),
                format!("expected a string, found {}", describe(other)),
            ));
        }
    };
    if let Some(version) = top.get("version").filter(|v| v.as_u64() != Some(2)) {
        return Err(AdapterError::new(
            at.key("version"),
            format!("log format version {version}, but babel reads version 2 (Inspect AI 0.3.x)"),
        )
        .with_hint("convert the log with `inspect log convert` of an Inspect release that writes version 2"));
    }
    Ok((top, status, at))
}

/// The warning of a log that reduces several epochs with something else than their mean.
fn reduced_epochs(top: &Map<String, Value>, eval: &Map<String, Value>) -> Option<String> {
    let epochs = eval
        .get("config")
        .and_then(|c| c.get("epochs"))
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let reducers: Vec<&str> = top
        .get("results")
        .and_then(|r| r.get("scores"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("reducer")?.as_str())
        .filter(|r| *r != "mean")
        .collect();
    (epochs > 1 && !reducers.is_empty()).then(|| format!(
        "the log reduces its {epochs} epochs with {}: babel keeps every epoch as a repeat, so its accuracy is the mean over epochs, not the log's reduced score",
        reducers.join(", ")
    ))
}

/// The scorer names of the header: `eval.scorers[].name`, else `results.scores[].name`.
fn header_scorers(top: &Map<String, Value>, eval: &Map<String, Value>) -> Option<Vec<String>> {
    let names = |list: Option<&Value>| -> Option<Vec<String>> {
        let list = list?.as_array()?;
        let mut names: Vec<String> = list
            .iter()
            .filter_map(|s| s.get("name")?.as_str().map(str::to_owned))
            .collect();
        names.dedup();
        (!names.is_empty()).then_some(names)
    };
    names(eval.get("scorers")).or_else(|| names(top.get("results").and_then(|r| r.get("scores"))))
}

fn choose_scorer(
    top: &Map<String, Value>,
    eval: &Map<String, Value>,
    context: &ImportContext<'_>,
    at: &FieldPath,
) -> Result<Scorer, AdapterError> {
    let listed = header_scorers(top, eval);
    match (context.run.correctness_metric.as_deref(), listed) {
        (Some(named), Some(listed)) if !listed.iter().any(|s| s == named) => {
            Err(AdapterError::new(
                at.key("eval").key("scorers"),
                format!(
                    "the run's correctness_metric {named:?} is none of this log's scorers ({})",
                    listed.join(", ")
                ),
            )
            .with_hint("import it into a run whose correctness_metric names one of them"))
        }
        (Some(named), _) => Ok(Scorer::Chosen(named.to_owned())),
        (None, Some(mut listed)) if listed.len() == 1 => Ok(Scorer::Chosen(listed.remove(0))),
        (None, Some(listed)) => Ok(Scorer::Ambiguous(listed)),
        (None, None) => Ok(Scorer::OnlyOfEachSample),
    }
}

/// What the manifest keeps about the producer.
fn producer(
    top: &Map<String, Value>,
    eval: &Map<String, Value>,
    status: &str,
) -> Map<String, Value> {
    let mut producer = Map::new();
    producer.insert("framework".into(), "inspect_ai".into());
    if let Some(packages) = eval.get("packages").filter(|p| p.is_object()) {
        if let Some(version) = packages.get("inspect_ai") {
            producer.insert("version".into(), version.clone());
        }
        producer.insert("packages".into(), packages.clone());
    }
    if let Some(version) = top.get("version") {
        producer.insert("log_version".into(), version.clone());
    }
    producer.insert("status".into(), status.into());
    kit::add_facts(
        &mut producer,
        [
            "eval_id",
            "run_id",
            "created",
            "model",
            "task",
            "task_version",
            "task_args",
            "revision",
        ]
        .map(|key| (key, eval.get(key))),
    );
    if let Some(Value::Object(dataset)) = eval.get("dataset") {
        let kept: Map<String, Value> = ["name", "location", "samples", "shuffled"]
            .into_iter()
            .filter_map(|key| {
                Some((
                    key.to_owned(),
                    dataset.get(key).filter(|v| !v.is_null())?.clone(),
                ))
            })
            .collect();
        producer.insert("dataset".into(), Value::Object(kept));
    }
    producer
}

impl kit::ItemMembers for Log {
    /// Normalizes one sample (of one epoch) into one record.
    fn record<'a>(
        &'a self,
        item: MembersItem<'a>,
        context: &'a ImportContext<'a>,
    ) -> kit::ItemRecord<'a> {
        let members = item.members;
        let top = |key: &str| Found::top(members, key);
        let mut warnings = self.warnings.clone();
        let identity = identity(members, context, &mut warnings)?;
        let epoch = epoch(members)?;
        let question = question(members)?;
        let completion = top("output").and_then(|o| o.key("completion"));
        let scores = scores(members)?;
        // Every problem of the sample's shape is told before a number no double holds.
        let input = input(question)?;
        let error = top("error").filter(|e| !e.value.is_null());
        if let Some(error) = &error {
            let message = error.key("message").and_then(|m| m.string());
            warnings.push(format!(
                "the sample failed with an error: {}",
                message.as_deref().unwrap_or("(no message)")
            ));
        }
        let locator = item.locator.clone();
        let mut record =
            kit::new_record(context, Cow::Borrowed(&self.benchmark), identity, locator);
        record.repeat_id = epoch - 1;
        record.input = input;
        record.target = kit::stored(top("target"))?;
        // Each scorer's score, read out of the scores' text once.
        let listed = scores.as_ref().map(Found::members).unwrap_or_default();
        record.metrics = metrics(&listed)?;
        let (correct, answer) = self.score(&listed, error.is_some(), &mut warnings);
        record.correct = correct;
        record.prediction = kit::stored(answer.or_else(|| completion.clone()))?;
        record.response = kit::stored(completion)?;
        record.warnings = warnings;
        record.extra = extra(members, epoch, scores, error)?;
        Ok(Some(record))
    }
}

/// The sample's epoch, from 1 (a log of one epoch may leave it out).
fn epoch(members: &Members) -> Result<u64, AdapterError> {
    match Found::top(members, "epoch").filter(|epoch| !epoch.value.is_null()) {
        None => Ok(1),
        Some(epoch) => epoch.whole().filter(|e| *e >= 1).ok_or_else(|| {
            AdapterError::new(
                FieldPath::root().key("epoch"),
                format!("expected an epoch from 1, found {}", epoch.parsed()),
            )
        }),
    }
}

/// The question (a string, or a list of messages) and its choices, from the sample.
fn question(members: &Members) -> Result<Question<'_>, AdapterError> {
    let question = Found::top(members, "input");
    let name = match question.as_ref().map(|q| q.value.kind()) {
        Some(JsonKind::String) => "question",
        Some(JsonKind::Array) => "messages",
        _ => {
            return Err(AdapterError::new(
                FieldPath::root().key("input"),
                format!(
                    "expected the question (a string or a list of messages), found {}",
                    question.map_or("nothing".into(), |q| q.describe())
                ),
            ));
        }
    };
    let choices = Found::top(members, "choices").filter(|c| !c.value.is_null());
    Ok((name, question, choices))
}

/// What [`question`] found: the question's name in the record, the question, the choices.
type Question<'a> = (&'static str, Option<Found<'a>>, Option<Found<'a>>);

/// The record's input: the question and its choices.
fn input((name, question, choices): Question<'_>) -> Result<Json<'static>, AdapterError> {
    let mut input = ObjectWriter::new();
    input.insert(name, kit::stored(question)?);
    if let Some(choices) = choices {
        input.insert("choices", choices.stored()?);
    }
    Ok(input.finish())
}

/// The sample's scores by scorer (`None` when it has none).
fn scores(members: &Members) -> Result<Option<Found<'_>>, AdapterError> {
    match Found::top(members, "scores") {
        None => Ok(None),
        Some(scores) if scores.value.is_null() => Ok(None),
        Some(scores) if scores.is_object() => Ok(Some(scores)),
        Some(other) => Err(AdapterError::new(
            FieldPath::root().key("scores"),
            format!(
                "expected an object of scores by scorer, found {}",
                other.describe()
            ),
        )),
    }
}

/// Each scorer's value.
fn metrics(scores: &[(String, Found<'_>)]) -> Result<Json<'static>, AdapterError> {
    let mut metrics = ObjectWriter::new();
    for (name, score) in scores {
        if let Some(value) = score.key("value") {
            metrics.insert(name, value.stored()?.into_owned());
        }
    }
    Ok(metrics.finish())
}

impl Log {
    /// `correct` from the chosen scorer's value, and its answer, if any. `failed` (the
    /// sample has an error) explains a missing score without a warning.
    fn score<'a>(
        &self,
        listed: &[(String, Found<'a>)],
        failed: bool,
        warnings: &mut Vec<String>,
    ) -> (Option<bool>, Option<Found<'a>>) {
        let name = match &self.scorer {
            Scorer::Chosen(name) => name,
            Scorer::Ambiguous(_) => return (None, None),
            Scorer::OnlyOfEachSample => match listed {
                [(only, _)] => only,
                [] => return (None, None),
                several => {
                    let names: Vec<&str> = several.iter().map(|(name, _)| name.as_str()).collect();
                    warnings.push(format!(
                        "the sample has several scores ({}) and the run's correctness_metric names none of them: correctness is unknown",
                        names.join(", ")
                    ));
                    return (None, None);
                }
            },
        };
        let Some((_, score)) = listed.iter().find(|(scorer, _)| scorer == name) else {
            if !failed {
                warnings.push(format!(
                    "scorer {name} gave this sample no score: correctness is unknown"
                ));
            }
            return (None, None);
        };
        let value = score
            .key("value")
            .map_or(Value::Null, |value| value.parsed());
        (
            correctness(&value, name, warnings),
            score.key("answer").filter(|a| !a.value.is_null()),
        )
    }
}

/// What the record keeps of the sample besides: its epoch, uuid and metadata, every score,
/// and the error's message.
fn extra<'a>(
    members: &'a Members,
    epoch: u64,
    scores: Option<Found<'a>>,
    error: Option<Found<'a>>,
) -> Result<Json<'static>, AdapterError> {
    let mut extra = ObjectWriter::new();
    extra.insert("epoch", kit::whole(epoch, FieldPath::root().key("epoch"))?);
    for key in ["uuid", "metadata"] {
        if let Some(value) = Found::top(members, key).filter(|v| !v.value.is_null()) {
            extra.insert(key, value.stored()?);
        }
    }
    if let Some(scores) = scores.filter(|s| s.value.as_str() != "{}") {
        extra.insert("scores", scores.stored()?);
    }
    if let Some(error) = error {
        let message = error.key("message").unwrap_or(error);
        extra.insert("error", message.stored()?);
    }
    Ok(extra.finish())
}

/// The sample's question ID: `--id-field`, else `id`. An integer `id` is run-local: Inspect
/// numbers every sample that has no id by its position (1-based, over the whole dataset),
/// so an integer in a log may be a position, and nothing says which (a dataset can mix
/// names and positions, and a slice of it starts anywhere). `--id-field id` declares them
/// the data's own.
fn identity(
    members: &Members,
    context: &ImportContext<'_>,
    warnings: &mut Vec<String>,
) -> Result<QuestionIdentity, AdapterError> {
    if let Some(selected) = stable_id::selected(members, context.options)? {
        return Ok(selected);
    }
    let id = members.get("id");
    // An integer to a JSON parser: no fraction, exponent or `-0`, and within 64 bits.
    let integer =
        |id: &crate::jsonl::Member<'_>| !id.written_as_fraction && !id.is_integral_double(&[]);
    match id.as_ref().map(|id| (id, id.peek().kind())) {
        Some((id, JsonKind::String)) if id.value.len() > 2 => {
            let text = kit::text(id).expect("a string");
            Ok(QuestionIdentity::stable(text.into_owned()))
        }
        Some((id, JsonKind::Number)) if integer(id) => {
            let digits = match id.unsafe_integer {
                Some((below, written)) if below.is_root() => written.as_str(),
                _ => id.value,
            };
            warnings.push(format!(
                "sample id {digits} is an integer, which Inspect gives a sample without an id (its position): \
                 run-local, it never pairs; if the dataset's own ids are these integers, import with --id-field id"
            ));
            Ok(stable_id::run_local(context.source, format!("id={digits}")))
        }
        _ => Err(AdapterError::new(
            FieldPath::root().key("id"),
            format!(
                "expected the sample's id (a non-empty string or an integer), found {}",
                id.as_ref().map_or("nothing".into(), kit::describe)
            ),
        )),
    }
}

/// `correct` from a score value, as Inspect's own `value_to_float` reads it: `C` right,
/// `I` wrong, `N` (no answer) wrong as Inspect scores it 0, `P` and other partial values
/// unknown, NaN (read as null) unknown.
fn correctness(value: &Value, scorer: &str, warnings: &mut Vec<String>) -> Option<bool> {
    match value {
        Value::String(letter) if letter == "C" => Some(true),
        Value::String(letter) if letter == "I" => Some(false),
        Value::String(letter) if letter == "N" => {
            warnings.push(format!(
                "scorer {scorer} gave N (no answer): counted wrong, as Inspect scores it 0"
            ));
            Some(false)
        }
        Value::Bool(value) => Some(*value),
        Value::Number(number) if number.as_f64() == Some(1.0) => Some(true),
        Value::Number(number) if number.as_f64() == Some(0.0) => Some(false),
        Value::Null => {
            warnings.push(format!(
                "scorer {scorer} left this sample unscored (NaN): correctness is unknown"
            ));
            None
        }
        other => {
            warnings.push(format!(
                "scorer {scorer} gave {other}, partial or not a right/wrong value: correctness is unknown (the value is in metrics)"
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn score_values_read_as_inspect_reads_them() {
        let mut warnings = Vec::new();
        let read = |v: Value, w: &mut Vec<String>| correctness(&v, "s", w);
        assert_eq!(read(json!("C"), &mut warnings), Some(true));
        assert_eq!(read(json!("I"), &mut warnings), Some(false));
        assert_eq!(read(json!(1.0), &mut warnings), Some(true));
        assert_eq!(read(json!(0), &mut warnings), Some(false));
        assert_eq!(read(json!(true), &mut warnings), Some(true));
        assert!(warnings.is_empty());
        assert_eq!(read(json!("N"), &mut warnings), Some(false));
        assert_eq!(warnings.len(), 1, "N is wrong, with a warning");
        for unknown in [
            json!("P"),
            json!(0.5),
            json!(null),
            json!({"a": 1}),
            json!("yes"),
        ] {
            assert_eq!(read(unknown, &mut warnings), None);
        }
        assert_eq!(warnings.len(), 6, "every unknown says why");
    }

    fn scanned(text: &str) -> Members {
        let mut members = Members::new();
        crate::jsonl::scan_bytes(
            text.as_bytes(),
            1,
            crate::jsonl::NonFinitePolicy::Null,
            &mut members,
        )
        .unwrap();
        members
    }

    #[test]
    fn an_epoch_is_read_as_inspect_wrote_it() {
        let epoch_of = |text: &str| epoch(&scanned(text)).map_err(|e| e.message);
        assert_eq!(epoch_of(r#"{"epoch": 9007199254740992}"#), Ok(1 << 53));
        assert_eq!(epoch_of(r#"{"epoch": null}"#), Ok(1));
        for (written, found) in [
            ("-9007199254740993", "-9007199254740993"),
            ("1.0", "1.0"),
            ("0", "0"),
            ("\"2\"", "\"2\""),
        ] {
            let text = format!(r#"{{"epoch": {written}}}"#);
            assert_eq!(
                epoch_of(&text),
                Err(format!("expected an epoch from 1, found {found}"))
            );
        }
    }

    /// The sample's shape is checked whole before any number no double holds is refused.
    #[test]
    fn a_problem_of_the_samples_shape_comes_before_an_unsafe_integer() {
        use crate::adapters::{AdapterOptions, kit::fixtures};
        let run = fixtures::run("r", "m");
        let options = AdapterOptions::default();
        let context = fixtures::context(&run, &options, "runs/r/raw/0001-x/x.json", "x.json");
        let log = Log {
            benchmark: "b".into(),
            scorer: Scorer::Chosen("choice".into()),
            warnings: Vec::new(),
        };
        let members =
            scanned(r#"{"id": "q1", "input": [{"content": 9007199254740993}], "scores": "x"}"#);
        let locator = crate::record::Locator::Pointer("/samples/0".into());
        let item = MembersItem {
            members: &members,
            locator: &locator,
        };
        let error = kit::ItemMembers::record(&log, item, &context).unwrap_err();
        assert_eq!(error.path.to_string(), "scores");
    }

    #[test]
    fn only_eval_and_json_files_are_logs() {
        assert!(matches!(layout("a.eval"), Ok(Layout::Zip { .. })));
        assert!(matches!(layout("a.json"), Ok(Layout::Document { .. })));
        assert!(layout("a.jsonl").is_err());
    }
}
