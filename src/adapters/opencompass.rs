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

use serde_json::{Map, Value};

use super::{AdapterError, Begun, ImportContext, Item, Layout, Listing, Rows, Unit, stable_id};
use crate::jsonl::FieldPath;
use crate::record::fields::describe;
use crate::record::{DEFAULT_FILTER, IdentityScope, Record, SCHEMA_VERSION, Source};

/// OpenCompass predictions, one JSON file per dataset.
pub const ADAPTER: super::Adapter = super::Adapter {
    name: "opencompass",
    summary: "OpenCompass output (outputs/<timestamp>/ or one predictions/<model>/<abbr>.json)",
    normalizer_version: "opencompass/1",
    reader: super::Reader::Items(super::Structured {
        layout,
        begin,
        normalize,
        units: Some(units),
    }),
    check_options: super::no_option_rules,
    check_source: super::any_source,
    fixed_variants: &[],
};

/// The variant of every record of a plain evaluation without `--variant`.
pub const ORIGINAL: &str = "original";

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
    let mut units = Vec::new();
    for path in listing.files {
        let parts: Vec<&str> = path.split('/').collect();
        let n = parts.len();
        let predictions = n >= 3 && parts[n - 3] == "predictions";
        let Some(abbr) = parts[n - 1].strip_suffix(".json").filter(|_| predictions) else {
            if listing.folder {
                continue;
            }
            return Err(format!(
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
        units.push(Unit {
            name: abbr.to_owned(),
            items: path.clone(),
            header: vec![(RESULTS, header)],
            takes_ids: true,
        });
    }
    if units.is_empty() {
        return Err("holds no predictions/<model>/<abbr>.json".into());
    }
    Ok(units)
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

fn begin(header: super::Header, context: &ImportContext<'_>) -> Result<Begun, AdapterError> {
    let root = FieldPath::root();
    let abbr = context
        .source
        .basename
        .strip_suffix(".json")
        .unwrap_or(context.source.basename);
    let results_file = format!("results/{}/{abbr}.json", context.source.folder);
    let results = header.members.get(RESULTS).and_then(Value::as_object);
    let Some(results) = results else {
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
    let (details, scored) = details_by_position(results.get("details"), &results_file)?;
    // One rotation per option: `more_<k>_circular` for k up to the option count - 1.
    let rotations = results.contains_key("perf_circular").then(|| {
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
    });
    let ids = header.members.get(IDS).map(|lines| {
        let field = context
            .options
            .id_field
            .clone()
            .unwrap_or_else(|| root.key(DEFAULT_ID_COLUMN));
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
    });
    let mut producer = Map::new();
    producer.insert("framework".into(), "opencompass".into());
    producer.insert("dataset".into(), abbr.into());
    producer.insert("model".into(), context.source.folder.into());
    let aggregates: Map<String, Value> = results
        .iter()
        .filter(|(key, value)| *key != "details" && value.is_number())
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    producer.insert("aggregates_percent".into(), Value::Object(aggregates));
    Ok(Begun {
        state: Box::new(Dataset {
            abbr: abbr.to_owned(),
            benchmark,
            details,
            scored,
            rotations,
            ids,
            results_file,
            model_warning,
        }),
        producer,
    })
}

/// The results' `details` by position, from either shape (a list, or an object keyed by
/// position beside a `"type"`), and whether any entry carries `correct`.
fn details_by_position(
    details: Option<&Value>,
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
            for (position, entry) in entries.iter().enumerate() {
                if let Some(entry) = entry.as_object() {
                    out.insert(position as u64, entry.clone());
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
                        at.key(key),
                        "a details key that is neither \"type\" nor a position".into(),
                    ));
                };
                if let Some(entry) = entry.as_object() {
                    out.insert(position, entry.clone());
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
                format!("expected a list or an object, found {}", describe(other)),
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
    prediction: &Map<String, Value>,
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
    if let (Some(Value::String(reference)), Some(Value::String(gold))) =
        (reference, prediction.get("gold"))
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

fn normalize(
    begun: &Begun,
    item: Item,
    context: &ImportContext<'_>,
    out: &mut Vec<Record>,
) -> Result<(), AdapterError> {
    let dataset: &Dataset = begun.state.downcast_ref().expect("begun by this adapter");
    let object = item.object;
    let crate::record::Locator::Pointer(pointer) = &item.locator else {
        unreachable!("an OpenCompass item is located by its key")
    };
    let key = pointer.trim_start_matches('/');
    let root = FieldPath::root();
    let position: u64 = key.parse().map_err(|_| {
        AdapterError::new(
            root.clone(),
            format!("key {key:?} is not a position (\"0\", \"1\", ...)"),
        )
    })?;
    let mut warnings: Vec<String> = dataset.model_warning.iter().cloned().collect();
    let (question, rotation) = match dataset.rotations {
        Some(rotations) => (position / rotations, Some(position % rotations)),
        None => (position, None),
    };
    let detail = dataset.details.get(&position);
    if let Some(detail) = detail {
        check_join(detail, &object, key, &dataset.results_file)?;
    }
    let prompt = object.get("origin_prompt").and_then(Value::as_str);
    let (question_id, identity_scope) = match &dataset.ids {
        Some(ids) => match ids.get(question as usize) {
            Some(Ok(line)) => {
                if let (Some(asked), Some(prompt)) = (&line.question, prompt)
                    && !prompt.contains(asked.as_str())
                {
                    return Err(AdapterError::new(
                        root,
                        format!(
                            "record {} of the --ids file of {} asks {asked:?}, which the prompt of item {key} does not contain",
                            question + 1,
                            dataset.abbr
                        ),
                    )
                    .with_hint("give the dataset file the run read, whole and in its order: record i names question i"));
                }
                (line.id.clone(), IdentityScope::Stable)
            }
            Some(Err(error)) => return Err(error.clone()),
            None => {
                return Err(AdapterError::new(
                    root,
                    format!(
                        "item {key} is question {question}, but the --ids file of {} has {} lines",
                        dataset.abbr,
                        ids.len()
                    ),
                )
                .with_hint("give the dataset file the run read, whole: line i names item i"));
            }
        },
        None => {
            warnings.push(format!(
                "item {key} is OpenCompass's position (it writes no dataset id): run-local, it never pairs; --ids {}=DATASET.jsonl names the items",
                dataset.abbr
            ));
            (
                format!("{}:{question}", context.source.raw_path),
                IdentityScope::RunLocal,
            )
        }
    };
    let Some(detail) = detail else {
        return Err(AdapterError::new(
            root,
            format!(
                "{} has no details entry for item {key}",
                dataset.results_file
            ),
        )
        .with_hint("the results file must be the one OpenCompass wrote with these predictions"));
    };
    let correct = match first(detail.get("correct")) {
        Some(Value::Bool(correct)) => Some(*correct),
        None if !dataset.scored => {
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
    };
    let reply = object.get("prediction").cloned().unwrap_or(Value::Null);
    let parsed = first(detail.get("parsed")).cloned();
    let ppl = object.keys().any(|k| k.starts_with("label: "));
    if let (Some(Value::String(letter)), Some(text)) = (&parsed, reply.as_str())
        && !text.contains(letter.as_str())
    {
        warnings.push(format!(
            "the evaluator mapped the reply {text:?} to option {letter}, a letter the reply does not contain (OpenCompass's option-similarity fallback maps any reply to some option)"
        ));
    }
    let mut input = Map::new();
    let mut scores = Map::new();
    if ppl {
        let mut prompts = Map::new();
        let mut perplexities = Map::new();
        for (label, value) in object
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("label: ")?, v)))
        {
            if let Some(prompt) = value.get("prompt") {
                prompts.insert(label.into(), prompt.clone());
            }
            if let Some(ppl) = value.get("PPL") {
                perplexities.insert(label.into(), ppl.clone());
            }
        }
        input.insert("prompts".into(), Value::Object(prompts));
        scores.insert("ppl".into(), Value::Object(perplexities));
    } else if let Some(prompt) = object.get("origin_prompt") {
        input.insert("prompt".into(), prompt.clone());
    }
    let variant = match (rotation, &context.options.variant) {
        (Some(r), Some(variant)) => format!("{variant}-circular-{r}"),
        (Some(r), None) => format!("circular-{r}"),
        (None, Some(variant)) => variant.clone(),
        (None, None) => ORIGINAL.to_owned(),
    };
    let mut extra = Map::new();
    extra.insert("dataset".into(), dataset.abbr.clone().into());
    extra.insert("position".into(), position.into());
    if let Some(r) = rotation {
        extra.insert("rotation".into(), r.into());
    }
    out.push(Record {
        schema_version: SCHEMA_VERSION,
        run_id: context.run.run_id.clone(),
        benchmark: dataset.benchmark.clone(),
        script: None,
        language: context.options.language.clone(),
        question_id,
        variant_id: variant,
        filter: DEFAULT_FILTER.to_owned(),
        repeat_id: 0,
        identity_scope,
        model: context.run.model.clone(),
        rephrasing_model: None,
        input: Value::Object(input),
        target: object.get("gold").cloned().unwrap_or(Value::Null),
        prediction: parsed.unwrap_or_else(|| reply.clone()),
        correct,
        scores,
        metrics: Map::new(),
        response: if ppl { Value::Null } else { reply },
        source: Source {
            path: context.source.raw_path.to_owned(),
            locator: item.locator,
        },
        warnings,
        extra,
    });
    Ok(())
}
