//! The paired adapter: one line per question with an `original` and a `rephrased` result,
//! normalized into two records that share the question's identity.
//!
//! Owns the paired rules of the data contract: choice-index predictions scored against each
//! version's own answer key (never an index read as a boolean), the answer-key precedence
//! (explicit variant key, shared top-level key, the run's `shared_answer_key` assertion),
//! and the agreement of indices and score arrays with choice counts. The line shape and
//! where each field lands are documented in FORMAT.md ("The paired adapter"). No
//! filesystem access.
//!
//! A line is read as the streaming reader's members: each version's object is read from
//! its canonical text ([`kit::ObjectFields`]) and its values are moved into the records as
//! they are, never built into trees.

use std::borrow::Cow;

use super::stable_id::{self, QuestionIdentity};
use super::{AdapterError, AdapterOptions, ImportContext, JsonLine, LineFields, agree, kit};
use crate::canonical_json::{Json, JsonKind, ObjectWriter};
use crate::jsonl::{FieldPath, Member, PathSegment};
use crate::record::{DEFAULT_FILTER, Locator, NewRecord};

/// The paired format: one line per question with `original` and `rephrased` objects.
pub const ADAPTER: super::Adapter = super::Adapter::new(
    "paired",
    "one line per question with `original` and `rephrased` objects (two records)",
    "paired/1",
    super::Reader::Lines(normalize),
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

/// A version's `choices`: the array's canonical text, and the paths (inside the array) of
/// the numbers the tree reader reads as doubles though their text is an integer.
struct Choices<'a> {
    text: Json<'a>,
    doubles: Vec<&'a [PathSegment]>,
}

impl Choices<'_> {
    /// The same choices, as the tree reader compares them: `1.0` is not the choice `1`.
    fn same(&self, other: &Choices<'_>) -> bool {
        self.text == other.text
            && self.doubles.len() == other.doubles.len()
            && self.doubles.iter().all(|path| other.doubles.contains(path))
    }
}

