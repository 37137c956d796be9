//! The paired adapter: one line per question with an `original` and a `rephrased` result,
//! normalized into two records that share the question's identity.
//!
//! Owns the paired rules of the data contract: choice-index predictions scored against each
//! version's own answer key (never an index read as a boolean), the answer-key precedence
//! (explicit variant key, shared top-level key, the run's `shared_answer_key` assertion),
//! and the agreement of indices and score arrays with choice counts. The line shape and
//! where each field lands are documented in FORMAT.md ("The paired adapter"). No
//! filesystem access.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::stable_id::{self, QuestionIdentity};
use super::{AdapterError, AdapterOptions, ImportContext, agree, kit, optional_array};
use crate::jsonl::{FieldPath, Line, PathSegment};
use crate::record::{DEFAULT_FILTER, Fields, Locator, Record, fields::describe};

/// The paired format: one line per question with `original` and `rephrased` objects.
pub const ADAPTER: super::Adapter = super::Adapter::new(
    "paired",
    "one line per question with `original` and `rephrased` objects (two records)",
    "paired/1",
    super::Reader::TreeLines(normalize),
)
.with_option_rules(check_options)
.with_fixed_variants(&[ORIGINAL]);

/// The variant ID of the `original` object's record.
pub const ORIGINAL: &str = "original";
/// The variant ID of the `rephrased` object's record, unless `--variant` names it.
pub const REPHRASED: &str = "rephrased";

/// Top-level fields the automatic stable-ID lookup reads; those not chosen are kept in
/// `extra`.
const IDENTITY_FIELDS: [&str; 3] = ["original_question_id", "question_id", "id"];

/// The prediction indices of a variant and their names in `prediction`.
const PREDICTIONS: [(&str, &str); 3] = [
    ("pred_acc", "index"),
    ("pred_acc_norm", "index_norm"),
    ("pred_acc_pmi", "index_pmi"),
];

/// The per-choice score arrays of a variant, kept in `scores` under the same names.
const SCORE_ARRAYS: [&str; 3] = ["logprobs", "logprobs_norm", "logprobs_pmi"];

/// Refuses option combinations a paired import cannot honour.
pub fn check_options(options: &AdapterOptions) -> Result<(), String> {
    if options.variant.as_deref() == Some(ORIGINAL) {
        return Err(format!(
            "--variant names the rephrased variant of a paired import; it cannot be {ORIGINAL:?}"
        ));
    }
    Ok(())
}

/// One version (original or rephrased) of a paired line, read and checked.
struct Variant {
    path: FieldPath,
    question: Option<String>,
    choices: Option<Vec<Value>>,
    correct_index: Option<u64>,
    /// `pred_acc`, `pred_acc_norm`, `pred_acc_pmi`, in [`PREDICTIONS`] order.
    predictions: [Option<u64>; 3],
    /// `logprobs`, `logprobs_norm`, `logprobs_pmi`, in [`SCORE_ARRAYS`] order.
    scores: [Option<Vec<Value>>; 3],
    generated_text: Option<String>,
    /// Every other field: additional producer metrics, kept as given.
    metrics: Map<String, Value>,
    /// The number of choices and the field that states it, when any field does.
    choice_count: Option<(usize, FieldPath)>,
}

