//! The Every Eval Ever adapter: EEE 0.3.x instance-level rows (`<uuid>_samples.jsonl`),
//! one record per row, that is per (sample, evaluation result).
//!
//! Owns the EEE rules of the data contract: the row's `evaluation_result_id` is the
//! record's filter (EEE writes one row per metric, so rows of the same metric pair);
//! `sample_id`s that are positions (digits, HELM's `id<n>`) are run-local; correctness
//! from `evaluation.score` 1 or 0 only, never from `is_correct` (whose meaning differs
//! between EEE's converters), and a row without an evaluation result is unknown, not
//! wrong. What EEE cannot carry is in FORMAT.md ("The Every Eval Ever adapter").

use serde_json::{Map, Value};

use super::stable_id::{self, QuestionIdentity};
use super::{AdapterError, ImportContext, kit};
use crate::jsonl::{FieldPath, Line};
use crate::record::fields::describe;
use crate::record::{Fields, Locator, Record};

/// Every Eval Ever instance-level rows.
pub const ADAPTER: super::Adapter = super::Adapter::new(
    "eee",
    "Every Eval Ever 0.3 instance-level rows (<uuid>_samples.jsonl)",
    "eee/1",
    super::Reader::TreeLines(normalize),
)
.with_source_check(check_source);

/// The EEE schema versions this adapter reads.
const SCHEMA_PREFIX: &str = "0.3.";

/// An aggregate file is not instance-level output.
fn check_source(context: &ImportContext<'_>) -> Result<(), AdapterError> {
    let name = context.source.basename;
    if name.ends_with(".json") {
        return Err(AdapterError::new(
            FieldPath::root(),
            format!("{name} looks like an EEE aggregate file, not instance-level rows"),
        )
        .with_hint("import the <uuid>_samples.jsonl file, and keep the aggregate with --attach <uuid>.json"));
    }
    Ok(())
}

/// Normalizes one EEE row into one record.
pub fn normalize(
    line: Line,
    context: &ImportContext<'_>,
    out: &mut Vec<Record>,
) -> Result<(), AdapterError> {
    let selected = stable_id::selected(&line.object, context.options)?;
    let mut f = Fields::new(line.object, FieldPath::root());
    let version = f.required_string("schema_version")?;
    if !version.starts_with(SCHEMA_PREFIX) {
        return Err(AdapterError::new(
            f.path("schema_version"),
            format!("EEE schema version {version:?}, but babel reads 0.3.x"),
        ));
    }
    let sample_id = f.required_string("sample_id")?;
    let evaluation_name = f.required_string("evaluation_name")?;
    let result_id = f.required_nullable_string("evaluation_result_id")?;
    let mut warnings = Vec::new();
    warnings.extend(check_model(&f, context)?);
    let identity = match selected {
        Some(found) => found,
        None => identity(&f, &sample_id, context, &mut warnings),
    };
    let benchmark = super::named_benchmark(
        context,
        Some(&evaluation_name),
        "the row's evaluation_name",
        "",
    )?;
    let mut record = kit::record(context, &benchmark, identity, Locator::Line(line.number));
    question(&mut f, &mut record)?;
    let output = f.object_or_null("output", false)?;
    record.response = output.get("raw").cloned().unwrap_or(Value::Null);
    record.prediction = match &record.response {
        Value::Array(raw) if raw.len() == 1 => raw[0].clone(),
        other => other.clone(),
    };
    let (evaluation, error) = evaluation(
        &mut f,
        result_id.as_deref(),
        context,
        &mut record,
        &mut warnings,
    )?;
    record.repeat_id = repeat_id(&f)?;
    if let Some(result_id) = &result_id {
        record.filter = result_id.clone();
    }
    record.warnings = warnings;
    record.extra = f.into_rest();
    record
        .extra
        .insert("sample_id".into(), Value::String(sample_id));
    record
        .extra
        .insert("evaluation_name".into(), Value::String(evaluation_name));
    record
        .extra
        .insert("evaluation_result_id".into(), result_id.into());
    record
        .extra
        .insert("evaluation".into(), Value::Object(evaluation));
    if !output.is_null() {
        record.extra.insert("output".into(), output);
    }
    if let Some(error) = error {
        record.extra.insert("error".into(), error);
    }
    out.push(record);
    Ok(())
}

