//! Hostile inputs: "a corpus of ≥ 40 hostile input files under `tests/` (… invalid UTF-8,
//! deep nesting, huge lines, NaN, lone surrogates, path-like IDs), each with its expected
//! error asserted and the archive byte-identical afterwards." The corpus and its expected
//! errors are `tests/hostile/` (see its README.md).

use crate::common::Env;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile")
}

/// Every file of the archive with its bytes (the lock file's holder note aside).
fn snapshot(env: &Env) -> BTreeMap<String, Vec<u8>> {
    env.files()
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(env.archived(&f)).unwrap();
            (f, bytes)
        })
        .collect()
}

fn archive() -> Env {
    let env = Env::with_archive();
    for (run, benchmark) in [
        ("canonical", Some("b")),
        ("paired", Some("b")),
        ("harness", None),
    ] {
        let mut args = vec!["run", "create", run, "--model", "m1"];
        if let Some(benchmark) = benchmark {
            args.extend(["--benchmark", benchmark]);
        }
        env.babel(&args).assert().success();
    }
    env
}

fn command(kind: &str, file: &str) -> Vec<String> {
    let args: Vec<&str> = match kind {
        "canonical" | "paired" | "harness" => vec!["import", kind, "--format", kind, file],
        "item-bank" => vec!["artifact", "add", "item-bank", "bank1", file],
        "release" => vec!["artifact", "add", "release", "rel1", file],
        other => panic!("unknown command kind {other}"),
    };
    args.into_iter().map(str::to_owned).collect()
}

#[test]
fn every_hostile_file_gets_its_error_and_leaves_the_archive_as_it_was() {
    let expected = std::fs::read_to_string(corpus().join("EXPECTED.tsv")).unwrap();
    let rows: Vec<Vec<&str>> = expected
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect())
        .collect();
    let listed: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    let mut on_disk: Vec<String> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "EXPECTED.tsv" && n != "README.md")
        .collect();
    on_disk.sort();
    assert_eq!(listed, on_disk, "EXPECTED.tsv lists exactly the corpus");
    let refused = rows.iter().filter(|r| r[2] != "0").count();
    assert!(refused >= 40, "the corpus holds {refused} refused files");

    let env = archive();
    for row in &rows {
        let [name, kind, code, message] = row[..] else {
            panic!("malformed row {row:?}")
        };
        let path = corpus().join(name);
        let file = path.to_str().unwrap();
        let before = snapshot(&env);
        let args = command(kind, file);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = env.babel(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(code.parse().unwrap()),
            "{name}: {stderr}"
        );
        if code == "0" {
            assert_eq!(message, "(accepted)");
            assert_eq!(env.validate_json()["ok"], true, "{name}");
            continue;
        }
        assert!(
            stderr.contains(&format!("{file}{message}")),
            "{name}: expected {message:?} after the path in:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert_eq!(snapshot(&env), before, "{name} changed the archive");
    }
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn a_line_beyond_the_limit_is_refused_without_reading_it_whole() {
    // Generated, not stored: 64 MiB and a little more on one line.
    let env = archive();
    let before = snapshot(&env);
    let mut line =
        br#"{"question_id":"q1","variant_id":"original","benchmark":"b","model":"m1","input":""#
            .to_vec();
    line.resize(line.len() + (64 << 20) + 16, b'x');
    line.extend_from_slice(b"\"}\n");
    let input = env.input("huge.jsonl", &line);
    drop(line);
    let output = env
        .babel(&["import", "canonical", "--format", "canonical", &input])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("inputs/huge.jsonl:1: line longer than 67108864 bytes"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(snapshot(&env), before);
}