impl Variant {
    fn read(value: Option<Value>, path: FieldPath) -> Result<Self, AdapterError> {
        let map = match value {
            Some(Value::Object(map)) => map,
            None => {
                return Err(AdapterError::new(path, "required field is missing").with_hint(
                    "a paired line holds an \"original\" and a \"rephrased\" object (see FORMAT.md)",
                ));
            }
            Some(other) => {
                return Err(AdapterError::new(
                    path,
                    format!("expected an object, found {}", describe(&other)),
                ));
            }
        };
        let mut f = Fields::new(map, path.clone());
        let question = f.optional_string("question")?;
        let choices = optional_array(&mut f, "choices")?;
        let correct_index = f.optional_index("correct_index")?;
        let mut predictions = [None; 3];
        for (slot, (name, _)) in predictions.iter_mut().zip(PREDICTIONS) {
            *slot = f.optional_index(name)?;
        }
        let mut scores = [None, None, None];
        for (slot, name) in scores.iter_mut().zip(SCORE_ARRAYS) {
            *slot = optional_array(&mut f, name)?;
            if let Some(values) = slot {
                check_numbers(values, &f.path(name))?;
            }
        }
        let generated_text = match f.take("generated_text") {
            None | Some(Value::Null) => None,
            // A model may well generate nothing: the empty string is a response.
            Some(Value::String(text)) => Some(text),
            Some(other) => {
                return Err(AdapterError::new(
                    f.path("generated_text"),
                    format!("expected a string or null, found {}", describe(&other)),
                ));
            }
        };
        let mut choice_count = choices
            .as_ref()
            .map(|choices| (choices.len(), path.key("choices")));
        for (values, name) in scores.iter().zip(SCORE_ARRAYS) {
            let Some(values) = values else { continue };
            match &choice_count {
                Some((count, from)) if *count != values.len() => {
                    return Err(AdapterError::new(
                        path.key(name),
                        format!(
                            "{} entries, but {from} has {count}; arrays must agree with the choice count",
                            values.len()
                        ),
                    ));
                }
                Some(_) => {}
                None => choice_count = Some((values.len(), path.key(name))),
            }
        }
        let variant = Self {
            question,
            choices,
            correct_index,
            predictions,
            scores,
            generated_text,
            metrics: f.into_rest(),
            choice_count,
            path,
        };
        variant.check_index("correct_index", variant.correct_index)?;
        for ((name, _), index) in PREDICTIONS.iter().zip(variant.predictions) {
            variant.check_index(name, index)?;
        }
        Ok(variant)
    }

    /// An index of this variant must name one of its choices, when their number is known.
    fn check_index(&self, name: &str, index: Option<u64>) -> Result<(), AdapterError> {
        match (index, &self.choice_count) {
            (Some(index), Some((count, from))) if index >= *count as u64 => Err(AdapterError::new(
                self.path.key(name),
                format!(
                    "index {index} is out of range: {from} has {count} choices (indices are zero-based)"
                ),
            )),
            _ => Ok(()),
        }
    }

    fn pred_acc(&self) -> Option<u64> {
        self.predictions[0]
    }

    fn input(&mut self) -> Value {
        let mut input = Map::new();
        if let Some(question) = self.question.take() {
            input.insert("question".into(), Value::String(question));
        }
        if let Some(choices) = self.choices.take() {
            input.insert("choices".into(), Value::Array(choices));
        }
        object_or_null(input)
    }

    fn prediction(&self) -> Value {
        let mut prediction = Map::new();
        for ((_, name), index) in PREDICTIONS.iter().zip(self.predictions) {
            if let Some(index) = index {
                prediction.insert((*name).into(), Value::from(index));
            }
        }
        object_or_null(prediction)
    }

    fn scores(&mut self) -> Map<String, Value> {
        let mut scores = Map::new();
        for (values, name) in self.scores.iter_mut().zip(SCORE_ARRAYS) {
            if let Some(values) = values.take() {
                scores.insert(name.into(), Value::Array(values));
            }
        }
        scores
    }
}

fn object_or_null(map: Map<String, Value>) -> Value {
    if map.is_empty() {
        Value::Null
    } else {
        Value::Object(map)
    }
}

/// Score arrays hold numbers, or null for an unknown value.
fn check_numbers(values: &[Value], path: &FieldPath) -> Result<(), AdapterError> {
    match values
        .iter()
        .position(|v| !matches!(v, Value::Number(_) | Value::Null))
    {
        None => Ok(()),
        Some(i) => Err(AdapterError::new(
            path.index(i),
            format!("expected a number or null, found {}", describe(&values[i])),
        )),
    }
}

/// The answer key a variant is scored against, and the caveats of how it was chosen.
struct AnswerKey {
    index: Option<u64>,
    warnings: Vec<String>,
}