/// One version (original or rephrased) of a paired line, read and checked.
struct Variant<'a> {
    path: FieldPath,
    question: Option<Json<'a>>,
    choices: Option<Choices<'a>>,
    correct_index: Option<u64>,
    /// `pred_acc`, `pred_acc_norm`, `pred_acc_pmi`, in [`PREDICTIONS`] order.
    predictions: [Option<u64>; 3],
    /// `logprobs`, `logprobs_norm`, `logprobs_pmi`, in [`SCORE_ARRAYS`] order.
    scores: [Option<Json<'a>>; 3],
    generated_text: Option<Json<'a>>,
    /// Every other field: additional producer metrics, kept as given.
    metrics: Json<'static>,
    /// The number of choices and the field of this version that states it, when any
    /// field does.
    choice_count: Option<(usize, &'static str)>,
}

impl<'a> Variant<'a> {
    fn read(member: Option<Member<'a>>, path: FieldPath) -> Result<Self, AdapterError> {
        let Some(member) = member else {
            return Err(AdapterError::new(path, "required field is missing").with_hint(
                "a paired line holds an \"original\" and a \"rephrased\" object (see FORMAT.md)",
            ));
        };
        let mut f = kit::ObjectFields::of_member(&member, path.clone())?;
        let question = f.optional_string("question")?;
        let choices = f.optional_array("choices")?.map(|text| Choices {
            text,
            doubles: f.integral_doubles_in("choices"),
        });
        let correct_index = f.optional_index("correct_index")?;
        let mut predictions = [None; 3];
        for (slot, (name, _)) in predictions.iter_mut().zip(PREDICTIONS) {
            *slot = f.optional_index(name)?;
        }
        let mut scores = [None, None, None];
        for (slot, name) in scores.iter_mut().zip(SCORE_ARRAYS) {
            *slot = f.optional_array(name)?;
            if let Some(values) = slot {
                check_numbers(values, &f, name)?;
            }
        }
        let generated_text = match f.take("generated_text") {
            None => None,
            Some(text) => match text.kind() {
                JsonKind::Null => None,
                // A model may well generate nothing: the empty string is a response.
                JsonKind::String => Some(text),
                _ => {
                    return Err(AdapterError::new(
                        f.path("generated_text"),
                        format!(
                            "expected a string or null, found {}",
                            f.describe("generated_text", &text)
                        ),
                    ));
                }
            },
        };
        let mut choice_count = choices
            .as_ref()
            .map(|choices| (count(&choices.text), "choices"));
        for (values, name) in scores.iter().zip(SCORE_ARRAYS) {
            let Some(values) = values else { continue };
            let entries = count(values);
            match &choice_count {
                Some((count, from)) if *count != entries => {
                    let from = path.key(from);
                    return Err(AdapterError::new(
                        path.key(name),
                        format!(
                            "{entries} entries, but {from} has {count}; arrays must agree with the choice count"
                        ),
                    ));
                }
                Some(_) => {}
                None => choice_count = Some((entries, name)),
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
                    "index {index} is out of range: {} has {count} choices (indices are zero-based)",
                    self.path.key(from)
                ),
            )),
            _ => Ok(()),
        }
    }

    fn pred_acc(&self) -> Option<u64> {
        self.predictions[0]
    }

    fn input(&mut self) -> Json<'static> {
        let mut input = ObjectWriter::new();
        if let Some(question) = self.question.take() {
            input.insert("question", question);
        }
        if let Some(choices) = self.choices.take() {
            input.insert("choices", choices.text);
        }
        object_or_null(input)
    }

    fn prediction(&self) -> Json<'static> {
        let mut prediction = ObjectWriter::new();
        for ((_, name), index) in PREDICTIONS.iter().zip(self.predictions) {
            if let Some(index) = index {
                prediction.insert(*name, Json::unsigned(index));
            }
        }
        object_or_null(prediction)
    }

    fn scores(&mut self) -> Json<'static> {
        let mut scores = ObjectWriter::new();
        for (values, name) in self.scores.iter_mut().zip(SCORE_ARRAYS) {
            if let Some(values) = values.take() {
                scores.insert(name, values);
            }
        }
        scores.finish()
    }
}

