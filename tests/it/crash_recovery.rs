//! "A process killed at any instruction leaves an archive that validate accepts after the
//! next write or babel init, and contains the import entirely or not at all."
//!
//! Two kinds of proof: the real binary aborted at every named fault point of the commit
//! sequence (compiled in through the `fault-injection` feature), and a real `babel import`
//! child killed with SIGKILL at moments spread over its run.

use crate::common::{Env, canonical_line};
use std::os::unix::process::ExitStatusExt;

/// Lines of the large input: enough for an import to take a measurable while.
const LINES: usize = 40_000;

/// Fault points at which the import has committed (the manifest rename happened).
const COMMITTED_FROM: &str = "manifest-renamed";

fn points() -> Vec<&'static str> {
    babel::archive::faults::POINTS.to_vec()
}

fn input_of(env: &Env, name: &str, questions: std::ops::Range<u32>) -> String {
    let lines: Vec<String> = questions
        .map(|q| canonical_line(&format!("q{q}"), "original", Some(q % 3 == 0)))
        .collect();
    env.input(name, lines.join("\n") + "\n")
}

fn assert_validates(env: &Env) {
    let report = env.validate_json();
    assert_eq!(report["findings"], serde_json::json!([]), "{report:#}");
}

#[test]
fn an_import_aborted_at_any_fault_point_is_entire_or_absent_after_recovery() {
    let committed_from = points().iter().position(|p| *p == COMMITTED_FROM).unwrap();
    for (index, point) in points().into_iter().enumerate() {
        let env = Env::with_run();
        env.babel(&[
            "import",
            "r1",
            "--format",
            "canonical",
            &input_of(&env, "first.jsonl", 0..5),
        ])
        .assert()
        .success();
        let a = input_of(&env, "a.jsonl", 10..20);
        let b = input_of(&env, "b.jsonl", 20..30);
        let output = env
            .babel(&["import", "r1", "--format", "canonical", &a, &b])
            .env("BABEL_FAULT", point)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!("fault injected at {point}")),
            "the import must pass fault point {point}: {stderr}"
        );
        assert!(!output.status.success());

        env.babel(&["init"]).assert().success();
        assert_validates(&env);
        let records = env.records("r1").len();
        if index >= committed_from {
            assert_eq!(records, 25, "after {point} the import had committed");
        } else {
            assert_eq!(
                records, 5,
                "before the rename ({point}) nothing is published"
            );
        }
        // The next write works normally and the archive stays valid.
        env.babel(&[
            "import",
            "r1",
            "--format",
            "canonical",
            &input_of(&env, "c.jsonl", 40..42),
        ])
        .assert()
        .success();
        assert_validates(&env);
    }
}

#[test]
fn the_next_write_recovers_as_well_as_init_does() {
    let env = Env::with_run();
    let a = input_of(&env, "a.jsonl", 0..10);
    env.babel(&["import", "r1", "--format", "canonical", &a])
        .env("BABEL_FAULT", "data-written")
        .assert()
        .failure();
    let report = env.validate_json();
    let checks: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    assert!(
        checks.contains(&"journal"),
        "a pending journal is a finding: {report:#}"
    );
    assert!(
        checks.contains(&"untracked"),
        "uncommitted files are findings: {report:#}"
    );
    // A different write (run create) recovers first.
    env.babel(&["run", "create", "r2", "--model", "m"])
        .assert()
        .success();
    assert_validates(&env);
    assert!(env.records("r1").is_empty());
}

#[test]
fn run_create_and_seal_aborted_at_every_point_leave_a_valid_archive() {
    for point in points() {
        let env = Env::with_archive();
        let create = env
            .babel(&["run", "create", "r1", "--model", "m"])
            .env("BABEL_FAULT", point)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&create.stderr);
        // A run create writes no data files, so it never passes data-partly-written.
        if point != "data-partly-written" {
            assert!(stderr.contains("fault injected"), "{point}: {stderr}");
        }
        env.babel(&["init"]).assert().success();
        assert_validates(&env);

        let env = Env::with_run();
        let seal = env
            .babel(&["seal", "r1"])
            .env("BABEL_FAULT", point)
            .output()
            .unwrap();
        if point != "data-partly-written" {
            assert!(
                String::from_utf8_lossy(&seal.stderr).contains("fault injected"),
                "{point}"
            );
        }
        env.babel(&["init"]).assert().success();
        assert_validates(&env);
        let show = env.babel(&["show", "r1", "--json"]).output().unwrap();
        let status: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
        assert!(["open", "sealed"].contains(&status["status"].as_str().unwrap()));
    }
}

