//! The anchored history: "Every write appends an entry to a hash-chained archive log (what
//! was done, to which run or artifact, the SHA-256 of every manifest it produced, the
//! previous entry's hash, time, babel version), and the chain's head is anchored so that
//! changing, dropping or reordering any entry, manifest or file is detected — including a
//! deleted run, a reopened seal and a dropped import." (issue 13)
//!
//! Each whole edit below keeps every hash inside the run consistent, so only the history
//! can notice it; the expected hashes are computed here with `sha2`, independently of the
//! code under test.

use crate::common::{Env, canonical_line};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An archive with run r1 holding two imports and an attachment, and a sealed run r2.
fn archive() -> Env {
    let env = Env::with_run();
    for (name, variant) in [("a.jsonl", "original"), ("b.jsonl", "rephrased")] {
        let lines: Vec<String> = (0..3)
            .map(|q| canonical_line(&format!("q{q}"), variant, Some(q % 2 == 0)))
            .collect();
        let input = env.input(name, lines.join("\n") + "\n");
        env.babel(&["import", "r1", "--format", "canonical", &input])
            .assert()
            .success();
    }
    let results = env.input("results.json", "{\"acc\": 0.5}\n");
    env.babel(&["attach", "r1", &results]).assert().success();
    env.babel(&["run", "create", "r2", "--model", "m2", "--benchmark", "b"])
        .assert()
        .success();
    let input = env.input(
        "c.jsonl",
        canonical_line("q0", "original", Some(true)) + "\n",
    );
    env.babel(&["import", "r2", "--format", "canonical", &input])
        .assert()
        .success();
    env.babel(&["seal", "r2"]).assert().success();
    assert_eq!(env.validate_json()["ok"], true, "{}", env.validate_json());
    env
}