fn object_or_null(object: ObjectWriter<'_>) -> Json<'static> {
    if object.is_empty() {
        Json::NULL
    } else {
        object.finish()
    }
}

/// The number of elements of an array.
fn count(array: &Json<'_>) -> usize {
    array.iter_elements().map_or(0, Iterator::count)
}

/// Score arrays hold numbers, or null for an unknown value (`values` is member `name` of
/// the version `f` reads).
fn check_numbers(
    values: &Json<'_>,
    f: &kit::ObjectFields<'_>,
    name: &str,
) -> Result<(), AdapterError> {
    let found = values
        .iter_elements()
        .into_iter()
        .flatten()
        .enumerate()
        .find(|(_, value)| !matches!(value.kind(), JsonKind::Number | JsonKind::Null));
    match found {
        None => Ok(()),
        Some((i, value)) => Err(AdapterError::new(
            f.path(name).index(i),
            format!("expected a number or null, found {}", value.describe()),
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
    variant: &Variant<'_>,
    original_choices: Option<&Choices<'_>>,
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
        Some(shared) => match (original_choices, variant.choices.as_ref()) {
            (Some(original), Some(own)) if original.same(own) => Some(shared),
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
                "the shared correct_index {index} is out of range for {name}: {} has {count} choices",
                name.key(from)
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
struct Shared<'a> {
    benchmark: Cow<'a, str>,
    script: Option<Cow<'a, str>>,
    language: Option<Cow<'a, str>>,
    identity: QuestionIdentity,
    filter: Cow<'a, str>,
    repeat_id: u64,
    /// The rephrased record's.
    rephrasing_model: Option<Cow<'a, str>>,
}

impl<'a> Shared<'a> {
    /// Reads the line's context fields: benchmark, model, language and script must agree
    /// with the run and the import.
    fn read(
        f: &mut LineFields<'a>,
        identity: QuestionIdentity,
        context: &'a ImportContext<'a>,
    ) -> Result<Self, AdapterError> {
        let run = context.run;
        let benchmark = super::benchmark(f.optional_string("benchmark")?, context)?;
        agree(
            "model",
            f.optional_string("model")?,
            Some(&run.model),
            "the run's model",
        )?;
        let language = super::language(f.optional_string("language")?, context.options)?;
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
                .unwrap_or(Cow::Borrowed(DEFAULT_FILTER)),
            repeat_id: f.defaulted_index("repeat_id")?.unwrap_or(0),
        })
    }
}

/// Normalizes one paired line into its two records (original, then rephrased).
pub fn normalize<'a>(
    line: JsonLine<'a>,
    context: &'a ImportContext<'a>,
    out: &mut Vec<NewRecord<'a>>,
) -> Result<(), AdapterError> {
    let identity = stable_id::resolve(
        line.members,
        context.options.id_field.as_ref(),
        context.source,
        line.number,
    )?;
    let mut f = LineFields::new(line.members);
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
        original.choices.as_ref(),
        false,
        shared_key,
        shared_asserted,
    )?;
    let pair = Pair {
        shared: &shared,
        context,
        number: line.number,
    };
    let first = pair.record(&mut original, original_key, ORIGINAL, None, extra.clone());
    let rephrased_id = context.options.variant.as_deref().unwrap_or(REPHRASED);
    let second = pair.record(
        &mut rephrased,
        rephrased_key,
        rephrased_id,
        shared.rephrasing_model.clone(),
        extra,
    );
    out.push(first);
    out.push(second);
    Ok(())
}

/// Keeps the identity fields in `extra`: the question ID's own field is the record's
/// question_id; other identity fields (and the top-level field an `--id-field` path starts
/// in) are kept, not refused.
fn keep_identity_fields<'a>(
    f: &mut LineFields<'a>,
    id_field: Option<&FieldPath>,
    extra: Json<'a>,
) -> Result<Json<'a>, AdapterError> {
    let used = id_field.and_then(|path| match path.segments() {
        [PathSegment::Key(first), rest @ ..] => Some((first.as_str(), rest.is_empty())),
        _ => None,
    });
    let mut kept = Vec::new();
    let mut keep = |name: &str, f: &mut LineFields<'a>| -> Result<(), AdapterError> {
        let Some(member) = f.take(name) else {
            return Ok(());
        };
        if used.is_some_and(|(first, alone)| first == name && alone) {
            return Ok(());
        }
        let value = f.stored(name, &member)?;
        if extra.get(name).is_some() {
            return Err(AdapterError::new(
                f.path(name),
                format!("{name:?} is given both at the top level and under extra"),
            ));
        }
        kept.push((name.to_owned(), value));
        Ok(())
    };
    for name in IDENTITY_FIELDS {
        keep(name, f)?;
    }
    if let Some((first, _)) = used {
        keep(first, f)?;
    }
    if kept.is_empty() {
        return Ok(extra);
    }
    let mut object = ObjectWriter::new();
    for (key, value) in extra.iter_members().expect("extra is an object") {
        object.insert(key.into_owned(), value.into_owned());
    }
    for (key, value) in kept {
        object.insert(key, value);
    }
    Ok(object.finish())
}

/// What both records of a line are made from.
struct Pair<'s, 'a> {
    shared: &'s Shared<'a>,
    context: &'a ImportContext<'a>,
    number: u64,
}

