//! `babel validate` against a tampered archive: "Validation checks registered bytes,
//! record schema, source line references, duplicate identities, counts, and untracked
//! files in managed run directories." Every finding is listed with its path, not just the
//! first, and the exit code is 1.

use crate::common::{Env, canonical_line};
use serde_json::Value;

/// An archive with one run, two imports and an attachment.
fn archive() -> Env {
    let env = Env::with_run();
    let a: Vec<String> = (0..4)
        .map(|q| canonical_line(&format!("q{q}"), "original", Some(true)))
        .collect();
    let b: Vec<String> = (0..4)
        .map(|q| canonical_line(&format!("q{q}"), "rephrased", None))
        .collect();
    let a = env.input("a.jsonl", a.join("\n") + "\n");
    let b = env.input("b.jsonl", b.join("\n") + "\n");
    env.babel(&["import", "r1", "--format", "canonical", &a, &b])
        .assert()
        .success();
    let results = env.input("results.json", "{\"acc\": 0.5}\n");
    env.babel(&["attach", "r1", &results]).assert().success();
    assert_eq!(env.validate_json()["ok"], true);
    env
}

fn findings(env: &Env) -> Vec<(String, String)> {
    let output = env.babel(&["validate", "--json"]).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "validate must exit 1 on findings"
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["ok"], false);
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["check"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn flip_byte(env: &Env, relative: &str, at: usize) {
    let path = env.archived(relative);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[at] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();
}

#[test]
fn a_single_changed_byte_in_any_registered_file_is_found() {
    for relative in [
        "runs/r1/raw/0001-a.jsonl",
        "runs/r1/raw/0002-b.jsonl",
        "runs/r1/records/0001.parquet",
        "runs/r1/attachments/results.json",
    ] {
        let env = archive();
        // A byte inside a string value, so a JSON file stays well-formed; the middle of
        // the Parquet file.
        let bytes = std::fs::read(env.archived(relative)).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let at = text
            .find("question")
            .or_else(|| text.find("acc"))
            .filter(|_| !relative.ends_with(".parquet"))
            .unwrap_or(bytes.len() / 2);
        flip_byte(&env, relative, at);
        let found = findings(&env);
        assert!(
            found.contains(&(relative.to_owned(), "sha256".to_owned())),
            "{relative}: {found:?}"
        );
    }
}

#[test]
fn a_changed_manifest_byte_is_found() {
    let env = archive();
    let relative = "runs/r1/manifest.json";
    let text = std::fs::read_to_string(env.archived(relative)).unwrap();
    // Change a registered hash digit: the manifest stays canonical, the file no longer matches.
    let at = text.find("\"sha256\":\"").unwrap() + 10;
    let mut bytes = text.into_bytes();
    bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
    std::fs::write(env.archived(relative), bytes).unwrap();
    let found = findings(&env);
    assert!(
        found.iter().any(|(_, check)| check == "sha256"),
        "{found:?}"
    );

    let env = archive();
    let text = std::fs::read_to_string(env.archived(relative)).unwrap();
    std::fs::write(env.archived(relative), text.replacen("{", "{ ", 1)).unwrap();
    assert!(findings(&env).contains(&(relative.to_owned(), "canonical".to_owned())));
}

#[test]
fn stray_and_missing_files_are_each_reported() {
    let env = archive();
    std::fs::write(env.archived("runs/r1/raw/extra.jsonl"), "{}\n").unwrap();
    std::fs::write(env.archived("runs/r1/notes.txt"), "hi").unwrap();
    std::fs::create_dir(env.archived("runs/r1/scratch")).unwrap();
    std::fs::write(env.archived("runs/stray.txt"), "x").unwrap();
    std::fs::remove_file(env.archived("runs/r1/records/0002.parquet")).unwrap();
    let found = findings(&env);
    for expected in [
        ("runs/r1/raw/extra.jsonl", "untracked"),
        ("runs/r1/notes.txt", "untracked"),
        ("runs/r1/scratch", "untracked"),
        ("runs/stray.txt", "untracked"),
        ("runs/r1/records/0002.parquet", "missing"),
    ] {
        assert!(
            found.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{expected:?} not in {found:?}"
        );
    }
    assert_eq!(found.len(), 5, "exactly these findings: {found:?}");
}

#[test]
fn a_symlink_in_place_of_a_registered_file_is_refused() {
    let env = archive();
    let relative = "runs/r1/raw/0001-a.jsonl";
    let copy = env.path().join("copy.jsonl");
    std::fs::copy(env.archived(relative), &copy).unwrap();
    std::fs::remove_file(env.archived(relative)).unwrap();
    std::os::unix::fs::symlink(&copy, env.archived(relative)).unwrap();
    assert!(findings(&env).contains(&(relative.to_owned(), "file-type".to_owned())));
}

#[test]
fn an_archive_folder_replaced_by_a_link_to_elsewhere_is_refused() {
    // Whatever the link points at, babel would read and publish files outside ROOT
    // through it; each of these folders is checked.
    for folder in ["runs", "history"] {
        let env = archive();
        let outside = env.path().join(format!("outside-{folder}"));
        std::fs::rename(env.archived(folder), &outside).unwrap();
        std::os::unix::fs::symlink(&outside, env.archived(folder)).unwrap();
        assert_eq!(
            findings(&env),
            [(folder.to_owned(), "layout".to_owned())],
            "{folder}"
        );
        let output = env
            .babel(&["hub-plan", "--repo", "a/b"])
            .env("HF_ENDPOINT", "http://127.0.0.1:9")
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(1),
            "{folder}: nothing is planned"
        );
    }
}

