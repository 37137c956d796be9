//! BENCHMARK_WORKFLOW.md runs exactly as written: every ```sh and ```python block, in
//! order, in one shell, in a fresh folder holding a copy of examples/benchmark/, with the
//! babel under test on the PATH. Then the files the document promises are checked against
//! the example inputs.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{python, python_with, tools_or_skip};

const DOCUMENT: &str = "BENCHMARK_WORKFLOW.md";

struct Block {
    language: String,
    code: String,
    /// One-based line of the opening fence.
    line: usize,
}

fn fenced_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (index, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(language)) => {
                open = Some(Block {
                    language: language.trim().to_owned(),
                    code: String::new(),
                    line: index + 1,
                })
            }
            (Some(_), Some("")) => blocks.extend(open.take()),
            (Some(block), _) => {
                block.code.push_str(line);
                block.code.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{DOCUMENT} has an unclosed code fence");
    blocks
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The whole document as one bash script; each block records its number when it is done.
/// Python blocks run with the interpreter in `$WORKFLOW_PYTHON`.
fn script(blocks: &[&Block]) -> String {
    let mut script = String::from("set -euo pipefail\n");
    for (number, block) in blocks.iter().enumerate() {
        if block.language == "python" {
            script.push_str("\"$WORKFLOW_PYTHON\" - <<'BABEL_WORKFLOW_PYTHON'\n");
            script.push_str(&block.code);
            script.push_str("BABEL_WORKFLOW_PYTHON\n");
        } else {
            script.push_str(&block.code);
        }
        script.push_str(&format!("echo {} > .workflow-blocks-done\n", number + 1));
    }
    script
}

fn csv_rows(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_benchmark_workflow_runs_as_written() {
    // The calibration step fits a Rasch model with girth and pandas.
    if !tools_or_skip(&[python_with("girth, pandas", "setup-girth")]) {
        return;
    }
    let text = fs::read_to_string(repo().join(DOCUMENT)).unwrap();
    let all = fenced_blocks(&text);
    let runnable: Vec<&Block> = all
        .iter()
        .filter(|b| b.language == "sh" || b.language == "python")
        .collect();
    assert!(runnable.len() >= 8, "the document lost its commands");

    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    copy_dir(&repo().join("examples/benchmark"), &work.join("benchmark"));
    let babel = PathBuf::from(env!("CARGO_BIN_EXE_babel"));
    let path = format!(
        "{}:{}",
        babel.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(script(&runnable))
        .current_dir(work)
        .env("PATH", path)
        .env("WORKFLOW_PYTHON", python())
        .env_remove("BABEL_ROOT")
        .env_remove("BABEL_TIMESTAMP")
        .output()
        .unwrap();
    if !output.status.success() {
        let done: usize = fs::read_to_string(work.join(".workflow-blocks-done"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        let failed = runnable[done.min(runnable.len() - 1)];
        panic!(
            "the ```{} block at {DOCUMENT}:{} failed (exit {:?}):\n{}\nstdout:\n{}\nstderr:\n{}",
            failed.language,
            failed.line,
            output.status.code(),
            failed.code,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    // The matrix: one column per bank item, one row per (run, language, script) that the
    // example results hold, in the order the runs were named.
    let bank: Value =
        serde_json::from_str(&fs::read_to_string(work.join("benchmark/item-bank.json")).unwrap())
            .unwrap();
    let item_ids: Vec<&str> = bank["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    let mut expected_rows = 0;
    for run in ["demo-7b-step1000", "demo-7b-step2000", "demo-1b"] {
        let results =
            fs::read_to_string(work.join(format!("benchmark/results/{run}.jsonl"))).unwrap();
        let forms: BTreeSet<(String, String)> = results
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["language"].as_str().unwrap().to_owned(),
                    v["script"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        expected_rows += forms.len();
    }
    let rows = csv_rows(&work.join("responses.csv"));
    assert_eq!(
        rows[0],
        format!(
            "run_id,model,checkpoint,language,script,{}",
            item_ids.join(",")
        )
    );
    assert_eq!(rows.len() - 1, expected_rows);
    let shown = all
        .iter()
        .find(|b| b.language == "text" && b.code.starts_with("run_id,"))
        .expect("the document shows the head of the matrix");
    assert_eq!(
        shown.code.lines().collect::<Vec<_>>(),
        rows[..3].iter().map(String::as_str).collect::<Vec<_>>(),
        "the matrix head printed in {DOCUMENT} is what babel writes"
    );
    assert_eq!(
        csv_rows(&work.join("responses.items.csv")).len(),
        item_ids.len() + 1
    );
    assert_eq!(
        fs::read_to_string(work.join("responses.jsonl"))
            .unwrap()
            .lines()
            .count(),
        expected_rows
    );
    assert_eq!(
        rows,
        csv_rows(&work.join("release-responses.csv")),
        "the release holds the same runs in the same order"
    );

    // The study as a panel: the three runs of the model panel, every pair tested.
    let panel: Value =
        serde_json::from_str(&fs::read_to_string(work.join("panel.json")).unwrap()).unwrap();
    let runs: Vec<&str> = panel["sides"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["demo-1b", "demo-7b-step1000", "demo-7b-step2000"]);
    assert_eq!(panel["pairs"].as_array().unwrap().len(), 3);
    assert!(work.join("study.html").is_file());

    // The refusal printed in the document is what babel prints.
    let refusal = all
        .iter()
        .find(|b| b.language == "text" && b.code.starts_with("error: import rejected"))
        .expect("the document shows the refused import");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&refusal.code),
        "the refusal printed in {DOCUMENT} is not what babel wrote:\n{stderr}"
    );

    // The refused import published nothing: demo-1b has its one import only.
    let manifest: Value = serde_json::from_str(
        &fs::read_to_string(work.join("archive/runs/demo-1b/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["imports"].as_array().unwrap().len(), 1);

    // The calibration has a parameter for every item, and the release is registered.
    let calibration: Value =
        serde_json::from_str(&fs::read_to_string(work.join("calibration.json")).unwrap()).unwrap();
    let parameterized: Vec<&str> = calibration["item_parameters"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(parameterized, item_ids);
    for file in ["manifest.json", "artifact.json"] {
        assert!(
            work.join("archive/releases/capitals-2026.1")
                .join(file)
                .is_file()
        );
    }
    let validate = Command::new(&babel)
        .args(["--root", "archive", "validate", "--json"])
        .current_dir(work)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&validate.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report}");
}