fn log_lines(env: &Env) -> Vec<String> {
    std::fs::read_to_string(env.archived("history/log.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn history_findings(env: &Env) -> Vec<(String, String)> {
    history_findings_at(env)
        .into_iter()
        .map(|(path, _, message)| (path, message))
        .collect()
}

/// (path, line, message) of every `history` finding; validate must fail.
fn history_findings_at(env: &Env) -> Vec<(String, Option<u64>, String)> {
    let report = env.validate_json();
    assert_eq!(report["ok"], false, "validate passed an edited archive");
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "history")
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["line"].as_u64(),
                f["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn assert_history_finding(env: &Env, path: &str, message_part: &str) {
    let found = history_findings(env);
    assert!(
        found
            .iter()
            .any(|(p, m)| p == path && m.contains(message_part)),
        "no history finding on {path} containing {message_part:?}: {found:?}"
    );
}

fn read_json(env: &Env, relative: &str) -> Value {
    serde_json::from_slice(&std::fs::read(env.archived(relative)).unwrap()).unwrap()
}

fn write_canonical(env: &Env, relative: &str, value: &Value) {
    std::fs::write(
        env.archived(relative),
        babel::canonical_json::to_canonical_bytes(value).unwrap(),
    )
    .unwrap();
}

#[test]
fn every_write_appends_one_chained_entry_naming_the_manifests_it_produced() {
    let env = archive();
    let lines = log_lines(&env);
    let operations: Vec<(String, String)> = lines
        .iter()
        .map(|line| {
            let entry: Value = serde_json::from_str(line).unwrap();
            (
                entry["operation"].as_str().unwrap().to_owned(),
                entry["subject"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("init", "."),
        ("run create", "runs/r1"),
        ("import", "runs/r1"),
        ("import", "runs/r1"),
        ("attach", "runs/r1"),
        ("run create", "runs/r2"),
        ("import", "runs/r2"),
        ("seal", "runs/r2"),
    ]
    .iter()
    .map(|(o, s)| (o.to_string(), s.to_string()))
    .collect();
    assert_eq!(operations, expected);

    let mut previous: Option<String> = None;
    for (number, line) in lines.iter().enumerate() {
        let entry: Value = serde_json::from_str(line).unwrap();
        assert_eq!(entry["seq"], number as u64 + 1);
        assert_eq!(
            entry["prev"],
            previous.clone().map_or(Value::Null, Value::String)
        );
        assert_eq!(entry["at"], crate::common::TIMESTAMP);
        assert_eq!(entry["babel_version"], env!("CARGO_PKG_VERSION"));
        previous = Some(sha256(format!("{line}\n").as_bytes()));
    }
    // The last entry of each manifest is its bytes on disk.
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let manifest = std::fs::read(env.archived("runs/r2/manifest.json")).unwrap();
    assert_eq!(
        last["manifests"]["runs/r2/manifest.json"],
        sha256(&manifest).as_str()
    );
    let head = read_json(&env, "history/HEAD");
    assert_eq!(head["seq"], lines.len() as u64);
    assert_eq!(head["sha256"], previous.unwrap().as_str());
}

#[test]
fn babel_log_prints_each_entry_and_the_head_to_cite() {
    let env = archive();
    let head = read_json(&env, "history/HEAD");
    let head = format!("{}:{}", head["seq"], head["sha256"].as_str().unwrap());
    let output = env.babel(&["log"]).output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    insta::assert_snapshot!("history_log", crate::common::stable_output(&env, &text));
    assert!(text.ends_with(&format!("head {head}\n")), "{text}");

    let one_run = env.babel(&["log", "r2", "--json"]).output().unwrap();
    assert!(one_run.status.success());
    let json: Value = serde_json::from_slice(&one_run.stdout).unwrap();
    assert_eq!(json["head"], head.as_str());
    let ops: Vec<&str> = json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["operation"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["run create", "import", "seal"]);
    let lines = log_lines(&env);
    assert_eq!(
        json["entries"][2]["sha256"],
        sha256(format!("{}\n", lines[7]).as_bytes()).as_str()
    );
}

#[test]
fn a_reopened_seal_is_found_though_the_manifest_is_canonical() {
    let env = archive();
    let mut manifest = read_json(&env, "runs/r2/manifest.json");
    manifest["status"] = "open".into();
    manifest["sealed_at"] = Value::Null;
    write_canonical(&env, "runs/r2/manifest.json", &manifest);
    assert_history_finding(
        &env,
        "runs/r2/manifest.json",
        "differs from the one history entry 8",
    );
}

#[test]
fn a_dropped_import_with_its_files_is_found() {
    let env = archive();
    let mut manifest = read_json(&env, "runs/r1/manifest.json");
    let imports = manifest["imports"].as_array_mut().unwrap();
    let dropped = imports.pop().unwrap();
    for file in ["raw", "records"] {
        let path = dropped[file]["path"].as_str().unwrap();
        std::fs::remove_file(env.archived(&format!("runs/r1/{path}"))).unwrap();
    }
    write_canonical(&env, "runs/r1/manifest.json", &manifest);
    assert_history_finding(
        &env,
        "runs/r1/manifest.json",
        "differs from the one history entry 5",
    );
}

#[test]
fn a_deleted_run_is_found() {
    let env = archive();
    std::fs::remove_dir_all(env.archived("runs/r2")).unwrap();
    assert_history_finding(&env, "runs/r2/manifest.json", "it is gone");
}

#[test]
fn a_run_added_by_hand_is_found() {
    let env = archive();
    let copy = env.archived("runs/r3");
    std::fs::create_dir(&copy).unwrap();
    std::fs::copy(
        env.archived("runs/r2/manifest.json"),
        copy.join("manifest.json"),
    )
    .unwrap();
    let mut manifest = read_json(&env, "runs/r3/manifest.json");
    manifest["run_id"] = "r3".into();
    manifest["imports"] = Value::Array(vec![]);
    write_canonical(&env, "runs/r3/manifest.json", &manifest);
    assert_history_finding(&env, "runs/r3/manifest.json", "no history entry recorded");
}

#[test]
fn a_changed_entry_breaks_the_chain_at_the_next_one() {
    let env = archive();
    let mut lines = log_lines(&env);
    // The entry's own time (its first key), not the times inside its changes.
    lines[2] = lines[2].replacen(crate::common::TIMESTAMP, "2026-12-02T12:00:01Z", 1);
    std::fs::write(env.archived("history/log.jsonl"), lines.join("\n") + "\n").unwrap();
    assert_eq!(
        history_findings_at(&env),
        [(
            "history/log.jsonl".to_owned(),
            Some(4),
            "its prev is not the SHA-256 of the entry before it (an entry was changed, dropped or moved)".to_owned()
        )]
    );
}

#[test]
fn reordered_and_dropped_entries_are_found() {
    let env = archive();
    let lines = log_lines(&env);
    let mut swapped = lines.clone();
    swapped.swap(3, 4);
    std::fs::write(env.archived("history/log.jsonl"), swapped.join("\n") + "\n").unwrap();
    assert_history_finding(&env, "history/log.jsonl", "entry 5 stands at line 4");

    // Dropping the last entry and pointing the head at the one before is consistent as a
    // log, but the manifest that entry recorded no longer matches.
    let kept = &lines[..lines.len() - 1];
    std::fs::write(env.archived("history/log.jsonl"), kept.join("\n") + "\n").unwrap();
    let head = serde_json::json!({
        "seq": kept.len(),
        "sha256": sha256(format!("{}\n", kept.last().unwrap()).as_bytes()),
    });
    write_canonical(&env, "history/HEAD", &head);
    assert_history_finding(
        &env,
        "runs/r2/manifest.json",
        "differs from the one history entry 7",
    );

    // A head that does not name the last entry.
    std::fs::write(env.archived("history/log.jsonl"), lines.join("\n") + "\n").unwrap();
    assert_history_finding(&env, "history/HEAD", "but the log ends at");
}

#[test]
fn a_rewritten_past_passes_alone_but_not_against_a_cited_head() {
    let env = archive();
    let head = read_json(&env, "history/HEAD");
    let cited = format!("{}:{}", head["seq"], head["sha256"].as_str().unwrap());
    env.babel(&["validate", "--since", &cited])
        .assert()
        .success();

    // A whole-history rewrite that keeps every manifest hash: only an anchor finds it.
    crate::common::rechain_history(&env, |entries| {
        entries[1]["at"] = "2025-01-01T00:00:00Z".into();
    });
    assert_eq!(env.validate_json()["ok"], true);
    let output = env
        .babel(&["validate", "--json", "--since", &cited])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let messages: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains(&format!("no longer holds entry {cited}"))),
        "{messages:?}"
    );

    // Writes after the cited head keep it valid: the history only grows.
    let env = archive();
    env.babel(&["run", "create", "r9", "--model", "m", "--benchmark", "b"])
        .assert()
        .success();
    let old = format!(
        "8:{}",
        sha256(format!("{}\n", log_lines(&env)[7]).as_bytes())
    );
    env.babel(&["validate", "--since", &old]).assert().success();
}

#[test]
fn a_malformed_since_is_a_usage_error() {
    let env = archive();
    for bad in ["8", "0:abc", "x:0000", &format!("8:{}", "A".repeat(64))] {
        env.babel(&["validate", "--since", bad]).assert().code(2);
    }
}

#[test]
fn an_archive_without_history_is_reported() {
    let env = archive();
    std::fs::remove_dir_all(env.archived("history")).unwrap();
    assert_history_finding(&env, "history/log.jsonl", "no history");
}

#[test]
fn an_archive_from_before_the_history_is_adopted_by_init() {
    let env = archive();
    std::fs::remove_dir_all(env.archived("history")).unwrap();
    assert_history_finding(&env, "history/log.jsonl", "run `babel init`");
    // Writes refuse until the history is started, and say how.
    let refused = env
        .babel(&["run", "create", "r5", "--model", "m", "--benchmark", "b"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("hint: run `babel init` once"), "{stderr}");
    assert!(!env.archived("runs/r5").exists());

    let init = env.babel(&["init"]).output().unwrap();
    assert!(init.status.success());
    assert!(
        String::from_utf8_lossy(&init.stdout)
            .contains("started the archive's history: 3 manifest(s) recorded as they are"),
        "{}",
        String::from_utf8_lossy(&init.stdout)
    );
    assert_eq!(env.validate_json()["ok"], true);
    let lines = log_lines(&env);
    assert_eq!(lines.len(), 1);
    let entry: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(entry["operation"], "adopt");
    for path in [
        "babel-archive.json",
        "runs/r1/manifest.json",
        "runs/r2/manifest.json",
    ] {
        let bytes = std::fs::read(env.archived(path)).unwrap();
        assert_eq!(entry["manifests"][path], sha256(&bytes).as_str(), "{path}");
    }
    // From here on, the history works as in any archive.
    env.babel(&["run", "create", "r5", "--model", "m", "--benchmark", "b"])
        .assert()
        .success();
    assert_eq!(log_lines(&env).len(), 2);
    assert_eq!(env.validate_json()["ok"], true);
}
