//! The harness adapter: lm-evaluation-harness `samples_<task>_<date>.jsonl` lines (written
//! by `--log_samples`, 0.4.x), one record per line, that is per (doc, filter).
//!
//! Owns the harness rules of the data contract: metric names with top-level values or a
//! metric object; correctness only from a binary metric (`acc`, `exact_match`, or the run's
//! `correctness_metric`), never coerced; likelihood pairs written as strings converted to
//! numbers in `scores` while the original responses stay in `response`; no multiple-choice
//! winner inferred from likelihoods; the task name read from the file name. The field
//! mapping is documented in FORMAT.md ("The harness adapter"). No filesystem access.

use std::borrow::Cow;

use super::kit::describe;
use super::{AdapterError, ImportContext, JsonLine, LineFields, RunContext, kit, stable_id};
use crate::canonical_json::{
    Json, JsonKind, ObjectWriter, integral_fraction, object_members, short_fraction,
};
use crate::jsonl::FieldPath;
use crate::record::{DEFAULT_FILTER, Locator, NewRecord};

/// lm-evaluation-harness `samples_<task>_<date>.jsonl` (`--log_samples`).
pub const ADAPTER: super::Adapter = super::Adapter::new(
    "harness",
    "lm-evaluation-harness samples_<task>_<date>.jsonl (--log_samples)",
    "harness/1",
    super::Reader::Lines(normalize),
)
.with_source_check(check_source);

/// The binary metrics that set `correct` when the run names no `correctness_metric`, in
/// the order they are looked for.
pub const DEFAULT_CORRECTNESS_METRICS: [&str; 2] = ["acc", "exact_match"];

/// The task name in a harness samples file name: `samples_<task>_<date_id>.jsonl`, where
/// the date looks like `2026-12-02T12-39-41.211128` (the fraction may be missing) and the
/// task may itself contain underscores. `None` for any other name.
pub fn task_from_file_name(name: &str) -> Option<&str> {
    let stem = name.strip_prefix("samples_")?.strip_suffix(".jsonl")?;
    let (task, date) = stem.rsplit_once('_')?;
    (!task.is_empty() && is_date_id(date)).then_some(task)
}

/// `datetime.now().isoformat()` with `:` replaced by `-`, as the harness names its files.
fn is_date_id(text: &str) -> bool {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd-dd-dd";
    let (time, fraction) = match text.split_once('.') {
        Some((time, fraction)) => (time, Some(fraction)),
        None => (text, None),
    };
    time.len() == SHAPE.len()
        && time.bytes().zip(SHAPE).all(|(byte, shape)| match shape {
            b'd' => byte.is_ascii_digit(),
            literal => byte == *literal,
        })
        && fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

/// Refuses a file whose benchmark cannot be settled (the same for all of its lines).
pub fn check_source(context: &ImportContext<'_>) -> Result<(), AdapterError> {
    let name = context.source.basename;
    if name.starts_with("results") && name.ends_with(".json") {
        return Err(AdapterError::new(
            FieldPath::root(),
            format!("{name} looks like the harness's aggregate results file, not per-sample output"),
        )
        .with_hint("import the samples_*.jsonl files, and keep the results file with --attach results_*.json"));
    }
    benchmark(context).map(drop)
}

/// Normalizes one harness sample line into one record.
pub fn normalize<'a>(
    line: JsonLine<'a>,
    context: &'a ImportContext<'a>,
    out: &mut Vec<NewRecord<'a>>,
) -> Result<(), AdapterError> {
    let run = context.run;
    let options = context.options;
    let identity = stable_id::resolve(
        line.members,
        options.id_field.as_ref(),
        context.source,
        line.number,
    )?;
    let benchmark = benchmark(context)?;
    let mut f = LineFields::new(line.members);
    // Metric values first: the harness writes them after its fixed keys, so a metric that
    // shares a fixed key's name has replaced it on the line.
    let metrics = take_metrics(&mut f)?;
    let doc = f.object("doc", true)?;
    let script = if run.strict {
        Some(strict_script(&doc, &f.path("doc"))?)
    } else {
        None
    };
    let arguments = f.object_or_null("arguments", false)?;
    let target = f.required("target")?;
    let (resps, filtered_resps) = responses(&mut f)?;
    let filter = f
        .defaulted_string("filter")?
        .unwrap_or(Cow::Borrowed(DEFAULT_FILTER));
    check_provenance(&f)?;
    let extra = f.rest(Vec::new())?;

    let mut warnings = Vec::new();
    let rolling = is_rolling(&arguments);
    let scores = match (&filtered_resps, &resps) {
        (Some(filtered), _) => likelihood_scores(filtered, rolling, false, &mut warnings),
        (None, Some(raw)) => likelihood_scores(raw, rolling, true, &mut warnings),
        (None, None) => Json::EMPTY_OBJECT,
    };
    let correct = listed_correctness(&metrics, &f, run, &mut warnings);
    let mut input = ObjectWriter::new();
    input.insert("doc", doc);
    if !arguments.is_null() {
        input.insert("arguments", arguments);
    }
    out.push(NewRecord {
        run_id: Cow::Borrowed(&run.run_id),
        benchmark: Cow::Owned(benchmark),
        script: script.map(Cow::Owned),
        language: options.language.as_deref().map(Cow::Borrowed),
        question_id: Cow::Owned(identity.question_id),
        variant_id: Cow::Borrowed(options.variant.as_deref().unwrap_or(kit::ORIGINAL)),
        filter,
        repeat_id: 0,
        identity_scope: identity.scope,
        model: Cow::Borrowed(&run.model),
        rephrasing_model: None,
        input: input.finish(),
        target,
        // The harness records no prediction of its own, and none is inferred from the
        // largest likelihood: PMI requests and filters can change what a request means.
        prediction: Json::NULL,
        correct,
        scores,
        metrics: metrics.finish(),
        response: response(resps, filtered_resps),
        source_path: Cow::Borrowed(context.source.raw_path),
        locator: Locator::Line(line.number),
        warnings,
        extra,
    });
    Ok(())
}

