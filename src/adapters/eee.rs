//! The Every Eval Ever adapter: EEE 0.3.x instance-level rows (`<uuid>_samples.jsonl`),
//! one record per row, that is per (sample, evaluation result).
//!
//! Owns the EEE rules of the data contract: the row's `evaluation_result_id` is the
//! record's filter (EEE writes one row per metric, so rows of the same metric pair);
//! `sample_id`s that are positions (digits, HELM's `id<n>`) are run-local; correctness
//! from `evaluation.score` 1 or 0 only, never from `is_correct` (whose meaning differs
//! between EEE's converters), and a row without an evaluation result is unknown, not
//! wrong. What EEE cannot carry is in FORMAT.md ("The Every Eval Ever adapter").

use std::borrow::Cow;

use super::stable_id::{self, QuestionIdentity};
use super::{AdapterError, ImportContext, JsonLine, LineFields, kit};
use crate::canonical_json::{Json, JsonKind, ObjectWriter};
use crate::jsonl::{FieldPath, Member, PathSegment};
use crate::record::{DEFAULT_FILTER, Locator, NewRecord};

/// Every Eval Ever instance-level rows.
pub const ADAPTER: super::Adapter = super::Adapter::new(
    "eee",
    "Every Eval Ever 0.3 instance-level rows (<uuid>_samples.jsonl)",
    "eee/1",
    super::Reader::Lines(normalize),
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
pub fn normalize<'a>(
    line: JsonLine<'a>,
    context: &'a ImportContext<'a>,
    out: &mut Vec<NewRecord<'a>>,
) -> Result<(), AdapterError> {
    let options = context.options;
    let selected = stable_id::selected(line.members, options)?;
    let mut f = LineFields::new(line.members);
    let version = f.required_string("schema_version")?;
    if !version.starts_with(SCHEMA_PREFIX) {
        return Err(AdapterError::new(
            f.path("schema_version"),
            format!("EEE schema version {version:?}, but babel reads 0.3.x"),
        ));
    }
    let sample_id_json = json_of(&f, "sample_id");
    let sample_id = f.required_string("sample_id")?;
    let evaluation_name_json = json_of(&f, "evaluation_name");
    let evaluation_name = f.required_string("evaluation_name")?;
    let result_id_json = json_of(&f, "evaluation_result_id");
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
    let (input, target) = question(&mut f)?;
    let output = f.object_or_null("output", false)?;
    let response = output.get("raw").map_or(Json::NULL, |raw| raw.into_owned());
    let prediction = only_element(&response).unwrap_or_else(|| response.clone());
    let evaluation = evaluation(&mut f, result_id.as_deref(), context, &mut warnings)?;
    let repeat_id = repeat_id(&f)?;
    let mut also = vec![
        (Cow::Borrowed("sample_id"), sample_id_json),
        (Cow::Borrowed("evaluation_name"), evaluation_name_json),
        (Cow::Borrowed("evaluation_result_id"), result_id_json),
        (Cow::Borrowed("evaluation"), evaluation.object),
    ];
    if !output.is_null() {
        also.push((Cow::Borrowed("output"), output));
    }
    if let Some(error) = evaluation.error {
        also.push((Cow::Borrowed("error"), error));
    }
    let extra = f.rest(also)?;
    out.push(NewRecord {
        run_id: Cow::Borrowed(&context.run.run_id),
        benchmark: Cow::Owned(benchmark),
        script: None,
        language: options.language.as_deref().map(Cow::Borrowed),
        question_id: Cow::Owned(identity.question_id),
        variant_id: Cow::Borrowed(options.variant.as_deref().unwrap_or(kit::ORIGINAL)),
        filter: result_id.unwrap_or(Cow::Borrowed(DEFAULT_FILTER)),
        repeat_id,
        identity_scope: identity.scope,
        model: Cow::Borrowed(&context.run.model),
        rephrasing_model: None,
        input,
        target,
        prediction,
        correct: evaluation.correct,
        scores: Json::EMPTY_OBJECT,
        metrics: evaluation.metrics,
        response,
        source_path: Cow::Borrowed(context.source.raw_path),
        locator: Locator::Line(line.number),
        warnings,
        extra,
    });
    Ok(())
}

/// A member's value as it is, for `extra` (`null` when absent: the getter that reads it
/// refuses that).
fn json_of<'a>(f: &LineFields<'a>, name: &str) -> Json<'a> {
    f.peek(name).map_or(Json::NULL, |member| member.peek())
}

