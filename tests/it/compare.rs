//! `babel compare` end to end: side selection, the summary against counts computed here
//! from the input records, the cross-run rules, and where reports may be written.

use crate::common::Env;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// An archive with run `r1` holding the bundled capitals example (benchmark
/// world-capitals) and the all-outcomes fixture (benchmark golden).
fn two_benchmarks() -> Env {
    let env = Env::with_archive();
    env.babel(&["run", "create", "r1", "--model", "m"])
        .assert()
        .success();
    for (file, benchmark) in [
        ("examples/canonical/capitals.jsonl", "world-capitals"),
        ("tests/fixtures/compare/all-outcomes.jsonl", "golden"),
    ] {
        let path = fixture(file);
        env.babel(&[
            "import",
            "r1",
            "--format",
            "canonical",
            "--benchmark",
            benchmark,
        ])
        .arg(&path)
        .env("BABEL_TIMESTAMP", crate::common::TIMESTAMP)
        .assert()
        .success();
    }
    env
}

fn compare_json(env: &Env, args: &[&str]) -> Value {
    let mut full = vec!["compare"];
    full.extend_from_slice(args);
    full.push("--json");
    let output = env.babel(&full).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn stderr_of(env: &Env, args: &[&str], code: i32) -> String {
    let output = env.babel(args).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stderr).unwrap()
}

/// Counts computed from the input lines, independently of babel: per group, the outcome
/// of each question from its original and rephrased `correct`.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    both_correct: u64,
    both_wrong: u64,
    correct_to_wrong: u64,
    wrong_to_correct: u64,
    unscored: u64,
    only_baseline: u64,
    only_variant: u64,
}

type Sides = (Option<Option<bool>>, Option<Option<bool>>);

fn expected_counts(files: &[(&str, &str)]) -> BTreeMap<(String, String), Counts> {
    // (benchmark, language, question) -> (original correct, rephrased correct)
    let mut questions: BTreeMap<(String, String, String), Sides> = BTreeMap::new();
    for (file, benchmark) in files {
        let text = std::fs::read_to_string(fixture(file)).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let value: Value = serde_json::from_str(line).unwrap();
            if value["identity_scope"] == "run-local" {
                continue;
            }
            let language = value["language"].as_str().unwrap_or("(null)").to_owned();
            let key = (
                benchmark.to_string(),
                language,
                value["question_id"].as_str().unwrap().to_owned(),
            );
            let correct = value["correct"].as_bool();
            let entry = questions.entry(key).or_default();
            match value["variant_id"].as_str().unwrap() {
                "original" => entry.0 = Some(correct),
                "rephrased" => entry.1 = Some(correct),
                other => panic!("unexpected variant {other}"),
            }
        }
    }
    let mut groups: BTreeMap<(String, String), Counts> = BTreeMap::new();
    for ((benchmark, language, _), sides) in questions {
        for group in [
            ("benchmark".to_owned(), benchmark.clone()),
            ("language".to_owned(), language.clone()),
            ("all".to_owned(), String::new()),
        ] {
            let counts = groups.entry(group).or_default();
            match sides {
                (Some(Some(true)), Some(Some(true))) => counts.both_correct += 1,
                (Some(Some(false)), Some(Some(false))) => counts.both_wrong += 1,
                (Some(Some(true)), Some(Some(false))) => counts.correct_to_wrong += 1,
                (Some(Some(false)), Some(Some(true))) => counts.wrong_to_correct += 1,
                (Some(_), Some(_)) => counts.unscored += 1,
                (Some(_), None) => counts.only_baseline += 1,
                (None, Some(_)) => counts.only_variant += 1,
                (None, None) => unreachable!(),
            }
        }
    }
    groups
}