/// `correct` from the line's binary metric, unknown when that metric is at the top level
/// but no metrics list names it.
fn listed_correctness(
    metrics: &Metrics<'_>,
    f: &LineFields<'_>,
    run: &RunContext,
    warnings: &mut Vec<String>,
) -> Option<bool> {
    match unnamed_metric(metrics, f, run.correctness_metric.as_deref()) {
        Some(name) => {
            warnings.push(format!(
                "{name} is at the top level, but no metrics list names it (lm-evaluation-harness \
                 before 0.4.8 wrote none): it is kept in extra, not read, and correctness is unknown"
            ));
            None
        }
        None => correctness(metrics, run.correctness_metric.as_deref(), warnings),
    }
}

/// The line's raw and filtered responses, of which it needs one at least.
type Responses<'a> = (Option<Json<'a>>, Option<Json<'a>>);

/// Takes the line's `resps` and `filtered_resps`; a line without either is refused.
fn responses<'a>(f: &mut LineFields<'a>) -> Result<Responses<'a>, AdapterError> {
    let resps = f.array("resps")?;
    let filtered_resps = f.array("filtered_resps")?;
    if resps.is_none() && filtered_resps.is_none() {
        return Err(AdapterError::new(
            f.path("resps"),
            "a harness sample needs resps and/or filtered_resps",
        )
        .with_hint("is this a samples_*.jsonl file written by lm_eval --log_samples?"));
    }
    Ok((resps, filtered_resps))
}

/// The record's `response`: the responses as the line gives them.
fn response<'a>(resps: Option<Json<'a>>, filtered_resps: Option<Json<'a>>) -> Json<'static> {
    let mut response = ObjectWriter::new();
    if let Some(resps) = resps {
        response.insert("resps", resps);
    }
    if let Some(filtered) = filtered_resps {
        response.insert("filtered_resps", filtered);
    }
    response.finish()
}

/// A line's metric values, by name in the order the line gives them.
struct Metrics<'a> {
    values: Vec<(Cow<'a, str>, Json<'a>)>,
}

impl<'a> Metrics<'a> {
    fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    fn get(&self, name: &str) -> Option<&Json<'a>> {
        self.values
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    }

    fn names(&self) -> impl Iterator<Item = &str> {
        self.values.iter().map(|(key, _)| key.as_ref())
    }

    fn finish(self) -> Json<'static> {
        let mut object = ObjectWriter::new();
        for (key, value) in self.values {
            object.insert(key, value);
        }
        object.finish()
    }
}

/// `--benchmark`, else the task name in the file name, else the run's benchmark.
fn benchmark(context: &ImportContext<'_>) -> Result<String, AdapterError> {
    let basename = context.source.basename;
    super::named_benchmark(
        context,
        task_from_file_name(basename),
        &format!("the file name {basename}"),
        &format!("no benchmark: {basename:?} is not named samples_<task>_<date>.jsonl"),
    )
}

/// In a strict run the script must come from the dataset row: the harness has no field
/// for it.
fn strict_script(doc: &Json<'_>, doc_path: &FieldPath) -> Result<String, AdapterError> {
    let found = doc.get("script");
    match found.as_ref().and_then(Json::as_string) {
        Some(script) if !script.is_empty() => Ok(script.into_owned()),
        _ => Err(AdapterError::new(
            doc_path.key("script"),
            match found {
                None => "records of a strict benchmark run must name their script".to_owned(),
                Some(other) => format!("expected a non-empty string, found {}", other.describe()),
            },
        )
        .with_hint(
            "the harness writes no script of its own: strict runs need it in the dataset row \
             (doc.script, e.g. \"Latn\"); or convert the samples to canonical records that name it",
        )),
    }
}

/// The metric values of a line: `metrics` as a list of names whose values are top-level
/// keys (harness 0.4.8 and later), or as an object of values.
fn take_metrics<'a>(f: &mut LineFields<'a>) -> Result<Metrics<'a>, AdapterError> {
    let path = f.path("metrics");
    let Some(member) = f.take("metrics") else {
        return Ok(Metrics { values: Vec::new() });
    };
    let listed = member.peek();
    match listed.kind() {
        JsonKind::Null => Ok(Metrics { values: Vec::new() }),
        JsonKind::Object => {
            f.stored("metrics", &member)?;
            let values = object_members(member.value).expect("an object");
            Ok(Metrics { values })
        }
        JsonKind::Array => {
            let names = listed.elements().expect("an array");
            let mut values: Vec<(Cow<'a, str>, Json<'a>)> = Vec::with_capacity(names.len());
            for (i, name) in names.iter().enumerate() {
                let Some(name) = name.as_string() else {
                    return Err(AdapterError::new(
                        path.index(i),
                        format!("expected a metric name, found {}", name.describe()),
                    ));
                };
                if values.iter().any(|(seen, _)| *seen == name) {
                    return Err(AdapterError::new(
                        path.index(i),
                        format!("metric {name:?} is named twice"),
                    ));
                }
                let value = f.json(&name)?.ok_or_else(|| {
                    AdapterError::new(
                        f.path(&name),
                        format!("metrics names {name:?}, but the line has no value for it"),
                    )
                })?;
                values.push((Cow::Owned(name.into_owned()), value));
            }
            Ok(Metrics { values })
        }
        _ => Err(AdapterError::new(
            path,
            format!(
                "expected a list of metric names or an object of metric values, found {}",
                listed.describe()
            ),
        )),
    }
}