/// Checks the row's `model_id`. EEE names a model `<developer>/<name>` (babel's export
/// writes the run's model so): the row is of the run's model when its ID is that model,
/// or that model under a developer prefix.
fn check_model(f: &Fields, context: &ImportContext<'_>) -> Result<Option<String>, AdapterError> {
    let model_id = f.peek("model_id").and_then(Value::as_str);
    let own = model_id.filter(|id| {
        *id != context.run.model
            && id.split_once('/').map(|(_, name)| name) != Some(context.run.model.as_str())
    });
    super::check_model(own, f.path("model_id"), "the row's model_id", context)
}

/// The question ID without `--id-field`: the `sample_id`, run-local where babel's own
/// export says it was, or where it is a position.
fn identity(
    f: &Fields,
    sample_id: &str,
    context: &ImportContext<'_>,
    warnings: &mut Vec<String>,
) -> QuestionIdentity {
    let exported_run_local = f
        .peek("metadata")
        .and_then(|m| m.get("identity_scope"))
        .and_then(Value::as_str)
        == Some("run-local");
    if exported_run_local {
        warnings.push(format!(
            "sample_id {sample_id:?} was run-local where it was exported (metadata.identity_scope): it stays run-local"
        ));
    } else if is_position(sample_id) {
        warnings.push(format!(
            "sample_id {sample_id:?} is a position (EEE's lm-eval converter writes doc_id, HELM numbers id<n>): \
             run-local, it never pairs"
        ));
    } else {
        return QuestionIdentity::stable(sample_id.to_owned());
    }
    stable_id::run_local(context.source, sample_id)
}

/// The question (`input.raw`), its choices and formatted prompt, and the reference as
/// the target; the input's other fields are kept in `input` too.
fn question(f: &mut Fields, record: &mut Record) -> Result<(), AdapterError> {
    let input_path = f.path("input");
    let mut input_fields = Fields::new(f.object("input", true)?, input_path);
    let raw = input_fields.required_string("raw")?;
    record.target = input_fields.required("reference")?;
    let mut input = Map::new();
    input.insert("question".into(), Value::String(raw));
    for key in ["choices", "formatted"] {
        if let Some(value) = input_fields.take(key).filter(|v| !v.is_null()) {
            input.insert(key.into(), value);
        }
    }
    input.extend(input_fields.into_rest());
    record.input = Value::Object(input);
    Ok(())
}

/// Reads the row's `evaluation` (its score into `metrics` under the result's id, and
/// `correct`) and its `error`; returns both, for `extra`.
fn evaluation(
    f: &mut Fields,
    result_id: Option<&str>,
    context: &ImportContext<'_>,
    record: &mut Record,
    warnings: &mut Vec<String>,
) -> Result<(Map<String, Value>, Option<Value>), AdapterError> {
    let evaluation_path = f.path("evaluation");
    let evaluation = f.object("evaluation", true)?;
    let score = evaluation.get("score").cloned().unwrap_or(Value::Null);
    if !score.is_number() {
        return Err(AdapterError::new(
            evaluation_path.key("score"),
            format!("expected a number, found {}", describe(&score)),
        ));
    }
    let claimed = evaluation.get("is_correct").and_then(Value::as_bool);
    let error = f.take("error").filter(|e| !e.is_null());
    record.correct = correctness(
        result_id,
        &score,
        claimed,
        error.as_ref(),
        context.run.correctness_metric.as_deref(),
        warnings,
    );
    let metric = result_id.unwrap_or("score").to_owned();
    record.metrics.insert(metric, score);
    Ok((evaluation, error))
}

/// The repeat: `metadata.epoch` (from 1, a string or an integer) less one, else 0.
fn repeat_id(f: &Fields) -> Result<u64, AdapterError> {
    match f.peek("metadata").and_then(|m| m.get("epoch")) {
        None | Some(Value::Null) => Ok(0),
        Some(epoch) => epoch
            .as_str()
            .and_then(|e| e.parse::<u64>().ok())
            .or_else(|| epoch.as_u64())
            .filter(|e| *e >= 1)
            .map(|e| e - 1)
            .ok_or_else(|| {
                AdapterError::new(
                    f.path("metadata").key("epoch"),
                    format!("expected an epoch from 1, found {epoch}"),
                )
            }),
    }
}

/// Whether an evaluation result names an accuracy-like metric (any part, split at `:`, is
/// `acc…`, `accuracy`, `…exact_match`, or an Inspect scorer that scores right/wrong:
/// `choice`, `match`, `includes`, `exact`): lm-eval's `acc_norm`, `exact_match:strict-match`,
/// Inspect's `choice:accuracy`, `exact:mean`, HELM's `exact_match:test`.
fn is_accuracy_like(result_id: &str) -> bool {
    result_id.split(':').any(|part| {
        part.starts_with("acc")
            || part.ends_with("exact_match")
            || ["choice", "match", "includes", "exact"].contains(&part)
    })
}

