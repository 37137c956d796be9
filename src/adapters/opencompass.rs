//! The OpenCompass adapter: an output folder `outputs/<timestamp>/` (checked on
//! OpenCompass 0.5.4), or one `predictions/<model>/<abbr>.json` of it. Each predictions
//! file is one import, joined by position with the `results/<model>/<abbr>.json` beside
//! it; the `<model>` folder names the model.
//!
//! Owns the OpenCompass rules of the data contract: items are positions (`"0"`..), so
//! run-local unless `--ids ABBR=FILE` names the dataset file whose line i is item i; a
//! circular evaluation's row i is question i / 4 in rotation i % 4, each rotation its own
//! variant (`circular-<r>`); correctness is the results' `details` entry's `correct` in
//! each of its three shapes, unknown where there is none (free generation); an option
//! letter the evaluator parsed from a reply that does not contain it is flagged. The
//! mapping is in FORMAT.md ("The OpenCompass adapter"). No filesystem access.
//!
//! Items are read as the streaming reader's members (canonical text): the prompt, reply
//! and gold are copied into the record as written; the results file, read whole into a
//! tree as a header, gives each item's `details` entry.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

use super::kit::{self, Found};
use super::stable_id::{self, QuestionIdentity};
use super::{AdapterError, Begun, ImportContext, Layout, Listing, MembersItem, Rows, Unit};
use crate::canonical_json::{Json, ObjectWriter};
use crate::jsonl::{FieldPath, Members};
use crate::record::fields::describe;
use crate::record::{Locator, NewRecord};

/// OpenCompass predictions, one JSON file per dataset.
pub const ADAPTER: super::Adapter = super::Adapter::new(
    "opencompass",
    "OpenCompass output (outputs/<timestamp>/ or one predictions/<model>/<abbr>.json)",
    "opencompass/1",
    super::Reader::Items(
        super::Structured::new(layout, begin, kit::normalize_members::<Dataset>)
            .with_units(units)
            .with_finish(finish),
    ),
);

/// The rotations of one question in a circular evaluation of four options, when the
/// results name no `more_<k>_circular` to tell (one rotation per option).
pub const ROTATIONS: u64 = 4;

/// The column of a dataset file holding the id, unless `--id-field` names another.
pub const DEFAULT_ID_COLUMN: &str = "id";

const RESULTS: &str = "results";
const IDS: &str = "ids";

fn layout(_: &str) -> Result<Layout, String> {
    Ok(Layout::Rows(Rows::Members))
}

/// Every predictions file is a unit, with its results file.
fn units(listing: &Listing<'_>) -> Result<Vec<Unit>, String> {
    listing.units("holds no predictions/<model>/<abbr>.json", |path| {
        unit(path, listing)
    })
}

/// The unit of `predictions/<model>/<abbr>.json`: its results are
/// `results/<model>/<abbr>.json`.
fn unit(path: &str, listing: &Listing<'_>) -> Result<Option<Unit>, String> {
    let parts: Vec<&str> = path.split('/').collect();
    let n = parts.len();
    let predictions = n >= 3 && parts[n - 3] == "predictions";
    let Some(abbr) = parts[n - 1].strip_suffix(".json").filter(|_| predictions) else {
        return listing.not_a_unit(format!(
            "{path} is not an OpenCompass predictions file (predictions/<model>/<abbr>.json)"
        ));
    };
    let model = parts[n - 2];
    let results = format!("results/{model}/{abbr}.json");
    let header = if listing.folder {
        if listing.files.binary_search(&results).is_err() {
            return Err(format!(
                "{path} has no results file {results}: correctness is only there"
            ));
        }
        results
    } else {
        format!("../../{results}")
    };
    Ok(Some(Unit {
        name: abbr.to_owned(),
        items: path.to_owned(),
        header: vec![(RESULTS, header)],
        takes_ids: true,
    }))
}

/// The results' `details` entry of each position.
type Entries = std::collections::HashMap<u64, Map<String, Value>>;

/// One line of the `--ids` file: its id and, when it has one, its question text.
struct IdLine {
    id: String,
    question: Option<String>,
}

