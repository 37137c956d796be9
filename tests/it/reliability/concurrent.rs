//! Concurrent writers: "8 concurrent writers with `--wait` land exactly once; without it,
//! refused writers exit with the lock-busy code and leave nothing; readers and `validate`
//! meanwhile never see a partial import or report damage." The suite runs
//! `BABEL_CONCURRENT_ROUNDS` (default 2) rounds of each; the script more.

use super::count;
use crate::common::{Env, canonical_line};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

const WRITERS: usize = 8;
const LINES: u32 = 2000;

fn spawn_import(env: &Env, run: &str, input: &str, wait: bool) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_babel"));
    command.current_dir(env.path()).args(["--root", "archive"]);
    if wait {
        command.args(["--wait", "120"]);
    }
    command
        .args(["import", run, "--format", "canonical", input])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// While `running`, reads the run's records and validates the archive over and over; a
/// record count that is not a whole number of imports, or any finding, is a failure.
fn watch(env: &Env, run: &str, running: &AtomicBool) -> (u64, u64) {
    let (mut reads, mut validations) = (0, 0);
    while running.load(Ordering::SeqCst) {
        let records = env.babel(&["records", run]).output().unwrap();
        assert!(records.status.success());
        let lines = records.stdout.iter().filter(|&&b| b == b'\n').count();
        assert_eq!(
            lines % LINES as usize,
            0,
            "a reader saw a partial import: {lines} records"
        );
        reads += 1;
        let validate = env
            .babel(&["--wait", "120", "validate", "--json"])
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&validate.stdout).unwrap();
        assert_eq!(
            report["ok"], true,
            "validate during writes reported damage: {report:#}"
        );
        validations += 1;
    }
    (reads, validations)
}

fn inputs(env: &Env, round: u64) -> Vec<String> {
    (0..WRITERS)
        .map(|writer| {
            let variant = format!("w{round}-{writer}");
            let lines: Vec<String> = (0..LINES)
                .map(|q| canonical_line(&format!("q{q}"), &variant, Some(q % 2 == 0)))
                .collect();
            env.input(&format!("{variant}.jsonl"), lines.join("\n") + "\n")
        })
        .collect()
}

fn imports_of(env: &Env, run: &str) -> Vec<String> {
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(env.archived(&format!("runs/{run}/manifest.json"))).unwrap(),
    )
    .unwrap();
    manifest["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["source_basename"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn eight_writers_land_exactly_once_or_are_refused_cleanly_while_readers_watch() {
    let rounds = count("BABEL_CONCURRENT_ROUNDS", 2);
    let env = Arc::new(Env::with_run());
    let (mut refused_total, mut reads_total, mut validations_total) = (0, 0, 0);
    for round in 0..rounds {
        for wait in [true, false] {
            let files = inputs(&env, round * 2 + u64::from(wait));
            let before = imports_of(&env, "r1");
            let running = Arc::new(AtomicBool::new(true));
            let watcher = {
                let (env, running) = (Arc::clone(&env), Arc::clone(&running));
                std::thread::spawn(move || watch(&env, "r1", &running))
            };
            let children: Vec<Child> = files
                .iter()
                .map(|f| spawn_import(&env, "r1", f, wait))
                .collect();
            let outcomes: Vec<(Option<i32>, String)> = children
                .into_iter()
                .map(|c| {
                    let out = c.wait_with_output().unwrap();
                    (
                        out.status.code(),
                        String::from_utf8_lossy(&out.stderr).into_owned(),
                    )
                })
                .collect();
            running.store(false, Ordering::SeqCst);
            let (reads, validations) = watcher.join().unwrap();
            reads_total += reads;
            validations_total += validations;

            let after = imports_of(&env, "r1");
            let landed: Vec<&String> = after[before.len()..].iter().collect();
            for (file, (code, stderr)) in files.iter().zip(&outcomes) {
                let name = std::path::Path::new(file)
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap();
                let times = landed.iter().filter(|n| n.as_str() == name).count();
                match code {
                    Some(0) => assert_eq!(times, 1, "{name} succeeded but landed {times} times"),
                    Some(3) if !wait => {
                        assert_eq!(times, 0, "{name} was refused but landed");
                        assert!(stderr.contains("the archive is busy"), "{stderr}");
                        refused_total += 1;
                    }
                    other => panic!("{name} (wait: {wait}) exited {other:?}: {stderr}"),
                }
            }
            if wait {
                assert_eq!(landed.len(), WRITERS, "with --wait every writer lands");
            }
            assert!(
                env.files().iter().all(|f| !f.ends_with(".new")),
                "a refused or finished writer left a file"
            );
        }
    }
    assert_eq!(env.validate_json()["ok"], true);
    eprintln!(
        "concurrent writers: {rounds} round(s) of {WRITERS} with and without --wait; {refused_total} refused (exit 3, nothing left); readers read {reads_total} times and validate ran {validations_total} times meanwhile, always whole"
    );
}

#[test]
fn readers_during_an_import_bundle_see_whole_runs_or_none() {
    // "import-bundle places run manifests before their files, so concurrent `records` fail
    // with 'No such file' [...] Manifests go last, as for every other write" (issue 18).
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
    let mut reads = 0u64;
    for _ in 0..count("BABEL_CONCURRENT_ROUNDS", 2) * 5 {
        let env = Env::with_archive();
        let mut import = Command::new(env!("CARGO_BIN_EXE_babel"))
            .current_dir(env.path())
            .args(["--root", "archive", "import-bundle"])
            .arg(&bundle)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        loop {
            let finished = import.try_wait().unwrap().is_some();
            let listed = env.babel(&["list", "--json"]).output().unwrap();
            assert!(listed.status.success());
            let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
            for run in listed["runs"].as_array().unwrap() {
                let id = run["run_id"].as_str().unwrap();
                let records = env.babel(&["records", id]).output().unwrap();
                assert!(
                    records.status.success(),
                    "a reader saw run {id} before its files: {}",
                    String::from_utf8_lossy(&records.stderr)
                );
                reads += 1;
            }
            if finished {
                break;
            }
        }
        assert!(import.wait_with_output().unwrap().status.success());
    }
    eprintln!("concurrent readers during import-bundle: {reads} reads of a listed run, all whole");
}
