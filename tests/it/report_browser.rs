//! The HTML report in a real browser (Debian's headless Chromium, driven by a pinned
//! playwright-core; `.ci/setup-browser` installs both). Opens reports from file://, types
//! searches and toggles every filter, and checks the visible rows and the counts against
//! what this test computes from the fixture itself; checks that no network request is
//! attempted and that a response holding `</script><img ...>` stays text. Then opens a
//! generated 200,000-item report and prints how long the first render and filtering take.
//! The screenshot is kept in target/browser-artifacts/.

use crate::common::{CHROMIUM, Env, chromium, playwright, playwright_modules, tools_or_skip};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use babel::compare::stats::ConfidenceLevel;
use babel::compare::{Side, SideInput, SideLabel, Summary, compare};
use babel::record::{IdentityScope, Record, Source};
use babel::report::{self, ReportFormat};

/// The page prints it as "200,000".
const BIG_ITEMS: usize = 200_000;

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn artifacts() -> PathBuf {
    let dir = manifest_dir().join("target/browser-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One item of the small report as this test models it, from the fixture's lines.
struct ModelItem {
    question_id: String,
    language: Option<String>,
    outcome: &'static str,
    text: String,
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap(),
    }
}

/// (language, question_id, original line, rephrased line) of one fixture question.
type FixtureQuestion = (Option<String>, String, Option<Value>, Option<Value>);

/// The items of the all-outcomes fixture, in identity order, with the page's labels.
fn model_items() -> Vec<ModelItem> {
    let text =
        std::fs::read_to_string(manifest_dir().join("tests/fixtures/compare/all-outcomes.jsonl"))
            .unwrap();
    let mut questions: Vec<FixtureQuestion> = Vec::new();
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        if value["identity_scope"] == "run-local" {
            continue;
        }
        let qid = value["question_id"].as_str().unwrap().to_owned();
        let language = value["language"].as_str().map(str::to_owned);
        let position = match questions.iter().position(|q| q.1 == qid) {
            Some(position) => position,
            None => {
                questions.push((language, qid, None, None));
                questions.len() - 1
            }
        };
        if value["variant_id"] == "original" {
            questions[position].2 = Some(value);
        } else {
            questions[position].3 = Some(value);
        }
    }
    questions.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    questions
        .into_iter()
        .map(|(language, question_id, base, variant)| {
            let correct = |side: &Option<Value>| side.as_ref().map(|v| v["correct"].as_bool());
            let outcome = match (correct(&base), correct(&variant)) {
                (Some(Some(true)), Some(Some(true))) => "both correct",
                (Some(Some(false)), Some(Some(false))) => "both wrong",
                (Some(Some(true)), Some(Some(false))) => "correct → wrong",
                (Some(Some(false)), Some(Some(true))) => "wrong → correct",
                (Some(_), Some(_)) => "unscored",
                (Some(_), None) => "only baseline",
                _ => "only variant",
            };
            // The page searches the question_id, the listed question (the baseline's, else
            // the variant's), and per side its question and the first 256 characters of
            // its target, prediction and response.
            let question =
                |side: &Value| side["input"]["question"].as_str().unwrap_or("").to_owned();
            let listed = base
                .as_ref()
                .or(variant.as_ref())
                .map(question)
                .unwrap_or_default();
            let mut parts = vec![question_id.clone(), listed];
            for side in [&base, &variant].into_iter().flatten() {
                let field = |name: &str| side.get(name).cloned().unwrap_or(Value::Null);
                parts.push(question(side));
                parts.extend(
                    ["target", "prediction", "response"]
                        .map(|n| shown(&field(n)).chars().take(256).collect::<String>()),
                );
            }
            ModelItem {
                question_id,
                language,
                outcome,
                text: parts.join("\n").to_lowercase(),
            }
        })
        .collect()
}

const OUTCOME_LABELS: [&str; 7] = [
    "both correct",
    "both wrong",
    "correct → wrong",
    "wrong → correct",
    "unscored",
    "only baseline",
    "only variant",
];

fn language_label(item: &ModelItem) -> &str {
    item.language.as_deref().unwrap_or("(none)")
}

struct Scenario {
    name: String,
    query: String,
    outcome: Vec<&'static str>,
    language: Vec<&'static str>,
    benchmark: Vec<&'static str>,
}