fn rewrite_records(env: &Env, edit: impl Fn(&mut Vec<Value>)) {
    crate::common::rewrite_records(env, "r1", 0, edit);
}

fn validate_text(env: &Env) -> String {
    let output = env.babel(&["validate"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn record_level_problems_are_found_even_when_hashes_were_updated() {
    let env = archive();
    rewrite_records(&env, |records| {
        records[0]["source"]["line"] = 99.into(); // past the end of the raw file
        records[1]["scores"] = serde_json::json!([1]); // not an object
        records[2]["question_id"] = "q3".into(); // now a duplicate of records[3]
        records.push(records[0].clone()); // one more than the manifest counts
    });
    // Every finding, whole: the record-level ones, and the history's (the manifest was
    // rewritten outside babel).
    insta::assert_snapshot!(crate::common::stable_output(&env, &validate_text(&env)));
}

#[test]
fn every_json_column_is_read_strictly_and_must_be_canonical() {
    // Nested values are stored as RFC 8785 canonical JSON text: another spelling of the
    // same value, a repeated key or text that is not JSON is a finding.
    let env = archive();
    rewrite_records(&env, |records| {
        records[0]["input"] = serde_json::json!({"$raw": "{\"question\": \"q0\"}"});
        records[1]["target"] = serde_json::json!({"$raw": "{\"a\":1,\"a\":2}"});
        records[2]["response"] = serde_json::json!({"$raw": "not json"});
        records[3]["identity_scope"] = "global".into();
    });
    insta::assert_snapshot!(crate::common::stable_output(&env, &validate_text(&env)));
}

#[test]
fn a_records_file_that_is_not_babel_parquet_is_a_finding() {
    let env = archive();
    let path = env.archived("runs/r1/records/0002.parquet");
    std::fs::write(&path, b"PAR1 not really").unwrap();
    let text = validate_text(&env);
    assert!(
        text.contains("runs/r1/records/0002.parquet: [records] not a readable Parquet file"),
        "{text}"
    );
}

#[test]
fn a_record_with_several_findings_is_still_one_record_of_the_count() {
    // "counts": a row is one record however many findings it has.
    let env = archive();
    rewrite_records(&env, |records| {
        records[0]["run_id"] = "zz".into();
        records[0]["model"] = "other".into();
    });
    let text = validate_text(&env);
    assert!(
        text.contains("runs/r1/records/0001.parquet row 1: [record] run_id \"zz\" is not this run"),
        "{text}"
    );
    assert!(
        text.contains("runs/r1/records/0001.parquet row 1: [record] model \"other\" differs"),
        "{text}"
    );
    assert!(
        !text.contains("[count]"),
        "the file still holds 4 records:\n{text}"
    );
}

#[test]
fn a_breakdown_that_no_longer_matches_the_records_is_found() {
    let env = archive();
    rewrite_records(&env, |records| records[0]["language"] = "fr".into());
    let found = findings(&env);
    // The rehashed manifest is the history's finding; the breakdown, the count check's.
    assert_eq!(
        found,
        [
            ("runs/r1/manifest.json".to_owned(), "history".to_owned()),
            (
                "runs/r1/records/0001.parquet".to_owned(),
                "count".to_owned()
            )
        ]
    );
}

#[test]
fn a_manifest_path_that_leaves_the_run_is_reported_and_never_opened() {
    let env = archive();
    let outside = env.path().join("outside.jsonl");
    std::fs::write(&outside, "secret\n").unwrap();
    let path = env.archived("runs/r1/manifest.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["imports"][0]["raw"]["path"] = "raw/0001-../../../../outside.jsonl".into();
    std::fs::write(
        &path,
        babel::canonical_json::to_canonical_bytes(&manifest).unwrap(),
    )
    .unwrap();
    let report = env.validate_json();
    let messages: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == "runs/r1/manifest.json")
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("unsafe path")),
        "{report:#}"
    );
    assert!(
        !report.to_string().contains("sha256"),
        "no file of a manifest with unsafe paths is opened or hashed: {report:#}"
    );
    // Readers refuse the manifest too.
    let records = env.babel(&["records", "r1"]).output().unwrap();
    assert_eq!(records.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&records.stderr).contains("is not raw/0001-<name>"));
}

