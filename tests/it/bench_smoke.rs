//! The benchmark suite stays runnable: `bench/suite.py smoke` runs every measured step
//! (babel beside sha256sum, the Python reference, pandas and DuckDB, and the HTML reports
//! in Chromium) on tiny inputs with this build's binary. Figures are not asserted here;
//! BENCHMARKS.md records the full run's.

use crate::common::{chromium, playwright, python, python_with, tools_or_skip};
use std::path::Path;
use std::process::Command;

#[test]
fn the_benchmark_suite_runs_every_step_on_tiny_inputs() {
    if !tools_or_skip(&[
        python_with("duckdb, pandas, zstandard", "setup-data-tools"),
        chromium(),
        playwright(),
    ]) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let output = Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/suite.py"))
        .arg("smoke")
        .arg(env!("CARGO_BIN_EXE_babel"))
        .arg(work.path())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in [
        "| import: harness file, 1 MB | babel |",
        "| import: Inspect .eval log, 0 MB (100 samples) | babel |",
        "| import: lighteval details, 500 rows | babel |",
        "| import: HELM run, 160 request states | babel |",
        "| import: paired file, 0 MB (500 lines) | babel |",
        "| import: Every Eval Ever rows, 0 MB (300 rows) | sha256sum |",
        "| import: Every Eval Ever rows, 0 MB (300 rows) | babel |",
        "| import: 5,000 canonical records | python |",
        "| compare: 2 × 5,000 records, summary | DuckDB on babel's Parquet |",
        "| compare: 2 × 5,000 records, summary | pandas on the JSONL inputs |",
        "| compare: 2 × 5,000 records, html report | babel |",
        "| records: 5,000 canonical records | babel |",
        "| 300 few-shot harness items |",
        "| 2,000 short items |",
        "| panel: 4 runs × 500 items, summary | babel |",
        "| panel: 4 runs × 500 items, summary | DuckDB on babel's Parquet (SQL self-join) |",
        "| panel: 4 runs × 500 items, HTML dashboard | babel |",
        "| 4 runs × 500 items |",
    ] {
        assert!(report.contains(expected), "{expected:?} not in:\n{report}");
    }
}