fn scenario(
    name: &str,
    query: &str,
    outcome: &[&'static str],
    language: &[&'static str],
) -> Scenario {
    Scenario {
        name: name.into(),
        query: query.into(),
        outcome: outcome.to_vec(),
        language: language.to_vec(),
        benchmark: vec![],
    }
}

/// What the page must show for a scenario: the rows, the status, and each chip's count
/// (the items that pass the search and the other two facets).
fn expected(items: &[ModelItem], s: &Scenario) -> Value {
    let query = s.query.to_lowercase();
    let passes = |item: &ModelItem, skip: &str| {
        item.text.contains(&query)
            && (skip == "outcome" || s.outcome.is_empty() || s.outcome.contains(&item.outcome))
            && (skip == "language"
                || s.language.is_empty()
                || s.language.contains(&language_label(item)))
            && (skip == "benchmark" || s.benchmark.is_empty() || s.benchmark.contains(&"golden"))
    };
    let rows: Vec<&str> = items
        .iter()
        .filter(|i| passes(i, ""))
        .map(|i| i.question_id.as_str())
        .collect();
    let languages: BTreeSet<&str> = items.iter().map(language_label).collect();
    let chip = |label: &str, count: usize, pressed: bool| json!({"label": label, "count": count, "pressed": pressed});
    let outcome_chips: Vec<Value> = OUTCOME_LABELS
        .iter()
        .map(|&label| {
            let count = items
                .iter()
                .filter(|i| passes(i, "outcome") && i.outcome == label)
                .count();
            chip(label, count, s.outcome.contains(&label))
        })
        .collect();
    let language_chips: Vec<Value> = languages
        .iter()
        .map(|&label| {
            let count = items
                .iter()
                .filter(|i| passes(i, "language") && language_label(i) == label)
                .count();
            chip(label, count, s.language.contains(&label))
        })
        .collect();
    let benchmark_count = items.iter().filter(|i| passes(i, "benchmark")).count();
    json!({
        "status": format!("Showing {} of {} items", rows.len(), items.len()),
        "rows": rows,
        "chips": {
            "outcome": outcome_chips,
            "language": language_chips,
            "benchmark": [chip("golden", benchmark_count, s.benchmark.contains(&"golden"))],
        },
        "images": 0,
    })
}

fn small_report(dir: &Path) -> PathBuf {
    let env = Env::with_archive();
    env.babel(&[
        "run",
        "create",
        "g",
        "--model",
        "m",
        "--benchmark",
        "golden",
    ])
    .assert()
    .success();
    env.babel(&["import", "g", "--format", "canonical"])
        .arg(manifest_dir().join("tests/fixtures/compare/all-outcomes.jsonl"))
        .assert()
        .success();
    let dest = dir.join("small.html");
    let _ = std::fs::remove_file(&dest);
    env.babel(&["compare", "g", "--items"])
        .arg(&dest)
        .assert()
        .success();
    dest
}

/// One generated record: deterministic, varied correctness, ten languages, three benchmarks.
fn big_record(i: usize, variant: &str) -> Record {
    let (a, b) = (i % 97, i % 89);
    let correct = if variant == "original" {
        Some((i * 7919) % 10 < 7)
    } else if i.is_multiple_of(50) {
        None
    } else {
        Some((i * 104_729) % 10 < 6)
    };
    let answer = (a + b).to_string();
    let predicted = if correct == Some(false) {
        (a + b + 1).to_string()
    } else {
        answer.clone()
    };
    Record {
        schema_version: 1,
        run_id: "big".into(),
        benchmark: match i {
            0..LONG_ITEMS => "context",
            _ => ["arith", "trivia", "logic"][i % 3],
        }
        .into(),
        script: None,
        language: Some(["en", "fr", "de", "es", "tr", "ar", "ja", "ru", "el", "sw"][i % 10].into()),
        question_id: format!("big-{i}"),
        variant_id: variant.into(),
        filter: "none".into(),
        repeat_id: 0,
        identity_scope: IdentityScope::Stable,
        model: "m".into(),
        rephrasing_model: (variant == "rephrased").then(|| "para-1".into()),
        input: match i {
            0..LONG_ITEMS => {
                json!({"question": big_question(i, variant), "context": long_context(i)})
            }
            _ => json!({"question": big_question(i, variant)}),
        },
        target: Value::String(answer),
        prediction: Value::String(predicted.clone()),
        correct,
        scores: Map::new(),
        metrics: Map::new(),
        response: Value::String(format!("The answer is {predicted}.")),
        source: Source::line(format!("runs/big/raw/0001-{variant}.jsonl"), i as u64 + 1),
        warnings: vec![],
        extra: Map::new(),
    }
}

/// The first items are long-context ones of their own benchmark, which sorts between two
/// others: their chunks end before 64 items (at 4 MiB), so every chunk after them starts
/// elsewhere than at a multiple of 64.
const LONG_ITEMS: usize = 100;

fn long_context(i: usize) -> String {
    format!("context of {i}: {}", "lorem ipsum ".repeat(3500))
}

fn big_question(i: usize, variant: &str) -> String {
    let (a, b) = (i % 97, i % 89);
    if variant == "original" {
        format!("Question {i}: what is {a} plus {b}?")
    } else {
        format!("Question {i}: add {a} and {b}.")
    }
}

/// Every 1000th question has no variant record.
fn big_has_variant(i: usize) -> bool {
    i % 1000 != 999
}

fn big_report(dir: &Path) -> PathBuf {
    let label = |variant: &str| SideLabel {
        run_id: "big".into(),
        variant_id: variant.into(),
        model: "m".into(),
    };
    let (b_label, v_label) = (label("original"), label("rephrased"));
    let baseline: Vec<Record> = (0..BIG_ITEMS).map(|i| big_record(i, "original")).collect();
    let variant: Vec<Record> = (0..BIG_ITEMS)
        .filter(|&i| big_has_variant(i))
        .map(|i| big_record(i, "rephrased"))
        .collect();
    let mut comparison = compare(
        SideInput {
            label: &b_label,
            rows: &baseline[..],
        },
        SideInput {
            label: &v_label,
            rows: &variant[..],
        },
    )
    .unwrap();
    let summary = Summary::of(&comparison, ConfidenceLevel::NINETY_FIVE);
    comparison.sort_by_identity(&baseline[..], &variant[..]);
    let dest = dir.join("big.html");
    let _ = std::fs::remove_file(&dest);
    let load = |side: Side, row: u32| {
        Ok(match side {
            Side::Baseline => babel::record::StoredRecord::of(&baseline[row as usize]).unwrap(),
            Side::Variant => babel::record::StoredRecord::of(&variant[row as usize]).unwrap(),
        })
    };
    report::write_new(&dest, ReportFormat::Html, &comparison, &summary, &load).unwrap();
    dest
}

#[test]
fn the_html_report_searches_filters_and_stays_offline_in_a_real_browser() {
    if !tools_or_skip(&[chromium(), playwright()]) {
        return;
    }
    let dir = artifacts();
    let small = small_report(&dir);
    let big_started = std::time::Instant::now();
    let big = big_report(&dir);
    let big_bytes = std::fs::metadata(&big).unwrap().len();
    let big_render = big_started.elapsed();

    let items = model_items();
    let mut scenarios = vec![
        scenario("everything", "", &[], &[]),
        scenario("search paris", "Paris", &[], &[]),
        scenario("search with no match", "zzz-nothing", &[], &[]),
        scenario("search côtés", "côtés", &[], &[]),
        scenario(
            "english, both correct or only variant",
            "",
            &["both correct", "only variant"],
            &["en"],
        ),
        scenario(
            "search + outcome + language",
            "capital",
            &["correct → wrong"],
            &["fr"],
        ),
        scenario("search + outcome", "spreadsheet", &["both wrong"], &[]),
    ];
    for outcome in OUTCOME_LABELS {
        scenarios.push(scenario(&format!("outcome {outcome}"), "", &[outcome], &[]));
    }
    for language in ["(none)", "en", "fr"] {
        scenarios.push(scenario(
            &format!("language {language}"),
            "",
            &[],
            &[language],
        ));
    }
    scenarios.push(Scenario {
        name: "benchmark golden".into(),
        query: String::new(),
        outcome: vec![],
        language: vec![],
        benchmark: vec!["golden"],
    });

    let big_query = "question 12345";
    // Items opened by a search that finds only them: one among the long-context items, one
    // in the benchmark sorted after them.
    const OPENED: [(usize, &str); 2] = [(50, "question 50:"), (199_997, "question 199997:")];
    let config = json!({
        "chromium": CHROMIUM,
        "userDataDir": tempfile::tempdir().unwrap().keep(),
        "small": {
            "report": small,
            "screenshot": dir.join("report.png"),
            "scenarios": scenarios.iter().map(|s| json!({
                "name": s.name, "query": s.query, "outcome": s.outcome,
                "language": s.language, "benchmark": s.benchmark,
            })).collect::<Vec<_>>(),
        },
        "big": {
            "report": big, "query": big_query, "outcome": "correct → wrong",
            "open": OPENED.iter().map(|(_, query)| query).collect::<Vec<_>>(),
        },
    });
    let config_path = dir.join("drive-config.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let output = Command::new("node")
        .arg(manifest_dir().join("tests/browser/drive-report.cjs"))
        .arg(&config_path)
        .env("NODE_PATH", playwright_modules())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the browser driver failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let observed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let small_seen = &observed["small"];

    for (scenario, result) in scenarios
        .iter()
        .zip(small_seen["results"].as_array().unwrap())
    {
        assert_eq!(result["name"], scenario.name.as_str());
        assert_eq!(
            result["observed"],
            expected(&items, scenario),
            "scenario {:?}",
            scenario.name
        );
    }
    // "Its search and outcome/language filters work offline; it requires no server."
    assert_eq!(
        observed["requests"],
        json!([]),
        "no network request may be attempted"
    );
    assert_eq!(small_seen["dialogs"], json!([]), "no injected script ran");
    assert_eq!(small_seen["errors"], json!([]), "no page error");
    assert_eq!(small_seen["searchFocused"], true, "/ focuses the search");
    assert_eq!(
        small_seen["keyboardSelection"],
        items[1].question_id.as_str(),
        "ArrowDown twice selects the second row"
    );
    let detail = &small_seen["detail"];
    let text = detail["text"].as_str().unwrap();
    assert!(
        text.contains("</script><img src=x onerror=alert(1)>"),
        "the response is shown as text: {text}"
    );
    assert!(
        text.contains("correct → wrong") && text.contains("runs/g/raw/0001-all-outcomes.jsonl:6")
    );
    assert_eq!(detail["images"], 0);
    assert_eq!(detail["addedScripts"], 0, "no script element was added");

    let big_seen = &observed["big"];
    assert_eq!(big_seen["errors"], json!([]));
    let matches: Vec<usize> = (0..BIG_ITEMS)
        .filter(|&i| {
            big_question(i, "original")
                .to_lowercase()
                .contains(big_query)
        })
        .collect();
    assert_eq!(
        big_seen["searched"]["status"],
        format!("Showing {} of 200,000 items", matches.len())
    );
    let flipped = matches
        .iter()
        .filter(|&&i| {
            big_has_variant(i)
                && big_record(i, "original").correct == Some(true)
                && big_record(i, "rephrased").correct == Some(false)
        })
        .count();
    assert_eq!(
        big_seen["combined"]["status"],
        format!("Showing {flipped} of 200,000 items")
    );
    // Items are in identity order (benchmark, language, question_id as text): the last
    // row of the list is the largest such key.
    let last = (0..BIG_ITEMS)
        .map(|i| {
            let r = big_record(i, "original");
            (r.benchmark, r.language, r.question_id)
        })
        .max()
        .map(|key| key.2)
        .unwrap();
    let end_rows = big_seen["endRows"].as_array().unwrap();
    assert_eq!(
        end_rows.last().and_then(Value::as_str),
        Some(last.as_str()),
        "scrolling to the end renders the last rows: {end_rows:?}"
    );
    assert!(
        big_seen["domRows"].as_u64().unwrap() < 100,
        "rows are rendered on demand"
    );

    // Each opened item shows its own records, looked up in the chunk that holds it.
    for ((i, _), text) in OPENED.iter().zip(big_seen["opened"].as_array().unwrap()) {
        let text = text.as_str().unwrap();
        assert!(
            text.contains(&big_question(*i, "original")),
            "item {i}: {text:.300}"
        );
        assert_eq!(
            text.contains(&long_context(*i)),
            *i < LONG_ITEMS,
            "item {i}"
        );
    }

    let ready_ms = big_seen["readyMs"].as_f64().unwrap();
    let keystrokes = big_seen["keystrokes"].as_array().unwrap();
    let filter_ms: Vec<f64> = keystrokes
        .iter()
        .map(|k| k["filterMs"].as_f64().unwrap())
        .collect();
    let wall_ms: Vec<f64> = keystrokes
        .iter()
        .map(|k| k["wallMs"].as_f64().unwrap())
        .collect();
    let max = |values: &[f64]| values.iter().copied().fold(0.0, f64::max);
    println!(
        "200,000-item report: {:.1} MB written in {:.1} s (test profile, opt-level 1); first render {:.0} ms \
         after navigation (wall {:.0} ms); search typed key by key: filter {:.1} ms max \
         ({:.1} ms first key), {:.0} ms max per key end to end; outcome filter {:.1} ms",
        big_bytes as f64 / 1e6,
        big_render.as_secs_f64(),
        ready_ms,
        big_seen["wallOpenMs"].as_f64().unwrap(),
        max(&filter_ms),
        filter_ms[0],
        max(&wall_ms),
        big_seen["outcomeClick"]["filterMs"].as_f64().unwrap(),
    );
    // Timing is measured (printed above, recorded in BENCHMARKS.md), not asserted: the
    // bounded DOM row count above is what this test holds the page to.
    println!("screenshot: {}", dir.join("report.png").display());
}