/// Digits (lm-eval's `doc_id`, Inspect's positions) or `id<digits>` (HELM's).
fn is_position(id: &str) -> bool {
    let digits = id.strip_prefix("id").unwrap_or(id);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `correct` from the row's score: 1 right, 0 wrong, anything else unknown. A row without
/// an evaluation result, or with an error, is EEE's placeholder for a sample it could
/// not score (written as 0 and false): unknown. With a `correctness_metric`, rows of other
/// results are unknown.
fn correctness(
    result_id: Option<&str>,
    score: &Value,
    claimed: Option<bool>,
    error: Option<&Value>,
    correctness_metric: Option<&str>,
    warnings: &mut Vec<String>,
) -> Option<bool> {
    let Some(result_id) = result_id else {
        warnings.push(
            "the row has no evaluation_result_id: EEE writes a sample it could not score as score 0 and \
             is_correct false; correctness is unknown"
                .to_owned(),
        );
        return None;
    };
    if let Some(error) = error {
        warnings.push(format!(
            "the sample failed ({error}): correctness is unknown"
        ));
        return None;
    }
    match correctness_metric {
        Some(metric) => {
            let named = result_id == metric
                || result_id
                    .strip_prefix(metric)
                    .is_some_and(|rest| rest.starts_with(':'));
            if !named {
                return None;
            }
        }
        // A row does not say whether its metric is right/wrong; only accuracy-like names
        // are read without the run naming one (a perplexity of 0 is not "wrong").
        None if !is_accuracy_like(result_id) => {
            warnings.push(format!(
                "{result_id} is not known to be a right/wrong metric: correctness is unknown \
                 (name it as the run's correctness_metric to read its 0/1 scores)"
            ));
            return None;
        }
        None => {}
    }
    let correct = match score.as_f64() {
        Some(1.0) => Some(true),
        Some(0.0) => Some(false),
        _ => {
            warnings.push(format!(
                "score {score} is neither 1 nor 0: correctness is unknown (EEE's is_correct is {}, and its \
                 converters disagree on what it means)",
                claimed.map_or("missing".into(), |c| c.to_string())
            ));
            None
        }
    };
    if let (Some(correct), Some(claimed)) = (correct, claimed)
        && correct != claimed
    {
        warnings.push(format!(
            "is_correct is {claimed} but the score says {correct}: the score is kept"
        ));
    }
    correct
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn positions_are_digits_or_helm_ids() {
        assert!(is_position("0") && is_position("17") && is_position("id3"));
        assert!(!is_position("q001") && !is_position("") && !is_position("id"));
    }

    #[test]
    fn only_a_score_of_one_or_zero_is_known_and_placeholders_are_unknown() {
        let mut w = Vec::new();
        assert_eq!(
            correctness(Some("acc"), &json!(1.0), Some(true), None, None, &mut w),
            Some(true)
        );
        assert_eq!(
            correctness(Some("acc"), &json!(0), Some(false), None, None, &mut w),
            Some(false)
        );
        assert!(w.is_empty());
        // Inspect's converter: is_correct = score > 0, so 0.5 is "correct".
        assert_eq!(
            correctness(
                Some("graded:accuracy"),
                &json!(0.5),
                Some(true),
                None,
                None,
                &mut w
            ),
            None
        );
        // The placeholder row of a sample without a score.
        assert_eq!(
            correctness(None, &json!(0.0), Some(false), None, None, &mut w),
            None
        );
        assert_eq!(w.len(), 2);
        // Without a correctness_metric, a metric that is not accuracy-like is unknown: a
        // perplexity of 0 is not a wrong answer.
        assert_eq!(
            correctness(
                Some("perplexity"),
                &json!(0.0),
                Some(false),
                None,
                None,
                &mut w
            ),
            None
        );
        assert_eq!(w.len(), 3);
        assert!(is_accuracy_like("acc_norm") && is_accuracy_like("choice:accuracy"));
        assert!(is_accuracy_like("exact:mean") && is_accuracy_like("exact_match:test"));
        assert!(!is_accuracy_like("word_perplexity") && !is_accuracy_like("brier_score"));
        // A correctness_metric leaves other results unknown.
        assert_eq!(
            correctness(
                Some("acc_norm"),
                &json!(1.0),
                None,
                None,
                Some("acc"),
                &mut w
            ),
            None
        );
        assert_eq!(
            correctness(
                Some("exact_match:strict-match"),
                &json!(1.0),
                None,
                None,
                Some("exact_match"),
                &mut w
            ),
            Some(true)
        );
    }
}