/// What every item of one predictions file needs.
struct Dataset {
    abbr: String,
    benchmark: String,
    /// The results' `details` entry of each position.
    details: Entries,
    /// Which `details` entries an item of the predictions file was joined with (items are
    /// normalized on several threads).
    joined: std::collections::HashMap<u64, AtomicBool>,
    /// Whether the `details` entries carry `correct` at all (free generation does not).
    scored: bool,
    /// A circular evaluation's rotations per question.
    rotations: Option<u64>,
    /// The lines of the dataset file (`--ids`), or why one has no id.
    ids: Option<Vec<Result<IdLine, AdapterError>>>,
    /// Where the results are, for messages (`results/<model>/<abbr>.json`).
    results_file: String,
    model_warning: Option<String>,
}

fn begin(mut header: super::Header, context: &ImportContext<'_>) -> Result<Begun, AdapterError> {
    let root = FieldPath::root();
    let abbr = context
        .source
        .basename
        .strip_suffix(".json")
        .unwrap_or(context.source.basename);
    let results_file = format!("results/{}/{abbr}.json", context.source.folder);
    let results = match header.members.shift_remove(RESULTS) {
        Some(Value::Object(results)) => Some(results),
        _ => None,
    };
    let Some(mut results) = results else {
        return Err(AdapterError::new(
            root,
            format!("{results_file} is not a JSON object: not the results OpenCompass writes"),
        ));
    };
    if context.options.id_field.is_some() && !header.members.contains_key(IDS) {
        return Err(AdapterError::new(
            root,
            "--id-field names the id column of an --ids file, and none was given for this dataset",
        )
        .with_hint(format!("add --ids {abbr}=DATASET.jsonl")));
    }
    let benchmark = super::named_benchmark(
        context,
        Some(abbr),
        "the dataset abbreviation",
        "no benchmark",
    )?;
    let model_warning = super::check_model(
        Some(context.source.folder).filter(|m| !m.is_empty()),
        root.clone(),
        "the OpenCompass model (the predictions/<model>/ folder)",
        context,
    )?;
    // Moved out, not copied: a results file of numbers held as a tree takes tens of times
    // its size, and a copy of its details twice that.
    let (details, scored) = details_by_position(results.shift_remove("details"), &results_file)?;
    let ids = header
        .members
        .get(IDS)
        .map(|lines| id_lines(lines, context));
    let joined = details
        .keys()
        .map(|&position| (position, AtomicBool::new(false)))
        .collect();
    Ok(Begun {
        state: Box::new(Dataset {
            abbr: abbr.to_owned(),
            benchmark,
            details,
            joined,
            scored,
            rotations: rotations(&results),
            ids,
            results_file,
            model_warning,
        }),
        producer: producer(abbr, context.source.folder, &results),
    })
}

