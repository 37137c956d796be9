//! "No false alarms, no hangs" (issue 13): special files, closed and full stdout,
//! non-UTF-8 arguments and control characters in names, through the real binary.

use crate::common::{Env, canonical_line, stable_output};
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs babel with a time limit, so that a hang is a failure, not a stuck suite.
fn babel_within(env: &Env, args: &[&str], limit: Duration) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_babel"))
        .current_dir(env.path())
        .args(["--root", "archive"])
        .args(args)
        .env("BABEL_TIMESTAMP", crate::common::TIMESTAMP)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("babel {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn special_files_are_refused_before_they_are_opened() {
    let env = Env::with_run();
    let fifo = env.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let before = env.files();
    let cases: [(&[&str], &str); 6] = [
        (
            &["attach", "r1", "fifo"],
            "fifo is a FIFO (named pipe), not a regular file",
        ),
        (
            &["attach", "r1", "/dev/zero"],
            "/dev/zero is a device, not a regular file",
        ),
        (
            &["attach", "r1", "/dev/null"],
            "/dev/null is a device, not a regular file",
        ),
        (
            &["attach", "r1", "inputs"],
            "inputs is a folder, not a regular file",
        ),
        (
            &["import", "r1", "--format", "canonical", "fifo"],
            "fifo is a FIFO (named pipe)",
        ),
        (
            &["artifact", "add", "item-bank", "b", "fifo"],
            "fifo is a FIFO (named pipe)",
        ),
    ];
    std::fs::create_dir_all(env.path().join("inputs")).unwrap();
    let good = env.input(
        "good.jsonl",
        canonical_line("q1", "original", Some(true)) + "\n",
    );
    for (args, needle) in cases {
        let output = babel_within(&env, args, Duration::from_secs(10));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(needle),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(env.files(), before, "{args:?} changed the archive");
    }
    // --attach of an import is held to the same rule, before anything is imported.
    let output = babel_within(
        &env,
        &[
            "import",
            "r1",
            "--format",
            "canonical",
            &good,
            "--attach",
            "/dev/zero",
        ],
        Duration::from_secs(10),
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert_eq!(env.files(), before);
}

#[test]
fn an_attachment_beyond_the_ceiling_is_refused_with_how_to_raise_it() {
    let env = Env::with_run();
    let big = env.input("big.bin", vec![7u8; 3000]);
    let before = env.files();
    let output = env
        .babel(&["attach", "r1", &big, "--max-attachment-size", "2KiB"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    insta::assert_snapshot!(stderr(&output), @r"
    error: inputs/big.bin is 3000 bytes, more than the ceiling of 2048 bytes

    hint: if it belongs in the archive, raise the ceiling with --max-attachment-size SIZE (e.g. --max-attachment-size 20GiB)
    ");
    assert_eq!(env.files(), before);
    env.babel(&["attach", "r1", &big, "--max-attachment-size", "3000"])
        .assert()
        .success();
}

#[test]
fn a_write_whose_output_cannot_be_written_says_it_committed() {
    // "Output after a commit never panics: a closed or full stdout is reported on stderr,
    // and the exit code says the write committed."
    let env = Env::with_run();
    let input = env.input(
        "a.jsonl",
        canonical_line("q1", "original", Some(true)) + "\n",
    );
    let full = std::fs::File::create("/dev/full").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_babel"))
        .current_dir(env.path())
        .args([
            "--root",
            "archive",
            "import",
            "r1",
            "--format",
            "canonical",
            &input,
        ])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    insta::assert_snapshot!(stderr(&output), @"note: the command completed and its write is committed, but its output could not be written to stdout (no storage space); do not run it again");
    assert_eq!(env.records("r1").len(), 1, "the import committed");

    // A closed pipe: the reader is gone before babel writes.
    let mut child = Command::new(env!("CARGO_BIN_EXE_babel"))
        .current_dir(env.path())
        .args(["--root", "archive", "seal", "r1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("(broken pipe)"),
        "{}",
        stderr(&output)
    );
    let show = env.babel(&["show", "r1", "--json"]).output().unwrap();
    assert!(String::from_utf8_lossy(&show.stdout).contains("\"status\": \"sealed\""));

    // A reader with a full stdout fails with the output-failure code (never 1, the code
    // of findings); a closed pipe is its reader's choice.
    for command in [&["show", "r1"][..], &["validate"][..]] {
        let full = std::fs::File::create("/dev/full").unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_babel"))
            .current_dir(env.path())
            .args(["--root", "archive"])
            .args(command)
            .stdout(full)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(5), "{command:?}");
        assert!(stderr(&output).contains("could not write the output to stdout"));
    }
}

#[test]
fn a_non_utf8_argument_is_a_usage_error() {
    let env = Env::with_run();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_babel"))
        .current_dir(env.path())
        .args(["--root", "archive", "import", "r1", "--format", "canonical"])
        .arg(name)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    insta::assert_snapshot!(stderr(&output), @r#"
    error: the argument "caf�.jsonl" is not valid UTF-8

    hint: rename the file (or link it) to a UTF-8 name
    "#);
}

#[test]
fn control_characters_in_names_are_escaped_on_the_terminal() {
    // "Names read from input ... are printed to the terminal with raw escape sequences
    // (ESC[31m)": they must not be.
    let env = Env::with_archive();
    env.babel(&[
        "run",
        "create",
        "r1",
        "--model",
        "evil\u{1b}[31mred",
        "--meta",
        "note=bell\u{7}and\u{9b}csi",
    ])
    .assert()
    .success();
    let line = serde_json::json!({
        "question_id": "q1", "variant_id": "original", "benchmark": "bench\u{1b}]0;title\u{7}",
        "model": "evil\u{1b}[31mred", "correct": true,
    });
    let input = env.input("a.jsonl", format!("{line}\n"));
    let import = env
        .babel(&["import", "r1", "--format", "canonical", &input])
        .output()
        .unwrap();
    assert!(import.status.success(), "{}", stderr(&import));
    for args in [
        &["show", "r1"][..],
        &["list"],
        &["show", "r1", "--json"],
        &["compare", "r1", "--variant", "original"],
    ] {
        let output = env.babel(args).output().unwrap();
        let text = [output.stdout, output.stderr].concat();
        let controls: Vec<u8> = text
            .iter()
            .copied()
            .filter(|&b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f)
            .collect();
        assert!(
            controls.is_empty(),
            "{args:?} printed control bytes {controls:?}"
        );
        assert!(
            !text
                .windows(2)
                .any(|w| w[0] == 0xc2 && (0x80..=0x9f).contains(&w[1])),
            "{args:?} printed a C1 control"
        );
    }
    let show = env.babel(&["show", "r1"]).output().unwrap();
    insta::assert_snapshot!(stable_output(&env, &String::from_utf8_lossy(&show.stdout)));
    // JSON stays JSON: the escape is a valid JSON escape of the same character.
    let json = env.babel(&["show", "r1", "--json"]).output().unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["metadata"]["note"], "bell\u{7}and\u{9b}csi");
    assert_eq!(value["model"], "evil\u{1b}[31mred");
}