fn counts_of(outcomes: &Value) -> Counts {
    let n = |name: &str| outcomes[name].as_u64().unwrap();
    Counts {
        both_correct: n("both_correct"),
        both_wrong: n("both_wrong"),
        correct_to_wrong: n("correct_to_wrong"),
        wrong_to_correct: n("wrong_to_correct"),
        unscored: n("unscored"),
        only_baseline: n("only_baseline"),
        only_variant: n("only_variant"),
    }
}

/// Two-sided exact McNemar p-value for small counts, from the binomial sum.
fn mcnemar(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    let choose = |n: u64, k: u64| (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64);
    let tail: f64 = (0..=k).map(|i| choose(n, i)).sum::<f64>() / 2f64.powi(n as i32);
    (2.0 * tail).min(1.0)
}

fn check_group(name: &str, group: &Value, expected: &Counts) {
    assert_eq!(&counts_of(&group["outcomes"]), expected, "{name}");
    let pairs = expected.both_correct
        + expected.both_wrong
        + expected.correct_to_wrong
        + expected.wrong_to_correct;
    let stats = &group["statistics"];
    if pairs == 0 {
        assert!(stats.is_null(), "{name}: no known pair, no statistics");
        return;
    }
    let n = pairs as f64;
    let close = |field: &str, value: f64| {
        let found = stats[field].as_f64().unwrap();
        assert!(
            (found - value).abs() < 1e-12,
            "{name} {field}: {found} != {value}"
        );
    };
    assert_eq!(stats["pairs"], pairs, "{name}");
    close(
        "baseline_accuracy",
        (expected.both_correct + expected.correct_to_wrong) as f64 / n,
    );
    close(
        "variant_accuracy",
        (expected.both_correct + expected.wrong_to_correct) as f64 / n,
    );
    close(
        "delta",
        (expected.wrong_to_correct as f64 - expected.correct_to_wrong as f64) / n,
    );
    close(
        "consistency",
        (expected.both_correct + expected.both_wrong) as f64 / n,
    );
    close(
        "mcnemar_exact_p",
        mcnemar(expected.correct_to_wrong, expected.wrong_to_correct),
    );
    assert_eq!(stats["delta_ci_method"], "newcombe_1998_method_10");
    for side in ["baseline", "variant", "delta"] {
        let low = stats[format!("{side}_ci_low")].as_f64().unwrap();
        let high = stats[format!("{side}_ci_high")].as_f64().unwrap();
        let point = if side == "delta" {
            stats["delta"].as_f64().unwrap()
        } else {
            stats[format!("{side}_accuracy")].as_f64().unwrap()
        };
        assert!(low <= point && point <= high, "{name} {side} interval");
    }
}

#[test]
fn the_summary_per_benchmark_and_language_matches_an_independent_count_of_the_records() {
    // "Aggregate accuracy and its delta use only matched pairs with known correctness on
    // both sides", overall and "the same table broken down per benchmark and per language".
    let env = two_benchmarks();
    let summary = compare_json(&env, &["r1"]);
    let expected = expected_counts(&[
        ("examples/canonical/capitals.jsonl", "world-capitals"),
        ("tests/fixtures/compare/all-outcomes.jsonl", "golden"),
    ]);
    check_group(
        "overall",
        &summary,
        &expected[&("all".into(), String::new())],
    );
    let benchmarks = summary["by_benchmark"].as_array().unwrap();
    assert_eq!(benchmarks.len(), 2);
    for group in benchmarks {
        let name = group["benchmark"].as_str().unwrap().to_owned();
        check_group(&name, group, &expected[&("benchmark".into(), name.clone())]);
    }
    let languages = summary["by_language"].as_array().unwrap();
    let expected_languages = expected
        .keys()
        .filter(|(kind, _)| kind == "language")
        .count();
    assert_eq!(languages.len(), expected_languages);
    for group in languages {
        let name = group["language"].as_str().unwrap_or("(null)").to_owned();
        check_group(&name, group, &expected[&("language".into(), name.clone())]);
    }
}

