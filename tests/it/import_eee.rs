//! `babel import --format eee` on real Every Eval Ever 0.3.0 converter output
//! (`tests/fixtures/every-eval-ever-0.3.0/`, see its NOTES.md): babel's accuracy over the
//! rows of each evaluation result equals the score EEE's own aggregate gives it; a row
//! EEE wrote for a sample without a score is unknown, never wrong; positional sample ids
//! are run-local.

use crate::common::Env;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const OUT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/every-eval-ever-0.3.0/out"
);

/// Every (aggregate, samples file) pair of the fixture.
fn pairs() -> Vec<(PathBuf, PathBuf)> {
    let mut pairs = Vec::new();
    let mut stack = vec![PathBuf::from(OUT)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            if path.is_dir() {
                stack.push(path);
            } else if let Some(uuid) = name.strip_suffix("_samples.jsonl") {
                pairs.push((path.with_file_name(format!("{uuid}.json")), path));
            }
        }
    }
    pairs.sort();
    pairs
}

fn import(env: &Env, run: &str, samples: &Path, extra: &[&str]) -> Vec<Value> {
    env.babel(&["run", "create", run, "--model", "dummy-a"])
        .assert()
        .success();
    env.babel(&["import", run, "--format", "eee"])
        .arg(samples)
        .args(extra)
        .assert()
        .success();
    env.records(run)
}

#[test]
fn accuracy_per_evaluation_result_equals_the_aggregates_own_score() {
    let env = Env::with_archive();
    let mut checked = 0;
    for (index, (aggregate, samples)) in pairs().iter().enumerate() {
        let aggregate: Value =
            serde_json::from_str(&std::fs::read_to_string(aggregate).unwrap()).unwrap();
        let records = import(&env, &format!("r{index}"), samples, &[]);
        let mut by_result: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
        for record in &records {
            by_result
                .entry(record["filter"].as_str().unwrap().to_owned())
                .or_default()
                .push(record);
        }
        for result in aggregate["evaluation_results"].as_array().unwrap() {
            let id = result["evaluation_result_id"].as_str().unwrap();
            // Only results whose rows are all 0/1 scores (EEE's bug: babel_gen's file
            // holds another task's rows, so its results have none).
            let Some(rows) = by_result.get(id) else {
                continue;
            };
            let known: Vec<bool> = rows.iter().filter_map(|r| r["correct"].as_bool()).collect();
            if known.len() != rows.len() {
                continue;
            }
            let babel = known.iter().filter(|c| **c).count() as f64 / known.len() as f64;
            let theirs = result["score_details"]["score"].as_f64().unwrap();
            assert!(
                (babel - theirs).abs() <= 1e-12,
                "{}: {id}: babel {babel}, EEE {theirs}",
                samples.display()
            );
            checked += 1;
        }
    }
    // acc and acc_norm of babel_mc_original and babel_mc_rephrased; acc, acc_norm,
    // acc_bytes and exact_match of babel_mc_extra_metrics; babel_ll's acc;
    // babel_gen_multitarget's exact_match.
    assert_eq!(checked, 10);
}

#[test]
fn a_row_without_a_score_is_unknown_and_positional_ids_never_pair() {
    let env = Env::with_archive();
    let rolling = pairs()
        .into_iter()
        .find(|(_, s)| s.to_str().unwrap().contains("/babel_rolling/"))
        .unwrap()
        .1;
    let records = import(&env, "rolling", &rolling, &[]);
    assert!(!records.is_empty());
    for record in &records {
        // EEE wrote these as score 0.0, is_correct false, evaluation_result_id null.
        assert_eq!(record["extra"]["evaluation"]["is_correct"], false);
        assert!(record["correct"].is_null(), "{record}");
        assert_eq!(record["identity_scope"], "run-local");
    }
    let original = pairs()
        .into_iter()
        .find(|(_, s)| s.to_str().unwrap().contains("/babel_mc_original/"))
        .unwrap()
        .1;
    let rephrased = pairs()
        .into_iter()
        .find(|(_, s)| s.to_str().unwrap().contains("/babel_mc_rephrased/"))
        .unwrap()
        .1;
    import(&env, "a", &original, &["--benchmark", "mc"]);
    import(&env, "b", &rephrased, &["--benchmark", "mc"]);
    let summary = crate::common::babel_json(&env, &["compare", "a", "--other-run", "b"]);
    assert_eq!(
        summary["matched"], 0,
        "doc_id positions never pair: {summary}"
    );
    // Declared stable, the same positions pair (the user vouches for them).
    import(
        &env,
        "c",
        &original,
        &["--benchmark", "mc", "--id-field", "sample_id"],
    );
    import(
        &env,
        "d",
        &rephrased,
        &["--benchmark", "mc", "--id-field", "sample_id"],
    );
    let summary = crate::common::babel_json(&env, &["compare", "c", "--other-run", "d"]);
    assert_eq!(summary["matched"], 60, "30 docs × acc, acc_norm: {summary}");
}

#[test]
fn an_aggregate_file_is_refused_with_what_to_do() {
    let env = Env::with_archive();
    env.babel(&["run", "create", "r", "--model", "m"])
        .assert()
        .success();
    let (aggregate, _) = pairs().remove(0);
    let output = env
        .babel(&["import", "r", "--format", "eee"])
        .arg(&aggregate)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("looks like an EEE aggregate file"),
        "{stderr}"
    );
    assert!(stderr.contains("--attach"), "{stderr}");
}
