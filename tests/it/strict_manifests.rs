//! Strict manifests: "validate checks every manifest and artifact manifest against its
//! exact schema: known keys only, enums (`format`, `status`, option values), RFC 3339 UTC
//! timestamps, versions in their grammar, metadata that agrees with the records
//! (`benchmark`, `variant_override`)." (issue 13)
//!
//! Each edit below is re-canonicalized and laundered into a re-chained history, so the
//! history cannot see it: only the manifest's own schema can.

use crate::common::{Env, canonical_line, launder_history};
use serde_json::{Value, json};

/// Run r1 (benchmark b) with an import of variant "original", sealed; run r2 open with a
/// paired import; the example item bank registered.
fn archive() -> Env {
    let env = Env::with_run();
    let lines: Vec<String> = (0..3)
        .map(|q| canonical_line(&format!("q{q}"), "original", Some(true)))
        .collect();
    let input = env.input("a.jsonl", lines.join("\n") + "\n");
    env.babel(&[
        "import",
        "r1",
        "--format",
        "canonical",
        "--variant",
        "original",
        "--language",
        "en",
        &input,
    ])
    .assert()
    .success();
    env.babel(&["seal", "r1"]).assert().success();
    env.babel(&["run", "create", "r2", "--model", "m1", "--benchmark", "b"])
        .assert()
        .success();
    let paired = env.input(
        "p.jsonl",
        concat!(
            r#"{"question_id":"q1","original":{"question":"Q","choices":["a","b"],"correct_index":0,"predicted_index":0},"#,
            r#""rephrased":{"question":"Q'","choices":["a","b"],"correct_index":0,"predicted_index":1}}"#,
            "\n"
        ),
    );
    env.babel(&[
        "import",
        "r2",
        "--format",
        "paired",
        "--variant",
        "para",
        &paired,
    ])
    .assert()
    .success();
    let bank =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/benchmark/item-bank.json");
    env.babel(&[
        "artifact",
        "add",
        "item-bank",
        "bank",
        bank.to_str().unwrap(),
    ])
    .assert()
    .success();
    let report = env.validate_json();
    assert_eq!(report["ok"], true, "{report}");
    env
}

fn edit_json(env: &Env, relative: &str, edit: impl FnOnce(&mut Value)) {
    let path = env.archived(relative);
    let mut value: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut value);
    std::fs::write(
        &path,
        babel::canonical_json::to_canonical_bytes(&value).unwrap(),
    )
    .unwrap();
    launder_history(env);
}

/// The messages of the findings on `path`; validate must fail, and only because of it.
fn findings_on(env: &Env, path: &str) -> Vec<String> {
    let report = env.validate_json();
    assert_eq!(report["ok"], false, "validate passed an edited {path}");
    let findings = report["findings"].as_array().unwrap();
    for finding in findings {
        assert_ne!(
            finding["check"], "history",
            "the history was laundered: {finding}"
        );
    }
    findings
        .iter()
        .filter(|f| f["path"] == path)
        .map(|f| f["message"].as_str().unwrap().to_owned())
        .collect()
}

fn assert_found(env: &Env, path: &str, needle: &str) {
    let found = findings_on(env, path);
    assert!(
        found.iter().any(|m| m.contains(needle)),
        "no finding on {path} containing {needle:?}: {found:?}"
    );
}

const R1: &str = "runs/r1/manifest.json";
const R2: &str = "runs/r2/manifest.json";

#[test]
fn the_laundering_itself_leaves_a_valid_archive() {
    // The helper changes nothing by itself: a control for every test below.
    let env = archive();
    edit_json(&env, R1, |_| {});
    assert_eq!(env.validate_json()["ok"], true);
}

#[test]
fn timestamps_must_be_rfc3339_utc_instants() {
    for (field, value) in [
        ("created_at", "2026-22-03T14;36:62Z"),
        ("created_at", "2026-02-30T00:00:00Z"),
        ("sealed_at", "2026-12-02T12:00:00+01:00"),
    ] {
        let env = archive();
        edit_json(&env, R1, |m| m[field] = value.into());
        assert_found(
            &env,
            R1,
            &format!("{field} {value:?} is not an RFC 3339 UTC time"),
        );
    }
    let env = archive();
    edit_json(&env, R1, |m| {
        m["imports"][0]["imported_at"] = "yesterday".into()
    });
    assert_found(&env, R1, "import 1 imported_at \"yesterday\"");
}

#[test]
fn a_reopened_seal_must_be_whole() {
    let env = archive();
    edit_json(&env, R1, |m| m["status"] = "open".into());
    assert_found(
        &env,
        R1,
        "status is open but sealed_at is \"2026-12-02T12:00:00Z\"",
    );
    let env = archive();
    edit_json(&env, R1, |m| m["status"] = "closed".into());
    assert_found(&env, R1, "not a run manifest");
}

