#!/usr/bin/env bash
# Builds one archive from the bundled examples and the producers' fixtures with the babel
# binary given, at a fixed clock, and prints the SHA-256 of every file babel wrote under
# runs/ and of the history log, one `sha256  path` line each, sorted.
#
#   scripts/golden-archive.sh BABEL WORKDIR
#
# tests/fixtures/golden/archive.sha256 is this script's output for the build named in its
# first line; tests/it/golden_archive.rs runs the script with today's build and requires the
# same output: a faster import path may change no stored byte and no history entry. Run it
# from the repository root.
set -euo pipefail
babel=$(realpath "$1")
work=$2
rm -rf "$work"
mkdir -p "$work"
root="$work/archive"
export BABEL_TIMESTAMP=2026-01-02T03:04:05Z
b() { "$babel" --root "$root" -q "$@"; }

fx=tests/fixtures
b init
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

cd "$root"
find runs history* -type f | LC_ALL=C sort | xargs sha256sum