#[test]
fn attach_and_artifact_add_aborted_at_every_point_leave_a_valid_archive() {
    let bank =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/benchmark/item-bank.json");
    for point in points() {
        let env = Env::with_run();
        let results = env.input("results.json", "{\"acc\": 0.5}\n");
        let attach = env
            .babel(&["attach", "r1", &results])
            .env("BABEL_FAULT", point)
            .output()
            .unwrap();
        let passed = String::from_utf8_lossy(&attach.stderr).contains("fault injected");
        assert!(
            passed || point == "data-partly-written",
            "attach passes {point}"
        );
        env.babel(&["init"]).assert().success();
        assert_validates(&env);
        let show = env.babel(&["show", "r1", "--json"]).output().unwrap();
        let shown: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
        let attached = shown["attachments"].as_array().unwrap().len();
        let committed = points().iter().position(|p| *p == point)
            >= points().iter().position(|p| *p == COMMITTED_FROM);
        assert_eq!(
            attached,
            usize::from(committed || !passed),
            "attach at {point}"
        );

        let env = Env::with_archive();
        let add = env
            .babel(&[
                "artifact",
                "add",
                "item-bank",
                "bank",
                bank.to_str().unwrap(),
            ])
            .env("BABEL_FAULT", point)
            .output()
            .unwrap();
        let passed = String::from_utf8_lossy(&add.stderr).contains("fault injected");
        assert!(
            passed || point == "data-partly-written",
            "artifact add passes {point}"
        );
        env.babel(&["init"]).assert().success();
        assert_validates(&env);
        let registered = env.archived("item-banks/bank/manifest.json").exists();
        let committed = points().iter().position(|p| *p == point)
            >= points().iter().position(|p| *p == COMMITTED_FROM);
        assert_eq!(registered, committed || !passed, "artifact add at {point}");
    }
}

#[test]
fn an_import_killed_at_varying_moments_is_entire_or_absent() {
    // A large input, so the import takes long enough to be interrupted in every phase.
    let env = Env::with_run();
    let lines: Vec<String> = (0..LINES as u32)
        .map(|q| canonical_line(&format!("q{q}"), "original", Some(q % 2 == 0)))
        .collect();
    let big = env.input("big.jsonl", lines.join("\n") + "\n");

    // Spread the kills over an import's duration.
    let mut clock =
        crate::common::ImportClock::measure(&std::fs::read(env.path().join(&big)).unwrap());

    let mut outcomes = (0, 0);
    // A complete import is kept (removing it by hand would be tampering the history
    // catches): the next kill aims at a fresh run.
    let mut run = String::from("r1");
    let mut killed_while_running = 0;
    for step in 0..10u32 {
        let at = (f64::from(step) + 0.5) / 10.0;
        let crate::common::Kill { status, delay } = clock.kill_import(&env, &run, &big, at);
        if status.signal() == Some(9) {
            killed_while_running += 1;
        }

        env.babel(&["init"]).assert().success();
        assert_validates(&env);
        let count = env.records(&run).len();
        if count == 0 {
            outcomes.0 += 1;
        } else {
            assert_eq!(
                count, LINES,
                "killed after {delay:?} ({status}): partial import"
            );
            outcomes.1 += 1;
            run = format!("r{}", step + 2);
            env.babel(&["run", "create", &run, "--model", "m1", "--benchmark", "b"])
                .assert()
                .success();
        }
    }
    assert!(
        killed_while_running >= 5,
        "most kills must land while the import runs ({killed_while_running} did; outcomes {outcomes:?})"
    );
}

#[test]
fn import_bundle_aborted_at_every_point_publishes_all_of_the_bundle_or_none() {
    let source = crate::artifacts::registered();
    for run in ["demo-7b-step1000", "demo-7b-step2000"] {
        crate::artifacts::strict_run(&source, run, run, true);
    }
    source
        .babel(&[
            "export",
            "--run",
            "demo-7b-step1000",
            "--run",
            "demo-7b-step2000",
            "b.tar.zst",
        ])
        .assert()
        .success();
    let bundle = source.path().join("b.tar.zst");
    let published = [
        "runs/demo-7b-step1000/manifest.json",
        "runs/demo-7b-step2000/manifest.json",
        "item-banks/capitals-bank/manifest.json",
        "protocols/capitals-0shot/manifest.json",
    ];
    for point in points() {
        let env = Env::with_archive();
        let output = env
            .babel(&["import-bundle"])
            .arg(&bundle)
            .env("BABEL_FAULT", point)
            .output()
            .unwrap();
        let passed = String::from_utf8_lossy(&output.stderr).contains("fault injected");
        // Before any recovery, a reader sees every run of the bundle or none: no manifest
        // is in place before the write commits ("Readers never see half a bundle import").
        let listed = crate::common::babel_json(&env, &["list"]);
        let runs = listed["runs"].as_array().map_or(0, Vec::len);
        assert!(runs == 0 || runs == 2, "import-bundle at {point}: {listed}");
        let before_commit = points().iter().position(|q| *q == point)
            < points().iter().position(|q| *q == "manifest-renamed");
        if passed && before_commit {
            assert_eq!(
                runs, 0,
                "import-bundle at {point}: a run listed before the commit"
            );
        }
        env.babel(&["init"]).assert().success();
        assert_validates(&env);
        let present: Vec<bool> = published.iter().map(|m| env.archived(m).exists()).collect();
        assert!(
            present == [true; 4] || present == [false; 4],
            "import-bundle at {point}: {present:?}"
        );
        // The marker is the commit point, rewritten with its own bytes: once the write has
        // journalled the hash of what it will rename into place, that hash already matches,
        // so recovery completes the write rather than undoing it.
        let position = |p: &str| points().iter().position(|q| *q == p);
        let completes = position(point) >= position("commit-hash-journalled");
        assert_eq!(present[0], completes || !passed, "import-bundle at {point}");
        // Whatever happened, importing again completes it.
        env.babel(&["import-bundle"])
            .arg(&bundle)
            .assert()
            .success();
        assert_validates(&env);
        assert!(published.iter().all(|m| env.archived(m).exists()));
    }
}