/// The only element of an array.
fn only_element(value: &Json<'_>) -> Option<Json<'static>> {
    let mut elements = value.iter_elements()?;
    match (elements.next(), elements.next()) {
        (Some(only), None) => Some(only.into_owned()),
        _ => None,
    }
}

/// Checks the row's `model_id`. EEE names a model `<developer>/<name>` (babel's export
/// writes the run's model so): the row is of the run's model when its ID is that model,
/// or that model under a developer prefix.
fn check_model(
    f: &LineFields<'_>,
    context: &ImportContext<'_>,
) -> Result<Option<String>, AdapterError> {
    let model_id = f
        .peek("model_id")
        .and_then(|member| member.peek().as_string().map(Cow::into_owned));
    let own = model_id.as_deref().filter(|id| {
        *id != context.run.model
            && id.split_once('/').map(|(_, name)| name) != Some(context.run.model.as_str())
    });
    super::check_model(own, f.path("model_id"), "the row's model_id", context)
}

/// The question ID without `--id-field`: the `sample_id`, run-local where babel's own
/// export says it was, or where it is a position.
fn identity(
    f: &LineFields<'_>,
    sample_id: &str,
    context: &ImportContext<'_>,
    warnings: &mut Vec<String>,
) -> QuestionIdentity {
    let exported_run_local = f
        .peek("metadata")
        .and_then(|metadata| {
            metadata
                .peek()
                .get("identity_scope")?
                .as_string()
                .map(Cow::into_owned)
        })
        .is_some_and(|scope| scope == "run-local");
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

/// A member that must be an object (the row's `input`, its `evaluation`): refused
/// otherwise, as [`crate::record::Fields::object`] refuses it.
fn required_object<'a>(
    f: &mut LineFields<'a>,
    name: &str,
) -> Result<(kit::ObjectFields<'a>, Member<'a>), AdapterError> {
    let path = f.path(name);
    let Some(member) = f.take(name) else {
        return Err(AdapterError::new(path, "required field is missing"));
    };
    Ok((kit::ObjectFields::of_member(&member, path)?, member))
}

/// The question (`input.raw`), its choices and formatted prompt, and the reference as
/// the target: the record's `input` and `target`. The input's other fields are kept in
/// `input` too (an `input.question` of its own stands for the question).
fn question<'a>(f: &mut LineFields<'a>) -> Result<(Json<'static>, Json<'a>), AdapterError> {
    let (mut fields, _) = required_object(f, "input")?;
    let raw = fields.required_string("raw")?;
    let target = fields.required("reference")?;
    let picked: Vec<_> = ["choices", "formatted"]
        .into_iter()
        .filter_map(|key| Some((key, fields.take(key).filter(|v| !v.is_null())?)))
        .collect();
    let mut input = ObjectWriter::new();
    for (key, value) in fields.into_remaining() {
        input.insert(key, value);
    }
    input.insert("question", raw);
    for (key, value) in picked {
        input.insert(key, value);
    }
    Ok((input.finish(), target))
}

/// What the row's `evaluation` (and `error`) give the record.
struct Evaluation<'a> {
    /// The evaluation object, for `extra`.
    object: Json<'a>,
    /// The row's error, unless null, for `extra`.
    error: Option<Json<'a>>,
    /// The score under the result's id.
    metrics: Json<'static>,
    correct: Option<bool>,
}

/// Reads the row's `evaluation` (its score into `metrics` under the result's id, and
/// `correct`) and its `error`.
fn evaluation<'a>(
    f: &mut LineFields<'a>,
    result_id: Option<&str>,
    context: &ImportContext<'_>,
    warnings: &mut Vec<String>,
) -> Result<Evaluation<'a>, AdapterError> {
    let (fields, member) = required_object(f, "evaluation")?;
    let score = fields.peek("score").unwrap_or(Json::NULL);
    if score.kind() != JsonKind::Number {
        return Err(AdapterError::new(
            fields.path("score"),
            format!("expected a number, found {}", score.describe()),
        ));
    }
    let double = member.is_integral_double(&[PathSegment::Key("score".into())]);
    let score = Score {
        value: score.as_f64().expect("a number"),
        json: score,
        double,
    };
    let claimed = fields.peek("is_correct").and_then(|c| c.as_bool());
    let error = f.take("error").filter(|e| !e.peek().is_null());
    let error = error.map(|e| f.stored("error", &e)).transpose()?;
    let correct = correctness(
        result_id,
        &score,
        claimed,
        error.as_ref(),
        context.run.correctness_metric.as_deref(),
        warnings,
    );
    let mut metrics = ObjectWriter::new();
    metrics.insert(result_id.unwrap_or("score").to_owned(), score.json);
    Ok(Evaluation {
        object: member.peek(),
        error,
        metrics: metrics.finish(),
        correct,
    })
}

/// A row's score: its value, its canonical text (stored), and whether a JSON parser
/// reads it as a double (its warnings quote it as one: EEE writes every score so, `2.0`).
struct Score<'a> {
    value: f64,
    json: Json<'a>,
    double: bool,
}

