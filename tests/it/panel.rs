//! `babel panel` on real files (issue 22): the statistics themselves are checked against
//! statsmodels, scipy and scikit-learn in `src/panel/tests.rs`; here, the command: the
//! same 2×2 tables as `compare` on the real lm-evaluation-harness, Inspect and HELM
//! fixtures, the JSON names the issue fixes, the three ways to choose sides, the item
//! files (CSV, JSONL, Parquet read by DuckDB and pandas), and every bad selection refused
//! with a hint and nothing written.

use crate::common::{Env, babel_json, canonical_line, python, python_with, tools_or_skip};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

#[test]
fn every_pair_has_the_2x2_table_compare_gives_on_the_real_fixtures() {
    // "On the real lm-evaluation-harness, Inspect and HELM fixtures: a panel of the runs
    // that share questions q001..q020 gives, for every pair, the same 2×2 counts as
    // compare."
    let env = crate::common::producer_runs();
    let panel = babel_json(&env, &["panel", "h", "i", "m:original"]);
    let names = ["h", "i", "m"];
    let pairs = panel["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 3);
    for pair in pairs {
        let (a, b) = (
            pair["a"].as_u64().unwrap() as usize,
            pair["b"].as_u64().unwrap() as usize,
        );
        let compare = babel_json(&env, &["compare", names[a], "--other-run", names[b]]);
        let stats = &compare["statistics"];
        assert_eq!(pair["known_pairs"], stats["pairs"], "{pair}");
        assert_eq!(pair["both_correct"], stats["both_correct"], "{pair}");
        assert_eq!(pair["a_only_correct"], stats["correct_to_wrong"], "{pair}");
        assert_eq!(pair["b_only_correct"], stats["wrong_to_correct"], "{pair}");
        assert_eq!(pair["both_wrong"], stats["both_wrong"], "{pair}");
        assert_eq!(pair["known_pairs"], 20, "q001..q020 pair across frameworks");
        assert_eq!(pair["mcnemar_p"], stats["mcnemar_exact_p"], "{pair}");
        assert_eq!(pair["delta"], stats["delta"], "{pair}");
        assert_eq!(pair["delta_ci_low"], stats["delta_ci_low"], "{pair}");
        assert_eq!(pair["delta_ci_high"], stats["delta_ci_high"], "{pair}");
    }
}

#[test]
fn the_json_has_the_names_the_issue_fixes() {
    let env = crate::common::producer_runs();
    let panel = babel_json(&env, &["panel", "h", "i", "m:original"]);
    let keys = |value: &Value| -> Vec<String> {
        let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    let has = |value: &Value, names: &[&str]| {
        for name in names {
            assert!(value.get(name).is_some(), "{name} missing from {value}");
        }
    };
    has(
        &panel,
        &[
            "sides",
            "matched",
            "pairs",
            "by_benchmark",
            "by_language",
            "robustness",
            "flags",
        ],
    );
    has(
        &panel["sides"][0],
        &[
            "run_id",
            "variant_id",
            "model",
            "records",
            "known",
            "correct",
            "accuracy",
            "ci_low",
            "ci_high",
        ],
    );
    has(&panel["matched"], &["items", "cochran_q", "df", "p_value"]);
    has(
        &panel["pairs"][0],
        &[
            "a",
            "b",
            "known_pairs",
            "both_correct",
            "both_wrong",
            "a_only_correct",
            "b_only_correct",
            "delta",
            "delta_ci_low",
            "delta_ci_high",
            "mcnemar_p",
            "mcnemar_p_holm",
            "kappa",
        ],
    );
    has(
        &panel["by_benchmark"][0],
        &["value", "sides", "kendall_tau"],
    );
    has(
        &panel["by_benchmark"][0]["sides"][0],
        &["known", "correct", "accuracy"],
    );
    has(&panel["by_language"][0], &["value", "sides", "kendall_tau"]);
    has(
        &panel["flags"],
        &["consensus_wrong", "negative_discrimination"],
    );
    assert_eq!(
        keys(&panel["flags"]),
        ["consensus_wrong", "negative_discrimination"]
    );
    assert_eq!(panel["sides"][1]["model"], "mockllm/model");
    // The harness run has 10 more questions than the others; HELM's second train trial
    // makes 20 more items; only q001..q020 (trial 0) are known on all three.
    assert_eq!(panel["matched"]["items"], 20);
    assert_eq!(panel["matched"]["df"], 2);
    // Undefined values are null, never NaN: HELM's simple model gets every item wrong,
    // so its language slice has one constant side.
    assert!(serde_json::to_string(&panel).unwrap().find("NaN").is_none());
}

/// An archive of runs r0..r5, model m0..m5, each with questions q0..q9 as `original`
/// (r0 and r1 also `rephrased`); side i answers question q correctly when (q + i) % 3 != 0.
fn generated(revisions: bool) -> Env {
    let env = Env::with_archive();
    for run in 0..6 {
        let mut create = vec![
            "run".to_owned(),
            "create".to_owned(),
            format!("r{run}"),
            "--model".to_owned(),
            format!("m{run}"),
            "--benchmark".to_owned(),
            "b".to_owned(),
        ];
        if revisions {
            create.extend([
                "--meta".to_owned(),
                format!("dataset_revision=rev{}", run % 2),
            ]);
        }
        env.babel(&create.iter().map(String::as_str).collect::<Vec<_>>())
            .assert()
            .success();
        let mut lines = Vec::new();
        for variant in ["original", "rephrased"] {
            if variant == "rephrased" && run >= 2 {
                continue;
            }
            for q in 0..10 {
                lines.push(canonical_line(
                    &format!("q{q}"),
                    variant,
                    Some((q + run) % 3 != 0),
                ));
            }
        }
        let input = env.input(&format!("r{run}.jsonl"), lines.join("\n") + "\n");
        env.babel(&[
            "import",
            &format!("r{run}"),
            "--format",
            "canonical",
            &input,
        ])
        .assert()
        .success();
    }
    env
}

fn refused(env: &Env, args: &[&str], code: i32, needle: &str) {
    let before = crate::common::files_under(env.path());
    let output = env.babel(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: no {needle:?} in {stderr}"
    );
    assert!(stderr.contains("hint:"), "{args:?}: no hint in {stderr}");
    assert_eq!(
        crate::common::files_under(env.path()),
        before,
        "{args:?}: nothing written"
    );
}

#[test]
fn sides_are_named_all_of_a_variant_or_a_model_panels() {
    let env = generated(false);
    let all = babel_json(&env, &["panel", "--all", "--variant", "original"]);
    let runs: Vec<&str> = all["sides"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["r0", "r1", "r2", "r3", "r4", "r5"]);
    let rephrased = babel_json(&env, &["panel", "--all", "--variant", "rephrased"]);
    assert_eq!(rephrased["sides"].as_array().unwrap().len(), 2);
    // Two variants of one run are two sides, and their robustness is reported.
    let named = babel_json(&env, &["panel", "r0:original", "r0:rephrased", "r2"]);
    let robustness = &named["robustness"][0];
    assert_eq!(robustness["run_id"], "r0");
    assert_eq!(robustness["variants"], json!(["original", "rephrased"]));
    assert_eq!(robustness["items"], 10);
    assert_eq!(
        robustness["mixed"], 0,
        "the same answers under both variants"
    );
    assert_eq!(robustness["consistency"], 1.0);
    // Question q0 is wrong on r0, r3 (q + i divisible by 3): 2 of 6 sides; q2 on r1, r4.
    // Each question is wrong on exactly the sides i ≡ -q (mod 3): never on all.
    assert_eq!(all["flags"]["consensus_wrong"], 0);

    let panel = json!({"format": "babel-model-panel", "schema_version": 1,
        "models": [{"model": "m1"}, {"model": "m2", "checkpoints": ["c2"]}, {"model": "m4", "checkpoints": []}]});
    let file = env.input("panel.json", panel.to_string());
    env.babel(&["artifact", "add", "model-panel", "study", &file])
        .assert()
        .success();
    let study = babel_json(
        &env,
        &["panel", "--model-panel", "study", "--variant", "original"],
    );
    let runs: Vec<&str> = study["sides"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["run_id"].as_str().unwrap())
        .collect();
    // m2 is listed with checkpoint c2, and run r2 names no checkpoint: not in the study.
    assert_eq!(runs, ["r1", "r4"]);
}

#[test]
fn bad_selections_are_refused_with_a_hint_and_nothing_written() {
    let env = generated(false);
    refused(&env, &["panel", "r2", "r9"], 2, "no run \"r9\"");
    refused(
        &env,
        &["panel", "r0", "r1"],
        2,
        "holds several variants (original, rephrased)",
    );
    refused(
        &env,
        &["panel", "r2", "r3:translated"],
        2,
        "has no records of variant \"translated\"",
    );
    refused(&env, &["panel", "r2", "r3", "r2"], 2, "named twice");
    refused(&env, &["panel", "r2"], 2, "at least two sides");
    refused(
        &env,
        &["panel", "--all", "--variant", "translated"],
        2,
        "at least two sides",
    );
    refused(
        &env,
        &["panel", "--model-panel", "nope", "--variant", "original"],
        2,
        "nope",
    );
    let existing = env.path().join("exists.csv");
    std::fs::write(&existing, "keep\n").unwrap();
    refused(
        &env,
        &["panel", "r2", "r3", "--items", existing.to_str().unwrap()],
        2,
        "already exists",
    );
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep\n");
    refused(
        &env,
        &["panel", "r2", "r3", "--items", "archive/p.csv"],
        2,
        "inside the archive",
    );
    refused(
        &env,
        &["panel", "r2", "r3", "--items", "p.txt"],
        2,
        "cannot tell the format",
    );
    let env = generated(true);
    refused(
        &env,
        &["panel", "r2", "r3"],
        2,
        "different dataset revisions",
    );
}

#[test]
fn item_files_hold_every_cell() {
    let env = generated(false);
    let sides = ["r0:original", "r2", "r3", "r4"];
    for format in ["csv", "jsonl", "parquet", "html"] {
        let file = format!("items.{format}");
        let mut args = vec!["panel"];
        args.extend(sides);
        args.extend(["--items", &file]);
        env.babel(&args).assert().success();
        assert!(env.path().join(&file).is_file());
    }
    let csv = std::fs::read_to_string(env.path().join("items.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "benchmark,language,script,question_id,filter,repeat_id,r0:original,r2:original,r3:original,r4:original,known,correct,point_biserial,consensus_wrong,negative_discrimination"
    );
    let q0: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&q0[..6], ["b", "en", "", "q0", "none", "0"]);
    // (0 + i) % 3 != 0 for i = 0, 2, 3, 4: false, true, false, true.
    assert_eq!(&q0[6..12], ["false", "true", "false", "true", "4", "2"]);
    let jsonl = std::fs::read_to_string(env.path().join("items.jsonl")).unwrap();
    let first: Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    assert_eq!(first["identity"]["question_id"], "q0");
    assert_eq!(
        first["sides"],
        json!({"r0:original": false, "r2:original": true, "r3:original": false, "r4:original": true})
    );
    assert_eq!(jsonl.lines().count(), 10);
}

#[test]
fn duckdb_and_pandas_read_the_parquet_items_file() {
    if !tools_or_skip(&[python_with("duckdb, pandas", "setup-data-tools")]) {
        return;
    }
    let env = generated(false);
    env.babel(&["panel", "r0:original", "r2", "r3", "r4"])
        .args(["--items", "items.parquet"])
        .assert()
        .success();
    let parquet = env.path().join("items.parquet");
    let script = r#"
import sys, json, duckdb, pandas
path = sys.argv[1]
frame = pandas.read_parquet(path)
rows = duckdb.sql(f"SELECT question_id, \"r2:original\", known, correct FROM read_parquet('{path}') ORDER BY question_id").fetchall()
print(json.dumps({"pandas_rows": len(frame), "columns": list(frame.columns), "duckdb": rows}))
"#;
    let output = Command::new(python())
        .args(["-c", script])
        .arg(&parquet)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let read: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(read["pandas_rows"], 10);
    assert_eq!(read["columns"][6], "r0:original");
    assert_eq!(read["duckdb"][0], json!(["q0", true, 4, 2]));
}

#[test]
fn an_items_file_is_written_outside_the_archive_only_and_never_over_another() {
    let env = generated(false);
    env.babel(&["panel", "r2", "r3", "--items", "p.html"])
        .assert()
        .success();
    let html = std::fs::read_to_string(env.path().join("p.html")).unwrap();
    assert!(html.contains("default-src 'none'"));
    assert!(html.contains("id=\"panel-cells\""));
    assert!(!Path::new(&env.archived("p.html")).exists());
}
