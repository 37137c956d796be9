//! `babel import --format paired` end to end: the bundled example (`examples/paired/`)
//! imports into two records per line, each scored against its own version's answer key,
//! and the run's `shared_answer_key` assertion changes only the records it is needed for.

use crate::common::Env;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/paired/capitals-paired.jsonl")
}

fn example_lines() -> Vec<Value> {
    std::fs::read_to_string(example())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn create_run(env: &Env, meta: &[&str]) {
    let mut args = vec![
        "run",
        "create",
        "p",
        "--model",
        "demo-model",
        "--benchmark",
        "world-capitals",
    ];
    for m in meta {
        args.extend(["--meta", m]);
    }
    env.babel(&args).assert().success();
}

fn import(env: &Env, files: &[PathBuf], extra: &[&str]) -> std::process::Output {
    let mut command = env.babel(&["import", "p", "--format", "paired"]);
    command.args(files).args(extra);
    command.output().unwrap()
}

fn assert_ok(output: &std::process::Output) {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The version object of an input line that a record came from.
fn version<'a>(line: &'a Value, record: &Value) -> &'a Value {
    match record["variant_id"].as_str().unwrap() {
        "original" => &line["original"],
        _ => &line["rephrased"],
    }
}

#[test]
fn each_example_line_becomes_two_records_scored_against_their_own_key() {
    // "A paired input line produces two records." "Correctness is obtained by comparing
    // it with a known correct_index for that version."
    let env = Env::with_archive();
    create_run(&env, &[]);
    assert_ok(&import(&env, &[example()], &[]));
    let lines = example_lines();
    let records = env.records("p");
    assert_eq!(records.len(), 2 * lines.len());
    for pair in records.chunks(2) {
        let line = &lines[pair[0]["source"]["line"].as_u64().unwrap() as usize - 1];
        assert_eq!(pair[0]["variant_id"], "original");
        assert_eq!(pair[1]["variant_id"], "rephrased");
        assert_eq!(pair[0]["question_id"], line["question_id"]);
        assert_eq!(pair[1]["question_id"], line["question_id"]);
        assert_eq!(pair[0]["identity_scope"], "stable");
        assert_eq!(pair[0]["language"], line["language"]);
        for record in pair {
            let own = version(line, record);
            let expected = match (&own["correct_index"], record["variant_id"] == "original") {
                // "An explicit variant answer key takes precedence."
                (Value::Number(key), _) => Some(own["pred_acc"] == Value::Number(key.clone())),
                // "A shared top-level key can be used for the original, and for a rephrase
                // with identical explicit choices."
                (_, true) => Some(own["pred_acc"] == line["correct_index"]),
                (_, false)
                    if own["choices"].is_array()
                        && own["choices"] == line["original"]["choices"] =>
                {
                    Some(own["pred_acc"] == line["correct_index"])
                }
                // Different or unavailable choice order, no key of its own, no assertion.
                _ => None,
            };
            assert_eq!(
                record["correct"].as_bool(),
                expected,
                "{} {}",
                record["question_id"],
                record["variant_id"]
            );
            if expected.is_none() {
                assert_eq!(record["target"], Value::Null);
                assert_eq!(record["warnings"].as_array().unwrap().len(), 1);
            }
        }
    }
    let unknown = records.iter().filter(|r| r["correct"].is_null()).count();
    assert_eq!(
        unknown, 2,
        "the example has one unordered and one reordered rephrase"
    );
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(env.archived("runs/p/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["imports"][0]["normalizer_version"], "paired/1");
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn shared_answer_key_true_scores_only_the_rephrase_without_choice_order_and_says_so() {
    // "Where choice order is unavailable, run metadata shared_answer_key: true explicitly
    // asserts that sharing the key is valid; the assertion is recorded as a warning.
    // Explicitly different choice ordering still requires a per-variant key."
    let env = Env::with_archive();
    create_run(&env, &["shared_answer_key=true"]);
    assert_ok(&import(&env, &[example()], &[]));
    let records = env.records("p");
    let find = |q: &str| {
        records
            .iter()
            .find(|r| r["question_id"] == q && r["variant_id"] == "rephrased")
            .unwrap()
    };
    let unordered = find("cap-gr");
    assert_eq!(unordered["correct"], true);
    assert_eq!(unordered["target"], json!({"index": 3}));
    assert!(
        unordered["warnings"][0]
            .as_str()
            .unwrap()
            .contains("shared_answer_key: true asserts it is valid")
    );
    let reordered = find("cap-ru");
    assert_eq!(reordered["correct"], Value::Null, "never a guess");
    let asserted = records
        .iter()
        .filter(|r| {
            r["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("asserts it is valid"))
        })
        .count();
    assert_eq!(
        asserted, 1,
        "only the record that needed the assertion carries it"
    );
}

#[test]
fn variant_names_the_rephrased_records() {
    let env = Env::with_archive();
    create_run(&env, &[]);
    assert_ok(&import(
        &env,
        &[example()],
        &["--variant", "rephrased-demo"],
    ));
    let variants: std::collections::BTreeSet<String> = env
        .records("p")
        .iter()
        .map(|r| r["variant_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        variants.into_iter().collect::<Vec<_>>(),
        ["original", "rephrased-demo"]
    );
    let refused = import(&env, &[example()], &["--variant", "original"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("cannot be \"original\""));
}

#[test]
fn a_bad_line_rejects_the_batch_with_its_line_and_field() {
    // "inconsistent supplied choice counts are rejected. Failed batch imports publish no
    // partial data."
    let env = Env::with_archive();
    create_run(&env, &[]);
    let bad = env.input(
        "bad.jsonl",
        concat!(
            r#"{"question_id": "q1", "correct_index": 0, "original": {"choices": ["a", "b"], "pred_acc": 0}, "rephrased": {"choices": ["a", "b"], "pred_acc": 1}}"#,
            "\n",
            r#"{"question_id": "q2", "correct_index": 0, "original": {"choices": ["a", "b"], "logprobs": [-1.0, -2.0, -3.0]}, "rephrased": {}}"#,
            "\n",
            r#"{"question_id": "q1", "correct_index": 1, "original": {"pred_acc": 1}, "rephrased": {"pred_acc": 0}}"#,
            "\n",
        ),
    );
    let output = import(&env, &[example(), bad.into()], &[]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "bad.jsonl:2: field original.logprobs: 3 entries, but original.choices has 2"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("bad.jsonl:3: duplicate record identity"),
        "{stderr}"
    );
    assert!(
        !env.files().iter().any(|f| f.contains("/raw/")),
        "nothing was published"
    );
}
