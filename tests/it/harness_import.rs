//! `babel import --format harness` on real lm-evaluation-harness 0.4.13 output
//! (`tests/fixtures/lm-eval-0.4.13/`, see its README.md): the accuracy computed from the
//! archived records equals the harness's own figures, the original and rephrased runs pair
//! by `doc.id`, results files attach in the same transaction, and bare `NaN` is rejected
//! unless `--non-finite null` is given.

use crate::common::Env;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/lm-eval-0.4.13");

/// The files of one harness output folder: its results file and its samples files.
fn output_folder(name: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = Path::new(FIXTURES).join(name).join("dummy-p");
    let mut results = None;
    let mut samples = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap().to_owned();
        if file.starts_with("results_") {
            results = Some(path);
        } else if file.starts_with("samples_") {
            samples.push(path);
        }
    }
    samples.sort();
    (results.expect("a results file"), samples)
}

fn create_run(env: &Env, run: &str, meta: &[&str]) {
    let mut args = vec!["run", "create", run, "--model", "dummy-p"];
    for m in meta {
        args.extend(["--meta", m]);
    }
    env.babel(&args).assert().success();
}

fn import(env: &Env, run: &str, files: &[PathBuf], extra: &[&str]) -> std::process::Output {
    let mut command = env.babel(&["import", run, "--format", "harness"]);
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

fn manifest(env: &Env, run: &str) -> Value {
    let text = std::fs::read_to_string(env.archived(&format!("runs/{run}/manifest.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The raw line a record points to, parsed (the archived bytes, not the adapter's view).
fn raw_line(env: &Env, record: &Value) -> Value {
    let text =
        std::fs::read_to_string(env.archived(record["source"]["path"].as_str().unwrap())).unwrap();
    let line = record["source"]["line"].as_u64().unwrap() as usize;
    serde_json::from_str(text.lines().nth(line - 1).unwrap()).unwrap()
}

/// Mean of the known `correct` values per (benchmark, filter), and how many were known.
fn accuracy(records: &[Value]) -> BTreeMap<(String, String), (f64, usize)> {
    let mut tallies: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for record in records {
        let key = (
            record["benchmark"].as_str().unwrap().to_owned(),
            record["filter"].as_str().unwrap().to_owned(),
        );
        if let Some(correct) = record["correct"].as_bool() {
            let tally = tallies.entry(key).or_default();
            tally.0 += usize::from(correct);
            tally.1 += 1;
        }
    }
    tallies
        .into_iter()
        .map(|(key, (right, known))| (key, (right as f64 / known as f64, known)))
        .collect()
}

/// Checks every `<metric>,<filter>` figure of a results file against the records; returns
/// the tasks it checked.
fn check_against_results(
    results_file: &Path,
    records: &[Value],
    metrics: &[&str],
) -> BTreeSet<String> {
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(results_file).unwrap()).unwrap();
    let computed = accuracy(records);
    let mut checked = BTreeSet::new();
    for (task, figures) in results["results"].as_object().unwrap() {
        for (key, value) in figures.as_object().unwrap() {
            let Some((metric, filter)) = key.split_once(',') else {
                continue;
            };
            if !metrics.contains(&metric) {
                continue;
            }
            let expected = value.as_f64().unwrap();
            let (mean, known) = computed
                .get(&(task.clone(), filter.to_owned()))
                .unwrap_or_else(|| panic!("no scored records for {task} / {filter}"));
            assert!(
                (mean - expected).abs() < 1e-12,
                "{task} {key}: archived records give {mean}, the harness says {expected}"
            );
            assert_eq!(
                *known as u64,
                figures["sample_len"].as_u64().unwrap(),
                "{task} {key}: one scored record per doc and filter"
            );
            checked.insert(task.clone());
        }
    }
    checked
}

#[test]
fn accuracy_from_archived_records_equals_the_harness_results_for_every_task() {
    // "By default, a binary acc or exact_match populates correct." The harness's own
    // aggregates (results_*.json: "acc,none", "exact_match,<filter>") are the
    // independent computation.
    for folder in ["original", "rephrased"] {
        let env = Env::with_archive();
        create_run(&env, "r", &[]);
        let (results, samples) = output_folder(folder);
        assert_ok(&import(&env, "r", &samples, &[]));
        let records = env.records("r");
        let checked = check_against_results(&results, &records, &["acc", "exact_match"]);
        let tasks: BTreeSet<String> = records
            .iter()
            .map(|r| r["benchmark"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(checked, tasks, "every task of {folder} was checked");
        for record in &records {
            let raw = raw_line(&env, record);
            let metric = if raw.get("acc").is_some() {
                "acc"
            } else {
                "exact_match"
            };
            assert_eq!(
                record["correct"].as_bool(),
                Some(raw[metric].as_f64().unwrap() == 1.0),
                "{folder}: {} line {}",
                record["benchmark"],
                record["source"]["line"]
            );
        }
        assert_eq!(env.validate_json()["ok"], true);
    }
}

#[test]
fn correctness_metric_acc_norm_matches_the_harness_acc_norm() {
    // "Set run metadata correctness_metric to choose another explicit binary metric, for
    // example acc_norm."
    let mut differing = 0;
    for folder in ["original", "rephrased"] {
        let env = Env::with_archive();
        create_run(&env, "r", &["correctness_metric=acc_norm"]);
        let (results, samples) = output_folder(folder);
        let mc: Vec<PathBuf> = samples
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("samples_babel_mc_"))
            .collect();
        assert_ok(&import(&env, "r", &mc, &[]));
        let records = env.records("r");
        assert_eq!(records.len(), 30);
        assert_eq!(
            check_against_results(&results, &records, &["acc_norm"]).len(),
            1
        );
        // acc and acc_norm have the same aggregates here, so check each record too: the
        // lines where they differ decide.
        for record in &records {
            let raw = raw_line(&env, record);
            if raw["acc"] != raw["acc_norm"] {
                differing += 1;
            }
            assert_eq!(
                record["correct"].as_bool(),
                Some(raw["acc_norm"].as_f64().unwrap() == 1.0)
            );
        }
    }
    assert!(differing > 0, "acc and acc_norm differ on some lines");
}

#[test]
fn the_original_and_rephrased_runs_pair_all_30_questions_by_doc_id() {
    // "Comparison item identity: the same without variant_id." The rephrased task has the
    // same doc.id values; doc_id is only a position.
    let env = Env::with_archive();
    create_run(&env, "mc", &[]);
    let (_, original) = output_folder("original");
    let (_, rephrased) = output_folder("rephrased");
    let mc_original: Vec<PathBuf> = original
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("samples_babel_mc_original_"))
        .collect();
    assert_ok(&import(
        &env,
        "mc",
        &mc_original,
        &["--benchmark", "babel_mc"],
    ));
    assert_ok(&import(
        &env,
        "mc",
        &rephrased,
        &["--benchmark", "babel_mc", "--variant", "rephrased"],
    ));
    let records = env.records("mc");
    assert_eq!(records.len(), 60);
    let mut items: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for record in &records {
        assert_eq!(record["identity_scope"], "stable");
        let identity = [
            "benchmark",
            "language",
            "script",
            "question_id",
            "filter",
            "repeat_id",
        ]
        .iter()
        .map(|k| record[*k].to_string())
        .collect();
        let variant = record["variant_id"].as_str().unwrap().to_owned();
        assert!(items.entry(identity).or_default().insert(variant));
        assert_eq!(
            record["question_id"],
            raw_line(&env, record)["doc"]["id"],
            "the question ID is doc.id"
        );
    }
    assert_eq!(items.len(), 30, "30 questions");
    for variants in items.values() {
        assert_eq!(
            variants.iter().map(String::as_str).collect::<Vec<_>>(),
            ["original", "rephrased"]
        );
    }
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn selecting_doc_id_makes_every_identity_run_local() {
    // "Selecting doc_id still marks an identity as run-local because harness enumeration
    // is not a persistent identity."
    let env = Env::with_archive();
    create_run(&env, "r", &[]);
    let (_, rephrased) = output_folder("rephrased");
    assert_ok(&import(&env, "r", &rephrased, &["--id-field", "doc_id"]));
    let records = env.records("r");
    assert!(records.iter().all(|r| r["identity_scope"] == "run-local"));
    assert_eq!(records[4]["question_id"], "4");
    assert_eq!(manifest(&env, "r")["imports"][0]["id_field"], "doc_id");
}

#[test]
fn one_record_per_doc_and_filter_with_the_task_name_from_the_file_name() {
    let env = Env::with_archive();
    create_run(&env, "r", &[]);
    let (_, samples) = output_folder("original");
    assert_ok(&import(&env, "r", &samples, &[]));
    let imports = manifest(&env, "r")["imports"].clone();
    let breakdown: Vec<(String, u64)> = imports
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["breakdown"].as_array().unwrap().clone())
        .map(|c| {
            (
                c["benchmark"].as_str().unwrap().to_owned(),
                c["records"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        breakdown,
        [
            ("babel_gen".to_owned(), 36),
            ("babel_ll".to_owned(), 5),
            ("babel_mc_original".to_owned(), 30)
        ],
        "babel_gen: 12 docs under 3 filters"
    );
    assert_eq!(imports[0]["format"], "harness");
    assert_eq!(imports[0]["normalizer_version"], "harness/1");
}

#[test]
fn a_results_file_attaches_in_the_same_transaction_and_not_after_a_rejection() {
    // "A failed batch import publishes no partial data."
    let env = Env::with_archive();
    create_run(&env, "r", &[]);
    let (results, samples) = output_folder("original");
    let results_arg = results.to_str().unwrap();
    let broken = PathBuf::from(env.input(
        "samples_broken_2026-12-02T12-52-40.jsonl",
        "{\"doc\": {\"id\": \"x\"}, \"target\": \"1\"}\n",
    ));
    let rejected = import(
        &env,
        "r",
        &[samples[0].clone(), broken],
        &["--attach", results_arg],
    );
    assert_eq!(rejected.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&rejected.stderr).contains("resps and/or filtered_resps"));
    assert!(
        !env.files().iter().any(|f| f.contains("attachments/")),
        "{:?}",
        env.files()
    );

    let output = import(&env, "r", &samples, &["--attach", results_arg]);
    assert_ok(&output);
    insta::assert_snapshot!(crate::common::stable_output(
        &env,
        &String::from_utf8_lossy(&output.stdout)
    ));
    let attachments = manifest(&env, "r")["attachments"].clone();
    assert_eq!(attachments.as_array().unwrap().len(), 1);
    let stored = env.archived(&format!(
        "runs/r/{}",
        attachments[0]["path"].as_str().unwrap()
    ));
    assert_eq!(
        std::fs::read(stored).unwrap(),
        std::fs::read(&results).unwrap()
    );
    assert_eq!(env.validate_json()["ok"], true);

    let again = import(&env, "r", &samples[..1], &["--attach", results_arg]);
    assert_eq!(again.status.code(), Some(2), "the attachment name is taken");
}

/// Harness-shaped lines with the bare NaN the harness writes for a Python nan (as in its
/// `samples_babel_nan_*` output): line 2's em_or_nan and every always_nan.
fn nan_samples(env: &Env) -> PathBuf {
    let line = |n: u32, em: &str| {
        format!(
            "{{\"doc_id\": {i}, \"doc\": {{\"id\": \"n{n}\", \"question\": \"Say lol.\", \"answer\": \"lol\", \"skip\": {skip}}}, \
             \"target\": \"lol\", \"arguments\": {{\"gen_args_0\": {{\"arg_0\": \"Q: Say lol.\\nA:\", \"arg_1\": {{\"until\": [\"\\n\"]}}}}}}, \
             \"resps\": [[\"lol\"]], \"filtered_resps\": [\"lol\"], \"filter\": \"none\", \"metrics\": [\"em_or_nan\", \"always_nan\"], \
             \"doc_hash\": \"0\", \"prompt_hash\": \"0\", \"target_hash\": \"0\", \"em_or_nan\": {em}, \"always_nan\": NaN}}\n",
            i = n - 1,
            skip = em == "NaN",
        )
    };
    let text = [line(1, "1.0"), line(2, "NaN"), line(3, "0.0")].concat();
    PathBuf::from(env.input("samples_babel_nan_2026-12-02T12-52-40.515719.jsonl", text))
}

#[test]
fn bare_nan_in_harness_output_is_rejected_by_default_with_line_and_field() {
    // "Duplicate JSON keys, non-finite numbers, ... are rejected."
    let env = Env::with_archive();
    create_run(&env, "r", &[]);
    let output = import(&env, "r", &[nan_samples(&env)], &[]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("nothing was imported"), "{stderr}");
    assert!(
        stderr.contains(".jsonl:2:") && stderr.contains("field em_or_nan: non-finite number NaN"),
        "{stderr}"
    );
    assert!(stderr.contains("field always_nan"), "{stderr}");
    assert!(
        stderr.contains("--non-finite null"),
        "the hint names the opt-in: {stderr}"
    );
    assert!(!env.files().iter().any(|f| f.contains("/raw/")));
}

#[test]
fn non_finite_null_reads_harness_nan_as_null_with_a_warning_and_unknown_correctness() {
    // "Null means unknown, not zero."
    let env = Env::with_archive();
    create_run(&env, "r", &["correctness_metric=em_or_nan"]);
    assert_ok(&import(
        &env,
        "r",
        &[nan_samples(&env)],
        &["--non-finite", "null"],
    ));
    let records = env.records("r");
    let correct: Vec<Option<bool>> = records.iter().map(|r| r["correct"].as_bool()).collect();
    assert_eq!(correct, [Some(true), None, Some(false)]);
    assert!(records[1]["metrics"]["em_or_nan"].is_null());
    assert!(records.iter().all(|r| r["metrics"]["always_nan"].is_null()));
    let warnings: Vec<&str> = records[1]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings
            .contains(&"non-finite number NaN at em_or_nan was read as null (--non-finite null)"),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("metric em_or_nan is null")),
        "{warnings:?}"
    );
    assert_eq!(
        records[0]["warnings"].as_array().unwrap().len(),
        1,
        "always_nan only"
    );
    assert_eq!(
        manifest(&env, "r")["imports"][0]["options"]["non_finite"],
        "null"
    );
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn a_file_without_a_task_name_needs_a_benchmark() {
    let env = Env::with_archive();
    create_run(&env, "r", &[]);
    let (_, samples) = output_folder("original");
    let renamed = PathBuf::from(env.input("mc.jsonl", std::fs::read(&samples[2]).unwrap()));
    let output = import(&env, "r", std::slice::from_ref(&renamed), &[]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("hint: pass --benchmark"), "{stderr}");
    assert!(
        stderr.contains("1 problem in"),
        "a problem of the whole file is reported once, not per line: {stderr}"
    );
    assert_ok(&import(&env, "r", &[renamed], &["--benchmark", "babel_mc"]));
}

#[test]
fn a_results_file_given_as_input_is_refused_with_a_hint_to_attach_it() {
    let env = Env::with_archive();
    create_run(&env, "r", &[]);
    let (results, _) = output_folder("original");
    let output = import(&env, "r", &[results], &[]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("1 problem in"),
        "one problem, not one per line: {stderr}"
    );
    assert!(stderr.contains("--attach"), "{stderr}");
}