impl<'a> Pair<'_, 'a> {
    /// One version's record: what both share, and this version's own reading, scored
    /// against its own answer key.
    fn record(
        &self,
        variant: &mut Variant<'a>,
        key: AnswerKey,
        variant_id: &'a str,
        rephrasing_model: Option<Cow<'a, str>>,
        extra: Json<'a>,
    ) -> NewRecord<'a> {
        let (shared, context) = (self.shared, self.context);
        let target = match key.index {
            None => Json::NULL,
            Some(index) => {
                let mut target = ObjectWriter::new();
                target.insert("index", Json::unsigned(index));
                target.finish()
            }
        };
        NewRecord {
            run_id: Cow::Borrowed(&context.run.run_id),
            benchmark: shared.benchmark.clone(),
            script: shared.script.clone(),
            language: shared.language.clone(),
            question_id: Cow::Owned(shared.identity.question_id.clone()),
            variant_id: Cow::Borrowed(variant_id),
            filter: shared.filter.clone(),
            repeat_id: shared.repeat_id,
            identity_scope: shared.identity.scope,
            model: Cow::Borrowed(&context.run.model),
            rephrasing_model,
            input: variant.input(),
            target,
            prediction: variant.prediction(),
            // Correctness compares the predicted index with this version's own key; an
            // index is never read as a boolean, and normalized or PMI predictions never
            // stand in for it.
            correct: variant
                .pred_acc()
                .zip(key.index)
                .map(|(predicted, answer)| predicted == answer),
            scores: variant.scores(),
            metrics: std::mem::replace(&mut variant.metrics, Json::EMPTY_OBJECT),
            response: variant.generated_text.take().unwrap_or(Json::NULL),
            source_path: Cow::Borrowed(context.source.raw_path),
            locator: Locator::Line(self.number),
            warnings: key.warnings,
            extra,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::RunContext;
    use crate::adapters::kit::fixtures;
    use crate::jsonl::NonFinitePolicy;
    use crate::record::{IdentityScope, Record};
    use serde_json::{Value, json};

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
        let context = fixtures::context(run, options, "runs/r1/raw/0001-p.jsonl", "p.jsonl");
        let text = value.to_string();
        let out = kit::records_of_line(normalize, &text, 3, NonFinitePolicy::Reject, &context)?;
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
        // Stored as canonical JSON, where -1.0 is written -1.
        assert_eq!(
            Value::Object(original.scores.clone()),
            json!({"logprobs": [-0.5, -1, -2, -3], "logprobs_norm": [-0.1, -0.2, -0.05, -0.9],
                   "logprobs_pmi": [0.1, 0.3, 0, null]})
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
    fn choices_are_identical_as_the_tree_reader_compares_them() {
        // "A shared top-level key can be used ... for a rephrase with identical explicit
        // choices": the choice 2.0 is a double to a JSON parser, not the choice 2, though
        // both are stored as 2.
        let (run, options) = (run(), AdapterOptions::default());
        let context = fixtures::context(&run, &options, "runs/r1/raw/0001-p.jsonl", "p.jsonl");
        let numeric = |original: &str, rephrased: &str| {
            let text = format!(
                r#"{{"question_id": "n", "correct_index": 0, "original": {{"choices": {original}, "pred_acc": 0}},
                    "rephrased": {{"choices": {rephrased}, "pred_acc": 0}}}}"#
            );
            kit::records_of_line(normalize, &text, 1, NonFinitePolicy::Reject, &context).unwrap()
        };
        let same = numeric("[1, 2.0, {\"a\": 1e0}]", "[1, 2.0, {\"a\": 1.0}]");
        assert_eq!(same[1].correct, Some(true), "{:?}", same[1].warnings);
        assert_eq!(same[1].input["choices"], json!([1, 2, {"a": 1}]));
        for (original, rephrased) in [("[1, 2]", "[1, 2.0]"), ("[1, 2.0]", "[1.0, 2]")] {
            let differ = numeric(original, rephrased);
            assert_eq!(differ[1].correct, None, "{original} against {rephrased}");
            assert!(differ[1].warnings[0].contains("differ from original.choices"));
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
