#!/usr/bin/env bash
# The benchmark suite (bench/suite.py) against the release binary.
# Usage: bench/run.sh [full|smoke] [WORKDIR]
#   full  (default) the sizes BENCHMARKS.md reports: 200 MB and 1 GB harness files, two runs
#         of 1,000,000 canonical records, Inspect, lighteval, HELM, paired and EEE inputs,
#         39,506 few-shot items and 200,000 short items in HTML reports; about 20 minutes and
#         7 GB of disk in WORKDIR
#   smoke every step on tiny inputs, in seconds (the test suite runs it with the debug
#         binary through tests/it/bench_smoke.rs)
# Needs what .ci/setup-data-tools and .ci/setup-browser install (DuckDB, pandas, Chromium);
# runs with the Python of their venv, target/ci/venv, else python3.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-full}
work=${2:-$(mktemp -d)}
python=target/ci/venv/bin/python
[ -x "$python" ] || python=python3
cargo build --release --quiet
"$python" bench/suite.py "$mode" target/release/babel "$work"