/// The fields kept in `extra` that babel reads: `doc_id` and the three hashes.
fn check_provenance(f: &LineFields<'_>) -> Result<(), AdapterError> {
    if let Some(doc_id) = f.peek("doc_id")
        && (doc_id.peek().as_u64().is_none() || doc_id.written_as_fraction)
    {
        return Err(AdapterError::new(
            FieldPath::root().key("doc_id"),
            format!(
                "expected a non-negative integer, found {}",
                describe(&doc_id)
            ),
        ));
    }
    for name in ["doc_hash", "prompt_hash", "target_hash"] {
        if let Some(hash) = f.peek(name)
            && hash.peek().kind() != JsonKind::String
        {
            return Err(AdapterError::new(
                FieldPath::root().key(name),
                format!("expected a string, found {}", hash.peek().describe()),
            ));
        }
    }
    Ok(())
}

/// The correctness metric a line carries only as an unnamed top-level key, as harness
/// versions before 0.4.8 wrote them: which top-level keys are metrics is not guessed.
fn unnamed_metric<'s>(
    metrics: &Metrics<'_>,
    rest: &LineFields<'_>,
    selected: Option<&'s str>,
) -> Option<&'s str> {
    if !metrics.is_empty() {
        return None;
    }
    let kept = |name: &str| rest.remaining().any(|member| member.key == name);
    match selected {
        Some(name) => kept(name).then_some(name),
        None => DEFAULT_CORRECTNESS_METRICS
            .into_iter()
            .find(|name| kept(name)),
    }
}

/// Sets `correct` from the selected binary metric; a nonbinary value is never coerced.
fn correctness(
    metrics: &Metrics<'_>,
    selected: Option<&str>,
    warnings: &mut Vec<String>,
) -> Option<bool> {
    let (name, value) = match selected {
        Some(name) => match metrics.get(name) {
            Some(value) => (name, value),
            None => {
                let present: Vec<&str> = metrics.names().collect();
                warnings.push(format!(
                    "run metadata correctness_metric {name:?} is not among this sample's metrics ({}); correctness unknown",
                    if present.is_empty() { "none".to_owned() } else { present.join(", ") }
                ));
                return None;
            }
        },
        None => DEFAULT_CORRECTNESS_METRICS
            .iter()
            .find_map(|name| metrics.get(name).map(|value| (*name, value)))?,
    };
    let binary = match value.kind() {
        JsonKind::Bool => value.as_bool(),
        JsonKind::Number => match value.as_f64() {
            Some(0.0) => Some(false),
            Some(1.0) => Some(true),
            _ => None,
        },
        _ => None,
    };
    if binary.is_none() {
        warnings.push(match value.kind() {
            JsonKind::Null => format!("metric {name} is null (unknown); correctness unknown"),
            _ => format!(
                "metric {name} has the nonbinary value {}; it is not coerced into correctness",
                value.describe()
            ),
        });
    }
    binary
}

/// A loglikelihood_rolling request has the text as its only argument.
fn is_rolling(arguments: &Json<'_>) -> bool {
    let Some(mut requests) = arguments.iter_members().map(Iterator::peekable) else {
        return false;
    };
    // Read one member at a time: the first request with a second argument settles it,
    // and the long prompts of the others are not walked.
    requests.peek().is_some()
        && requests.all(|(_, request)| {
            request.iter_members().is_some_and(|mut args| {
                args.next().is_some_and(|(key, _)| key == "arg_0") && args.next().is_none()
            })
        })
}

