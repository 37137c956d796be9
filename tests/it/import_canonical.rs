//! End-to-end import through the real binary: the strict reader's rules, the canonical
//! adapter's rules, batch atomicity and the exact preservation of raw bytes.

use crate::common::{Env, canonical_line};
use serde_json::json;

fn import(env: &Env, files: &[&str]) -> std::process::Output {
    let mut args = vec!["import", "r1", "--format", "canonical"];
    args.extend_from_slice(files);
    env.babel(&args).output().unwrap()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn raw_bytes_are_kept_unchanged_with_bom_and_crlf() {
    // "A UTF-8 BOM on the first line and CRLF line endings are accepted and preserved in
    // raw files."
    let env = Env::with_run();
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(canonical_line("q1", "original", Some(true)).as_bytes());
    bytes.extend_from_slice(b"\r\n\r\n");
    bytes.extend_from_slice(canonical_line("q2", "original", None).as_bytes());
    bytes.extend_from_slice(b"\r\n");
    let file = env.input("crlf.jsonl", &bytes);
    let output = import(&env, &[&file]);
    assert!(output.status.success(), "{}", stderr(&output));
    let raw = std::fs::read(env.archived("runs/r1/raw/0001-crlf.jsonl")).unwrap();
    assert_eq!(raw, bytes);
    let records = env.records("r1");
    assert_eq!(records.len(), 2);
    assert_eq!(
        records[0]["source"],
        json!({"path": "runs/r1/raw/0001-crlf.jsonl", "line": 1})
    );
    assert_eq!(
        records[1]["source"]["line"], 3,
        "the blank line 2 keeps its number"
    );
    assert_eq!(
        records[1]["correct"],
        serde_json::Value::Null,
        "null stays unknown"
    );
}

#[test]
fn every_strict_reader_rule_rejects_with_file_line_and_field() {
    let env = Env::with_run();
    let cases: [(&str, &[u8], &str); 8] = [
        ("utf8", b"{\"question_id\": \"q\xff\"}\n", "inputs/utf8.jsonl:1:19: invalid UTF-8"),
        (
            "dupkey",
            b"{\"question_id\": \"q\", \"input\": {\"a\": 1, \"a\": 2}}\n",
            "inputs/dupkey.jsonl:1: field input.a: duplicate key \"a\"",
        ),
        (
            "nan",
            b"{\"question_id\": \"q\", \"variant_id\": \"v\", \"scores\": {\"x\": NaN}}\n",
            "inputs/nan.jsonl:1:57: field scores.x: non-finite number NaN",
        ),
        (
            "infinity",
            b"{\"question_id\": \"q\", \"variant_id\": \"v\", \"scores\": {\"x\": -Infinity}}\n",
            "field scores.x: non-finite number -Infinity",
        ),
        ("array", b"[1, 2]\n", "inputs/array.jsonl:1: expected a JSON object, found an array"),
        ("truncated", b"{\"question_id\": \"q\", \"va\n", "inputs/truncated.jsonl:1:"),
        (
            "types",
            b"{\"question_id\": \"q\", \"variant_id\": \"v\", \"correct\": 0}\n",
            "inputs/types.jsonl:1: field correct: expected true, false or null, found the number 0",
        ),
        (
            "bom2",
            b"{\"question_id\": \"a\", \"variant_id\": \"v\"}\n\xEF\xBB\xBF{\"question_id\": \"b\", \"variant_id\": \"v\"}\n",
            "inputs/bom2.jsonl:2:1: a UTF-8 byte order mark is allowed only at the start of the file",
        ),
    ];
    for (name, bytes, expected) in cases {
        let file = env.input(&format!("{name}.jsonl"), bytes);
        let output = import(&env, &[&file]);
        assert_eq!(output.status.code(), Some(1), "{name}");
        let message = stderr(&output);
        assert!(
            message.contains(expected),
            "{name}: expected {expected:?} in:\n{message}"
        );
        assert!(
            message.contains("nothing was imported"),
            "{name}: {message}"
        );
    }
    assert!(env.records("r1").is_empty());
    assert_eq!(
        env.files(),
        [
            "babel-archive.json",
            "history/HEAD",
            "history/log.jsonl",
            "runs/r1/manifest.json"
        ]
    );
}

#[test]
fn a_failed_batch_publishes_nothing() {
    // "Failed batch imports publish no partial data."
    let env = Env::with_run();
    let good = env.input(
        "good.jsonl",
        canonical_line("q1", "original", Some(true)) + "\n",
    );
    let bad = env.input("bad.jsonl", "{\"question_id\": \"q2\"}\n");
    let output = import(&env, &[&good, &bad]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("inputs/bad.jsonl:1: field variant_id: required field is missing")
    );
    assert!(env.records("r1").is_empty());
    assert_eq!(
        env.files(),
        [
            "babel-archive.json",
            "history/HEAD",
            "history/log.jsonl",
            "runs/r1/manifest.json"
        ]
    );
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn duplicate_identities_are_rejected_within_a_file_and_against_earlier_imports() {
    let env = Env::with_run();
    let first = env.input(
        "first.jsonl",
        canonical_line("q1", "original", Some(true)) + "\n",
    );
    assert!(import(&env, &[&first]).status.success());

    let again = env.input(
        "again.jsonl",
        canonical_line("q1", "original", Some(false)) + "\n",
    );
    let output = import(&env, &[&again]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("inputs/again.jsonl:1: duplicate record identity (benchmark=b language=en question_id=q1 variant_id=original filter=none repeat_id=0); the same identity is at runs/r1/raw/0001-first.jsonl:1 (import 1)"),
        "{}",
        stderr(&output)
    );

    let within = [
        canonical_line("q2", "original", None),
        canonical_line("q2", "original", None),
    ];
    let output = import(&env, &[&env.input("within.jsonl", within.join("\n"))]);
    assert!(
        stderr(&output).contains("inputs/within.jsonl:2: duplicate record identity")
            && stderr(&output).contains("the same identity is at line 1 of this file"),
        "{}",
        stderr(&output)
    );
    // Two files of one batch: the message names the first one, never an unpublished import.
    let one = env.input("one.jsonl", canonical_line("q3", "original", None) + "\n");
    let two = env.input(
        "two.jsonl",
        canonical_line("q3", "original", Some(true)) + "\n",
    );
    let output = import(&env, &[&one, &two]);
    assert!(
        stderr(&output)
            .contains("the same identity is at inputs/one.jsonl:1 (file 1 of this batch)"),
        "{}",
        stderr(&output)
    );

    // A different variant, filter or repeat is a different identity.
    let mut distinct =
        json!({"question_id": "q1", "variant_id": "original", "language": "en", "repeat_id": 1});
    let repeat = env.input("repeat.jsonl", distinct.to_string() + "\n");
    assert!(import(&env, &[&repeat]).status.success());
    distinct["filter"] = json!("strict");
    let filtered = env.input("filtered.jsonl", distinct.to_string() + "\n");
    assert!(import(&env, &[&filtered]).status.success());
    assert_eq!(env.records("r1").len(), 3);
}

#[test]
fn every_problem_of_a_batch_is_listed_with_a_hint() {
    let env = Env::with_run();
    let lines = [
        "{\"question_id\": \"a\", \"variant_id\": \"v\", \"x\": NaN}",
        "{\"question_id\": \"b\"}",
        "{\"question_id\": \"c\", \"variant_id\": \"v\", \"model\": \"other\"}",
    ];
    let file = env.input("three.jsonl", lines.join("\n"));
    let output = import(&env, &[&file]);
    insta::assert_snapshot!(stderr(&output), @r#"
    error: import rejected: 3 problems in inputs/three.jsonl; nothing was imported
      inputs/three.jsonl:1:46: field x: non-finite number NaN
      inputs/three.jsonl:2: field variant_id: required field is missing
      inputs/three.jsonl:3: field model: model "other" contradicts the run's model "m1"

    hint: strict JSON has no NaN or Infinity; fix the producer, or for harness output pass `--non-finite null` to read them as null (each affected record gets a warning)
    "#);
}

#[test]
fn non_finite_tokens_can_be_read_as_null_with_a_warning_and_the_choice_is_recorded() {
    let env = Env::with_run();
    let file = env.input(
        "nan.jsonl",
        "{\"question_id\": \"a\", \"variant_id\": \"v\", \"metrics\": {\"em\": NaN}}\n",
    );
    let output = env
        .babel(&[
            "import",
            "r1",
            "--format",
            "canonical",
            "--non-finite",
            "null",
            &file,
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let records = env.records("r1");
    assert_eq!(records[0]["metrics"], json!({"em": null}));
    assert_eq!(
        records[0]["warnings"],
        json!(["non-finite number NaN at metrics.em was read as null (--non-finite null)"])
    );
    let show: serde_json::Value = serde_json::from_slice(
        &env.babel(&["show", "r1", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(show["imports"][0]["options"]["non_finite"], "null");
}

#[test]
fn records_can_be_filtered_by_variant() {
    let env = Env::with_run();
    let lines = [
        canonical_line("q1", "original", Some(true)),
        canonical_line("q1", "rephrased", Some(false)),
    ];
    let file = env.input("both.jsonl", lines.join("\n"));
    assert!(import(&env, &[&file]).status.success());
    let output = env
        .babel(&["records", "r1", "--variant", "rephrased"])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(text.contains("\"variant_id\":\"rephrased\""));
}

#[test]
fn the_manifest_records_every_import_field() {
    let env = Env::with_run();
    let file = env.input("one.jsonl", "{\"question_id\": \"q\"}\n");
    let output = env
        .babel(&[
            "import",
            "r1",
            "--format",
            "canonical",
            "--variant",
            "rephrased",
            "--language",
            "tr",
            &file,
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let manifest = std::fs::read_to_string(env.archived("runs/r1/manifest.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let import = &value["imports"][0];
    let raw = std::fs::read(env.archived("runs/r1/raw/0001-one.jsonl")).unwrap();
    let (raw_sha, raw_bytes) = (sha256_hex(&raw), raw.len());
    let records_bytes = std::fs::read(env.archived("runs/r1/records/0001.parquet")).unwrap();
    assert_eq!(
        import,
        &json!({
            "babel_version": env!("CARGO_PKG_VERSION"),
            "breakdown": [{"benchmark": "b", "language": "tr", "records": 1, "variant_id": "rephrased"}],
            "format": "canonical",
            "id_field": null,
            "imported_at": crate::common::TIMESTAMP,
            "normalizer_version": "canonical/1",
            "options": {"benchmark": null, "language": "tr", "non_finite": "reject"},
            "raw": {"bytes": raw_bytes, "path": "raw/0001-one.jsonl", "sha256": raw_sha},
            "records": {"bytes": records_bytes.len(), "count": 1, "path": "records/0001.parquet", "sha256": sha256_hex(&records_bytes)},
            "seq": 1,
            "source_basename": "one.jsonl",
            "variant_override": "rephrased",
        })
    );
    assert!(
        manifest.ends_with("}\n") && !manifest.contains(": "),
        "canonical JSON + LF"
    );
}

/// SHA-256 by the coreutils tool, independent of babel's hashing.
fn sha256_hex(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum (coreutils)");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8(output.stdout).unwrap()[..64].to_owned()
}

#[test]
fn the_same_input_imported_twice_gives_byte_identical_records_files() {
    // Records are Parquet written deterministically: no clock, host or random value in
    // the file, row groups cut by size. Two archives, two processes, the same bytes.
    let lines: Vec<String> = (0..3000)
        .map(|q| {
            crate::common::canonical_line(
                &format!("q{q}"),
                "original",
                (q % 3 != 0).then_some(q % 2 == 0),
            )
        })
        .collect();
    let mut records = Vec::new();
    for _ in 0..2 {
        let env = Env::with_run();
        let file = env.input("same.jsonl", lines.join("\n") + "\n");
        env.babel(&["import", "r1", "--format", "canonical", &file])
            .assert()
            .success();
        records.push(std::fs::read(env.archived("runs/r1/records/0001.parquet")).unwrap());
    }
    assert_eq!(sha256_hex(&records[0]), sha256_hex(&records[1]));
}

#[test]
fn another_formats_file_imported_as_canonical_is_named_with_its_format() {
    let env = Env::with_run();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let harness = std::fs::read_dir(fixtures.join("lm-eval-0.4.13/original/dummy-p"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().contains("samples_babel_mc_original_"))
        .unwrap();
    let paired = env.input(
        "pairs.jsonl",
        "{\"id\": \"q1\", \"original\": {}, \"rephrased\": {}}\n",
    );
    for (input, what, format) in [
        (
            harness.display().to_string(),
            "lm-evaluation-harness output",
            "harness",
        ),
        (paired, "a paired result", "paired"),
    ] {
        let output = env
            .babel(&["import", "r1", "--format", "canonical", &input])
            .output()
            .unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&format!("looks like {what}")), "{stderr}");
        assert!(
            stderr.contains(&format!("import the file with --format {format}")),
            "{stderr}"
        );
    }
    assert!(env.records("r1").is_empty());
}

#[test]
fn a_file_imported_again_is_refused_as_that_import_in_one_line() {
    let env = Env::with_run();
    let lines: Vec<String> = (0..30)
        .map(|q| crate::common::canonical_line(&format!("q{q}"), "original", Some(true)))
        .collect();
    let input = env.input("a.jsonl", lines.join("\n") + "\n");
    env.babel(&["import", "r1", "--format", "canonical", &input])
        .assert()
        .success();
    let manifest_before = std::fs::read(env.archived("runs/r1/manifest.json")).unwrap();
    let output = env
        .babel(&["import", "r1", "--format", "canonical", &input])
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("1 problem in"), "{stderr}");
    assert!(
        stderr
            .contains("this file is already import 1 of run r1 (raw/0001-a.jsonl), byte for byte"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("duplicate"),
        "one line, not one per record: {stderr}"
    );
    // Twice in one batch: the second names the first as given.
    let output = env
        .babel(&[
            "import",
            "r1",
            "--format",
            "canonical",
            "--variant",
            "v3",
            &input,
            &input,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("this file is byte for byte inputs/a.jsonl (file 1 of this batch)"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(env.archived("runs/r1/manifest.json")).unwrap(),
        manifest_before
    );
    // Another file whose name begins with this one's keeps its own problems.
    let other = env.input("a.jsonl.bak", "[1]\n");
    let output = env
        .babel(&["import", "r1", "--format", "canonical", &input, &other])
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("2 problems in inputs/a.jsonl, inputs/a.jsonl.bak;"),
        "{stderr}"
    );
    // As another variant, the same bytes are new records.
    env.babel(&[
        "import",
        "r1",
        "--format",
        "canonical",
        "--variant",
        "v2",
        &input,
    ])
    .assert()
    .success();
}
