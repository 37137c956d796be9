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

use serde_json::{Map, Value};

use super::stable_id::{self, QuestionIdentity};
use super::{AdapterError, Begun, ImportContext, Item, Layout, kit};
use crate::jsonl::FieldPath;
use crate::record::fields::describe;

/// Inspect AI eval logs.
pub const ADAPTER: super::Adapter = super::Adapter::new(
    "inspect",
    "Inspect AI eval logs (.eval or .json, log format 2)",
    "inspect/1",
    super::Reader::Items(
        super::Structured::new(layout, begin, super::Normalize::Tree(kit::normalize::<Log>))
            .reading(&[
                "id", "epoch", "input", "choices", "target", "output", "scores", "error", "uuid",
                "metadata",
            ]),
    ),
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

impl kit::Items for Log {
    /// Normalizes one sample (of one epoch) into one record.
    fn record(&self, item: Item, context: &ImportContext<'_>) -> kit::ItemResult {
        let mut object = item.object;
        let mut warnings = self.warnings.clone();
        let identity = identity(&object, context, &mut warnings)?;
        let epoch = epoch(&object)?;
        let input = question(&mut object)?;
        let target = object.shift_remove("target").unwrap_or(Value::Null);
        let completion = object
            .get("output")
            .and_then(|o| o.get("completion"))
            .cloned()
            .unwrap_or(Value::Null);
        let scores = scores(&mut object)?;
        let error = object.shift_remove("error").filter(|e| !e.is_null());
        if let Some(error) = &error {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)");
            warnings.push(format!("the sample failed with an error: {message}"));
        }
        let mut record = kit::record(context, &self.benchmark, identity, item.locator);
        record.repeat_id = epoch - 1;
        record.input = Value::Object(input);
        record.target = target;
        record.metrics = scores
            .iter()
            .filter_map(|(name, score)| Some((name.clone(), score.get("value")?.clone())))
            .collect();
        let (correct, answer) = self.score(&scores, error.is_some(), &mut warnings);
        record.correct = correct;
        record.prediction = answer.unwrap_or_else(|| completion.clone());
        record.response = completion;
        record.warnings = warnings;
        record.extra = extra(object, epoch, scores, error);
        Ok(Some(record))
    }
}

/// The sample's epoch, from 1 (a log of one epoch may leave it out).
fn epoch(object: &Map<String, Value>) -> Result<u64, AdapterError> {
    match object.get("epoch") {
        None | Some(Value::Null) => Ok(1),
        Some(value) => value.as_u64().filter(|e| *e >= 1).ok_or_else(|| {
            AdapterError::new(
                FieldPath::root().key("epoch"),
                format!("expected an epoch from 1, found {value}"),
            )
        }),
    }
}

/// The question (a string, or a list of messages) and its choices, taken from the sample.
fn question(object: &mut Map<String, Value>) -> Result<Map<String, Value>, AdapterError> {
    let mut input = Map::new();
    match object.shift_remove("input") {
        Some(Value::String(question)) => input.insert("question".into(), Value::String(question)),
        Some(Value::Array(messages)) => input.insert("messages".into(), Value::Array(messages)),
        other => {
            return Err(AdapterError::new(
                FieldPath::root().key("input"),
                format!(
                    "expected the question (a string or a list of messages), found {}",
                    other.as_ref().map_or("nothing".into(), describe)
                ),
            ));
        }
    };
    if let Some(choices) = object.shift_remove("choices").filter(|c| !c.is_null()) {
        input.insert("choices".into(), choices);
    }
    Ok(input)
}

/// The sample's scores by scorer, taken from the sample.
fn scores(object: &mut Map<String, Value>) -> Result<Map<String, Value>, AdapterError> {
    match object.shift_remove("scores") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(scores)) => Ok(scores),
        Some(other) => Err(AdapterError::new(
            FieldPath::root().key("scores"),
            format!(
                "expected an object of scores by scorer, found {}",
                describe(&other)
            ),
        )),
    }
}

impl Log {
    /// `correct` from the chosen scorer's value, and its answer, if any. `failed` (the
    /// sample has an error) explains a missing score without a warning.
    fn score(
        &self,
        scores: &Map<String, Value>,
        failed: bool,
        warnings: &mut Vec<String>,
    ) -> (Option<bool>, Option<Value>) {
        let name = match &self.scorer {
            Scorer::Chosen(name) => name,
            Scorer::Ambiguous(_) => return (None, None),
            Scorer::OnlyOfEachSample => match scores.keys().collect::<Vec<_>>()[..] {
                [only] => only,
                [] => return (None, None),
                ref several => {
                    warnings.push(format!(
                        "the sample has several scores ({}) and the run's correctness_metric names none of them: correctness is unknown",
                        several.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                    ));
                    return (None, None);
                }
            },
        };
        let Some(score) = scores.get(name) else {
            if !failed {
                warnings.push(format!(
                    "scorer {name} gave this sample no score: correctness is unknown"
                ));
            }
            return (None, None);
        };
        (
            correctness(score.get("value").unwrap_or(&Value::Null), name, warnings),
            score.get("answer").filter(|a| !a.is_null()).cloned(),
        )
    }
}

/// What the record keeps of the sample besides: its epoch, uuid and metadata, every score,
/// and the error's message.
fn extra(
    mut object: Map<String, Value>,
    epoch: u64,
    scores: Map<String, Value>,
    error: Option<Value>,
) -> Map<String, Value> {
    let mut extra = Map::new();
    extra.insert("epoch".into(), epoch.into());
    for key in ["uuid", "metadata"] {
        if let Some(value) = object.shift_remove(key).filter(|v| !v.is_null()) {
            extra.insert(key.into(), value);
        }
    }
    if !scores.is_empty() {
        extra.insert("scores".into(), Value::Object(scores));
    }
    if let Some(error) = error {
        extra.insert(
            "error".into(),
            error.get("message").cloned().unwrap_or(error),
        );
    }
    extra
}

/// The sample's question ID: `--id-field`, else `id`. An integer `id` is run-local: Inspect
/// numbers every sample that has no id by its position (1-based, over the whole dataset),
/// so an integer in a log may be a position, and nothing says which (a dataset can mix
/// names and positions, and a slice of it starts anywhere). `--id-field id` declares them
/// the data's own.
fn identity(
    object: &Map<String, Value>,
    context: &ImportContext<'_>,
    warnings: &mut Vec<String>,
) -> Result<QuestionIdentity, AdapterError> {
    if let Some(selected) = stable_id::selected(object, context.options)? {
        return Ok(selected);
    }
    match object.get("id") {
        Some(Value::String(id)) if !id.is_empty() => Ok(QuestionIdentity::stable(id.clone())),
        Some(Value::Number(id)) if id.is_u64() || id.is_i64() => {
            warnings.push(format!(
                "sample id {id} is an integer, which Inspect gives a sample without an id (its position): \
                 run-local, it never pairs; if the dataset's own ids are these integers, import with --id-field id"
            ));
            Ok(stable_id::run_local(context.source, format!("id={id}")))
        }
        other => Err(AdapterError::new(
            FieldPath::root().key("id"),
            format!(
                "expected the sample's id (a non-empty string or an integer), found {}",
                other.map_or("nothing".into(), describe)
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

    #[test]
    fn only_eval_and_json_files_are_logs() {
        assert!(matches!(layout("a.eval"), Ok(Layout::Zip { .. })));
        assert!(matches!(layout("a.json"), Ok(Layout::Document { .. })));
        assert!(layout("a.jsonl").is_err());
    }
}