/// The one element of an array of one; `None` for any other value.
fn only_element<'t>(value: &'t Json<'_>) -> Option<Json<'t>> {
    let mut elements = value.iter_elements()?;
    match (elements.next(), elements.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

/// The supported likelihood responses as numbers, in request order: `loglikelihood` (and
/// `is_greedy` for `[logprob, is_greedy]` pairs). Each entry is one request's response
/// (`filtered_resps`), or a list with one response per repeat (`resps`, converted only
/// when each request has exactly one). Anything else yields no scores (`{}`): the
/// responses are kept in `response` either way. Read from the canonical text and written
/// as canonical text (`is_greedy` sorts before `loglikelihood`), without a tree.
fn likelihood_scores(
    entries: &Json<'_>,
    rolling: bool,
    repeated: bool,
    warnings: &mut Vec<String>,
) -> Json<'static> {
    if entries.as_str() == "[]" {
        return Json::EMPTY_OBJECT;
    }
    // Room for every number and flag: a request's canonical text is about as long as its
    // number (`["-6.1297","False"]`) and at least twice its flag. Elements are walked once,
    // not collected: a Vec for each request was a third of this function.
    let mut loglikelihood = String::with_capacity(24 + entries.as_str().len());
    loglikelihood.push_str("\"loglikelihood\":[");
    let mut is_greedy = String::with_capacity(24 + entries.as_str().len() / 2);
    is_greedy.push_str("{\"is_greedy\":[");
    let mut greedy_count = 0;
    let source = if repeated { "resps" } else { "filtered_resps" };
    let mut ryu = ryu_js::Buffer::new();
    let entries = entries
        .iter_elements()
        .expect("resps and filtered_resps are arrays");
    for (i, entry) in entries.enumerate() {
        let repeats;
        let entry = match repeated {
            false => &entry,
            true => match only_element(&entry) {
                Some(found) => {
                    repeats = found;
                    &repeats
                }
                None => return Json::EMPTY_OBJECT,
            },
        };
        let (first, second);
        let (text, greedy) = match entry.kind() {
            JsonKind::Array => {
                let mut pair = entry.iter_elements().expect("an array");
                (first, second) = match (pair.next(), pair.next(), pair.next()) {
                    (Some(first), Some(second), None) => (first, second),
                    _ => return Json::EMPTY_OBJECT,
                };
                let (Some(text), Some(greedy)) = (first.as_string(), second.as_string()) else {
                    return Json::EMPTY_OBJECT;
                };
                match greedy.as_ref() {
                    "True" => (text, Some(true)),
                    "False" => (text, Some(false)),
                    _ => return Json::EMPTY_OBJECT,
                }
            }
            JsonKind::String if rolling => (entry.as_string().expect("a string"), None),
            _ => return Json::EMPTY_OBJECT,
        };
        if i > 0 {
            loglikelihood.push(',');
        }
        if let Some((whole, fraction)) = plain_decimal(&text) {
            loglikelihood.push_str(whole);
            if !fraction.is_empty() {
                loglikelihood.push('.');
                loglikelihood.push_str(fraction);
            }
        } else if let Ok(number) = text.parse::<f64>() {
            if number.is_finite() {
                loglikelihood.push_str(ryu.format_finite(number));
            } else {
                warnings.push(format!(
                    "likelihood {text:?} of request {i} ({source}) is not finite; stored as null in scores"
                ));
                loglikelihood.push_str("null");
            }
        } else {
            return Json::EMPTY_OBJECT;
        }
        if let Some(greedy) = greedy {
            if greedy_count > 0 {
                is_greedy.push(',');
            }
            is_greedy.push_str(if greedy { "true" } else { "false" });
            greedy_count += 1;
        }
    }
    // Sized once: appending the likelihoods to the flags' buffer grew it.
    let mut scores = String::with_capacity(is_greedy.len() + loglikelihood.len() + 4);
    match greedy_count {
        0 => scores.push('{'),
        _ => {
            scores.push_str(&is_greedy);
            scores.push_str("],");
        }
    }
    scores.push_str(&loglikelihood);
    scores.push_str("]}");
    Json::canonical_owned(scores)
}

/// The canonical text of a likelihood written as a JSON number with a fraction and no
/// exponent (`-6.1297`, `-12.0`: how the harness writes them) whose double ECMAScript
/// writes as that decimal: its whole part and its fraction (empty for a whole number),
/// read without a parse ([`short_fraction`], [`integral_fraction`]). `None` for any other
/// text, which is parsed and written through `ryu-js` as before (a fifth of this
/// function's time was the parse and the formatting).
fn plain_decimal(text: &str) -> Option<(&str, &str)> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = digits.split_once('.')?;
    let json_whole = whole == "0"
        || whole.starts_with(|c: char| matches!(c, '1'..='9'))
            && whole.bytes().all(|b| b.is_ascii_digit());
    if !json_whole || fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    short_fraction(text).or_else(|| integral_fraction(text).map(|whole| (whole, "")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::kit::{fixtures, records_of_line};
    use crate::adapters::{AdapterOptions, RunContext};
    use crate::jsonl::NonFinitePolicy;
    use crate::record::{IdentityScope, Record};
    use serde_json::{Value, json};

    const SAMPLES: &str = "samples_babel_mc_rephrased_2026-12-02T12-52-46.563574.jsonl";

    fn run() -> RunContext {
        fixtures::run("r1", "dummy")
    }

    fn import_text(
        text: &str,
        run: &RunContext,
        options: &AdapterOptions,
        basename: &str,
    ) -> Result<Record, AdapterError> {
        let context = fixtures::context(run, options, "runs/r1/raw/0001-s.jsonl", basename);
        let mut out = records_of_line(normalize, text, 11, NonFinitePolicy::Null, &context)?;
        assert_eq!(out.len(), 1);
        Ok(out.remove(0))
    }

    fn import(value: Value) -> Result<Record, AdapterError> {
        import_text(
            &value.to_string(),
            &run(),
            &AdapterOptions::default(),
            SAMPLES,
        )
    }

    /// Line 1 of the real babel_mc_rephrased samples file (lm-eval 0.4.13), verbatim.
    const MC_LINE: &str = r#"{"doc_id": 0, "doc": {"id": "q001", "question": "Which city serves as France's capital?", "choices": ["Paris", "Lyon", "Marseille", "Nice"], "answer": 0, "meta": {"lang": "en", "variant": "rephrased", "difficulty": 2, "weight": 0.75, "verified": false}}, "target": "0", "arguments": {"gen_args_0": {"arg_0": "Question: Which city serves as France's capital?\nAnswer:", "arg_1": " Paris"}, "gen_args_1": {"arg_0": "Question: Which city serves as France's capital?\nAnswer:", "arg_1": " Lyon"}, "gen_args_2": {"arg_0": "Question: Which city serves as France's capital?\nAnswer:", "arg_1": " Marseille"}, "gen_args_3": {"arg_0": "Question: Which city serves as France's capital?\nAnswer:", "arg_1": " Nice"}}, "resps": [[["-0.14425508335743753", "False"]], [["-0.11779223807836836", "False"]], [["-0.30848182410193437", "False"]], [["-0.8161263591200314", "False"]]], "filtered_resps": [["-0.14425508335743753", "False"], ["-0.11779223807836836", "False"], ["-0.30848182410193437", "False"], ["-0.8161263591200314", "False"]], "filter": "none", "metrics": ["acc", "acc_norm"], "doc_hash": "a702955f804d727fa6a655701fa793fdcbcd2076979ec3df2d004ec1e1192db6", "prompt_hash": "334c56c8cb826a86e7e807618985337d366cdf468b2ecd8fd7065596b40208b7", "target_hash": "5feceb66ffc86f38d952786c6d696c79c2dbc239dd4e91b46729d73a27fb57e9", "acc": 0.0, "acc_norm": 1.0}"#;

    fn mc() -> Value {
        serde_json::from_str(MC_LINE).unwrap()
    }

    /// Line 8 of the real babel_gen samples file (filter strict-match), verbatim.
    const GEN_LINE: &str = r#"{"doc_id": 7, "doc": {"id": "g008", "question": "Capital of Türkiye?", "answer": "Ankara"}, "target": "Ankara", "arguments": {"gen_args_0": {"arg_0": "Q: Capital of Türkiye?\nA:", "arg_1": {"until": ["\n\n", "Q:"], "do_sample": false, "temperature": 0.0, "max_gen_toks": 32}}}, "resps": [["lol"]], "filtered_resps": ["[invalid]"], "filter": "strict-match", "metrics": ["exact_match"], "doc_hash": "6b344aa4d30090adf432abd51947ffcdfb5beb230affa6a03bdf4be179cfacaf", "prompt_hash": "b5e37ebe2bef831e2b637af7abf9cd500751e9445120d7b613ab64b5a9bb9038", "target_hash": "3842353b0bd4a4954e94fa1be3bc26ee035652afd6bc3beb2632cfe8de034810", "exact_match": 0.0}"#;

    #[test]
    fn the_task_name_is_the_file_name_without_samples_and_the_date() {
        assert_eq!(task_from_file_name(SAMPLES), Some("babel_mc_rephrased"));
        assert_eq!(
            task_from_file_name("samples_babel_gen_2026-12-02T12-39-41.jsonl"),
            Some("babel_gen"),
            "isoformat drops a zero fraction"
        );
        assert_eq!(
            task_from_file_name("samples_mmlu_abstract_algebra_2026-12-02T12-39-41.211128.jsonl"),
            Some("mmlu_abstract_algebra")
        );
        for other in [
            "samples_babel_gen.jsonl",
            "babel_gen_2026-12-02T12-39-41.jsonl",
            "samples__2026-12-02T12-39-41.jsonl",
            "samples_x_2026-12-02T12-39-41..jsonl",
            "samples_x_2026-12-02 12-39-41.jsonl",
            "samples_x_2026-12-02T12-39-41.json",
        ] {
            assert_eq!(task_from_file_name(other), None, "{other}");
        }
    }

    #[test]
    fn a_real_multiple_choice_line_lands_field_by_field() {
        let record = import(mc()).unwrap();
        assert_eq!(record.benchmark, "babel_mc_rephrased", "from the file name");
        assert_eq!(
            record.question_id, "q001",
            "doc.id, by the automatic lookup"
        );
        assert_eq!(record.identity_scope, IdentityScope::Stable);
        assert_eq!(record.variant_id, "original");
        assert_eq!(record.filter, "none");
        assert_eq!(record.language, None, "no language is guessed");
        assert_eq!(record.input["doc"], mc()["doc"]);
        assert_eq!(record.input["arguments"], mc()["arguments"]);
        assert_eq!(record.target, json!("0"));
        assert_eq!(record.prediction, Value::Null);
        assert_eq!(
            record.response,
            json!({"resps": mc()["resps"], "filtered_resps": mc()["filtered_resps"]}),
            "the original responses are preserved"
        );
        assert_eq!(
            Value::Object(record.metrics.clone()),
            // Stored as canonical text, where RFC 8785 writes 0.0 as 0.
            json!({"acc": 0, "acc_norm": 1})
        );
        assert_eq!(record.extra["doc_id"], 0);
        assert_eq!(record.extra["prompt_hash"], mc()["prompt_hash"]);
        assert_eq!(record.correct, Some(false), "acc 0.0");
        assert!(record.warnings.is_empty());
    }

    #[test]
    fn a_likelihood_read_without_a_parse_is_written_as_ryu_js_writes_its_double() {
        // RFC 8785: numbers are written as ECMAScript writes their double; the fast path
        // must agree with parsing and `ryu-js` wherever it answers.
        let written = |text: &str| match plain_decimal(text) {
            Some((whole, "")) => Some(whole.to_owned()),
            Some((whole, fraction)) => Some(format!("{whole}.{fraction}")),
            None => None,
        };
        for (text, expected) in [
            ("-6.1297", Some("-6.1297")),
            ("-12.0", Some("-12")),
            ("-0.0", Some("0")),
            ("-0.5", Some("-0.5")),
            ("0.000001", Some("0.000001")),
            ("-3.250", Some("-3.25")),
            ("123456789012345.0", Some("123456789012345")),
            ("0.0000001", None),
            ("1234567890123456.5", None),
            ("01.5", None),
            ("+1.5", None),
            ("-.5", None),
            ("1.", None),
            ("1.5e3", None),
            ("1e5", None),
            ("-6", None),
            (" 1.5", None),
            ("1.5 ", None),
            ("", None),
            ("nan", None),
            ("-inf", None),
        ] {
            assert_eq!(written(text).as_deref(), expected, "{text:?}");
        }
        // Decimals of every shape around the edges: signs, whole parts with and without
        // leading zeros, fractions with leading and trailing zeros, 1 to 18 digits.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut answered = 0;
        for _ in 0..200_000 {
            let (a, b) = (next(), next());
            let sign = ["", "-"][(a & 1) as usize];
            let whole = match (a >> 1) % 5 {
                0 => "0".to_owned(),
                1 => format!("0{}", (a >> 8) % 10),
                _ => ((a >> 8) % 10u64.pow(((a >> 40) % 17) as u32 + 1)).to_string(),
            };
            let leading = "0".repeat(((b >> 60) % 8) as usize);
            let digits = ((b >> 4) % 10u64.pow(((b >> 50) % 16) as u32 + 1)).to_string();
            let trailing = "0".repeat(((b >> 56) % 3) as usize);
            let text = format!("{sign}{whole}.{leading}{digits}{trailing}");
            if let Some(fast) = written(&text) {
                answered += 1;
                let number: f64 = text.parse().expect("a decimal");
                assert_eq!(fast, ryu_js::Buffer::new().format_finite(number), "{text}");
            }
        }
        assert!(answered > 50_000, "the fast path answered {answered}");
    }

    #[test]
    fn likelihood_pairs_written_as_strings_become_numbers_and_booleans_in_request_order() {
        // "those supported numeric likelihood values are converted to numbers in scores,
        // while original responses remain preserved."
        let record = import(mc()).unwrap();
        let expected: Vec<f64> = mc()["filtered_resps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|pair| pair[0].as_str().unwrap().parse().unwrap())
            .collect();
        assert_eq!(record.scores["loglikelihood"], json!(expected));
        assert_eq!(
            record.scores["is_greedy"],
            json!([false, false, false, false])
        );
        assert_eq!(
            record.response["filtered_resps"][0][0],
            mc()["filtered_resps"][0][0],
            "kept as the string the harness wrote"
        );
    }

    #[test]
    fn no_multiple_choice_winner_is_inferred_from_the_largest_likelihood() {
        // "the adapter does not infer a multiple-choice winner from the largest observed
        // likelihood." Choice 1 has the largest likelihood here; nothing says it was chosen.
        let mut value = mc();
        value["metrics"] = json!([]);
        let map = value.as_object_mut().unwrap();
        map.shift_remove("acc");
        map.shift_remove("acc_norm");
        let record = import(value).unwrap();
        assert_eq!(record.prediction, Value::Null);
        assert_eq!(record.correct, None);
    }

    #[test]
    fn resps_alone_are_converted_when_each_request_has_one_response() {
        let mut value = mc();
        value
            .as_object_mut()
            .unwrap()
            .shift_remove("filtered_resps");
        let record = import(value).unwrap();
        let second: f64 = mc()["resps"][1][0][0].as_str().unwrap().parse().unwrap();
        assert_eq!(record.scores["loglikelihood"][1], json!(second));
        let mut repeated = mc();
        repeated
            .as_object_mut()
            .unwrap()
            .shift_remove("filtered_resps");
        repeated["resps"][0] = json!([["-1.0", "False"], ["-2.0", "True"]]);
        assert!(import(repeated).unwrap().scores.is_empty());
    }

    #[test]
    fn generated_text_is_not_mistaken_for_a_likelihood() {
        let mut value: Value = serde_json::from_str(GEN_LINE).unwrap();
        value["filtered_resps"] = json!(["4"]);
        let record = import(value).unwrap();
        assert!(record.scores.is_empty(), "{:?}", record.scores);
        assert_eq!(record.response["filtered_resps"], json!(["4"]));
    }

    #[test]
    fn rolling_loglikelihoods_are_converted_and_non_finite_ones_become_null() {
        let value = json!({
            "doc_id": 0, "doc": {"id": "r1", "text": "The quick brown fox."},
            "target": "The quick brown fox.",
            "arguments": {"gen_args_0": {"arg_0": "The quick brown fox."}},
            "resps": [["-0.7795098705788651"]], "filtered_resps": ["-0.7795098705788651"],
            "filter": "none", "metrics": ["word_perplexity"],
            "word_perplexity": [-0.7795098705788651, 9]
        });
        let record = import(value.clone()).unwrap();
        assert_eq!(record.scores["loglikelihood"], json!([-0.7795098705788651]));
        assert!(!record.scores.contains_key("is_greedy"));
        assert_eq!(
            record.metrics["word_perplexity"],
            json!([-0.7795098705788651, 9])
        );
        assert_eq!(record.correct, None);
        let mut infinite = value;
        infinite["filtered_resps"] = json!(["-inf"]);
        let record = import(infinite).unwrap();
        assert_eq!(record.scores["loglikelihood"], json!([null]));
        assert!(record.warnings[0].contains("not finite"));
    }

    /// The scores as the tree path made them: each response read as a serde_json value,
    /// the numbers collected into a map, the map written by `Json::of`.
    fn scores_through_a_tree(entries: &Value, rolling: bool, repeated: bool) -> String {
        let none = || "{}".to_owned();
        let Value::Array(entries) = entries else {
            unreachable!()
        };
        let (mut loglikelihood, mut is_greedy) = (Vec::new(), Vec::new());
        for entry in entries {
            let entry = match (repeated, entry) {
                (false, entry) => entry,
                (true, Value::Array(repeats)) if repeats.len() == 1 => &repeats[0],
                (true, _) => return none(),
            };
            let (text, greedy) = match entry {
                Value::Array(pair) if pair.len() == 2 => match (&pair[0], &pair[1]) {
                    (Value::String(text), Value::String(greedy)) => match greedy.as_str() {
                        "True" => (text, Some(true)),
                        "False" => (text, Some(false)),
                        _ => return none(),
                    },
                    _ => return none(),
                },
                Value::String(text) if rolling => (text, None),
                _ => return none(),
            };
            let Ok(number) = text.parse::<f64>() else {
                return none();
            };
            loglikelihood
                .push(serde_json::Number::from_f64(number).map_or(Value::Null, Value::Number));
            is_greedy.extend(greedy.map(Value::Bool));
        }
        let mut scores = serde_json::Map::new();
        if !loglikelihood.is_empty() {
            scores.insert("loglikelihood".into(), Value::Array(loglikelihood));
        }
        if !is_greedy.is_empty() {
            scores.insert("is_greedy".into(), Value::Array(is_greedy));
        }
        Json::of(&Value::Object(scores))
            .unwrap()
            .as_str()
            .to_owned()
    }

    #[test]
    fn scores_written_as_text_are_the_bytes_the_tree_path_wrote() {
        let cases = [
            json!([]),
            json!([
                ["-0.5", "False"],
                ["-0", "True"],
                ["1e21", "False"],
                ["12.0", "True"]
            ]),
            json!([
                ["-1e-7", "False"],
                ["0.1", "True"],
                ["123456789012345678", "False"]
            ]),
            json!([["nan", "False"], ["-inf", "True"], ["-2.5", "False"]]),
            json!([["-0.5", "maybe"]]),
            json!([["-0.5", "False"], ["not a number", "False"]]),
            json!([["inf", "False"], ["x", "False"]]),
            json!([["-0.5", "False", "extra"]]),
            json!([["-0.5", false]]),
            json!(["-0.77", "NaN", "3"]),
            json!([["-0.5", "True"], "-0.25"]),
            json!([[["-0.5", "True"]], [["-1.5", "False"]]]),
            json!([[["-0.5", "True"], ["-0.6", "True"]]]),
            json!([[], [["-1.5", "False"]]]),
            json!(["lol"]),
            json!([null, 1, {"a": "b"}]),
        ];
        for entries in cases {
            for rolling in [false, true] {
                for repeated in [false, true] {
                    let mut warnings = Vec::new();
                    let text = Json::of(&entries).unwrap();
                    let scores = likelihood_scores(&text, rolling, repeated, &mut warnings);
                    assert_eq!(
                        scores.as_str(),
                        scores_through_a_tree(&entries, rolling, repeated),
                        "{entries} rolling {rolling} repeated {repeated}"
                    );
                }
            }
        }
    }

    #[test]
    fn exact_match_sets_correctness_by_default_and_filters_are_kept() {
        let record = import_text(
            GEN_LINE,
            &run(),
            &AdapterOptions::default(),
            "samples_babel_gen_2026-12-02T12-52-40.515719.jsonl",
        )
        .unwrap();
        assert_eq!(record.benchmark, "babel_gen");
        assert_eq!(record.filter, "strict-match");
        assert_eq!(record.correct, Some(false));
        let mut hit: Value = serde_json::from_str(GEN_LINE).unwrap();
        hit["exact_match"] = json!(1);
        assert_eq!(
            import(hit).unwrap().correct,
            Some(true),
            "an integer 1 is binary"
        );
    }

    #[test]
    fn correctness_metric_selects_another_binary_metric() {
        // "Set run metadata correctness_metric to choose another explicit binary metric,
        // for example acc_norm."
        let mut by_norm = run();
        by_norm.correctness_metric = Some("acc_norm".into());
        let record = import_text(MC_LINE, &by_norm, &AdapterOptions::default(), SAMPLES).unwrap();
        assert_eq!(record.correct, Some(true), "acc_norm 1.0, while acc is 0.0");
        let mut missing = run();
        missing.correctness_metric = Some("f1".into());
        let record = import_text(MC_LINE, &missing, &AdapterOptions::default(), SAMPLES).unwrap();
        assert_eq!(record.correct, None);
        assert!(record.warnings[0].contains("\"f1\" is not among"));
    }

    #[test]
    fn a_nonbinary_value_is_not_coerced_into_correctness() {
        // "A nonbinary value is not coerced into correctness."
        for value in [
            json!(0.5),
            json!(-0.445),
            json!("1"),
            json!([1, 2]),
            json!(null),
        ] {
            let mut line = mc();
            line["acc"] = value.clone();
            let record = import(line).unwrap();
            assert_eq!(record.correct, None, "{value}");
            assert_eq!(record.metrics["acc"], value, "kept as given");
            assert_eq!(record.warnings.len(), 1, "{value}: {:?}", record.warnings);
        }
        let mut by_perplexity = run();
        by_perplexity.correctness_metric = Some("perplexity".into());
        let ll = r#"{"doc_id": 0, "doc": {"id": "l001"}, "target": " mat", "resps": [[["-0.19", "False"]]], "filtered_resps": [["-0.19", "False"]], "filter": "none", "metrics": ["perplexity", "acc"], "perplexity": -0.19, "acc": 0}"#;
        let record = import_text(ll, &by_perplexity, &AdapterOptions::default(), SAMPLES).unwrap();
        assert_eq!(record.correct, None);
        assert!(record.warnings[0].contains("nonbinary"));
    }

    #[test]
    fn a_correctness_metric_no_metrics_list_names_is_kept_with_a_warning() {
        // "By default, a binary acc or exact_match populates correct": only a metric the
        // line names is read. Harness 0.4.4 wrote `acc` at the top level with no `metrics`.
        let mut line = mc();
        line.as_object_mut().unwrap().remove("metrics");
        let record = import(line.clone()).unwrap();
        assert_eq!(record.correct, None);
        assert!(record.metrics.is_empty());
        assert_eq!(
            record.extra["acc"],
            json!(0),
            "kept as given (canonically, 0.0 is 0)"
        );
        assert_eq!(record.warnings.len(), 1, "{:?}", record.warnings);
        assert!(
            record.warnings[0].contains("acc is at the top level, but no metrics list names it")
        );

        let mut by_norm = run();
        by_norm.correctness_metric = Some("acc_norm".into());
        let text = line.to_string();
        let record = import_text(&text, &by_norm, &AdapterOptions::default(), SAMPLES).unwrap();
        assert_eq!(record.correct, None);
        assert_eq!(record.warnings.len(), 1, "{:?}", record.warnings);
        assert!(record.warnings[0].starts_with("acc_norm is at the top level"));
    }

    #[test]
    fn metrics_may_be_an_object_of_values() {
        // "The harness's metrics may be a list of names whose values are at the top level
        // or a dictionary."
        let mut value = mc();
        value["metrics"] = json!({"acc": 1.0, "acc_norm": 0.0});
        let map = value.as_object_mut().unwrap();
        map.shift_remove("acc");
        map.shift_remove("acc_norm");
        let record = import(value).unwrap();
        assert_eq!(record.correct, Some(true));
        assert_eq!(record.metrics["acc_norm"], 0.0);
    }

    /// "Metric values first: the harness writes them after its fixed keys, so a metric
    /// that shares a fixed key's name has replaced it on the line": what the metrics list
    /// names is a metric, not the fixed key, and is not checked as one.
    #[test]
    fn a_metric_named_like_a_fixed_key_is_a_metric() {
        for (name, value) in [
            ("doc_id", json!(1.5)),
            ("doc_hash", json!(7)),
            ("filter", json!(null)),
        ] {
            let mut line = mc();
            line["metrics"] = json!(["acc", name]);
            line[name] = value.clone();
            let record = import(line).unwrap_or_else(|error| panic!("{name}: {error:?}"));
            assert_eq!(record.metrics[name], value, "{name}");
        }
    }

    #[test]
    fn a_named_metric_without_its_value_and_bad_types_are_rejected() {
        let mut missing = mc();
        missing.as_object_mut().unwrap().shift_remove("acc_norm");
        assert_eq!(import(missing).unwrap_err().path.to_string(), "acc_norm");
        let cases = [
            ("metrics", json!("acc"), "metrics"),
            ("metrics", json!(["acc", 3]), "metrics[1]"),
            ("metrics", json!(["acc", "acc"]), "metrics[1]"),
            ("doc", json!("text"), "doc"),
            ("resps", json!("lol"), "resps"),
            ("filter", json!(3), "filter"),
            ("doc_id", json!(-1), "doc_id"),
            ("doc_hash", json!(5), "doc_hash"),
            ("arguments", json!([1]), "arguments"),
        ];
        for (field, bad, path) in cases {
            let mut value = mc();
            value[field] = bad;
            assert_eq!(import(value).unwrap_err().path.to_string(), path, "{field}");
        }
        let mut no_responses = mc();
        let map = no_responses.as_object_mut().unwrap();
        map.shift_remove("resps");
        map.shift_remove("filtered_resps");
        assert_eq!(import(no_responses).unwrap_err().path.to_string(), "resps");
        let mut no_doc = mc();
        no_doc.as_object_mut().unwrap().shift_remove("doc");
        assert_eq!(import(no_doc).unwrap_err().path.to_string(), "doc");
    }

    #[test]
    fn benchmark_and_variant_come_from_the_options_before_the_file_name() {
        let options = AdapterOptions {
            benchmark: Some("babel_mc".into()),
            variant: Some("rephrased".into()),
            language: Some("mul".into()),
            ..Default::default()
        };
        let record = import_text(MC_LINE, &run(), &options, SAMPLES).unwrap();
        assert_eq!(record.benchmark, "babel_mc");
        assert_eq!(record.variant_id, "rephrased");
        assert_eq!(record.language.as_deref(), Some("mul"));
        let mut named = run();
        named.benchmark = Some("mmlu".into());
        let error = import_text(MC_LINE, &named, &AdapterOptions::default(), SAMPLES).unwrap_err();
        assert!(error.message.contains("contradicts the run's benchmark"));
        let record = import_text(MC_LINE, &named, &AdapterOptions::default(), "x.jsonl").unwrap();
        assert_eq!(record.benchmark, "mmlu", "no task in the name: the run's");
        let error =
            import_text(MC_LINE, &run(), &AdapterOptions::default(), "x.jsonl").unwrap_err();
        assert!(error.hint.unwrap().contains("--benchmark"));
        let options = AdapterOptions::default();
        let context = fixtures::context(&named, &options, "runs/r1/raw/0001-s.jsonl", SAMPLES);
        assert!(check_source(&context).is_err(), "checked once per file too");
    }

    #[test]
    fn selecting_doc_id_marks_the_identity_run_local() {
        // "Selecting doc_id still marks an identity as run-local because harness
        // enumeration is not a persistent identity."
        let options = AdapterOptions {
            id_field: Some(FieldPath::parse_dotted("doc_id").unwrap()),
            ..Default::default()
        };
        let record = import_text(MC_LINE, &run(), &options, SAMPLES).unwrap();
        assert_eq!(record.question_id, "0");
        assert_eq!(record.identity_scope, IdentityScope::RunLocal);
        let mut anonymous = mc();
        anonymous["doc"].as_object_mut().unwrap().shift_remove("id");
        let record = import(anonymous).unwrap();
        assert_eq!(record.question_id, "runs/r1/raw/0001-s.jsonl:11");
        assert_eq!(record.identity_scope, IdentityScope::RunLocal);
        assert_eq!(record.correct, Some(false), "still scored");
    }

    #[test]
    fn strict_runs_take_the_script_from_the_dataset_row_or_refuse() {
        let mut strict = run();
        strict.strict = true;
        let error = import_text(MC_LINE, &strict, &AdapterOptions::default(), SAMPLES).unwrap_err();
        assert_eq!(error.path.to_string(), "doc.script");
        assert!(error.hint.unwrap().contains("doc.script"));
        let mut with_script = mc();
        with_script["doc"]["script"] = json!("Latn");
        let record = import_text(
            &with_script.to_string(),
            &strict,
            &AdapterOptions::default(),
            SAMPLES,
        )
        .unwrap();
        assert_eq!(record.script.as_deref(), Some("Latn"));
        assert_eq!(
            import(with_script).unwrap().script,
            None,
            "outside strict runs doc.script is just dataset content"
        );
    }

    #[test]
    fn a_nan_read_as_null_leaves_correctness_unknown() {
        let text = r#"{"doc_id": 0, "doc": {"id": "n1", "skip": true}, "target": "lol", "resps": [["lol"]], "filtered_resps": ["lol"], "filter": "none", "metrics": ["em_or_nan", "always_nan"], "em_or_nan": NaN, "always_nan": NaN}"#;
        let mut by_em = run();
        by_em.correctness_metric = Some("em_or_nan".into());
        let record = import_text(text, &by_em, &AdapterOptions::default(), SAMPLES).unwrap();
        assert_eq!(record.metrics["em_or_nan"], Value::Null);
        assert_eq!(record.correct, None);
        assert!(record.warnings[0].contains("null (unknown)"));
    }
}