/// The repeat: `metadata.epoch` (from 1, a string or an integer) less one, else 0.
fn repeat_id(f: &LineFields<'_>) -> Result<u64, AdapterError> {
    let Some(metadata) = f.peek("metadata") else {
        return Ok(0);
    };
    let json = metadata.peek();
    let epoch = match json.get("epoch") {
        None => return Ok(0),
        Some(epoch) if epoch.is_null() => return Ok(0),
        Some(epoch) => epoch,
    };
    let double = metadata.is_integral_double(&[PathSegment::Key("epoch".into())]);
    epoch
        .as_string()
        .and_then(|e| e.parse::<u64>().ok())
        .or_else(|| epoch.as_u64().filter(|_| !double))
        .filter(|e| *e >= 1)
        .map(|e| e - 1)
        .ok_or_else(|| {
            AdapterError::new(
                f.path("metadata").key("epoch"),
                format!(
                    "expected an epoch from 1, found {}",
                    kit::parsed(&epoch, double)
                ),
            )
        })
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
    score: &Score<'_>,
    claimed: Option<bool>,
    error: Option<&Json<'_>>,
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
    let correct = match score.value {
        1.0 => Some(true),
        0.0 => Some(false),
        _ => {
            warnings.push(format!(
                "score {} is neither 1 nor 0: correctness is unknown (EEE's is_correct is {}, and its \
                 converters disagree on what it means)",
                kit::parsed(&score.json, score.double),
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
    use crate::adapters::AdapterOptions;
    use crate::adapters::kit::fixtures;
    use crate::jsonl::NonFinitePolicy;
    use crate::record::Record;
    use serde_json::{Value, json};

    /// One row, written as `members` (JSON text of the top-level members besides the
    /// required ones), read as an import reads it.
    fn import(members: &str) -> Result<Record, AdapterError> {
        let run = fixtures::run("r1", "m1");
        let options = AdapterOptions::default();
        let context = fixtures::context(&run, &options, "runs/r1/raw/0001-e.jsonl", "e.jsonl");
        let line = format!(
            r#"{{"schema_version": "0.3.0", "sample_id": "q1", "evaluation_name": "mmlu", {members}}}"#
        );
        let mut records =
            kit::records_of_line(normalize, &line, 4, NonFinitePolicy::Reject, &context)?;
        assert_eq!(records.len(), 1, "one record per row");
        Ok(records.remove(0))
    }

    const SCORED: &str =
        r#""evaluation_result_id": "acc", "evaluation": {"score": 1.0, "is_correct": true}"#;

    #[test]
    fn a_row_lands_field_by_field() {
        let record = import(&format!(
            r#"{SCORED}, "model_id": "dev/m1", "input": {{"raw": "2+2?", "reference": ["4"], "choices": ["3", "4"],
               "formatted": null, "lang": "en"}}, "output": {{"raw": ["4"], "reasoning_trace": null}},
               "metadata": {{"epoch": "2"}}, "error": null"#
        ))
        .unwrap();
        assert_eq!(
            record.input,
            json!({"question": "2+2?", "choices": ["3", "4"], "lang": "en"})
        );
        assert_eq!(record.target, json!(["4"]));
        assert_eq!(
            (record.response, record.prediction),
            (json!(["4"]), json!("4"))
        );
        assert_eq!((record.filter.as_str(), record.repeat_id), ("acc", 1));
        assert_eq!(record.correct, Some(true));
        assert_eq!(Value::Object(record.metrics), json!({"acc": 1}));
        assert_eq!(record.benchmark, "mmlu");
        assert_eq!(
            Value::Object(record.extra),
            json!({"sample_id": "q1", "evaluation_name": "mmlu", "evaluation_result_id": "acc",
                   "evaluation": {"score": 1, "is_correct": true}, "model_id": "dev/m1",
                   "output": {"raw": ["4"], "reasoning_trace": null}, "metadata": {"epoch": "2"}}),
            "schema_version is read, a null error dropped, everything else kept"
        );
    }

    #[test]
    fn an_input_question_of_its_own_stands_and_output_raw_of_several_is_the_prediction() {
        let record = import(&format!(
            r#"{SCORED}, "input": {{"raw": "r", "reference": null, "question": "own"}},
               "output": {{"raw": ["a", "b"]}}"#
        ))
        .unwrap();
        assert_eq!(record.input, json!({"question": "own"}));
        assert_eq!(record.prediction, json!(["a", "b"]));
    }

    #[test]
    fn warnings_quote_the_score_as_parsed_and_an_error_as_json() {
        let two = import(
            r#""evaluation_result_id": "acc", "evaluation": {"score": 2.0}, "input": {"raw": "r", "reference": 1}"#,
        )
        .unwrap();
        assert!(
            two.warnings[0].starts_with("score 2.0 is neither 1 nor 0"),
            "{:?}",
            two.warnings
        );
        assert_eq!(Value::Object(two.metrics), json!({"acc": 2}));
        let failed = import(&format!(
            r#"{SCORED}, "input": {{"raw": "r", "reference": 1}}, "error": "boom\n  at line 3""#
        ))
        .unwrap();
        assert_eq!(failed.correct, None);
        assert_eq!(
            failed.warnings,
            ["the sample failed (\"boom\\n  at line 3\"): correctness is unknown"]
        );
        // EEE writes a string; anything else is quoted in its canonical form.
        let listed = import(&format!(
            r#"{SCORED}, "input": {{"raw": "r", "reference": 1}}, "error": {{"b": [2.0], "a": 1e2}}"#
        ))
        .unwrap();
        assert_eq!(
            listed.warnings,
            ["the sample failed ({\"a\":100,\"b\":[2]}): correctness is unknown"]
        );
    }

    #[test]
    fn an_epoch_is_a_whole_number_from_one_and_required_parts_are_refused_at_their_path() {
        let input = r#""input": {"raw": "r", "reference": 1}"#;
        let refused = |members: String| import(&members).unwrap_err();
        for (epoch, found) in [
            ("1.0", "1.0"),
            ("0", "0"),
            ("\"x\"", "\"x\""),
            ("1e2", "100.0"),
        ] {
            let error = refused(format!(
                r#"{SCORED}, {input}, "metadata": {{"epoch": {epoch}}}"#
            ));
            assert_eq!(error.path.to_string(), "metadata.epoch");
            assert!(
                error.message.ends_with(&format!("found {found}")),
                "{error:?}"
            );
        }
        let cases = [
            (SCORED.to_string(), "input", "required field is missing"),
            (
                format!(r#"{SCORED}, "input": null"#),
                "input",
                "expected an object, found null",
            ),
            (
                format!(r#"{SCORED}, "input": {{"reference": 1}}"#),
                "input.raw",
                "required field is missing",
            ),
            (
                format!(r#"{SCORED}, "input": {{"raw": ""}}"#),
                "input.raw",
                "expected a non-empty string, found the string \"\"",
            ),
            (
                format!(r#"{SCORED}, "input": {{"raw": "r"}}"#),
                "input.reference",
                "required field is missing",
            ),
            (
                format!(
                    r#""evaluation_result_id": "acc", "evaluation": {{"score": "1"}}, {input}"#
                ),
                "evaluation.score",
                "expected a number, found the string \"1\"",
            ),
            (
                format!(r#"{SCORED}, {input}, "token_usage": {{"n": [9007199254740993]}}"#),
                "token_usage.n[0]",
                "the integer 9007199254740993 has no exact JSON double (RFC 8785 stores numbers as doubles)",
            ),
        ];
        for (members, path, message) in cases {
            let error = refused(members);
            assert_eq!(
                (error.path.to_string().as_str(), error.message.as_str()),
                (path, message)
            );
        }
    }

    fn score(value: f64) -> Score<'static> {
        Score {
            value,
            json: Json::of(&Value::from(value)).unwrap(),
            double: true,
        }
    }

    #[test]
    fn positions_are_digits_or_helm_ids() {
        assert!(is_position("0") && is_position("17") && is_position("id3"));
        assert!(!is_position("q001") && !is_position("") && !is_position("id"));
    }

    #[test]
    fn only_a_score_of_one_or_zero_is_known_and_placeholders_are_unknown() {
        let mut w = Vec::new();
        assert_eq!(
            correctness(Some("acc"), &score(1.0), Some(true), None, None, &mut w),
            Some(true)
        );
        assert_eq!(
            correctness(Some("acc"), &score(0.0), Some(false), None, None, &mut w),
            Some(false)
        );
        assert!(w.is_empty());
        // Inspect's converter: is_correct = score > 0, so 0.5 is "correct".
        assert_eq!(
            correctness(
                Some("graded:accuracy"),
                &score(0.5),
                Some(true),
                None,
                None,
                &mut w
            ),
            None
        );
        // The placeholder row of a sample without a score.
        assert_eq!(
            correctness(None, &score(0.0), Some(false), None, None, &mut w),
            None
        );
        assert_eq!(w.len(), 2);
        // Without a correctness_metric, a metric that is not accuracy-like is unknown: a
        // perplexity of 0 is not a wrong answer.
        assert_eq!(
            correctness(
                Some("perplexity"),
                &score(0.0),
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
                &score(1.0),
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
                &score(1.0),
                None,
                None,
                Some("exact_match"),
                &mut w
            ),
            Some(true)
        );
    }
}