/// The answer-key precedence of the data contract, for one variant.
///
/// "An explicit variant answer key takes precedence. A shared top-level key can be used for
/// the original, and for a rephrase with identical explicit choices. Where choice order is
/// unavailable, run metadata `shared_answer_key: true` explicitly asserts that sharing the
/// key is valid; the assertion is recorded as a warning. Explicitly different choice
/// ordering still requires a per-variant key."
fn answer_key(
    variant: &Variant,
    original_choices: Option<&[Value]>,
    is_original: bool,
    shared: Option<u64>,
    shared_asserted: bool,
) -> Result<AnswerKey, AdapterError> {
    let name = &variant.path;
    let mut warnings = Vec::new();
    if let Some(own) = variant.correct_index {
        if let Some(shared) = shared.filter(|shared| *shared != own) {
            warnings.push(format!(
                "{name}.correct_index {own} takes precedence over the top-level correct_index {shared}"
            ));
        }
        return Ok(AnswerKey {
            index: Some(own),
            warnings,
        });
    }
    let index = match shared {
        None => {
            if variant.pred_acc().is_some() {
                warnings.push(format!(
                    "no answer key for {name}: neither {name}.correct_index nor a top-level correct_index is given; correctness unknown"
                ));
            }
            None
        }
        Some(shared) if is_original => Some(shared),
        Some(shared) => match (original_choices, variant.choices.as_deref()) {
            (Some(original), Some(own)) if original == own => Some(shared),
            (Some(_), Some(_)) => {
                warnings.push(format!(
                    "{name}.choices differ from original.choices and {name} has no correct_index of its own; \
                     the shared key is not used and correctness is unknown (a different choice order needs its own key)"
                ));
                None
            }
            _ if shared_asserted => {
                warnings.push(format!(
                    "answer key for {name} is the shared top-level correct_index {shared}, because run metadata \
                     shared_answer_key: true asserts it is valid (the choice order is not supplied)"
                ));
                Some(shared)
            }
            _ => {
                warnings.push(format!(
                    "the choice order of {name} is not supplied and it has no correct_index of its own, so the \
                     shared key is not used and correctness is unknown (supply {name}.correct_index, or set run \
                     metadata shared_answer_key: true if the shared key is valid for it)"
                ));
                None
            }
        },
    };
    if let (Some(index), Some((count, from))) = (index, &variant.choice_count)
        && index >= *count as u64
    {
        return Err(AdapterError::new(
            FieldPath::root().key("correct_index"),
            format!(
                "the shared correct_index {index} is out of range for {name}: {from} has {count} choices"
            ),
        ));
    }
    if index.is_some() && variant.pred_acc().is_none() {
        warnings.push(format!(
            "{name} has an answer key but no pred_acc; correctness unknown"
        ));
    }
    Ok(AnswerKey { index, warnings })
}

/// What both records of a line share.
struct Shared {
    benchmark: String,
    script: Option<String>,
    language: Option<String>,
    identity: QuestionIdentity,
    filter: String,
    repeat_id: u64,
    /// The rephrased record's.
    rephrasing_model: Option<String>,
}

impl Shared {
    /// Reads the line's context fields: benchmark, model, language and script must agree
    /// with the run and the import.
    fn read(
        f: &mut Fields,
        identity: QuestionIdentity,
        context: &ImportContext<'_>,
    ) -> Result<Self, AdapterError> {
        let run = context.run;
        let benchmark = super::benchmark(f.optional_string("benchmark")?.map(Cow::Owned), context)?
            .into_owned();
        agree(
            "model",
            f.optional_string("model")?.map(Cow::Owned),
            Some(&run.model),
            "the run's model",
        )?;
        let language = super::language(
            f.optional_string("language")?.map(Cow::Owned),
            context.options,
        )?
        .map(Cow::into_owned);
        let script = super::script(f.optional_string("script")?, run).map_err(|e| {
            e.with_hint("give each paired line a top-level \"script\" (e.g. \"Latn\")")
        })?;
        Ok(Self {
            benchmark,
            script,
            language,
            identity,
            rephrasing_model: f.optional_string("rephrasing_model")?,
            filter: f
                .defaulted_string("filter")?
                .unwrap_or_else(|| DEFAULT_FILTER.to_owned()),
            repeat_id: f.defaulted_index("repeat_id")?.unwrap_or(0),
        })
    }
}