#[test]
fn the_default_sides_are_original_and_rephrased_of_one_run() {
    let env = two_benchmarks();
    let summary = compare_json(&env, &["r1"]);
    assert_eq!(summary["baseline"]["variant_id"], "original");
    assert_eq!(summary["variant"]["variant_id"], "rephrased");
    assert_eq!(summary["baseline"]["run_id"], "r1");
    assert_eq!(summary["variant"]["run_id"], "r1");
    assert!(summary["report"].is_null());
    let swapped = compare_json(
        &env,
        &["r1", "--baseline", "rephrased", "--variant", "original"],
    );
    assert_eq!(
        swapped["outcomes"]["correct_to_wrong"],
        summary["outcomes"]["wrong_to_correct"]
    );
    assert_eq!(
        swapped["outcomes"]["only_baseline"],
        summary["outcomes"]["only_variant"]
    );
}

#[test]
fn run_local_identities_are_excluded_with_counts_for_each_side() {
    // "Run-local identities are excluded, with counts for each side in the summary."
    let env = two_benchmarks();
    let summary = compare_json(&env, &["r1"]);
    assert_eq!(summary["baseline"]["run_local_excluded"], 1);
    assert_eq!(summary["variant"]["run_local_excluded"], 0);
    // capitals: 6 original; all-outcomes: 6 stable original (q1-q6) plus one run-local.
    assert_eq!(summary["baseline"]["records"], 12);
}