#[test]
fn import_fields_are_checked_against_their_grammar() {
    let cases: [(&str, Value, &str); 8] = [
        ("format", json!("danonical"), "unknown format \"danonical\""),
        (
            "normalizer_version",
            json!("canonical/2"),
            "normalizer_version \"canonical/2\"",
        ),
        (
            "normalizer_version",
            json!("harness/1"),
            "normalizer_version \"harness/1\"",
        ),
        (
            "babel_version",
            json!("0.1"),
            "babel_version \"0.1\" is not a version",
        ),
        (
            "source_basename",
            json!("b.jsonl"),
            "is not the one source_basename \"b.jsonl\" gives",
        ),
        (
            "id_field",
            json!("a..b"),
            "id_field \"a..b\" is not a dotted field path",
        ),
        (
            "variant_override",
            json!("rephrased"),
            "records of variant \"original\" contradict its variant_override \"rephrased\"",
        ),
        (
            "breakdown",
            json!([]),
            "the breakdown counts 0 records, the records entry 3",
        ),
    ];
    for (field, value, needle) in cases {
        let env = archive();
        edit_json(&env, R1, |m| m["imports"][0][field] = value);
        assert_found(&env, R1, needle);
    }
}

#[test]
fn options_are_a_closed_set_with_known_values() {
    let cases: [(&str, Option<Value>, &str); 5] = [
        (
            "non_finite",
            Some(json!("rejects")),
            "option \"non_finite\" is \"rejects\", not one of reject, null",
        ),
        (
            "language",
            Some(json!("fr")),
            "contradict --language \"fr\"",
        ),
        ("benchmark", Some(json!(7)), "option \"benchmark\" is 7"),
        ("extra", Some(json!(true)), "unknown option \"extra\""),
        ("language", None, "option \"language\" is missing"),
    ];
    for (key, value, needle) in cases {
        let env = archive();
        edit_json(&env, R1, |m| {
            let options = m["imports"][0]["options"].as_object_mut().unwrap();
            match value {
                Some(value) => options.insert(key.into(), value),
                None => options.remove(key),
            };
        });
        assert_found(&env, R1, needle);
    }
}

#[test]
fn metadata_keys_are_typed_and_agree_with_the_records() {
    let cases: [(&str, Value, &str); 5] = [
        (
            "benchmark",
            json!("c"),
            "records of benchmark \"b\" contradict the run's benchmark \"c\"",
        ),
        (
            "dataset_revision",
            json!(5),
            "metadata dataset_revision must be a non-empty string",
        ),
        (
            "correctness_metric",
            json!(""),
            "metadata correctness_metric must be a non-empty string",
        ),
        (
            "shared_answer_key",
            json!("yes"),
            "metadata shared_answer_key must be true or false",
        ),
        (
            "model",
            json!(null),
            "metadata model must be a non-empty string",
        ),
    ];
    for (key, value, needle) in cases {
        let env = archive();
        edit_json(&env, R1, |m| m["metadata"][key] = value);
        assert_found(&env, R1, needle);
    }
}

#[test]
fn a_paired_import_keeps_original_beside_its_variant_override() {
    // The control: r2's paired import has variants "original" and "para" under
    // variant_override "para", and validates. Another override contradicts "para".
    let env = archive();
    edit_json(&env, R2, |m| {
        m["imports"][0]["variant_override"] = "other".into()
    });
    let found = findings_on(&env, R2);
    assert!(
        found
            .iter()
            .any(|m| m.contains("variant \"para\" contradict its variant_override \"other\"")),
        "{found:?}"
    );
    assert!(
        !found.iter().any(|m| m.contains("variant \"original\"")),
        "{found:?}"
    );
}

#[test]
fn a_key_babel_does_not_write_is_found() {
    let env = archive();
    edit_json(&env, R1, |m| {
        m["imports"][0]
            .as_object_mut()
            .unwrap()
            .remove("variant_override");
    });
    assert_found(&env, R1, "it holds fields babel does not write");
    let env = archive();
    edit_json(&env, R1, |m| m["imports"][0]["note"] = "x".into());
    assert_found(&env, R1, "unknown field `note`");
}

#[test]
fn artifact_manifests_check_their_time_and_version() {
    let relative = "item-banks/bank/manifest.json";
    for (field, value, needle) in [
        (
            "registered_at",
            "2026-12-02 12:00:00",
            "registered_at \"2026-12-02 12:00:00\" is not an RFC 3339 UTC time",
        ),
        (
            "babel_version",
            "v0.1.0",
            "babel_version \"v0.1.0\" is not a version",
        ),
    ] {
        let env = archive();
        edit_json(&env, relative, |m| m[field] = value.into());
        assert_found(&env, relative, needle);
    }
}
