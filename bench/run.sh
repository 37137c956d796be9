#!/usr/bin/env bash
# Measures babel import and validate on one generated file, against `sha256sum` of the
# same file and a straightforward Python implementation of the same work (reference.py).
# Usage: bench/run.sh [RECORDS]   (default 200000, about 260 MB)
# Prints a Markdown table; BENCHMARKS.md records the latest figures.
set -euo pipefail
cd "$(dirname "$0")/.."
records=${1:-200000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release --quiet
babel=target/release/babel

python3 bench/generate.py "$work/input.jsonl" "$records"
bytes=$(stat -c %s "$work/input.jsonl")
cat "$work/input.jsonl" > /dev/null   # warm the page cache for every contender

seconds() { # best of 3 wall-clock runs of the command, in seconds
  local best=""
  for _ in 1 2 3; do
    "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
    local start end t
    start=$(date +%s.%N); "$@" >/dev/null 2>&1; end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc -l)
    if [ -z "$best" ] || (( $(echo "$t < $best" | bc -l) )); then best=$t; fi
  done
  echo "$best"
}

fresh_import() {
  rm -rf "$work/archive"
  $babel --root "$work/archive" init -q
  $babel --root "$work/archive" run create r1 --model m --benchmark bench -q
  $babel --root "$work/archive" import r1 --format canonical "$work/input.jsonl" -q
}
python_import() { rm -rf "$work/py"; python3 bench/reference.py import "$work/input.jsonl" "$work/py"; }

t_sha=$(seconds sha256sum "$work/input.jsonl")
t_import=$(seconds fresh_import)
t_py_import=$(seconds python_import)
t_validate=$(seconds $babel --root "$work/archive" validate)
t_py_validate=$(seconds python3 bench/reference.py validate "$work/py")
babel_compare() { rm -f "$work/report.jsonl"; $babel --root "$work/archive" compare r1 --items "$work/report.jsonl"; }
python_compare() { python3 bench/reference.py compare "$work/py" "$work/py-report.jsonl"; }
t_compare=$(seconds babel_compare)
t_py_compare=$(seconds python_compare)
html_compare() { rm -f "$work/report.html"; $babel --root "$work/archive" compare r1 --items "$work/report.html"; }
t_html=$(seconds html_compare)

mb=$(echo "$bytes / 1000000" | bc -l)
row() { printf '| %s | %.2f s | %.0f MB/s | %.2f | %.2f |\n' "$1" "$2" "$(echo "$mb / $2" | bc -l)" "$(echo "$2 / $t_sha" | bc -l)" "$(echo "$3 / $2" | bc -l)"; }
echo "Input: $records records, $bytes bytes; $(nproc) cores; $(date -u +%Y-%m-%d)"
echo
echo "| work | babel | babel throughput | babel / sha256sum (time) | python / babel (time) |"
echo "|---|---|---|---|---|"
row "import (init + run create + import)" "$t_import" "$t_py_import"
row "validate" "$t_validate" "$t_py_validate"
row "compare, JSONL item report" "$t_compare" "$t_py_compare"
printf '| sha256sum of the input | %.2f s | %.0f MB/s | 1.00 | |\n' "$t_sha" "$(echo "$mb / $t_sha" | bc -l)"
echo
printf 'python reference: import %.2f s, validate %.2f s, compare %.2f s\n' "$t_py_import" "$t_py_validate" "$t_py_compare"
printf 'compare with the HTML item report: %.2f s (%s items, %s bytes)\n' "$t_html" "$((records / 2))" "$(stat -c %s "$work/report.html")"

# Peak memory of an import of this file and of a file twice as long: it should grow only
# with the number of identities (a 16-byte digest each), not with the bytes read.
{ cat "$work/input.jsonl"; sed 's/"question_id": "q/"question_id": "x/' "$work/input.jsonl"; } > "$work/double.jsonl"
peak() {
  rm -rf "$work/archive"
  $babel --root "$work/archive" init -q
  $babel --root "$work/archive" run create r1 --model m --benchmark bench -q
  /usr/bin/time -f %M $babel --root "$work/archive" import r1 --format canonical "$1" -q 2>&1 >/dev/null | tail -1
}
echo
echo "peak RSS of import: $(peak "$work/input.jsonl") KiB for $records records, $(peak "$work/double.jsonl") KiB for twice as many"