#[test]
fn a_pending_journal_is_a_finding_until_recovery() {
    let env = archive();
    let journal = serde_json::json!({
        "format": "babel-journal",
        "operation": "import",
        "files": ["runs/r1/raw/0003-x.jsonl"],
        "dirs": [],
        "commit": {"path": "runs/r1/manifest.json", "temp": "runs/r1/manifest.json.new", "sha256": null},
    });
    std::fs::write(env.archived("runs/r1/raw/0003-x.jsonl"), "{}\n").unwrap();
    std::fs::write(
        env.archived(".babel/journal.json"),
        babel::canonical_json::to_canonical_bytes(&journal).unwrap(),
    )
    .unwrap();
    let found = findings(&env);
    assert!(
        found.contains(&(".babel/journal.json".to_owned(), "journal".to_owned())),
        "{found:?}"
    );
    assert!(found.contains(&(
        "runs/r1/raw/0003-x.jsonl".to_owned(),
        "untracked".to_owned()
    )));
    env.babel(&["init"]).assert().success();
    assert_eq!(
        env.validate_json()["ok"],
        true,
        "recovery removed the uncommitted file"
    );
}

#[test]
fn an_uncommitted_manifest_is_a_finding() {
    let env = archive();
    std::fs::write(env.archived("runs/r1/manifest.json.new"), "{}").unwrap();
    let found = findings(&env);
    assert!(found.contains(&(
        "runs/r1/manifest.json.new".to_owned(),
        "untracked".to_owned()
    )));
    // babel init removes nothing it did not journal: the stray temp stays a finding.
    env.babel(&["init"]).assert().success();
    assert!(findings(&env).contains(&(
        "runs/r1/manifest.json.new".to_owned(),
        "untracked".to_owned()
    )));
}

#[test]
fn validate_can_check_named_runs_and_refuses_unknown_ones() {
    let env = archive();
    env.babel(&["run", "create", "r2", "--model", "m"])
        .assert()
        .success();
    flip_byte(&env, "runs/r1/raw/0001-a.jsonl", 3);
    env.babel(&["validate", "r2"]).assert().code(0);
    env.babel(&["validate", "r1"]).assert().code(1);
    env.babel(&["validate", "nope"]).assert().code(2);
}

#[test]
fn a_non_canonical_marker_and_run_folders_that_differ_only_in_case_are_findings() {
    let env = archive();
    std::fs::write(
        env.archived("babel-archive.json"),
        "{\"schema_version\": 1, \"format\": \"babel-archive\"}\n",
    )
    .unwrap();
    let copy = env.archived("runs/R1");
    std::fs::create_dir(&copy).unwrap();
    std::fs::copy(
        env.archived("runs/r1/manifest.json"),
        copy.join("manifest.json"),
    )
    .unwrap();
    let found = findings(&env);
    assert!(
        found.contains(&("babel-archive.json".to_owned(), "canonical".to_owned())),
        "{found:?}"
    );
    assert!(
        found.contains(&("runs/r1".to_owned(), "layout".to_owned())),
        "r1 sorts after R1 and collides with it: {found:?}"
    );
}
