#!/usr/bin/env bash
# The reliability suite's long loops and bounded fuzzing (RELIABILITY.md states what each
# proves). The test suite runs the same tests with short loops; this script sets the
# counts high, builds in release, and prints every figure RELIABILITY.md quotes.
#
#   reliability/run.sh            the full run (about 30 minutes on 2 cores)
#   reliability/run.sh quick      short loops and 20 s of fuzzing per target
#
# Counts can be set from outside: KILLS, MUTATIONS, ROUNDS, FLIP_STRIDE, FUZZ_SECONDS.
# A failing loop prints BABEL_STRESS_SEED; rerun with it to replay the same choices.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "quick" ]]; then
  : "${KILLS:=60}" "${MUTATIONS:=300}" "${ROUNDS:=2}" "${FLIP_STRIDE:=50}" "${FUZZ_SECONDS:=20}"
else
  : "${KILLS:=500}" "${MUTATIONS:=2000}" "${ROUNDS:=10}" "${FLIP_STRIDE:=1}" "${FUZZ_SECONDS:=120}"
fi
export BABEL_CRASH_KILLS=$KILLS BABEL_MUTATIONS=$MUTATIONS BABEL_CONCURRENT_ROUNDS=$ROUNDS \
  BABEL_FLIP_STRIDE=$FLIP_STRIDE
# As root the tests that need root (a tmpfs, a memory cgroup) must run, not skip.
if [[ $(id -u) == 0 ]]; then export BABEL_REQUIRE_ROOT=1; fi

out=target/reliability
mkdir -p "$out"
echo "== reliability tests (release): kills=$KILLS mutations=$MUTATIONS rounds=$ROUNDS flip stride=$FLIP_STRIDE"
cargo test --release --locked --test it -- --nocapture --test-threads=1 \
  reliability:: full_disk:: crash_recovery:: 2>&1 | tee "$out/tests.log" \
  | grep -E "^(crash loop|concurrent writers|mutations|byte flips|  [0-9] |\[|test result|SKIPPED|.*panicked)"

echo "== fuzzing: $FUZZ_SECONDS s per target"
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
for target in adapter_canonical adapter_paired adapter_harness adapter_eee adapter_inspect adapter_helm adapter_units parquet_rows document_scanner records_file jsonl_line canonical_json stream_vs_tree; do
  corpus="$out/corpus/$target"
  mkdir -p "$corpus"
  case $target in
    adapter_canonical) cp tests/hostile/canonical-* examples/canonical/*.jsonl "$corpus/" ;;
    adapter_paired) cp tests/hostile/paired-* examples/paired/*.jsonl "$corpus/" ;;
    adapter_harness) cp tests/hostile/samples_* examples/harness/samples_* "$corpus/" ;;
    adapter_eee) find tests/fixtures/every-eval-ever-0.3.0 -name '*_samples.jsonl' -exec cp {} "$corpus/" \; ;;
    adapter_inspect) python3 fuzz/seeds.py inspect "$corpus" ;;
    adapter_helm) python3 fuzz/seeds.py helm "$corpus" ;;
    adapter_units) python3 fuzz/seeds.py units "$corpus" ;;
    parquet_rows) find tests/fixtures/lighteval-0.13.0 -name '*.parquet' -exec cp {} "$corpus/" \; ;;
    document_scanner) cp tests/fixtures/inspect-ai-0.3.285/logs/seed1/*.json "$corpus/"
                      cp tests/fixtures/crfm-helm-0.5.16/runs/*/per_instance_stats.json "$corpus/" ;;
    jsonl_line|canonical_json|stream_vs_tree) cp tests/hostile/canonical-* "$corpus/" ;;
    records_file) cargo run --release --quiet -- demo --dir "$out/demo" >/dev/null 2>&1 || true
                  find "$out/demo/archive" -name '*.parquet' -exec cp {} "$corpus/" \; ;;
  esac
  (cd fuzz && cargo +nightly fuzz run "$target" "../$corpus" -- \
      -max_total_time="$FUZZ_SECONDS" -max_len=65536 -print_final_stats=1) \
      >"$out/fuzz-$target.log" 2>&1 && status=ok || status="CRASH (see $out/fuzz-$target.log; copy the input into tests/fuzz-regressions/$target/)"
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$out/fuzz-$target.log" | grep -oE '[0-9]+$' || echo "?")
  echo "fuzz $target: $runs inputs in $FUZZ_SECONDS s: $status"
done