/// A circular evaluation's rotations per question: one per option, `more_<k>_circular`
/// for k up to the option count - 1.
fn rotations(results: &Map<String, Value>) -> Option<u64> {
    results.contains_key("perf_circular").then(|| {
        results
            .keys()
            .filter_map(|key| {
                key.strip_prefix("more_")?
                    .strip_suffix("_circular")?
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .map_or(ROTATIONS, |k| k + 1)
    })
}

/// The lines of the `--ids` file: each one's id at `--id-field` (else
/// [`DEFAULT_ID_COLUMN`]) and its question, or why it has no id.
fn id_lines(lines: &Value, context: &ImportContext<'_>) -> Vec<Result<IdLine, AdapterError>> {
    let field = context
        .options
        .id_field
        .clone()
        .unwrap_or_else(|| FieldPath::root().key(DEFAULT_ID_COLUMN));
    lines
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(line, value)| {
            let object = value.as_object().cloned().unwrap_or_default();
            stable_id::at_field(&object, &field)
                .map(|found| IdLine {
                    id: found.question_id,
                    question: object
                        .get("question")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                })
                .map_err(|e| {
                    AdapterError::new(
                        e.path,
                        format!(
                            "record {} of the --ids file has no id at {field}: {}",
                            line + 1,
                            e.message
                        ),
                    )
                })
        })
        .collect()
}

/// What the manifest keeps about the producer: the dataset, the model folder and the
/// results' aggregates (in percent, as OpenCompass writes them).
fn producer(abbr: &str, model: &str, results: &Map<String, Value>) -> Map<String, Value> {
    let mut producer = Map::new();
    producer.insert("framework".into(), "opencompass".into());
    producer.insert("dataset".into(), abbr.into());
    producer.insert("model".into(), model.into());
    let aggregates: Map<String, Value> = results
        .iter()
        .filter(|(key, value)| *key != "details" && value.is_number())
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    producer.insert("aggregates_percent".into(), Value::Object(aggregates));
    producer
}

/// The results' `details` by position, from either shape (a list, or an object keyed by
/// position beside a `"type"`), and whether any entry carries `correct`.
fn details_by_position(
    details: Option<Value>,
    results_file: &str,
) -> Result<(Entries, bool), AdapterError> {
    let at = FieldPath::root().key("details");
    let problem = |at: FieldPath, message: String| {
        AdapterError::new(
            FieldPath::root(),
            format!("{results_file}: field {at}: {message}"),
        )
    };
    let mut out = Entries::new();
    match details {
        Some(Value::Array(entries)) => {
            for (position, entry) in entries.into_iter().enumerate() {
                if let Value::Object(entry) = entry {
                    out.insert(position as u64, entry);
                }
            }
        }
        Some(Value::Object(entries)) => {
            for (key, entry) in entries {
                if key == "type" {
                    continue;
                }
                let Ok(position) = key.parse::<u64>() else {
                    return Err(problem(
                        at.key(&key),
                        "a details key that is neither \"type\" nor a position".into(),
                    ));
                };
                if let Value::Object(entry) = entry {
                    out.insert(position, entry);
                }
            }
        }
        None | Some(Value::Null) => {
            return Err(AdapterError::new(
                FieldPath::root(),
                format!("{results_file} has no per-item details"),
            )
            .with_hint(
                "run OpenCompass with --dump-eval-details (the default) so each item is scored; an evaluator that writes none cannot be imported item by item",
            ));
        }
        Some(other) => {
            return Err(problem(
                at,
                format!("expected a list or an object, found {}", describe(&other)),
            ));
        }
    }
    let scored = out.values().any(|e| e.contains_key("correct"));
    Ok((out, scored))
}

/// Checks that a results `details` entry is of this prediction: its `example_abbr` ends
/// with the item's position, its reference is the prediction's gold, and it scores one
/// repeat (`n` = 1).
fn check_join(
    detail: &Map<String, Value>,
    gold: Option<&str>,
    key: &str,
    results_file: &str,
) -> Result<(), AdapterError> {
    let refuse = |what: String| {
        Err(AdapterError::new(
            FieldPath::root(),
            format!("{results_file}: the details entry of item {key} {what}"),
        )
        .with_hint("the results file must be the one OpenCompass wrote with these predictions"))
    };
    for field in ["correct", "pred", "parsed", "refr"] {
        if let Some(Value::Array(values)) = detail.get(field)
            && values.len() > 1
        {
            return refuse(format!(
                "has {} values of {field}: OpenCompass repeated each item (n > 1), and babel reads results of one repeat",
                values.len()
            ));
        }
    }
    if let Some(abbr) = first(detail.get("example_abbr")).and_then(Value::as_str)
        && abbr.rsplit_once('_').map(|(_, n)| n) != Some(key)
    {
        return refuse(format!("is {abbr:?}, another item"));
    }
    let reference = first(detail.get("refr")).or_else(|| detail.get("references"));
    if let (Some(Value::String(reference)), Some(gold)) = (reference, gold)
        && reference != gold
    {
        return refuse(format!(
            "has the reference {reference:?}, but the prediction's gold is {gold:?}"
        ));
    }
    Ok(())
}

/// The first element of a one-element-list field (`pred: ["B"]`), or the field itself.
fn first(value: Option<&Value>) -> Option<&Value> {
    match value {
        Some(Value::Array(values)) => values.first(),
        other => other,
    }
}

impl kit::ItemMembers for Dataset {
    fn record<'a>(
        &'a self,
        item: MembersItem<'a>,
        context: &'a ImportContext<'a>,
    ) -> kit::ItemRecord<'a> {
        let members = item.members;
        let Locator::Pointer(pointer) = item.locator else {
            unreachable!("an OpenCompass item is located by its key")
        };
        let key = pointer.trim_start_matches('/');
        let position: u64 = key.parse().map_err(|_| {
            AdapterError::new(
                FieldPath::root(),
                format!("key {key:?} is not a position (\"0\", \"1\", ...)"),
            )
        })?;
        let mut warnings: Vec<String> = self.model_warning.iter().cloned().collect();
        let (question, rotation) = match self.rotations {
            Some(rotations) => (position / rotations, Some(position % rotations)),
            None => (position, None),
        };
        if let Some(joined) = self.joined.get(&position) {
            joined.store(true, Ordering::Relaxed);
        }
        let gold = Found::top(members, "gold");
        let detail = self.details.get(&position);
        if let Some(detail) = detail {
            let gold = gold.as_ref().and_then(Found::string);
            check_join(detail, gold.as_deref(), key, &self.results_file)?;
        }
        let prompt = Found::top(members, "origin_prompt");
        let identity = self.identity(question, key, prompt.as_ref(), context, &mut warnings)?;
        let Some(detail) = detail else {
            return Err(AdapterError::new(
                FieldPath::root(),
                format!("{} has no details entry for item {key}", self.results_file),
            )
            .with_hint(
                "the results file must be the one OpenCompass wrote with these predictions",
            ));
        };
        let locator = item.locator.clone();
        let mut record =
            kit::new_record(context, Cow::Borrowed(&self.benchmark), identity, locator);
        record.variant_id = Cow::Owned(variant(rotation, context));
        record.correct = correctness(detail, self.scored, &mut warnings);
        reply(members, detail, &mut record, &mut warnings)?;
        record.target = kit::stored(gold)?;
        record.warnings = warnings;
        let mut extra = ObjectWriter::new();
        extra.insert("dataset", Json::string(&self.abbr));
        let at = FieldPath::root().key("extra");
        extra.insert("position", kit::whole(position, at.key("position"))?);
        if let Some(r) = rotation {
            extra.insert("rotation", kit::whole(r, at.key("rotation"))?);
        }
        record.extra = extra.finish();
        Ok(Some(record))
    }
}

