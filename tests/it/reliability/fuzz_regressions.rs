//! Every input a `cargo fuzz` target crashed on becomes a regression test here
//! (`tests/fuzz-regressions/<target>/`). Records-file crashes are stored as a run's records
//! file, rehashed into its manifest and laundered into the history, so that only the
//! records reader sees them: validate must report the file, not panic. Document-scanner
//! crashes are imported as Inspect `.json` logs, Parquet-row crashes as lighteval details
//! files: refused whole, nothing written. (The adapter targets have found no crash so far;
//! RELIABILITY.md has the figures.)

use crate::common::{Env, canonical_line, launder_history};
use std::path::{Path, PathBuf};

fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-regressions")
        .join(target);
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

#[test]
fn records_files_that_crashed_the_reader_are_findings() {
    let crashes = inputs("records_file");
    assert!(
        !crashes.is_empty(),
        "the regression corpus is in the repository"
    );
    for crash in crashes {
        let env = Env::with_run();
        let input = env.input(
            "a.jsonl",
            canonical_line("q1", "original", Some(true)) + "\n",
        );
        env.babel(&["import", "r1", "--format", "canonical", &input])
            .assert()
            .success();
        let bytes = std::fs::read(&crash).unwrap();
        let records = "runs/r1/records/0001.parquet";
        std::fs::write(env.archived(records), &bytes).unwrap();
        let manifest_path = env.archived("runs/r1/manifest.json");
        let mut manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
        manifest["imports"][0]["records"]["sha256"] = crate::common::sha256_hex(&bytes).into();
        manifest["imports"][0]["records"]["bytes"] = bytes.len().into();
        std::fs::write(
            &manifest_path,
            babel::canonical_json::to_canonical_bytes(&manifest).unwrap(),
        )
        .unwrap();
        launder_history(&env);
        let output = env.babel(&["validate", "--json"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{}: {stderr}",
            crash.display()
        );
        assert!(
            !stderr.contains("panicked"),
            "{}: {stderr}",
            crash.display()
        );
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert!(
            report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["path"] == records && f["check"] == "records"),
            "{}: {report:#}",
            crash.display()
        );
    }
}

#[test]
fn documents_that_confused_the_scanner_are_refused_as_inspect_logs() {
    let crashes = inputs("document_scanner");
    assert!(
        !crashes.is_empty(),
        "the regression corpus is in the repository"
    );
    for crash in crashes {
        let env = Env::with_run();
        let before = env.files();
        let log = env.input("log.json", std::fs::read(&crash).unwrap());
        let output = env
            .babel(&["import", "r1", "--format", "inspect", &log])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", crash.display());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("nothing was imported"), "{stderr}");
        assert_eq!(env.files(), before, "{}", crash.display());
    }
}

#[test]
fn parquet_files_that_crashed_the_row_reader_are_refused_as_lighteval_details() {
    let crashes = inputs("parquet_rows");
    assert!(
        !crashes.is_empty(),
        "the regression corpus is in the repository"
    );
    for crash in crashes {
        let env = Env::with_archive();
        env.babel(&["run", "create", "r", "--model", "m"])
            .assert()
            .success();
        let date = "2026-01-01T00-00-00.000000";
        env.input(
            &format!("out/details/m/{date}/details_t|0_{date}.parquet"),
            std::fs::read(&crash).unwrap(),
        );
        env.input(
            &format!("out/results/m/results_{date}.json"),
            r#"{"config_general": {"model_name": "m"}, "results": {}}"#,
        );
        let before = env.files();
        let output = env
            .babel(&["import", "r", "--format", "lighteval", "inputs/out"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{}: {stderr}",
            crash.display()
        );
        assert!(
            stderr.contains("not a Parquet file babel can read"),
            "{stderr}"
        );
        assert_eq!(env.files(), before, "{}", crash.display());
    }
}
