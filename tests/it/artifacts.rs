//! Registered artifacts, strict runs and the response matrix, through the real binary.
//! Each test names the rule of ARTIFACTS.md (or the spec's "Registered benchmark
//! extensions") it checks.

use crate::common::Env;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/benchmark")
        .join(name)
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn file_sha(path: &Path) -> String {
    sha256_hex(&fs::read(path).unwrap())
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Sorted keys and no whitespace: RFC 8785 for payloads of strings, integers and ASCII
/// keys, computed independently of babel's canonical writer.
fn sorted_compact(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            let parts: Vec<String> = sorted
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), sorted_compact(v)))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(sorted_compact).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// An archive with the example bank, protocol and panel registered.
pub(crate) fn registered() -> Env {
    let env = Env::with_archive();
    for (kind, id, file) in [
        ("item-bank", "capitals-bank", "item-bank.json"),
        ("protocol", "capitals-0shot", "protocol.json"),
        ("model-panel", "capitals-models", "model-panel.json"),
    ] {
        let path = example(file);
        env.babel(&["artifact", "add", kind, id, path.to_str().unwrap()])
            .assert()
            .success();
    }
    env
}

fn payload(env: &Env, kind_dir: &str, id: &str) -> PathBuf {
    env.archived(&format!("{kind_dir}/{id}/artifact.json"))
}

fn pin(env: &Env, kind_dir: &str, id: &str) -> Value {
    json!({"id": id, "sha256": file_sha(&payload(env, kind_dir, id))})
}

fn run_pin(env: &Env, run: &str) -> Value {
    json!({"run_id": run, "manifest_sha256": file_sha(&env.archived(&format!("runs/{run}/manifest.json")))})
}

fn add(env: &Env, kind: &str, id: &str, value: &Value) -> std::process::Output {
    let file = env.input(
        &format!("{kind}-{id}.json"),
        serde_json::to_vec_pretty(value).unwrap(),
    );
    env.babel(&["artifact", "add", kind, id, file.as_str()])
        .output()
        .unwrap()
}

/// Creates a strict run of the example bank and protocol and imports one example file.
pub(crate) fn strict_run(env: &Env, run: &str, results: &str, seal: bool) {
    let mut create = vec![
        "run",
        "create",
        run,
        "--model",
        "demo-org/demo-7b",
        "--benchmark",
        "world-capitals",
        "--item-bank",
        "capitals-bank",
        "--protocol",
        "capitals-0shot",
    ];
    if run.contains("1b") {
        create[4] = "demo-org/demo-1b";
    }
    env.babel(&create).assert().success();
    let file = example(&format!("results/{results}.jsonl"));
    env.babel(&[
        "import",
        run,
        "--format",
        "canonical",
        file.to_str().unwrap(),
    ])
    .assert()
    .success();
    if seal {
        env.babel(&["seal", run]).assert().success();
    }
}

fn protocol_value(env: &Env) -> Value {
    let mut protocol: Value =
        serde_json::from_slice(&fs::read(example("protocol.json")).unwrap()).unwrap();
    protocol["item_bank"] = pin(env, "item-banks", "capitals-bank");
    protocol
}

fn calibration_value(env: &Env, runs: &[&str]) -> Value {
    json!({
        "format": "babel-calibration", "schema_version": 1,
        "item_bank": pin(env, "item-banks", "capitals-bank"),
        "protocol": pin(env, "protocols", "capitals-0shot"),
        "model_panel": pin(env, "model-panels", "capitals-models"),
        "method": {"software": "elsewhere 1.0", "model": "Rasch"},
        "input_runs": runs.iter().map(|r| run_pin(env, r)).collect::<Vec<_>>(),
        "item_parameters": {"cap-fr": {"difficulty": -1.5}, "cap-jp": {"difficulty": 0.25}}
    })
}

