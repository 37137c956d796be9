//! `babel export-eee`: what it writes passes the official Every Eval Ever 0.3.0
//! validator (installed by `.ci/setup-eee`), imports back with the same question IDs and
//! known correctness, leaves unknown correctness out instead of writing it as wrong, and
//! is the same bytes on every export of the same archive state.

use crate::common::{Env, Tool, tools_or_skip};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn validator() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci/eee-venv/bin/every_eval_ever")
}

/// The validator, answering `--help`.
fn official_validator() -> Tool {
    Tool::probe(
        "the Every Eval Ever 0.3.0 validator",
        "setup-eee",
        Command::new(validator()).arg("--help"),
    )
}

/// A run with stable ids, several variants, epochs and unknown correctness: Inspect's
/// mc (original and rephrased), its noid log (P, NaN and {} scores) and epochs log.
fn archive_with_run() -> Env {
    let env = Env::with_archive();
    env.babel(&["run", "create", "r", "--model", "mockllm/model"])
        .assert()
        .success();
    let logs = Path::new(FIXTURES).join("inspect-ai-0.3.285/logs/seed1");
    let log = |stem: &str| logs.join(stem).to_str().unwrap().to_owned();
    for args in [
        vec![log(
            "2026-12-03T14-54-39-00-00_babel-mc_L3aC6TktMr8Qp7aQ5S3fqq.eval",
        )],
        vec![
            log("2026-12-03T14-54-49-00-00_babel-mc_HACksaeVkuBpu6oHyHeefw.eval"),
            "--variant".into(),
            "rephrased".into(),
        ],
        vec![log(
            "2026-12-03T14-55-25-00-00_babel-noid_XVDdRt7fbuKjcnd6vJkEqM.json",
        )],
        vec![
            log("2026-12-03T14-55-03-00-00_babel-epochs_XXURGxRa9r74Wvm5bFdJH7.eval"),
            "--id-field".into(),
            "id".into(),
        ],
    ] {
        let mut command = env.babel(&["import", "r", "--format", "inspect"]);
        command.args(&args).assert().success();
    }
    env
}

fn export(env: &Env, dir: &Path) -> Value {
    let dir = dir.to_str().unwrap();
    crate::common::babel_json(env, &["export-eee", "r", dir, "--developer", "babel-test"])
}

/// Every file under `dir`, relative, with its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap().to_str().unwrap().to_owned();
                files.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn the_official_validator_accepts_the_export_without_a_warning() {
    if !tools_or_skip(&[official_validator()]) {
        return;
    }
    let env = archive_with_run();
    let dir = env.path().join("eee");
    let written = export(&env, &dir);
    // mc original, mc rephrased, noid, epochs: one aggregate and one samples file each.
    assert_eq!(written["files"].as_array().unwrap().len(), 8, "{written}");
    let output = Command::new(validator())
        .current_dir(&dir)
        .args(["validate", "--format", "json", "data/*/*/*/*"])
        .output()
        .unwrap();
    let reports: Vec<Value> = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stdout)));
    assert_eq!(reports.len(), 8);
    for report in &reports {
        assert_eq!(report["valid"], true, "{report}");
        assert_eq!(report["errors"], serde_json::json!([]), "{report}");
        assert_eq!(report["warnings"], serde_json::json!([]), "{report}");
    }
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn reimported_it_keeps_ids_and_known_correctness_and_unknown_is_never_written_as_wrong() {
    let env = archive_with_run();
    let dir = env.path().join("eee");
    let written = export(&env, &dir);
    let original = env.records("r");
    let unknown = original.iter().filter(|r| r["correct"].is_null()).count();
    assert_eq!(unknown, 3, "noid's P, NaN and missing score");
    assert_eq!(written["unknown"], 3);
    assert_eq!(written["rows"], (original.len() - unknown) as u64);

    // Import every samples file back, each under its variant, and compare what survives:
    // (benchmark, variant, question, repeat) → correct.
    env.babel(&["run", "create", "back", "--model", "babel-test/model"])
        .assert()
        .success();
    let mut unknown_declared = 0;
    for (path, bytes) in tree(&dir) {
        if path.ends_with("_samples.jsonl") {
            continue;
        }
        let aggregate: Value = serde_json::from_slice(&bytes).unwrap();
        let results = aggregate["evaluation_results"].as_array().unwrap();
        let variant = results[0]["source_data"]["additional_details"]["variant"]
            .as_str()
            .unwrap();
        for result in results {
            let count = &result["metric_config"]["additional_details"]["unknown_correctness"];
            unknown_declared += count.as_str().unwrap().parse::<usize>().unwrap();
        }
        let samples = dir.join(path.replace(".json", "_samples.jsonl"));
        env.babel(&[
            "import",
            "back",
            "--format",
            "eee",
            "--id-field",
            "sample_id",
            "--variant",
            variant,
        ])
        .arg(&samples)
        .assert()
        .success();
    }
    assert_eq!(
        unknown_declared, unknown,
        "each aggregate counts what it left out"
    );
    let key = |r: &Value| {
        (
            r["benchmark"].as_str().unwrap().to_owned(),
            r["variant_id"].as_str().unwrap().to_owned(),
            r["question_id"].as_str().unwrap().to_owned(),
            r["repeat_id"].as_u64().unwrap(),
        )
    };
    let expected: BTreeMap<_, _> = original
        .iter()
        .filter(|r| !r["correct"].is_null())
        .map(|r| (key(r), r["correct"].clone()))
        .collect();
    let back: BTreeMap<_, _> = env
        .records("back")
        .iter()
        .map(|r| (key(r), r["correct"].clone()))
        .collect();
    assert_eq!(back, expected);
}

#[test]
fn two_exports_of_one_archive_state_are_the_same_bytes_and_nothing_is_overwritten() {
    let env = archive_with_run();
    let (a, b) = (env.path().join("a"), env.path().join("b"));
    export(&env, &a);
    export(&env, &b);
    let (first, second) = (tree(&a), tree(&b));
    assert!(!first.is_empty());
    assert_eq!(first, second);
    // Each aggregate counts the rows its samples file holds.
    for (name, bytes) in first.iter().filter(|(name, _)| !name.ends_with(".jsonl")) {
        let details =
            &serde_json::from_slice::<Value>(bytes).unwrap()["detailed_evaluation_results"];
        let samples = &first[details["file_path"].as_str().unwrap()];
        let lines = samples.iter().filter(|&&b| b == b'\n').count() as u64;
        assert_eq!(details["total_rows"].as_u64(), Some(lines), "{name}");
    }
    // Exporting again into the same folder refuses before writing anything.
    let output = env
        .babel(&[
            "export-eee",
            "r",
            a.to_str().unwrap(),
            "--developer",
            "babel-test",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("already exists; nothing was written")
    );
    assert_eq!(tree(&a), first);
}

#[test]
fn run_local_ids_stay_run_local_through_an_export_and_back() {
    let env = archive_with_run();
    let dir = env.path().join("eee");
    export(&env, &dir);
    env.babel(&["run", "create", "plain", "--model", "babel-test/model"])
        .assert()
        .success();
    for (path, _) in tree(&dir) {
        if path.ends_with("_samples.jsonl") && path.contains("babel_noid") {
            env.babel(&["import", "plain", "--format", "eee"])
                .arg(dir.join(&path))
                .assert()
                .success();
        }
    }
    let records = env.records("plain");
    assert!(!records.is_empty());
    for record in records {
        assert_eq!(record["identity_scope"], "run-local", "{record}");
    }
}
