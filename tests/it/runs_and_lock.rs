//! Runs (create, show, list, attach, seal), `init` on a downloaded archive, exit codes, and
//! the single-writer lock held by another real process.

use crate::common::{Env, canonical_line};
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn run_metadata_is_stored_with_json_values_where_they_parse() {
    let env = Env::with_archive();
    env.babel(&[
        "run",
        "create",
        "r1",
        "--model",
        "m",
        "--benchmark",
        "mmlu",
        "--meta",
        "shared_answer_key=true",
        "--meta",
        "dataset_revision=3f2a",
        "--meta",
        "metric_definitions={\"acc\": \"exact index match\"}",
    ])
    .assert()
    .success();
    let show: serde_json::Value = serde_json::from_slice(
        &env.babel(&["show", "r1", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(
        show["metadata"],
        json!({
            "model": "m",
            "benchmark": "mmlu",
            "shared_answer_key": true,
            "dataset_revision": "3f2a",
            "metric_definitions": {"acc": "exact index match"}
        })
    );
    assert_eq!(show["status"], "open");
}

#[test]
fn bad_run_creations_are_usage_errors_with_reasons() {
    let env = Env::with_run();
    let cases: [(&[&str], &str); 7] = [
        (
            &["run", "create", "r1", "--model", "m"],
            "run \"r1\" already exists",
        ),
        (
            &["run", "create", "R1", "--model", "m"],
            "differs from existing run \"r1\" only in letter case",
        ),
        (
            &["run", "create", "../x", "--model", "m"],
            "invalid ID \"../x\"",
        ),
        (
            &["run", "create", "r2", "--model", "m", "--meta", "model=x"],
            "metadata model is given twice",
        ),
        (
            &[
                "run",
                "create",
                "r2",
                "--model",
                "m",
                "--meta",
                "shared_answer_key=yes",
            ],
            "shared_answer_key must be true or false",
        ),
        (
            &[
                "run",
                "create",
                "r2",
                "--model",
                "m",
                "--meta",
                "n=9007199254740993",
            ],
            "integers beyond ±2^53 (9007199254740992) cannot be stored exactly",
        ),
        (
            &[
                "run",
                "create",
                "r2",
                "--model",
                "m",
                "--meta",
                "n=18446744073709551617",
            ],
            "integers beyond ±2^53 (9007199254740992) cannot be stored exactly",
        ),
    ];
    for (args, expected) in cases {
        let output = env.babel(args).output().unwrap();
        assert!(
            stderr(&output).contains(expected),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(output.status.code(), Some(2), "{args:?}");
    }
    assert_eq!(
        env.babel(&["run", "create", "../x", "--model", "m"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn a_sealed_run_refuses_every_later_write() {
    let env = Env::with_run();
    let file = env.input(
        "a.jsonl",
        canonical_line("q1", "original", Some(true)) + "\n",
    );
    env.babel(&["seal", "r1"]).assert().success();
    for args in [
        vec!["import", "r1", "--format", "canonical", file.as_str()],
        vec!["attach", "r1", file.as_str()],
        vec!["seal", "r1"],
    ] {
        let output = env.babel(&args).output().unwrap();
        // The run's state forbids the command: a usage error, as exporting an open run is.
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&output).contains("run \"r1\" is sealed"),
            "{}",
            stderr(&output)
        );
    }
    let show: serde_json::Value = serde_json::from_slice(
        &env.babel(&["show", "r1", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(
        (show["status"].as_str(), show["sealed_at"].as_str()),
        (Some("sealed"), Some(crate::common::TIMESTAMP))
    );
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn attachments_are_kept_byte_for_byte_and_are_immutable() {
    let env = Env::with_run();
    let results = env.input("results_2026.json", b"{\"acc,none\": NaN}\r\n");
    env.babel(&["attach", "r1", &results]).assert().success();
    assert_eq!(
        std::fs::read(env.archived("runs/r1/attachments/results_2026.json")).unwrap(),
        b"{\"acc,none\": NaN}\r\n"
    );
    let again = env.babel(&["attach", "r1", &results]).output().unwrap();
    assert!(stderr(&again).contains("already has an attachment attachments/results_2026.json"));
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn list_and_show_report_counts_per_benchmark_language_and_variant() {
    let env = Env::with_run();
    let lines = [
        canonical_line("q1", "original", Some(true)),
        canonical_line("q2", "original", Some(false)),
        canonical_line("q1", "rephrased", None),
    ];
    let file = env.input("a.jsonl", lines.join("\n"));
    env.babel(&["import", "r1", "--format", "canonical", &file])
        .assert()
        .success();
    let list = env.babel(&["list"]).output().unwrap();
    insta::assert_snapshot!(String::from_utf8(list.stdout).unwrap(), @r"
    run  status  model  imports  records
    r1   open    m1           1  3
         b: original 2, rephrased 1 (languages: en)
    ");
    let json: serde_json::Value =
        serde_json::from_slice(&env.babel(&["list", "--json"]).output().unwrap().stdout).unwrap();
    assert_eq!(
        json["runs"][0]["counts"],
        json!([
            {"benchmark": "b", "language": "en", "variant_id": "original", "records": 2},
            {"benchmark": "b", "language": "en", "variant_id": "rephrased", "records": 1},
        ])
    );
}

#[test]
fn commands_outside_an_archive_are_usage_errors() {
    let env = Env::new();
    let output = env.babel(&["list"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    insta::assert_snapshot!(stderr(&output), @r"
    error: archive is not a babel archive (no babel-archive.json)

    hint: pass --root DIR (or set BABEL_ROOT), or create one here with `babel init`
    ");
    let env = Env::with_archive();
    assert_eq!(
        env.babel(&["show", "nope"]).output().unwrap().status.code(),
        Some(2)
    );
}

#[test]
fn init_recreates_what_a_download_cannot_carry_and_fabricates_nothing() {
    // "After downloading ..., run init to recreate empty local operational directories ...
    // Missing registered data remains an error; initialization does not fabricate or
    // recover lost results."
    let env = Env::with_run();
    let file = env.input(
        "a.jsonl",
        canonical_line("q1", "original", Some(true)) + "\n",
    );
    env.babel(&["import", "r1", "--format", "canonical", &file])
        .assert()
        .success();
    std::fs::remove_dir_all(env.archived(".babel")).unwrap();
    std::fs::remove_dir(env.archived("item-banks")).unwrap();
    std::fs::remove_file(env.archived("runs/r1/records/0001.parquet")).unwrap();
    let before = env.files();

    let output = env.babel(&["init"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&output.stdout)
            .contains("recreated .babel, .babel/staging, item-banks")
    );
    assert!(env.archived(".babel/staging").is_dir() && env.archived("item-banks").is_dir());
    assert_eq!(env.files(), before, "init writes no data");
    let report = env.validate_json();
    assert_eq!(report["findings"][0]["check"], "missing", "{report:#}");
}

/// Holds the archive's writer lock from this test process (another process than the
/// babel under test), writing a holder note as babel does.
fn hold_lock(env: &Env) -> std::fs::File {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(env.archived(".babel/lock"))
        .unwrap();
    file.try_lock().unwrap();
    file.set_len(0).unwrap();
    file.write_all(b"pid 4242 running `babel import r1 big.jsonl` since 2026-12-02T11:00:00Z\n")
        .unwrap();
    file
}

#[test]
fn a_second_writer_is_refused_at_once_and_told_who_holds_the_lock() {
    let env = Env::with_run();
    let lock = hold_lock(&env);
    let started = Instant::now();
    let output = env.babel(&["seal", "r1"]).output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused at once"
    );
    assert_eq!(output.status.code(), Some(3));
    insta::assert_snapshot!(stderr(&output), @r"
    error: the archive is busy: archive/.babel/lock is held by pid 4242 running `babel import r1 big.jsonl` since 2026-12-02T11:00:00Z

    hint: wait for it to finish, or pass --wait SECONDS to queue behind it
    ");
    // Readers take no lock.
    env.babel(&["records", "r1"]).assert().success();
    env.babel(&["show", "r1"]).assert().success();
    // validate waits for the write under way to finish, so that it never reports a write
    // half done; with --wait it gives up after that long, as a writer does.
    let mut validate = std::process::Command::new(env!("CARGO_BIN_EXE_babel"))
        .current_dir(env.path())
        .args(["--root", "archive", "validate"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        validate.try_wait().unwrap().is_none(),
        "validate waits for the writer"
    );
    let impatient = env.babel(&["--wait", "0.2", "validate"]).output().unwrap();
    assert_eq!(impatient.status.code(), Some(3), "{}", stderr(&impatient));
    drop(lock);
    let output = validate.wait_with_output().unwrap();
    assert!(output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(
            "Blocking: waiting for the archive lock archive/.babel/lock held by pid 4242"
        ),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    env.babel(&["seal", "r1"]).assert().success();
}

#[test]
fn a_waiting_writer_proceeds_once_the_lock_is_released() {
    let env = Env::with_run();
    let lock = hold_lock(&env);
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        drop(lock);
    });
    let output = env.babel(&["--wait", "30", "seal", "r1"]).output().unwrap();
    releaser.join().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("Blocking: waiting for the archive lock"));

    let lock = hold_lock(&env);
    let output = env
        .babel(&["--wait", "0.3", "run", "create", "r2", "--model", "m"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "gives up after its wait");
    drop(lock);
}

#[test]
fn a_babel_writer_holds_the_lock_against_another_babel_writer() {
    let env = Env::with_run();
    let lines: Vec<String> = (0..150_000u32)
        .map(|q| canonical_line(&format!("q{q}"), "original", None))
        .collect();
    let big = env.input("big.jsonl", lines.join("\n"));
    let mut importer = std::process::Command::new(env!("CARGO_BIN_EXE_babel"))
        .current_dir(env.path())
        .args([
            "--root",
            "archive",
            "import",
            "r1",
            "--format",
            "canonical",
            &big,
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the importer holds the lock (its note is in the lock file).
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(env.archived(".babel/lock"))
        .unwrap_or_default()
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the importer never took the lock"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let output = env
        .babel(&["run", "create", "r2", "--model", "m"])
        .output()
        .unwrap();
    let pid = importer.id();
    assert!(importer.wait().unwrap().success());
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("pid {pid} running")),
        "{}",
        stderr(&output)
    );
}

#[test]
fn list_names_a_damaged_run_and_still_lists_the_others() {
    let env = Env::with_run();
    env.babel(&["run", "create", "r2", "--model", "m"])
        .assert()
        .success();
    std::fs::write(env.archived("runs/r1/manifest.json"), "{not json").unwrap();
    let output = env.babel(&["list"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    insta::assert_snapshot!(format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    ));
}

/// Runs babel in `env`, reads the first line of its stdout, closes the pipe, and waits.
fn first_line_then_close(env: &Env, args: &[&str]) -> (String, std::process::Output) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_babel"))
        .current_dir(env.path())
        .args(["--root", "archive"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (line, child.wait_with_output().unwrap())
}

#[test]
fn text_output_into_a_closed_pipe_ends_quietly_and_keeps_the_verdict() {
    // `babel show r1 | head -1`: far more output than a pipe buffers, then the reader goes.
    let env = Env::with_archive();
    let meta: Vec<String> = (0..4000).map(|i| format!("key{i:04}=value")).collect();
    let mut args = vec!["run", "create", "r1", "--model", "m"];
    for m in &meta {
        args.extend(["--meta", m.as_str()]);
    }
    env.babel(&args).assert().success();
    let (line, output) = first_line_then_close(&env, &["show", "r1"]);
    assert!(line.starts_with("run r1"), "{line}");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).is_empty(),
        "no panic message: {}",
        stderr(&output)
    );

    // A faulty archive stays faulty for `set -o pipefail`, even when nobody read it all.
    for i in 0..3000 {
        std::fs::write(env.archived(&format!("runs/r1/stray-{i:04}.txt")), "x").unwrap();
    }
    let (line, output) = first_line_then_close(&env, &["validate"]);
    assert!(line.contains("[untracked]"), "{line}");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).is_empty(),
        "no panic message: {}",
        stderr(&output)
    );
}
