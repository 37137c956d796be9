//! The records are a table other tools read as they are: DuckDB and pandas read the
//! archive's Parquet files directly, and the Hugging Face `datasets` library loads a
//! pulled archive through the dataset card hub-push publishes, offline. Each must see
//! exactly what `babel records` prints. (`.ci/setup-data-tools` installs the readers.)

use crate::common::{Env, python, python_with, tools_or_skip};
use crate::hub_server::HubServer;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// An archive with canonical, paired and lm-evaluation-harness imports: nested values,
/// non-ASCII text, null languages and unknown correctness.
fn varied_archive() -> Env {
    let env = Env::with_archive();
    env.babel(&["run", "create", "caps", "--model", "demo-model"])
        .assert()
        .success();
    env.babel(&["import", "caps", "--format", "canonical"])
        .args(["--benchmark", "world-capitals"])
        .arg(manifest_dir().join("examples/canonical/capitals.jsonl"))
        .assert()
        .success();
    env.babel(&["run", "create", "pairs", "--model", "demo-model"])
        .assert()
        .success();
    env.babel(&["import", "pairs", "--format", "paired"])
        .arg(manifest_dir().join("examples/paired/capitals-paired.jsonl"))
        .assert()
        .success();
    env.babel(&["run", "create", "lm", "--model", "dummy-p"])
        .assert()
        .success();
    env.babel(&["import", "lm", "--format", "harness"])
        .arg(manifest_dir().join(
            "tests/fixtures/lm-eval-0.4.13/original/dummy-p/samples_babel_mc_original_2026-12-02T12-52-40.515719.jsonl",
        ))
        .assert()
        .success();
    env
}

/// Every record of every run of the archive at `root`, as `babel records` prints them,
/// each canonical JSON text, sorted.
fn babel_records(root: &Path) -> Vec<String> {
    let mut all = Vec::new();
    for run in ["caps", "lm", "pairs"] {
        let output = Command::new(env!("CARGO_BIN_EXE_babel"))
            .arg("--root")
            .arg(root)
            .args(["records", run])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        all.extend(canonical_lines(&output.stdout));
    }
    all.sort();
    all
}

fn canonical_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap();
            babel::canonical_json::to_canonical_string(&value).unwrap()
        })
        .collect()
}

/// What `tool` reads of the archive at `root`, in the same form.
fn read_with(tool: &str, root: &Path) -> Vec<String> {
    let output = Command::new(python())
        .arg(manifest_dir().join("tests/readers/read_records.py"))
        .arg(tool)
        .arg(root)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{tool} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut lines = canonical_lines(&output.stdout);
    lines.sort();
    lines
}

#[test]
fn duckdb_and_pandas_read_the_records_babel_prints() {
    if !tools_or_skip(&[python_with("duckdb, pandas, pyarrow", "setup-data-tools")]) {
        return;
    }
    let env = varied_archive();
    let expected = babel_records(&env.root());
    // 12 canonical lines, 8 paired lines of two records each, 30 harness documents.
    assert_eq!(expected.len(), 12 + 16 + 30, "every import's records");
    for tool in ["duckdb", "pandas"] {
        assert_eq!(read_with(tool, &env.root()), expected, "{tool}");
    }
}

#[test]
fn a_pulled_archive_loads_with_datasets_and_duckdb_offline() {
    // "the dataset card that hub-push writes declares them (a configs entry with
    // data_files), so the Hub's viewer and datasets.load_dataset read the records table."
    if !tools_or_skip(&[python_with("datasets, duckdb", "setup-data-tools")]) {
        return;
    }
    let env = varied_archive();
    let server = HubServer::start();
    let commit = crate::hub_support::push(&env, &server, "tester/records", &["--create"]);
    let output = crate::hub_support::hub(
        &env,
        &server,
        &[
            "hub-pull",
            "--repo",
            "tester/records",
            "--revision",
            &commit,
            "--dest",
            "pulled",
        ],
    )
    .output()
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        crate::hub_support::text(&output)
    );
    let pulled = env.path().join("pulled");
    let card = std::fs::read_to_string(pulled.join("README.md")).unwrap();
    assert!(
        card.starts_with(&format!("---\n{}", babel::hub::card::CONFIGS)),
        "{card}"
    );
    let expected = babel_records(&pulled);
    assert_eq!(expected, babel_records(&env.root()));
    for tool in ["datasets", "duckdb"] {
        assert_eq!(read_with(tool, &pulled), expected, "{tool}");
    }
}