/// Normalizes one paired line into its two records (original, then rephrased).
pub fn normalize(
    line: Line,
    context: &ImportContext<'_>,
    out: &mut Vec<Record>,
) -> Result<(), AdapterError> {
    let identity = stable_id::resolve(
        &line.object,
        context.options.id_field.as_ref(),
        context.source,
        line.number,
    )?;
    let mut f = Fields::new(line.object, FieldPath::root());
    let shared = Shared::read(&mut f, identity, context)?;
    let shared_key = f.optional_index("correct_index")?;
    let mut original = Variant::read(f.take(ORIGINAL), f.path(ORIGINAL))?;
    let mut rephrased = Variant::read(f.take(REPHRASED), f.path(REPHRASED))?;
    let extra = f.object("extra", false)?;
    let extra = keep_identity_fields(&mut f, shared.identity.field.as_ref(), extra)?;
    f.deny_unknown().map_err(|e| {
        AdapterError::from(e).with_hint(
            "a paired line's top level holds identity, context, correct_index, original, rephrased \
             and extra; additional producer fields belong under \"extra\" (see FORMAT.md)",
        )
    })?;

    let shared_asserted = context.run.shared_answer_key;
    let original_key = answer_key(&original, None, true, shared_key, shared_asserted)?;
    let rephrased_key = answer_key(
        &rephrased,
        original.choices.as_deref(),
        false,
        shared_key,
        shared_asserted,
    )?;
    let mut first = record(&shared, context, line.number, &mut original, original_key);
    first.variant_id = ORIGINAL.to_owned();
    first.extra = extra.clone();
    let mut second = record(&shared, context, line.number, &mut rephrased, rephrased_key);
    second.variant_id = context
        .options
        .variant
        .clone()
        .unwrap_or_else(|| REPHRASED.to_owned());
    second.rephrasing_model = shared.rephrasing_model.clone();
    second.extra = extra;
    out.push(first);
    out.push(second);
    Ok(())
}

/// Keeps the identity fields in `extra`: the question ID's own field is the record's
/// question_id; other identity fields (and the top-level field an `--id-field` path starts
/// in) are kept, not refused.
fn keep_identity_fields(
    f: &mut Fields,
    id_field: Option<&FieldPath>,
    mut extra: Map<String, Value>,
) -> Result<Map<String, Value>, AdapterError> {
    let used = id_field.and_then(|path| match path.segments() {
        [PathSegment::Key(first), rest @ ..] => Some((first.clone(), rest.is_empty())),
        _ => None,
    });
    let mut keep = |name: &str, f: &mut Fields| -> Result<(), AdapterError> {
        let Some(value) = f.take(name) else {
            return Ok(());
        };
        if used
            .as_ref()
            .is_some_and(|(first, alone)| first == name && *alone)
        {
            return Ok(());
        }
        if extra.contains_key(name) {
            return Err(AdapterError::new(
                f.path(name),
                format!("{name:?} is given both at the top level and under extra"),
            ));
        }
        extra.insert(name.to_owned(), value);
        Ok(())
    };
    for name in IDENTITY_FIELDS {
        keep(name, f)?;
    }
    if let Some((first, _)) = &used {
        keep(first, f)?;
    }
    Ok(extra)
}

