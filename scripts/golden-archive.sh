#!/usr/bin/env bash
# Builds one archive from the bundled examples and the producers' fixtures with the babel
# binary given, at a fixed clock, and prints the SHA-256 of every file babel wrote under
# runs/, the artifact registries and the history log, one `sha256  path` line each,
# sorted.
#
#   scripts/golden-archive.sh BABEL WORKDIR [tree|later]
#
# `tree` (the default) imports with the formats the tree-based build had: the canonical,
# paired and harness examples, BENCHMARK_WORKFLOW.md's three strict runs with its three
# artifacts, the lm-evaluation-harness and HELM fixtures, every Inspect log and every
# Every Eval Ever file of the fixtures. tests/fixtures/golden/archive.sha256 is its output
# for the build named in its first line, the last with the tree-based import path.
# `later` imports the three lighteval outputs and the OpenCompass one, whose adapters came
# after the streaming import: tests/fixtures/golden/later.sha256 is its output for the
# first build that imported them. tests/it/golden_archive.rs runs the script with today's
# build and requires the same outputs: a faster import path may change no stored byte and
# no history entry. Run it from the repository root.
set -euo pipefail
usage() {
  echo "usage: scripts/golden-archive.sh BABEL WORKDIR [tree|later]" >&2
  exit 2
}
[ $# -eq 2 ] || [ $# -eq 3 ] || usage
part=${3:-tree}
case "$part" in
  tree | later) ;;
  *) usage ;;
esac
babel=$(realpath "$1")
work=$2
rm -rf "$work"
mkdir -p "$work"
root="$work/archive"
export BABEL_TIMESTAMP=2026-01-02T03:04:05Z
b() { "$babel" --root "$root" -q "$@"; }

fx=tests/fixtures
b init
tree() {
  b run create canonical --model demo-model --benchmark world-capitals
  b import canonical --format canonical examples/canonical/capitals.jsonl
  b run create paired --model demo-model
  b import paired --format paired examples/paired/capitals-paired.jsonl
  b run create harness --model dummy-p
  b import harness --format harness examples/harness/samples_babel_gen_2026-12-02T12-52-40.515719.jsonl \
    --attach examples/harness/results_2026-12-02T12-52-40.515719.json
  b run create lm-original --model dummy-p
  b import lm-original --format harness "$fx"/lm-eval-0.4.13/original/dummy-p/samples_*.jsonl
  b run create lm-rephrased --model dummy-p
  b import lm-rephrased --format harness --variant rephrased --non-finite null \
    "$fx"/lm-eval-0.4.13/rephrased/dummy-p/samples_*.jsonl
  b run create compare --model m --benchmark bench
  b import compare --format canonical "$fx"/compare/all-outcomes.jsonl
  b run create inspect --model mockllm/model
  b import inspect --format inspect "$fx"/inspect-ai-0.3.285/logs/seed1/*babel-mc_L3aC6TktMr8Qp7aQ5S3fqq.eval \
    "$fx"/inspect-ai-0.3.285/logs/seed1/*babel-gen_WWBmhbU5WGQYTgJcZw4VMA.json
  b run create helm --model simple/model1
  b import helm --format helm "$fx/crfm-helm-0.5.16/runs/babel_mc:model=simple_model1"
  b run create eee --model dummy-a
  b import eee --format eee \
    "$fx"/every-eval-ever-0.3.0/out/lm-eval-run-a/babel_mc_original/babel-local/dummy-a/*_samples.jsonl
  # The strict runs of BENCHMARK_WORKFLOW.md, its artifacts registered as it does.
  bench=examples/benchmark
  b artifact add item-bank capitals-bank $bench/item-bank.json
  b artifact add protocol capitals-0shot $bench/protocol.json
  b artifact add model-panel capitals-models $bench/model-panel.json
  strict=(--benchmark world-capitals --item-bank capitals-bank --protocol capitals-0shot)
  b run create demo-7b-step1000 --model demo-org/demo-7b "${strict[@]}" --meta checkpoint=step-1000
  b run create demo-7b-step2000 --model demo-org/demo-7b "${strict[@]}" --meta checkpoint=step-2000
  b run create demo-1b --model demo-org/demo-1b "${strict[@]}"
  for run in demo-7b-step1000 demo-7b-step2000 demo-1b; do
    b import $run --format canonical $bench/results/$run.jsonl
  done
  # Every Inspect log and every Every Eval Ever file of the fixtures, a run each.
  n=0
  for log in "$fx"/inspect-ai-0.3.285/logs/seed1/*; do
    n=$((n + 1))
    b run create inspect-$n --model mockllm/model
    b import inspect-$n --format inspect "$log"
  done
  n=0
  while IFS= read -r rows; do
    n=$((n + 1))
    b run create eee-$n --model dummy-a
    b import eee-$n --format eee "$rows"
  done < <(find "$fx"/every-eval-ever-0.3.0/out -name '*_samples.jsonl' | LC_ALL=C sort)
}

later() {
  lighteval="$fx"/lighteval-0.13.0/out
  b run create lighteval-custom --model babel-policy
  b import lighteval-custom --format lighteval "$lighteval"/custom-seed1
  b run create lighteval-dummy --model dummy
  b import lighteval-dummy --format lighteval "$lighteval"/dummy-seed42
  b run create lighteval-fewshot2 --model dummy
  b import lighteval-fewshot2 --format lighteval "$lighteval"/dummy-fewshot2
  b run create opencompass --model babel-fake-seed1
  b import opencompass --format opencompass "$fx"/opencompass-0.5.4/outputs/20261203_234822
}

"$part"
cd "$root"
hashed=(runs history*)
for registry in item-banks protocols model-panels calibrations releases; do
  if [ -d "$registry" ]; then
    hashed+=("$registry")
  fi
done
find "${hashed[@]}" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