/// A results file must score only the items of its predictions file: an entry no item
/// was joined with means the two files are not of one evaluation (or the predictions file
/// lost items), and the scores it holds would silently be left out.
fn finish(begun: &Begun) -> Result<(), AdapterError> {
    let dataset: &Dataset = begun
        .state
        .downcast_ref()
        .expect("begun by the OpenCompass adapter");
    let mut unjoined: Vec<u64> = dataset
        .joined
        .iter()
        .filter(|(_, joined)| !joined.load(Ordering::Relaxed))
        .map(|(&position, _)| position)
        .collect();
    if unjoined.is_empty() {
        return Ok(());
    }
    unjoined.sort_unstable();
    let shown: Vec<String> = unjoined.iter().take(5).map(u64::to_string).collect();
    let more = match unjoined.len() {
        n if n > 5 => format!(" and {} more", n - 5),
        _ => String::new(),
    };
    let items = match unjoined.len() {
        1 => "an item".to_owned(),
        n => format!("{n} items"),
    };
    Err(AdapterError::new(
        FieldPath::root(),
        format!(
            "{} scores {items} the predictions file does not hold (details entry {}{more})",
            dataset.results_file,
            shown.join(", ")
        ),
    )
    .with_hint("the results file must be the one OpenCompass wrote with these predictions"))
}