/// One version's record: what both share, and this version's own reading, scored against
/// its own answer key.
fn record(
    shared: &Shared,
    context: &ImportContext<'_>,
    line: u64,
    variant: &mut Variant,
    key: AnswerKey,
) -> Record {
    let mut record = kit::record(
        context,
        &shared.benchmark,
        shared.identity.clone(),
        Locator::Line(line),
    );
    record.script = shared.script.clone();
    record.language = shared.language.clone();
    record.filter = shared.filter.clone();
    record.repeat_id = shared.repeat_id;
    // Correctness compares the predicted index with this version's own key; an index is
    // never read as a boolean, and normalized or PMI predictions never stand in for it.
    record.correct = variant
        .pred_acc()
        .zip(key.index)
        .map(|(predicted, answer)| predicted == answer);
    record.input = variant.input();
    record.target = key
        .index
        .map_or(Value::Null, |index| serde_json::json!({ "index": index }));
    record.prediction = variant.prediction();
    record.scores = variant.scores();
    record.metrics = std::mem::take(&mut variant.metrics);
    record.response = variant
        .generated_text
        .take()
        .map_or(Value::Null, Value::String);
    record.warnings = key.warnings;
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::RunContext;
    use crate::adapters::kit::fixtures;
    use crate::jsonl::{NonFinitePolicy, parse_line};
    use crate::record::IdentityScope;
    use serde_json::json;

    fn run() -> RunContext {
        RunContext {
            benchmark: Some("capitals".into()),
            ..fixtures::run("r1", "m1")
        }
    }

    fn import_with(
        value: Value,
        run: &RunContext,
        options: &AdapterOptions,
    ) -> Result<Vec<Record>, AdapterError> {
        let line = parse_line(&value.to_string(), 3, NonFinitePolicy::Reject).unwrap();
        let context = fixtures::context(run, options, "runs/r1/raw/0001-p.jsonl", "p.jsonl");
        let mut out = Vec::new();
        normalize(line, &context, &mut out)?;
        assert_eq!(out.len(), 2, "one paired line gives two records");
        Ok(out)
    }

    fn import(value: Value) -> Result<Vec<Record>, AdapterError> {
        import_with(value, &run(), &AdapterOptions::default())
    }

    const CHOICES: [&str; 4] = ["Paris", "Lyon", "Marseille", "Nice"];

    fn line() -> Value {
        json!({
            "question_id": "cap-fr",
            "language": "en",
            "correct_index": 0,
            "original": {"question": "What is the capital of France?", "choices": CHOICES, "pred_acc": 0},
            "rephrased": {"question": "Which city is France's capital?", "choices": CHOICES, "pred_acc": 1}
        })
    }

    #[test]
    fn one_input_line_gives_two_records_sharing_question_id() {
        // "A paired input line produces two records."
        let records = import(line()).unwrap();
        let [original, rephrased] = &records[..] else {
            unreachable!()
        };
        assert_eq!(
            (original.variant_id.as_str(), rephrased.variant_id.as_str()),
            ("original", "rephrased")
        );
        assert_eq!(original.question_id, "cap-fr");
        assert_eq!(rephrased.question_id, "cap-fr");
        assert_eq!(original.identity_scope, IdentityScope::Stable);
        assert!(original.identity().same_item(&rephrased.identity()));
        assert_eq!(original.benchmark, "capitals", "from the run");
        assert_eq!(original.language.as_deref(), Some("en"));
        assert_eq!(
            (
                original.source.line_number(),
                rephrased.source.line_number()
            ),
            (Some(3), Some(3))
        );
    }

    #[test]
    fn fields_land_in_input_target_prediction_scores_metrics_and_response() {
        let value = json!({
            "id": "cap-fr",
            "rephrasing_model": "rephraser-1",
            "extra": {"split": "test"},
            "original": {
                "question": "What is the capital of France?", "choices": CHOICES,
                "correct_index": 0, "pred_acc": 0, "pred_acc_norm": 2, "pred_acc_pmi": 1,
                "logprobs": [-0.5, -1.0, -2.0, -3.0], "logprobs_norm": [-0.1, -0.2, -0.05, -0.9],
                "logprobs_pmi": [0.1, 0.3, 0.0, null],
                "generated_text": "Paris", "bleu": 0.7, "latency_ms": 812
            },
            "rephrased": {"choices": CHOICES, "correct_index": 0}
        });
        let records = import(value).unwrap();
        let original = &records[0];
        assert_eq!(
            original.input,
            json!({"question": "What is the capital of France?", "choices": CHOICES})
        );
        assert_eq!(original.target, json!({"index": 0}));
        assert_eq!(
            original.prediction,
            json!({"index": 0, "index_norm": 2, "index_pmi": 1})
        );
        assert_eq!(
            Value::Object(original.scores.clone()),
            json!({"logprobs": [-0.5, -1.0, -2.0, -3.0], "logprobs_norm": [-0.1, -0.2, -0.05, -0.9],
                   "logprobs_pmi": [0.1, 0.3, 0.0, null]})
        );
        assert_eq!(
            Value::Object(original.metrics.clone()),
            json!({"bleu": 0.7, "latency_ms": 812}),
            "additional metrics are kept as given"
        );
        assert_eq!(original.response, json!("Paris"));
        assert_eq!(original.extra["split"], "test");
        assert_eq!(original.rephrasing_model, None);
        assert_eq!(records[1].rephrasing_model.as_deref(), Some("rephraser-1"));
        assert_eq!(records[1].prediction, Value::Null, "nothing was predicted");
        assert_eq!(records[1].response, Value::Null);
    }

    #[test]
    fn correctness_compares_pred_acc_with_the_versions_own_key_never_a_boolean_cast() {
        // "pred_acc names a choice index. Correctness is obtained by comparing it with a
        // known correct_index for that version, never by converting the index to Boolean."
        let mut value = line();
        value["correct_index"] = json!(1);
        value["original"]["pred_acc"] = json!(1);
        value["rephrased"]["pred_acc"] = json!(0);
        let records = import(value).unwrap();
        assert_eq!(records[0].correct, Some(true), "index 1 == key 1");
        assert_eq!(
            records[1].correct,
            Some(false),
            "index 0 is a choice, not false; it differs from key 1"
        );
        let mut zero = line();
        zero["correct_index"] = json!(0);
        zero["original"]["pred_acc"] = json!(0);
        assert_eq!(
            import(zero).unwrap()[0].correct,
            Some(true),
            "index 0 == key 0 is correct, not false"
        );
        let mut boolean = line();
        boolean["original"]["pred_acc"] = json!(true);
        assert_eq!(
            import(boolean).unwrap_err().path.to_string(),
            "original.pred_acc"
        );
    }

    #[test]
    fn normalized_and_pmi_predictions_are_retained_but_never_substituted() {
        // "Normalized and PMI prediction indices are retained but do not silently replace
        // the raw correctness criterion used by the default summary."
        let mut value = line();
        value["original"] =
            json!({"choices": CHOICES, "pred_acc": 2, "pred_acc_norm": 0, "pred_acc_pmi": 0});
        value["rephrased"] = json!({"choices": CHOICES, "pred_acc_norm": 0});
        let records = import(value).unwrap();
        assert_eq!(records[0].correct, Some(false), "pred_acc 2 against key 0");
        assert_eq!(records[0].prediction["index_norm"], 0);
        assert_eq!(
            records[1].correct, None,
            "no pred_acc: the normalized index does not stand in"
        );
        assert!(records[1].warnings[0].contains("no pred_acc"));
    }

    #[test]
    fn an_explicit_variant_key_takes_precedence() {
        // "An explicit variant answer key takes precedence."
        let mut value = line();
        value["correct_index"] = json!(0);
        value["rephrased"]["correct_index"] = json!(1);
        let records = import(value).unwrap();
        assert_eq!(records[1].target, json!({"index": 1}));
        assert_eq!(
            records[1].correct,
            Some(true),
            "pred_acc 1 against its own key 1"
        );
        assert!(records[1].warnings[0].contains("takes precedence"));
        assert_eq!(records[0].target, json!({"index": 0}));
    }

    #[test]
    fn a_shared_key_serves_the_original_and_a_rephrase_with_identical_choices() {
        // "A shared top-level key can be used for the original, and for a rephrase with
        // identical explicit choices."
        let records = import(line()).unwrap();
        assert_eq!(records[0].target, json!({"index": 0}));
        assert_eq!(records[1].target, json!({"index": 0}));
        assert_eq!(records[1].correct, Some(false));
        assert!(records[0].warnings.is_empty() && records[1].warnings.is_empty());
        let mut no_choices = line();
        no_choices["original"] = json!({"pred_acc": 0});
        assert_eq!(
            import(no_choices).unwrap()[0].correct,
            Some(true),
            "the original uses the shared key even without choices"
        );
    }

    #[test]
    fn without_choice_order_only_shared_answer_key_true_allows_sharing_with_a_warning() {
        // "Where choice order is unavailable, run metadata shared_answer_key: true
        // explicitly asserts that sharing the key is valid; the assertion is recorded as a
        // warning."
        let mut value = line();
        value["rephrased"] = json!({"question": "Which city is France's capital?", "pred_acc": 0});
        let unasserted = import(value.clone()).unwrap();
        assert_eq!(unasserted[1].correct, None);
        assert_eq!(unasserted[1].target, Value::Null);
        assert!(
            unasserted[1].warnings[0].contains("shared_answer_key: true"),
            "{:?}",
            unasserted[1].warnings
        );
        let mut asserting = run();
        asserting.shared_answer_key = true;
        let asserted = import_with(value, &asserting, &AdapterOptions::default()).unwrap();
        assert_eq!(asserted[1].correct, Some(true));
        assert_eq!(asserted[1].target, json!({"index": 0}));
        assert_eq!(asserted[1].warnings.len(), 1);
        assert!(asserted[1].warnings[0].contains("asserts it is valid"));
        assert!(
            asserted[0].warnings.is_empty(),
            "the original needs no assertion"
        );
    }

    #[test]
    fn explicitly_different_choice_order_without_its_own_key_leaves_correctness_unknown() {
        // "Explicitly different choice ordering still requires a per-variant key."
        let mut value = line();
        value["rephrased"]["choices"] = json!(["Lyon", "Paris", "Marseille", "Nice"]);
        value["rephrased"]["pred_acc"] = json!(0);
        let mut asserting = run();
        asserting.shared_answer_key = true;
        for run in [run(), asserting] {
            let records = import_with(value.clone(), &run, &AdapterOptions::default()).unwrap();
            assert_eq!(
                records[1].correct, None,
                "the shared key 0 would have been a guess"
            );
            assert_eq!(records[1].target, Value::Null);
            assert!(records[1].warnings[0].contains("differ from original.choices"));
        }
    }

    #[test]
    fn indices_are_zero_based_and_must_name_a_supplied_choice() {
        // "Indices are zero-based nonnegative integers, and arrays must agree with supplied
        // choice counts."
        let cases = [
            ("original", "pred_acc", json!(4), "original.pred_acc"),
            ("original", "pred_acc", json!(-1), "original.pred_acc"),
            ("original", "pred_acc", json!(1.0), "original.pred_acc"),
            (
                "rephrased",
                "correct_index",
                json!(7),
                "rephrased.correct_index",
            ),
            (
                "rephrased",
                "pred_acc_pmi",
                json!(4),
                "rephrased.pred_acc_pmi",
            ),
            (
                "original",
                "logprobs",
                json!([-1.0, -2.0]),
                "original.logprobs",
            ),
            (
                "original",
                "logprobs",
                json!([-1.0, "x", -2.0, -3.0]),
                "original.logprobs[1]",
            ),
        ];
        for (variant, field, bad, path) in cases {
            let mut value = line();
            value[variant][field] = bad;
            let error = import(value).unwrap_err();
            assert_eq!(error.path.to_string(), path, "{error}");
        }
        let mut shared_out_of_range = line();
        shared_out_of_range["correct_index"] = json!(4);
        assert!(
            import(shared_out_of_range)
                .unwrap_err()
                .message
                .contains("out of range")
        );
    }

    #[test]
    fn without_choices_the_score_arrays_must_agree_with_each_other() {
        let mut value = line();
        value["original"] =
            json!({"logprobs": [-1.0, -2.0, -3.0], "logprobs_norm": [-1.0, -2.0], "pred_acc": 0});
        let error = import(value).unwrap_err();
        assert_eq!(error.path.to_string(), "original.logprobs_norm");
        let mut index = line();
        index["original"] = json!({"logprobs": [-1.0, -2.0, -3.0], "pred_acc": 3});
        assert_eq!(
            import(index).unwrap_err().path.to_string(),
            "original.pred_acc"
        );
    }

    #[test]
    fn no_stable_id_gives_a_run_local_identity_shared_by_both_records() {
        // "Without a stable ID, a source/line-derived identity prevents accidental record
        // collisions, but the record is excluded from pair analysis."
        let mut value = line();
        value.as_object_mut().unwrap().shift_remove("question_id");
        let records = import(value).unwrap();
        assert_eq!(records[0].identity_scope, IdentityScope::RunLocal);
        assert_eq!(records[0].question_id, "runs/r1/raw/0001-p.jsonl:3");
        assert_eq!(records[0].question_id, records[1].question_id);
        assert_eq!(
            records[0].correct,
            Some(true),
            "still scored for independent summaries"
        );
    }

    #[test]
    fn the_lookup_order_and_id_field_choose_the_question_id_and_other_ids_are_kept() {
        // "Automatic lookup checks original_question_id, ..., question_id, ..., id, ..."
        let mut value = line();
        value["original_question_id"] = json!("orig-7");
        value["id"] = json!(7);
        let records = import(value.clone()).unwrap();
        assert_eq!(records[0].question_id, "orig-7");
        assert_eq!(records[0].extra["question_id"], "cap-fr");
        assert_eq!(records[0].extra["id"], 7);
        value["meta"] = json!({"uid": "u-1"});
        let options = AdapterOptions {
            id_field: Some(FieldPath::parse_dotted("meta.uid").unwrap()),
            ..Default::default()
        };
        let chosen = import_with(value, &run(), &options).unwrap();
        assert_eq!(chosen[1].question_id, "u-1");
        assert_eq!(chosen[1].extra["meta"], json!({"uid": "u-1"}));
    }

    #[test]
    fn variant_names_the_rephrased_record_and_cannot_be_original() {
        let options = AdapterOptions {
            variant: Some("rephrased-gpt".into()),
            ..Default::default()
        };
        let records = import_with(line(), &run(), &options).unwrap();
        assert_eq!(records[0].variant_id, "original");
        assert_eq!(records[1].variant_id, "rephrased-gpt");
        let original = AdapterOptions {
            variant: Some("original".into()),
            ..Default::default()
        };
        assert!(check_options(&original).is_err());
        assert!(check_options(&options).is_ok());
    }

    #[test]
    fn unknown_top_level_fields_and_missing_variants_are_refused() {
        let mut typo = line();
        typo["corect_index"] = json!(0);
        let error = import(typo).unwrap_err();
        assert_eq!(error.path.to_string(), "corect_index");
        assert!(error.hint.unwrap().contains("extra"));
        let mut missing = line();
        missing.as_object_mut().unwrap().shift_remove("rephrased");
        assert_eq!(import(missing).unwrap_err().path.to_string(), "rephrased");
        let mut not_object = line();
        not_object["original"] = json!([0]);
        assert_eq!(import(not_object).unwrap_err().path.to_string(), "original");
    }

    #[test]
    fn context_must_agree_with_the_run_and_strict_runs_need_a_script() {
        let mut other_model = line();
        other_model["model"] = json!("m2");
        assert_eq!(import(other_model).unwrap_err().path.to_string(), "model");
        let mut other_benchmark = line();
        other_benchmark["benchmark"] = json!("other");
        assert_eq!(
            import(other_benchmark).unwrap_err().path.to_string(),
            "benchmark"
        );
        let mut strict = run();
        strict.strict = true;
        let error = import_with(line(), &strict, &AdapterOptions::default()).unwrap_err();
        assert_eq!(error.path.to_string(), "script");
        let mut with_script = line();
        with_script["script"] = json!("Latn");
        let records = import_with(with_script, &strict, &AdapterOptions::default()).unwrap();
        assert_eq!(records[1].script.as_deref(), Some("Latn"));
    }
}