#[test]
fn a_record_without_a_stable_id_still_counts_when_each_side_is_summarized_alone() {
    // "It still contributes to independent summaries when correctness is available."
    let env = two_benchmarks();
    let summary = compare_json(&env, &["r1"]);
    for (side, variant) in [("baseline", "original"), ("variant", "rephrased")] {
        let records: Vec<Value> = env
            .records("r1")
            .into_iter()
            .filter(|r| r["variant_id"] == variant)
            .collect();
        let known: Vec<bool> = records
            .iter()
            .filter_map(|r| r["correct"].as_bool())
            .collect();
        let correct = known.iter().filter(|&&c| c).count();
        let alone = &summary[side]["alone"];
        assert_eq!(alone["scored"], known.len(), "{side}");
        assert_eq!(alone["correct"], correct, "{side}");
        assert_eq!(
            alone["accuracy"].as_f64().unwrap(),
            correct as f64 / known.len() as f64
        );
    }
    let local_known = env
        .records("r1")
        .iter()
        .filter(|r| r["identity_scope"] == "run-local" && r["correct"].is_boolean())
        .count();
    assert_eq!(local_known, 1, "the fixture's run-local record is scored");
    assert!(
        summary["baseline"]["alone"]["scored"].as_u64().unwrap()
            > summary["statistics"]["pairs"].as_u64().unwrap(),
        "unmatched, unscored-pair and run-local records are in it, not in the pairs"
    );
    let text = env.babel(&["compare", "r1"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("each side alone ("),
        "the text summary prints it when it says more than the pairs"
    );
}

fn two_runs(revision_a: Option<&str>, revision_b: Option<&str>) -> Env {
    let env = Env::with_archive();
    for (run, revision) in [("a", revision_a), ("b", revision_b)] {
        let mut args = vec!["run", "create", run, "--model", "m", "--benchmark", "caps"];
        let meta = revision.map(|r| format!("dataset_revision={r}"));
        if let Some(meta) = &meta {
            args.extend(["--meta", meta.as_str()]);
        }
        env.babel(&args).assert().success();
        env.babel(&["import", run, "--format", "canonical"])
            .arg(fixture("examples/canonical/capitals.jsonl"))
            .assert()
            .success();
    }
    env
}

#[test]
fn another_run_supplies_the_variant_side_with_the_same_variant_by_default() {
    let env = two_runs(Some("rev-1"), Some("rev-1"));
    let summary = compare_json(&env, &["a", "--other-run", "b"]);
    assert_eq!(summary["baseline"]["run_id"], "a");
    assert_eq!(summary["variant"]["run_id"], "b");
    assert_eq!(summary["variant"]["variant_id"], "original");
    // The same records on both sides: every known pair is concordant.
    assert_eq!(summary["statistics"]["discordant_pairs"], 0);
    assert_eq!(summary["statistics"]["consistency"], 1.0);
    let rephrased = compare_json(&env, &["a", "--other-run", "b", "--variant", "rephrased"]);
    assert_eq!(rephrased["variant"]["variant_id"], "rephrased");
    assert_eq!(
        rephrased["outcomes"],
        compare_json(&env, &["a"])["outcomes"],
        "original of a vs rephrased of b equals original vs rephrased of a (same data)"
    );
}

#[test]
fn known_conflicting_dataset_revisions_in_a_cross_run_comparison_are_rejected() {
    // "Known conflicting dataset revisions in a cross-run comparison are rejected."
    let env = two_runs(Some("rev-1"), Some("rev-2"));
    let stderr = stderr_of(&env, &["compare", "a", "--other-run", "b"], 2);
    assert!(stderr.contains("different dataset revisions"), "{stderr}");
    assert!(stderr.contains("\"rev-1\" and \"rev-2\""), "{stderr}");
    assert!(stderr.contains("hint:"), "{stderr}");
    // A run that declares no revision is not in conflict.
    let env = two_runs(Some("rev-1"), None);
    compare_json(&env, &["a", "--other-run", "b"]);
}

#[test]
fn a_side_without_records_of_its_variant_is_a_usage_error_listing_the_variants() {
    let env = two_benchmarks();
    let stderr = stderr_of(&env, &["compare", "r1", "--variant", "para-9"], 2);
    assert!(
        stderr.contains(
            "run r1 has no records of variant \"para-9\"; its variants are: original, rephrased"
        ),
        "{stderr}"
    );
    let stderr = stderr_of(&env, &["compare", "r1", "--variant", "original"], 2);
    assert!(stderr.contains("both sides select"), "{stderr}");
}

#[test]
fn duplicate_stable_identities_within_a_side_are_an_error_naming_both_sources() {
    // "Duplicate stable identities are an error, not an arbitrary choice of one record."
    let env = two_benchmarks();
    let records = env.archived("runs/r1/records/0001.parquet");
    let mut rows = crate::common::records_file_rows(&records);
    let mut copy = rows[0].clone();
    copy["source"]["line"] = 3.into();
    rows.push(copy);
    crate::common::write_records_file(&records, &rows);
    let stderr = stderr_of(&env, &["compare", "r1"], 1);
    assert!(stderr.contains("share the item identity"), "{stderr}");
    assert!(
        stderr.contains("runs/r1/raw/0001-capitals.jsonl:1 and runs/r1/raw/0001-capitals.jsonl:3"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: `babel validate`"), "{stderr}");
}

/// Every file under the archive root with its bytes, `.babel/` included.
fn snapshot_of(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn report_generation_reads_only_and_takes_no_lock() {
    // "Report generation does not change or reseal runs."
    let env = two_benchmarks();
    env.babel(&["seal", "r1"]).assert().success();
    let before = snapshot_of(&env.root());
    // Another writer holds the archive lock the whole time: a reader does not wait for it.
    let lock = std::fs::File::options()
        .read(true)
        .write(true)
        .open(env.archived(".babel/lock"))
        .unwrap();
    lock.lock().unwrap();
    let out = env.path().join("reports");
    std::fs::create_dir(&out).unwrap();
    for name in ["r.html", "r.csv", "r.jsonl"] {
        let dest = out.join(name);
        env.babel(&["compare", "r1", "--items"])
            .arg(&dest)
            .assert()
            .success();
        assert!(dest.is_file());
    }
    drop(lock);
    assert_eq!(snapshot_of(&env.root()), before);
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn an_existing_report_is_never_overwritten() {
    // "Writing is atomic and refuses to overwrite an existing destination."
    let env = two_benchmarks();
    let dest = env.path().join("report.csv");
    std::fs::write(&dest, "keep me").unwrap();
    let stderr = stderr_of(
        &env,
        &["compare", "r1", "--items", dest.to_str().unwrap()],
        2,
    );
    assert!(
        stderr.contains("already exists; babel never overwrites its output"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), "keep me");
    let leftovers: Vec<_> = std::fs::read_dir(env.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".babel-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn reports_are_written_outside_the_archive() {
    // "Reports are derived local files": never inside ROOT, where validate and the Hub
    // would see them.
    let env = two_benchmarks();
    for inside in ["report.html", "runs/r1/report.html", ".babel/report.html"] {
        let dest = env.archived(inside);
        let stderr = stderr_of(
            &env,
            &["compare", "r1", "--items", dest.to_str().unwrap()],
            2,
        );
        assert!(
            stderr.contains("is inside the archive"),
            "{inside}: {stderr}"
        );
        assert!(!dest.exists());
    }
    // A path that reaches the archive through `..` is refused as well.
    let sneaky = env.path().join("inputs/../archive/r.html");
    std::fs::create_dir_all(env.path().join("inputs")).unwrap();
    stderr_of(
        &env,
        &["compare", "r1", "--items", sneaky.to_str().unwrap()],
        2,
    );
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn the_suffix_selects_the_format_and_an_explicit_format_overrides_it() {
    // "an explicit --format html|csv|jsonl with --items overrides suffix inference"
    let env = two_benchmarks();
    let unknown = env.path().join("items.out");
    let stderr = stderr_of(
        &env,
        &["compare", "r1", "--items", unknown.to_str().unwrap()],
        2,
    );
    assert!(stderr.contains("cannot tell the report format"), "{stderr}");
    assert!(!unknown.exists());
    let summary = compare_json(
        &env,
        &[
            "r1",
            "--items",
            unknown.to_str().unwrap(),
            "--format",
            "jsonl",
        ],
    );
    assert_eq!(summary["report"]["format"], "jsonl");
    let text = std::fs::read_to_string(&unknown).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert!(first["outcome"].is_string());
    let html_named_csv = env.path().join("report.html");
    compare_json(
        &env,
        &[
            "r1",
            "--items",
            html_named_csv.to_str().unwrap(),
            "--format",
            "csv",
        ],
    );
    assert!(
        std::fs::read_to_string(&html_named_csv)
            .unwrap()
            .starts_with("outcome,benchmark,")
    );
}

#[test]
fn the_json_summary_names_the_report_it_wrote() {
    let env = two_benchmarks();
    let dest = env.path().join("r.jsonl");
    let summary = compare_json(&env, &["r1", "--items", dest.to_str().unwrap()]);
    let report = &summary["report"];
    assert_eq!(report["format"], "jsonl");
    assert_eq!(report["items"], summary["items"]);
    let bytes = std::fs::read(&dest).unwrap();
    assert_eq!(report["bytes"], json!(bytes.len()));
    let lines = bytes.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(json!(lines), summary["items"]);
}

#[test]
fn compare_help_teaches_the_defaults_with_examples() {
    let output = Env::new().babel(&["compare", "--help"]).output().unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    for expected in [
        "default original",
        "default rephrased",
        "--other-run",
        "Examples:",
        "babel compare r1 --items r1.html",
        "dataset_revision",
    ] {
        assert!(
            help.contains(expected),
            "{expected:?} missing from:\n{help}"
        );
    }
}

/// Registers `payload` (a file under examples/benchmark/, or edited bytes) as artifact
/// `kind` `id` and returns its SHA-256 as `artifact add --json` reports it.
fn register(env: &Env, kind: &str, id: &str, payload: &[u8]) -> String {
    let path = env.input(&format!("{kind}-{id}.json"), payload);
    let output = env
        .babel(&["artifact", "add", kind, id, &path, "--json"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let added: Value = serde_json::from_slice(&output.stdout).unwrap();
    added["sha256"].as_str().unwrap().to_owned()
}

fn example(name: &str) -> String {
    std::fs::read_to_string(fixture(&format!("examples/benchmark/{name}"))).unwrap()
}

/// A copy of the example protocol with another description (so another payload hash),
/// optionally pinning another item bank.
fn protocol_variant(bank: Option<(&str, &str)>) -> String {
    let mut protocol: Value = serde_json::from_str(&example("protocol.json")).unwrap();
    protocol["description"] = json!("Zero-shot multiple choice, worded for a second study.");
    if let Some((id, sha256)) = bank {
        protocol["item_bank"] = json!({"id": id, "sha256": sha256});
    }
    protocol.to_string()
}

/// An archive with the example bank `capitals-bank` and protocol `capitals-0shot`, a second
/// protocol `capitals-0shot-b` of the same bank, and a second bank `capitals-bank-b` with
/// its own protocol `capitals-0shot-bank-b`.
fn strict_archive() -> Env {
    let env = Env::with_archive();
    register(
        &env,
        "item-bank",
        "capitals-bank",
        example("item-bank.json").as_bytes(),
    );
    register(
        &env,
        "protocol",
        "capitals-0shot",
        example("protocol.json").as_bytes(),
    );
    register(
        &env,
        "protocol",
        "capitals-0shot-b",
        protocol_variant(None).as_bytes(),
    );
    let mut bank: Value = serde_json::from_str(&example("item-bank.json")).unwrap();
    bank["description"] = json!("The same five capitals, registered again as a second bank.");
    let bank_sha = register(
        &env,
        "item-bank",
        "capitals-bank-b",
        bank.to_string().as_bytes(),
    );
    register(
        &env,
        "protocol",
        "capitals-0shot-bank-b",
        protocol_variant(Some(("capitals-bank-b", &bank_sha))).as_bytes(),
    );
    env
}

/// Creates run `run` (strict when `contract` names a bank and a protocol) and imports
/// `results` (a file under examples/) into it.
fn run_with(env: &Env, run: &str, contract: Option<(&str, &str)>, results: &str) {
    let mut args = vec![
        "run",
        "create",
        run,
        "--model",
        "demo-org/demo-7b",
        "--benchmark",
        "world-capitals",
    ];
    if let Some((bank, protocol)) = contract {
        args.extend(["--item-bank", bank, "--protocol", protocol]);
    }
    env.babel(&args).assert().success();
    env.babel(&["import", run, "--format", "canonical"])
        .arg(fixture(&format!("examples/{results}")))
        .assert()
        .success();
}

const STRICT_HINT: &str =
    "hint: strict runs compare only with strict runs of the same item bank and protocol";

#[test]
fn strict_runs_under_different_protocols_are_a_refused_selection_exit_2() {
    // "For strict runs, ... comparisons require the same bank and protocol references."
    // FORMAT.md: refused selections exit 2 (usage), like a differing dataset_revision.
    let env = strict_archive();
    let contract = Some(("capitals-bank", "capitals-0shot"));
    run_with(
        &env,
        "step1000",
        contract,
        "benchmark/results/demo-7b-step1000.jsonl",
    );
    let other = Some(("capitals-bank", "capitals-0shot-b"));
    run_with(
        &env,
        "reworded",
        other,
        "benchmark/results/demo-7b-step2000.jsonl",
    );
    let stderr = stderr_of(&env, &["compare", "step1000", "--other-run", "reworded"], 2);
    assert!(
        stderr.contains("runs \"step1000\" and \"reworded\" pin different protocols"),
        "{stderr}"
    );
    assert!(stderr.contains("capitals-0shot@"), "{stderr}");
    assert!(stderr.contains(STRICT_HINT), "{stderr}");
}

#[test]
fn strict_runs_of_different_item_banks_are_a_refused_selection_exit_2() {
    // "comparisons require the same bank and protocol references."
    let env = strict_archive();
    let contract = Some(("capitals-bank", "capitals-0shot"));
    run_with(
        &env,
        "step1000",
        contract,
        "benchmark/results/demo-7b-step1000.jsonl",
    );
    let other = Some(("capitals-bank-b", "capitals-0shot-bank-b"));
    run_with(
        &env,
        "bank-b",
        other,
        "benchmark/results/demo-7b-step2000.jsonl",
    );
    let stderr = stderr_of(&env, &["compare", "step1000", "--other-run", "bank-b"], 2);
    assert!(
        stderr.contains("runs \"step1000\" and \"bank-b\" pin different item banks"),
        "{stderr}"
    );
    assert!(stderr.contains(STRICT_HINT), "{stderr}");
}

#[test]
fn a_strict_run_and_a_general_run_are_a_refused_selection_exit_2_either_way_round() {
    // ARTIFACTS.md: a strict run never compares with a general one.
    let env = strict_archive();
    let contract = Some(("capitals-bank", "capitals-0shot"));
    run_with(
        &env,
        "strict",
        contract,
        "benchmark/results/demo-7b-step1000.jsonl",
    );
    run_with(&env, "general", None, "canonical/capitals.jsonl");
    for (run, other) in [("strict", "general"), ("general", "strict")] {
        let stderr = stderr_of(&env, &["compare", run, "--other-run", other], 2);
        assert!(
            stderr.contains("run \"strict\" is a strict benchmark run and run \"general\" is not"),
            "{stderr}"
        );
        assert!(stderr.contains(STRICT_HINT), "{stderr}");
    }
}

#[test]
fn two_checkpoints_under_the_same_bank_and_protocol_compare() {
    // "Different checkpoints are intentionally comparable."
    let env = strict_archive();
    let contract = Some(("capitals-bank", "capitals-0shot"));
    run_with(
        &env,
        "step1000",
        contract,
        "benchmark/results/demo-7b-step1000.jsonl",
    );
    run_with(
        &env,
        "step2000",
        contract,
        "benchmark/results/demo-7b-step2000.jsonl",
    );
    let summary = compare_json(&env, &["step2000", "--other-run", "step1000"]);
    let lines = |name: &str| {
        example(&format!("results/{name}.jsonl"))
            .lines()
            .filter(|line| !line.trim().is_empty())
            .count() as u64
    };
    assert_eq!(summary["baseline"]["records"], lines("demo-7b-step2000"));
    assert_eq!(summary["variant"]["records"], lines("demo-7b-step1000"));
    assert_eq!(summary["matched"], lines("demo-7b-step1000"));
}

const BABEL_GEN: &str = "tests/fixtures/lm-eval-0.4.13/original/dummy-p/samples_babel_gen_2026-12-02T12-52-40.515719.jsonl";

#[test]
fn a_harness_task_under_three_filters_is_broken_down_per_filter_with_a_pooling_caveat() {
    // The item identity is "(benchmark, language, script, question_id, filter, repeat_id)",
    // so each doc of babel_gen is three items; pooled, they are not independent pairs.
    let env = Env::with_archive();
    for run in ["a", "b"] {
        env.babel(&["run", "create", run, "--model", "dummy-p"])
            .assert()
            .success();
        env.babel(&["import", run, "--format", "harness"])
            .arg(fixture(BABEL_GEN))
            .assert()
            .success();
    }
    // Independently of babel: per filter, the number of lines and of exact matches.
    let mut per_filter: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut docs = std::collections::BTreeSet::new();
    for line in std::fs::read_to_string(fixture(BABEL_GEN)).unwrap().lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        docs.insert(value["doc"]["id"].as_str().unwrap().to_owned());
        let counts = per_filter
            .entry(value["filter"].as_str().unwrap().to_owned())
            .or_default();
        counts.0 += 1;
        counts.1 += u64::from(value["exact_match"].as_f64().unwrap() == 1.0);
    }
    let lines: u64 = per_filter.values().map(|(n, _)| n).sum();

    let summary = compare_json(&env, &["a", "--other-run", "b"]);
    assert_eq!(
        summary["statistics"]["pairs"], lines,
        "the overall count keeps every item"
    );
    let groups = summary["by_filter"].as_array().unwrap();
    let found: BTreeMap<String, (u64, f64)> = groups
        .iter()
        .map(|g| {
            (
                g["filter"].as_str().unwrap().to_owned(),
                (
                    g["statistics"]["pairs"].as_u64().unwrap(),
                    g["statistics"]["baseline_accuracy"].as_f64().unwrap(),
                ),
            )
        })
        .collect();
    let expected: BTreeMap<String, (u64, f64)> = per_filter
        .iter()
        .map(|(filter, &(n, correct))| (filter.clone(), (n, correct as f64 / n as f64)))
        .collect();
    assert_eq!(found, expected);
    let caveat = &summary["pooling_caveat"];
    assert_eq!(caveat["questions"], json!(docs.len()));
    assert_eq!(caveat["filters"], json!(per_filter.len()));
    assert_eq!(caveat["repeat_ids"], 1);
    assert_eq!(caveat["pools_filters"], true);
    assert_eq!(caveat["pools_repeats"], false);

    let output = env
        .babel(&["compare", "a", "--other-run", "b"])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let start = format!(
        "caveat    {lines} items hold {} questions under {} filters",
        docs.len(),
        per_filter.len()
    );
    assert!(text.contains(&start), "{text}");
    assert!(text.contains("one filter at a time."), "{text}");
    for filter in per_filter.keys() {
        assert!(text.contains(&format!("\n  {filter} ")), "{filter}: {text}");
    }
}

#[test]
fn one_filter_and_one_repeat_need_no_pooling_caveat() {
    let env = two_benchmarks();
    let summary = compare_json(&env, &["r1"]);
    assert!(
        summary["pooling_caveat"].is_null(),
        "{}",
        summary["pooling_caveat"]
    );
    assert_eq!(summary["by_filter"].as_array().unwrap().len(), 1);
    assert_eq!(summary["by_filter"][0]["filter"], "none");
    assert_eq!(summary["by_filter"][0]["outcomes"], summary["outcomes"]);
}

#[test]
fn no_matched_item_says_why_naming_each_sides_benchmarks() {
    // The usual cause: one side imported without --benchmark, so the harness named the
    // benchmark after its task, and the two sides call the same questions differently.
    let env = Env::with_archive();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let harness = std::fs::read_dir(fixtures.join("lm-eval-0.4.13/original/dummy-p"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().contains("samples_babel_mc_original_"))
        .unwrap();
    for (run, benchmark) in [("a", None), ("b", Some("babel_mc"))] {
        env.babel(&["run", "create", run, "--model", "dummy"])
            .assert()
            .success();
        let mut import = env.babel(&["import", run, "--format", "harness"]);
        if let Some(benchmark) = benchmark {
            import.args(["--benchmark", benchmark]);
        }
        import.arg(&harness).assert().success();
    }
    let output = env
        .babel(&["compare", "a", "--other-run", "b"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("hint: no item is on both sides: the baseline names benchmark babel_mc_original, the variant babel_mc."),
        "{text}"
    );
    assert!(text.contains("--benchmark NAME"), "{text}");
    // The other run is named as such, with each side's model.
    assert!(
        text.contains("baseline  run a, variant original, model dummy (30 records)"),
        "{text}"
    );
    assert!(
        text.contains("other     run b, variant original, model dummy (30 records)"),
        "{text}"
    );
    // Items that pair get no such hint.
    let output = env
        .babel(&["compare", "b", "--other-run", "b"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8(output.stdout)
            .unwrap()
            .contains("hint: no item")
    );
}