#[test]
fn each_immutable_id_stores_a_canonical_manifest_and_artifact_and_pins_are_their_sha256() {
    // "Each immutable ID stores manifest.json and artifact.json; references pin the
    // payload SHA-256."
    let env = Env::with_archive();
    let given = example("item-bank.json");
    let output = env
        .babel(&[
            "artifact",
            "add",
            "item-bank",
            "capitals-bank",
            given.to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let reported: Value = serde_json::from_slice(&output.stdout).unwrap();
    let stored = fs::read(payload(&env, "item-banks", "capitals-bank")).unwrap();
    let input: Value = serde_json::from_slice(&fs::read(&given).unwrap()).unwrap();
    assert_ne!(
        stored,
        fs::read(&given).unwrap(),
        "the pretty-printed input is not kept as is"
    );
    assert_eq!(
        String::from_utf8(stored.clone()).unwrap(),
        sorted_compact(&input) + "\n"
    );
    assert_eq!(reported["sha256"], sha256_hex(&stored));
    assert_eq!(reported["created"], true);
    let manifest_bytes = fs::read(env.archived("item-banks/capitals-bank/manifest.json")).unwrap();
    let manifest: Value = serde_json::from_slice(&manifest_bytes).unwrap();
    assert_eq!(
        String::from_utf8(manifest_bytes).unwrap(),
        sorted_compact(&manifest) + "\n"
    );
    assert_eq!(manifest["artifact"]["sha256"], sha256_hex(&stored));
    assert_eq!(manifest["kind"], "item-bank");
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn re_adding_the_identical_payload_is_a_no_op_and_a_different_one_is_refused() {
    let env = registered();
    let manifest = env.archived("item-banks/capitals-bank/manifest.json");
    let before = fs::read(&manifest).unwrap();
    // The same content in another layout is the identical payload.
    let bank: Value =
        serde_json::from_slice(&fs::read(example("item-bank.json")).unwrap()).unwrap();
    let again = add(&env, "item-bank", "capitals-bank", &bank);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing changed"));
    assert_eq!(fs::read(&manifest).unwrap(), before);

    let mut changed = bank;
    changed["items"][0]["split"] = json!("dev");
    let refused = add(&env, "item-bank", "capitals-bank", &changed);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("already registered with another payload"),
        "{}",
        stderr(&refused)
    );
    assert!(stderr(&refused).contains("hint: registered artifacts are immutable"));
    assert_eq!(fs::read(&manifest).unwrap(), before);
    let clash = add(&env, "item-bank", "Capitals-Bank", &changed);
    assert_eq!(clash.status.code(), Some(1));
    assert!(stderr(&clash).contains("only in letter case"));
}

#[test]
fn payloads_are_validated_against_their_schema_with_field_precise_errors() {
    let env = Env::with_archive();
    let mut bank: Value =
        serde_json::from_slice(&fs::read(example("item-bank.json")).unwrap()).unwrap();
    bank["items"][2]["instances"][1]
        .as_object_mut()
        .unwrap()
        .remove("script");
    let output = add(&env, "item-bank", "b", &bank);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("field items[2].instances[1].script: required field is missing"),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("hint: ARTIFACTS.md describes the item-bank payload schema"));
    let duplicate = env.input(
        "dup.json",
        r#"{"format": "babel-item-bank", "format": "x"}"#,
    );
    let output = env
        .babel(&["artifact", "add", "item-bank", "b", duplicate.as_str()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("duplicate key \"format\""),
        "{}",
        stderr(&output)
    );
    assert!(
        env.files().iter().all(|f| !f.starts_with("item-banks/b")),
        "nothing was registered"
    );
}

#[test]
fn every_reference_must_resolve_at_registration_missing_dependency() {
    // "Every reference must resolve to a registered artifact with that exact hash, at
    // registration time."
    let env = Env::with_archive();
    let protocol: Value =
        serde_json::from_slice(&fs::read(example("protocol.json")).unwrap()).unwrap();
    let output = add(&env, "protocol", "p", &protocol);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("field item_bank: item-bank \"capitals-bank\" is not registered"),
        "{}",
        stderr(&output)
    );
    assert!(env.files().iter().all(|f| !f.starts_with("protocols/")));
}

#[test]
fn every_reference_must_resolve_at_registration_mismatched_pin() {
    let env = registered();
    let mut protocol = protocol_value(&env);
    protocol["item_bank"]["sha256"] = json!("0".repeat(64));
    let output = add(&env, "protocol", "p2", &protocol);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output)
            .contains("field item_bank.sha256: pins item-bank \"capitals-bank\" at SHA-256 0000"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_calibration_pins_sealed_strict_input_runs_by_manifest_sha256() {
    let env = registered();
    strict_run(&env, "demo-7b-step1000", "demo-7b-step1000", false);
    let open = add(
        &env,
        "calibration",
        "c",
        &calibration_value(&env, &["demo-7b-step1000"]),
    );
    assert_eq!(open.status.code(), Some(1));
    assert!(
        stderr(&open).contains("is open; a pinned run must be sealed"),
        "{}",
        stderr(&open)
    );

    env.babel(&["seal", "demo-7b-step1000"]).assert().success();
    let mut stale = calibration_value(&env, &["demo-7b-step1000"]);
    stale["input_runs"][0]["manifest_sha256"] = json!("f".repeat(64));
    let output = add(&env, "calibration", "c", &stale);
    assert!(
        stderr(&output).contains("field input_runs[0].manifest_sha256"),
        "{}",
        stderr(&output)
    );

    let mut unknown_item = calibration_value(&env, &["demo-7b-step1000"]);
    unknown_item["item_parameters"]["cap-xx"] = json!({"difficulty": 0});
    let output = add(&env, "calibration", "c", &unknown_item);
    assert!(
        stderr(&output).contains("field item_parameters.cap-xx: \"cap-xx\" is not an item"),
        "{}",
        stderr(&output)
    );

    env.babel(&["run", "create", "general", "--model", "demo-org/demo-7b"])
        .assert()
        .success();
    env.babel(&["seal", "general"]).assert().success();
    let output = add(
        &env,
        "calibration",
        "c",
        &calibration_value(&env, &["general"]),
    );
    assert!(
        stderr(&output).contains("is not a strict run of item bank"),
        "{}",
        stderr(&output)
    );

    let good = add(
        &env,
        "calibration",
        "c",
        &calibration_value(&env, &["demo-7b-step1000"]),
    );
    assert!(good.status.success(), "{}", stderr(&good));
    let shown = env
        .babel(&["artifact", "show", "calibration", "c", "--json"])
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(
        shown["manifest"]["dependencies"]["runs"][0],
        run_pin(&env, "demo-7b-step1000")
    );

    // Hub publishing needs "every run a calibration uses as input".
    let archive = babel::archive::Archive::open(&env.root()).unwrap();
    let inputs = babel::archive::artifacts::calibration_input_runs(&archive, "c").unwrap();
    let pinned: Vec<Value> = inputs
        .iter()
        .map(|p| json!({"run_id": p.run_id, "manifest_sha256": p.manifest_sha256}))
        .collect();
    assert_eq!(pinned, [run_pin(&env, "demo-7b-step1000")]);
    assert_eq!(
        babel::archive::artifacts::all_calibration_input_runs(&archive).unwrap(),
        inputs
    );
}

/// "Every write verifies what it builds on": a registration pins runs and artifacts, so a
/// manifest of theirs edited outside babel (an open run made to read as sealed, a changed
/// registration time) is refused, not pinned into the history; validate still finds it.
#[test]
fn a_pin_to_a_manifest_edited_outside_babel_is_refused() {
    let env = registered();
    strict_run(&env, "demo-7b-step1000", "demo-7b-step1000", false);
    let run_manifest = env.archived("runs/demo-7b-step1000/manifest.json");
    let text = fs::read_to_string(&run_manifest).unwrap();
    assert!(text.contains("\"sealed_at\":null") && text.contains("\"status\":\"open\""));
    let sealed = text
        .replace(
            "\"sealed_at\":null",
            "\"sealed_at\":\"2026-12-05T00:00:00Z\"",
        )
        .replace("\"status\":\"open\"", "\"status\":\"sealed\"");
    fs::write(&run_manifest, sealed).unwrap();
    // Registering a calibration of the run is refused, naming the edited manifest, and
    // writes nothing.
    let refused_naming = |manifest: &str| {
        let before = crate::common::files_under(&env.root());
        let output = add(
            &env,
            "calibration",
            "c",
            &calibration_value(&env, &["demo-7b-step1000"]),
        );
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let told = format!("{manifest} is damaged: it differs from the manifest history entry");
        assert!(
            stderr(&output).contains(&told)
                && stderr(&output).contains("changed outside babel; nothing was written"),
            "{}",
            stderr(&output)
        );
        assert_eq!(crate::common::files_under(&env.root()), before);
    };
    refused_naming("runs/demo-7b-step1000/manifest.json");
    fs::write(&run_manifest, text).unwrap();

    env.babel(&["seal", "demo-7b-step1000"]).assert().success();
    let bank_manifest = env.archived("item-banks/capitals-bank/manifest.json");
    let bank = fs::read_to_string(&bank_manifest).unwrap();
    let registered_at = serde_json::from_str::<Value>(&bank).unwrap()["registered_at"]
        .as_str()
        .unwrap()
        .to_owned();
    fs::write(
        &bank_manifest,
        bank.replace(&registered_at, "2020-01-01T00:00:00Z"),
    )
    .unwrap();
    refused_naming("item-banks/capitals-bank/manifest.json");
    assert_eq!(env.validate_json()["ok"], false);
}

#[test]
fn a_release_must_hold_everything_its_members_pin() {
    let env = registered();
    strict_run(&env, "demo-7b-step1000", "demo-7b-step1000", true);
    assert!(
        add(
            &env,
            "calibration",
            "c",
            &calibration_value(&env, &["demo-7b-step1000"])
        )
        .status
        .success()
    );
    let member = |kind: &str, dir: &str, id: &str| {
        let mut pin = pin(&env, dir, id);
        pin["kind"] = json!(kind);
        pin
    };
    let mut release = json!({
        "format": "babel-release", "schema_version": 1, "name": "r",
        "artifacts": [member("item-bank", "item-banks", "capitals-bank"),
                      member("protocol", "protocols", "capitals-0shot"),
                      member("calibration", "calibrations", "c")],
        "runs": []
    });
    let output = add(&env, "release", "r1", &release);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains("pins model-panel \"capitals-models\""),
        "{message}"
    );
    assert!(
        message.contains("pins run \"demo-7b-step1000\""),
        "{message}"
    );

    release["artifacts"].as_array_mut().unwrap().push(member(
        "model-panel",
        "model-panels",
        "capitals-models",
    ));
    release["runs"] = json!([run_pin(&env, "demo-7b-step1000")]);
    let output = add(&env, "release", "r1", &release);
    assert!(output.status.success(), "{}", stderr(&output));
    let listed = env.babel(&["artifact", "list", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let kinds: Vec<&str> = listed["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "item-bank",
            "protocol",
            "model-panel",
            "calibration",
            "release"
        ]
    );
    let archive = babel::archive::Archive::open(&env.root()).unwrap();
    let members = babel::archive::artifacts::release_members(&archive, "r1").unwrap();
    assert_eq!((members.artifacts.len(), members.runs.len()), (4, 1));
}

#[test]
fn strict_run_creation_checks_that_the_contract_pins_resolve() {
    let env = registered();
    let bad = json!({"item_bank": pin(&env, "item-banks", "capitals-bank"),
                     "protocol": {"id": "capitals-0shot", "sha256": "a".repeat(64)}});
    let meta = format!("benchmark_contract={bad}");
    let output = env
        .babel(&["run", "create", "s", "--model", "m", "--meta", &meta])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("field metadata.benchmark_contract.protocol.sha256"),
        "{}",
        stderr(&output)
    );
    assert!(!env.archived("runs/s").exists());

    let output = env
        .babel(&[
            "run",
            "create",
            "s",
            "--model",
            "m",
            "--item-bank",
            "nope",
            "--protocol",
            "capitals-0shot",
        ])
        .output()
        .unwrap();
    assert!(
        stderr(&output).contains("no item-bank \"nope\" is registered"),
        "{}",
        stderr(&output)
    );

    let output = env
        .babel(&[
            "run",
            "create",
            "s",
            "--model",
            "m",
            "--item-bank",
            "capitals-bank",
            "--protocol",
            "capitals-0shot",
            "--meta",
            "correctness_metric=acc_norm",
        ])
        .output()
        .unwrap();
    assert!(
        stderr(&output).contains("field metadata.correctness_metric"),
        "{}",
        stderr(&output)
    );

    env.babel(&[
        "run",
        "create",
        "s",
        "--model",
        "m",
        "--item-bank",
        "capitals-bank",
        "--protocol",
        "capitals-0shot",
    ])
    .assert()
    .success();
    let manifest: Value =
        serde_json::from_slice(&fs::read(env.archived("runs/s/manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["metadata"]["correctness_metric"], "acc",
        "the protocol's metric"
    );
    assert_eq!(
        manifest["metadata"]["benchmark_contract"]["protocol"],
        pin(&env, "protocols", "capitals-0shot")
    );
}

fn strict_env() -> Env {
    let env = registered();
    env.babel(&[
        "run",
        "create",
        "s",
        "--model",
        "m",
        "--benchmark",
        "b",
        "--item-bank",
        "capitals-bank",
        "--protocol",
        "capitals-0shot",
    ])
    .assert()
    .success();
    env
}

#[test]
fn a_strict_record_absent_from_the_bank_is_rejected_at_import() {
    // "every record's (language, script, question_id) must exist in the bank"
    let env = strict_env();
    let file = env.input(
        "r.jsonl",
        concat!(
            r#"{"question_id": "cap-fr", "variant_id": "original", "language": "en", "script": "Latn", "correct": true}"#, "\n",
            r#"{"question_id": "cap-fr", "variant_id": "original", "language": "tr", "script": "Latn", "correct": true}"#, "\n",
        ),
    );
    let output = env
        .babel(&["import", "s", "--format", "canonical", file.as_str()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(message.contains("r.jsonl:2: (language \"tr\", script \"Latn\", question_id \"cap-fr\") is not an instance of item bank \"capitals-bank\""), "{message}");
    assert!(
        !message.contains("r.jsonl:1"),
        "the first line is an instance: {message}"
    );
    assert!(env.records("s").is_empty(), "nothing was imported");
}

#[test]
fn a_strict_record_without_script_is_rejected_and_general_runs_are_unaffected() {
    let env = strict_env();
    let line =
        r#"{"question_id": "cap-fr", "variant_id": "original", "language": "en", "correct": true}"#;
    let file = env.input("r.jsonl", format!("{line}\n"));
    let output = env
        .babel(&["import", "s", "--format", "canonical", file.as_str()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(
            "r.jsonl:1: field script: records of a strict benchmark run must name their script"
        ),
        "{}",
        stderr(&output)
    );
    // "Runs without benchmark_contract behave as before."
    env.babel(&["run", "create", "g", "--model", "m", "--benchmark", "b"])
        .assert()
        .success();
    env.babel(&["import", "g", "--format", "canonical", file.as_str()])
        .assert()
        .success();
}

#[test]
fn strict_identity_includes_the_script() {
    // "For strict runs, identity also includes the explicit script": sr/Cyrl and sr/Latn
    // instances with the same question_id are two records, not a duplicate.
    let env = strict_env();
    let lines = [
        r#"{"question_id": "cap-fr", "variant_id": "original", "language": "sr", "script": "Cyrl", "correct": true}"#,
        r#"{"question_id": "cap-fr", "variant_id": "original", "language": "sr", "script": "Latn", "correct": false}"#,
    ];
    let file = env.input("r.jsonl", lines.join("\n"));
    env.babel(&["import", "s", "--format", "canonical", file.as_str()])
        .assert()
        .success();
    assert_eq!(env.records("s").len(), 2);
}

#[test]
fn validate_catches_a_byte_changed_in_any_artifact() {
    let env = registered();
    strict_run(&env, "demo-7b-step1000", "demo-7b-step1000", true);
    assert!(
        add(
            &env,
            "calibration",
            "c",
            &calibration_value(&env, &["demo-7b-step1000"])
        )
        .status
        .success()
    );
    assert_eq!(env.validate_json()["ok"], true);
    let artifact_files: Vec<String> = env
        .files()
        .into_iter()
        .filter(|f| !f.starts_with("runs/") && !f.starts_with("history/") && f.contains('/'))
        .collect();
    assert_eq!(artifact_files.len(), 8, "{artifact_files:?}");
    for relative in &artifact_files {
        let path = env.archived(relative);
        let original = fs::read(&path).unwrap();
        // A manifest's first digit is part of the registered size or a pinned hash; in a
        // payload, any byte is covered by its hash, so take one from the middle. A digit
        // or letter becomes another, so the file usually stays JSON.
        let mut changed = original.clone();
        let from = if relative.ends_with("artifact.json") {
            changed.len() / 2
        } else {
            0
        };
        let at = from
            + changed[from..]
                .iter()
                .position(|b| b.is_ascii_alphanumeric())
                .unwrap();
        changed[at] = match changed[at] {
            b'9' => b'8',
            b'z' | b'Z' => b'y',
            other => other + 1,
        };
        fs::write(&path, &changed).unwrap();
        let report = env.validate_json();
        assert_eq!(
            report["ok"], false,
            "a changed byte in {relative} went unnoticed"
        );
        let paths: BTreeSet<&str> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        let dir = relative.rsplit_once('/').unwrap().0;
        assert!(
            paths.iter().any(|p| p.starts_with(dir)),
            "{relative}: {report}"
        );
        fs::write(&path, &original).unwrap();
    }
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn validate_reports_missing_dependencies_of_artifacts_and_strict_runs() {
    let env = registered();
    strict_run(&env, "demo-1b", "demo-1b", true);
    fs::remove_dir_all(env.archived("item-banks/capitals-bank")).unwrap();
    let report = env.validate_json();
    let findings: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        findings
            .iter()
            .any(|(p, m)| p == "protocols/capitals-0shot/artifact.json"
                && m.contains("item-bank \"capitals-bank\" is not registered")),
        "{findings:?}"
    );
    assert!(
        findings
            .iter()
            .any(|(p, m)| p == "runs/demo-1b/manifest.json"
                && m.contains("field metadata.benchmark_contract.item_bank")),
        "{findings:?}"
    );
}

#[test]
fn an_interrupted_artifact_add_publishes_nothing() {
    let env = Env::with_archive();
    let file = example("item-bank.json");
    let crashed = env
        .babel(&["artifact", "add", "item-bank", "b", file.to_str().unwrap()])
        .env("BABEL_FAULT", "manifest-temp-written")
        .output()
        .unwrap();
    assert!(!crashed.status.success());
    env.babel(&["init"]).assert().success();
    assert!(
        env.files().iter().all(|f| !f.starts_with("item-banks/b")),
        "{:?}",
        env.files()
    );
    assert_eq!(env.validate_json()["ok"], true);
    env.babel(&["artifact", "add", "item-bank", "b", file.to_str().unwrap()])
        .assert()
        .success();
}

/// The matrix computed here from the example inputs: (run, language, script) → item → cell.
fn expected_matrix(runs: &[&str]) -> Vec<String> {
    let bank: Value =
        serde_json::from_slice(&fs::read(example("item-bank.json")).unwrap()).unwrap();
    let mut instance_item = BTreeMap::new();
    let mut item_ids = Vec::new();
    for item in bank["items"].as_array().unwrap() {
        item_ids.push(item["id"].as_str().unwrap().to_owned());
        for i in item["instances"].as_array().unwrap() {
            instance_item.insert(
                (
                    i["language"].as_str().unwrap().to_owned(),
                    i["script"].as_str().unwrap().to_owned(),
                    i["question_id"].as_str().unwrap().to_owned(),
                ),
                item["id"].as_str().unwrap().to_owned(),
            );
        }
    }
    let mut rows = vec![format!(
        "run_id,model,checkpoint,language,script,{}",
        item_ids.join(",")
    )];
    for run in runs {
        let model = if run.contains("1b") {
            "demo-org/demo-1b"
        } else {
            "demo-org/demo-7b"
        };
        let mut cells: BTreeMap<(String, String), BTreeMap<String, bool>> = BTreeMap::new();
        for line in fs::read_to_string(example(&format!("results/{run}.jsonl")))
            .unwrap()
            .lines()
        {
            let v: Value = serde_json::from_str(line).unwrap();
            let (l, s, q) = (
                v["language"].as_str().unwrap(),
                v["script"].as_str().unwrap(),
                v["question_id"].as_str().unwrap(),
            );
            let item = &instance_item[&(l.to_owned(), s.to_owned(), q.to_owned())];
            cells
                .entry((l.into(), s.into()))
                .or_default()
                .insert(item.clone(), v["correct"].as_bool().unwrap());
        }
        for ((l, s), answers) in cells {
            let values: Vec<&str> = item_ids
                .iter()
                .map(|id| match answers.get(id) {
                    Some(true) => "1",
                    Some(false) => "0",
                    None => "",
                })
                .collect();
            rows.push(format!("{run},{model},,{l},{s},{}", values.join(",")));
        }
    }
    rows
}

#[test]
fn the_response_matrix_has_a_row_per_run_language_and_script_and_never_pools() {
    // "A response matrix preserves shared global IDs across languages while keeping their
    // separate observations and all family/split/grouping identifiers."
    let env = registered();
    strict_run(&env, "demo-7b-step2000", "demo-7b-step2000", false);
    strict_run(&env, "demo-1b", "demo-1b", false);
    let out = env.path().join("m.csv");
    env.babel(&[
        "matrix",
        "--bank",
        "capitals-bank",
        "--runs",
        "demo-7b-step2000,demo-1b",
        "--out",
        out.to_str().unwrap(),
    ])
    .assert()
    .success();
    let written: Vec<String> = fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(written, expected_matrix(&["demo-7b-step2000", "demo-1b"]));
    let items = fs::read_to_string(env.path().join("m.items.csv")).unwrap();
    assert_eq!(items.lines().next(), Some("item_id,family,split,region"));
    assert!(items.contains("cap-au,world-capitals,dev,oceania\n"));

    let jsonl = env.path().join("m.jsonl");
    env.babel(&[
        "matrix",
        "--bank",
        "capitals-bank",
        "--runs",
        "demo-1b",
        "--out",
        jsonl.to_str().unwrap(),
    ])
    .assert()
    .success();
    let first: Value =
        serde_json::from_str(fs::read_to_string(&jsonl).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(first["subject_id"], "demo-1b:en:Latn");
    assert!(first["responses"].is_object());
    assert!(env.path().join("m.items.jsonl").is_file());

    let again = env
        .babel(&[
            "matrix",
            "--bank",
            "capitals-bank",
            "--runs",
            "demo-1b",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        again.status.code(),
        Some(2),
        "an existing matrix is never overwritten"
    );
}

#[test]
fn the_matrix_refuses_general_runs_and_runs_under_another_protocol() {
    // "comparisons require the same bank and protocol references", and a matrix mixes no
    // protocols either.
    let env = registered();
    strict_run(&env, "demo-1b", "demo-1b", false);
    let mut five_shot = protocol_value(&env);
    five_shot["few_shot"] = json!({"count": 5});
    assert!(
        add(&env, "protocol", "capitals-5shot", &five_shot)
            .status
            .success()
    );
    env.babel(&[
        "run",
        "create",
        "five",
        "--model",
        "demo-org/demo-1b",
        "--item-bank",
        "capitals-bank",
        "--protocol",
        "capitals-5shot",
    ])
    .assert()
    .success();
    env.babel(&["run", "create", "general", "--model", "m"])
        .assert()
        .success();
    let out = env.path().join("x.csv");
    let output = env
        .babel(&[
            "matrix",
            "--bank",
            "capitals-bank",
            "--runs",
            "demo-1b,five",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    // A refused selection is a usage error, as in compare and panel.
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("pin different protocols"),
        "{}",
        stderr(&output)
    );
    let output = env
        .babel(&[
            "matrix",
            "--bank",
            "capitals-bank",
            "--runs",
            "demo-1b,general",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("run general is not a strict benchmark run"),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists() && !env.path().join("x.items.csv").exists());
}

/// The (path, line, check) of every finding of `babel validate --json`.
fn finding_places(report: &Value) -> Vec<(String, Option<u64>, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["line"].as_u64().or(f["row"].as_u64()),
                f["check"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn matrix_command(env: &Env, runs: &str, out: &Path) -> std::process::Output {
    env.babel(&[
        "matrix",
        "--bank",
        "capitals-bank",
        "--runs",
        runs,
        "--out",
        out.to_str().unwrap(),
    ])
    .output()
    .unwrap()
}

#[test]
fn the_matrix_is_written_outside_the_archive_even_through_a_symlink() {
    // ARTIFACTS.md: the matrix is written "outside the archive"; a file inside a run folder
    // would be one that no manifest registers.
    let env = registered();
    strict_run(&env, "demo-1b", "demo-1b", false);
    let before = env.files();
    std::os::unix::fs::symlink(env.archived("runs/demo-1b"), env.path().join("link")).unwrap();
    fs::create_dir(env.path().join("outside")).unwrap();
    for out in [
        env.archived("runs/demo-1b/m.csv"),
        env.path().join("link/m.csv"),
        env.path().join("outside/../archive/m.jsonl"),
    ] {
        let output = matrix_command(&env, "demo-1b", &out);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{}: {}",
            out.display(),
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("is inside the archive"),
            "{}",
            stderr(&output)
        );
    }
    assert_eq!(env.files(), before, "nothing was written into the archive");
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn an_existing_sidecar_is_refused_before_anything_is_written() {
    // ARTIFACTS.md: "Neither file may exist".
    let env = registered();
    strict_run(&env, "demo-1b", "demo-1b", false);
    fs::write(env.path().join("m.items.csv"), "mine\n").unwrap();
    let output = matrix_command(&env, "demo-1b", &env.path().join("m.csv"));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("m.items.csv already exists"),
        "{}",
        stderr(&output)
    );
    assert!(!env.path().join("m.csv").exists());
    assert_eq!(
        fs::read_to_string(env.path().join("m.items.csv")).unwrap(),
        "mine\n"
    );
}

#[test]
fn a_matrix_whose_sidecar_cannot_be_written_leaves_neither_file() {
    // The sidecar's name is 6 bytes longer than the matrix's: a 254-byte matrix name is
    // valid, its 260-byte sidecar name exceeds the 255-byte limit of Linux file systems,
    // so the second write fails for real after the first succeeded.
    let env = registered();
    strict_run(&env, "demo-1b", "demo-1b", false);
    let dir = env.path().join("out");
    fs::create_dir(&dir).unwrap();
    let out = dir.join(format!("{}.csv", "m".repeat(250)));
    let output = matrix_command(&env, "demo-1b", &out);
    assert!(!output.status.success(), "the sidecar name is too long");
    assert!(
        stderr(&output).contains(".items.csv"),
        "{}",
        stderr(&output)
    );
    let left: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        left.is_empty(),
        "a failed matrix leaves nothing behind: {left:?}"
    );
}

#[test]
fn a_run_named_twice_is_refused_as_a_usage_error() {
    // A run named twice would be two respondents with one subject_id ("run:language:script").
    let env = registered();
    strict_run(&env, "demo-1b", "demo-1b", false);
    let out = env.path().join("m.csv");
    let output = matrix_command(&env, "demo-1b,demo-1b", &out);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("run demo-1b is named twice in --runs"),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists() && !env.path().join("m.items.csv").exists());
}

#[test]
fn a_strict_record_whose_filter_the_protocol_does_not_define_is_rejected_at_import() {
    // ARTIFACTS.md, protocol `filters`: "`name` is the records' `filter`".
    let env = strict_env();
    let line = |filter: &str| {
        format!(
            r#"{{"question_id": "cap-fr", "variant_id": "original", "language": "en", "script": "Latn", "filter": "{filter}", "correct": true}}"#
        )
    };
    let file = env.input("r.jsonl", format!("{}\n", line("made-up")));
    let output = env
        .babel(&["import", "s", "--format", "canonical", file.as_str()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains(
            "r.jsonl:1: field filter: \"made-up\" is not one of the filters of protocol \"capitals-0shot\" (none)"
        ),
        "{message}"
    );
    assert!(
        message.contains("babel artifact show protocol capitals-0shot"),
        "{message}"
    );
    assert!(env.records("s").is_empty(), "nothing was imported");
    // The command the hint names lists the filters, as the example protocol defines them.
    let shown = env
        .babel(&["artifact", "show", "protocol", "capitals-0shot"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("filters: none\n"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
    let file = env.input("ok.jsonl", format!("{}\n", line("none")));
    env.babel(&["import", "s", "--format", "canonical", file.as_str()])
        .assert()
        .success();
}

#[test]
fn validate_requires_registered_artifact_files_to_be_regular_files_not_symlinks() {
    // ARTIFACTS.md, Validation: "`artifact.json` a regular file"; the manifest is held to
    // the same rule as a run's registered files.
    let env = registered();
    let elsewhere = env.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let mut replaced = Vec::new();
    // In registry order, as validate lists them.
    for relative in [
        "protocols/capitals-0shot/artifact.json",
        "model-panels/capitals-models/manifest.json",
    ] {
        let path = env.archived(relative);
        let copy = elsewhere.join(relative.replace('/', "-"));
        fs::rename(&path, &copy).unwrap();
        std::os::unix::fs::symlink(&copy, &path).unwrap();
        replaced.push((relative.to_owned(), None, "file-type".to_owned()));
    }
    assert_eq!(finding_places(&env.validate_json()), replaced);
}

#[test]
fn validate_catches_strict_records_changed_and_rehashed_after_import() {
    // ARTIFACTS.md, Strict runs: every record's "(language, script, question_id) must be an
    // instance of the bank", and its filter one of the protocol's. A records file edited
    // with its manifest hash and size updated passes every hash check; validate must still
    // see that the records left the contract.
    let env = registered();
    strict_run(&env, "demo-1b", "demo-1b", false);
    let records_rel = "runs/demo-1b/records/0001.parquet";
    let records_path = env.archived(records_rel);
    let mut rows = crate::common::records_file_rows(&records_path);
    assert_eq!(rows[0]["question_id"], "cap-fr");
    rows[0]["question_id"] = json!("cap-xx");
    assert_eq!(rows[2]["filter"], "none");
    rows[2]["filter"] = json!("made-up");
    let tampered = crate::common::write_records_file(&records_path, &rows);
    let manifest_path = env.archived("runs/demo-1b/manifest.json");
    let mut manifest: Value = serde_json::from_slice(&fs::read(&manifest_path).unwrap()).unwrap();
    manifest["imports"][0]["records"]["sha256"] = json!(sha256_hex(&tampered));
    manifest["imports"][0]["records"]["bytes"] = json!(tampered.len());
    fs::write(&manifest_path, format!("{}\n", sorted_compact(&manifest))).unwrap();

    let report = env.validate_json();
    assert_eq!(
        finding_places(&report),
        [
            (
                "runs/demo-1b/manifest.json".to_owned(),
                None,
                "history".to_owned()
            ),
            (records_rel.to_owned(), Some(1), "contract".to_owned()),
            (records_rel.to_owned(), Some(3), "contract".to_owned()),
        ],
        "the contract is broken, and the history sees the rehashed manifest: {report}"
    );
    let messages: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(
        messages[0]
            .contains("question_id \"cap-xx\") is not an instance of item bank \"capitals-bank\""),
        "{messages:?}"
    );
    assert!(
        messages[1].starts_with(
            "field filter: \"made-up\" is not one of the filters of protocol \"capitals-0shot\""
        ),
        "{messages:?}"
    );
}