impl Dataset {
    /// The question ID of the item at `key`, question `question` of the dataset: line
    /// `question` of the `--ids` file (whose question the prompt must contain), else the
    /// run-local position.
    fn identity(
        &self,
        question: u64,
        key: &str,
        prompt: Option<&Found<'_>>,
        context: &ImportContext<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<QuestionIdentity, AdapterError> {
        let Some(ids) = &self.ids else {
            warnings.push(format!(
                "item {key} is OpenCompass's position (it writes no dataset id): run-local, it never pairs; --ids {}=DATASET.jsonl names the items",
                self.abbr
            ));
            return Ok(stable_id::run_local(context.source, question));
        };
        match ids.get(question as usize) {
            Some(Ok(line)) => {
                // The prompt's text only where a question is to be found in it.
                if let Some(asked) = &line.question
                    && let Some(prompt) = prompt.and_then(Found::string)
                    && !prompt.contains(asked.as_str())
                {
                    return Err(AdapterError::new(
                        FieldPath::root(),
                        format!(
                            "record {} of the --ids file of {} asks {asked:?}, which the prompt of item {key} does not contain",
                            question + 1,
                            self.abbr
                        ),
                    )
                    .with_hint("give the dataset file the run read, whole and in its order: record i names question i"));
                }
                Ok(QuestionIdentity::stable(line.id.clone()))
            }
            Some(Err(error)) => Err(error.clone()),
            None => Err(AdapterError::new(
                FieldPath::root(),
                format!(
                    "item {key} is question {question}, but the --ids file of {} has {} lines",
                    self.abbr,
                    ids.len()
                ),
            )
            .with_hint("give the dataset file the run read, whole: line i names item i")),
        }
    }
}

/// A circular evaluation's rotation is a variant of its own (`circular-<r>`, after
/// `--variant` when given).
fn variant(rotation: Option<u64>, context: &ImportContext<'_>) -> String {
    match (rotation, &context.options.variant) {
        (Some(r), Some(variant)) => format!("{variant}-circular-{r}"),
        (Some(r), None) => format!("circular-{r}"),
        (None, Some(variant)) => variant.clone(),
        (None, None) => kit::ORIGINAL.to_owned(),
    }
}

/// `correct` from the details entry's `correct`, unknown where the evaluator wrote none.
fn correctness(
    detail: &Map<String, Value>,
    scored: bool,
    warnings: &mut Vec<String>,
) -> Option<bool> {
    match first(detail.get("correct")) {
        Some(Value::Bool(correct)) => Some(*correct),
        None if !scored => {
            warnings.push(
                "the evaluator wrote no per-item correct for this dataset (only its aggregate): correctness is unknown"
                    .into(),
            );
            None
        }
        other => {
            warnings.push(format!(
                "details correct is {}, not true or false: correctness is unknown",
                other.map_or("missing".into(), describe)
            ));
            None
        }
    }
}

/// What the model was asked and answered: a perplexity evaluation's prompt and
/// perplexity per label, else the prompt and the reply; the prediction is the option the
/// evaluator parsed from the reply (flagged when the reply does not contain it), else the
/// reply.
fn reply<'a>(
    members: &'a Members,
    detail: &Map<String, Value>,
    record: &mut NewRecord<'a>,
    warnings: &mut Vec<String>,
) -> Result<(), AdapterError> {
    let reply = Found::top(members, "prediction");
    let parsed = first(detail.get("parsed"));
    if let (Some(Value::String(letter)), Some(text)) =
        (parsed, reply.as_ref().and_then(Found::string))
        && !text.contains(letter.as_str())
    {
        warnings.push(format!(
            "the evaluator mapped the reply {text:?} to option {letter}, a letter the reply does not contain (OpenCompass's option-similarity fallback maps any reply to some option)"
        ));
    }
    let labels = || {
        members.iter().filter_map(|member| {
            let label = member.key.strip_prefix("label: ")?;
            Some((label, Found::top(members, member.key)?))
        })
    };
    let mut input = ObjectWriter::new();
    let ppl = labels().next().is_some();
    if ppl {
        let mut prompts = ObjectWriter::new();
        let mut perplexities = ObjectWriter::new();
        for (label, value) in labels() {
            if let Some(prompt) = value.key("prompt") {
                prompts.insert(label, prompt.stored()?);
            }
            if let Some(perplexity) = value.key("PPL") {
                perplexities.insert(label, perplexity.stored()?);
            }
        }
        input.insert("prompts", prompts.finish());
        let mut scores = ObjectWriter::new();
        scores.insert("ppl", perplexities.finish());
        record.scores = scores.finish();
    } else if let Some(prompt) = Found::top(members, "origin_prompt") {
        input.insert("prompt", prompt.stored()?);
    }
    record.input = input.finish();
    record.prediction = match parsed {
        Some(parsed) => kit::stored_tree("prediction", parsed)?,
        None => kit::stored(reply.clone())?,
    };
    if !ppl {
        record.response = kit::stored(reply)?;
    }
    Ok(())
}
