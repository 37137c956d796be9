#!/usr/bin/env bash
# Produces fresh lighteval or OpenCompass runs with the tools themselves, imports every
# task into babel and checks babel's accuracy against the tool's own aggregate (1e-12).
# Not part of CI: each tool's environment is several GB (torch with CUDA wheels).
#
#   bench/producer-runs.sh lighteval   VENV   # VENV: Python 3.12, lighteval==0.13.0 + NOTES.md pins
#   bench/producer-runs.sh opencompass VENV   # VENV: Python 3.10, opencompass==0.5.4
#
# The fixture folders (tests/fixtures/<tool>-<version>/) are copied to a scratch folder and
# the tool's run.sh regenerates the outputs there; the fixtures themselves are never touched.
set -euo pipefail
tool=${1:?lighteval or opencompass}
venv=${2:?the venv holding the tool}
root=$(cd "$(dirname "$0")/.." && pwd)
babel=${BABEL:-$root/target/release/babel}
[ -x "$babel" ] || (cd "$root" && cargo build --release --locked)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case "$tool" in
  lighteval) fixture=lighteval-0.13.0; outputs=out ;;
  opencompass) fixture=opencompass-0.5.4; outputs=outputs ;;
  *) echo "unknown tool $tool" >&2; exit 2 ;;
esac
# OpenCompass's make_data.py reads the shared questions from the lighteval fixture beside it.
cp -r "$root/tests/fixtures/lighteval-0.13.0" "$root/tests/fixtures/opencompass-0.5.4" "$work/"
cd "$work/$fixture"
if [ "$tool" = opencompass ] && [ ! -e configs/eval_babel_seed2.py ]; then
  # run.sh's second run: the same evaluation with the model's seed 2.
  sed 's/^SEED = 1$/SEED = 2/' configs/eval_babel.py > configs/eval_babel_seed2.py
fi
V="$venv/bin" ./run.sh > "$work/run.log" 2>&1 || { tail -30 "$work/run.log"; exit 1; }

cd "$work"
"$babel" --root archive init > /dev/null
"$root/bench/producer_check.py" "$tool" "$babel" "$work/archive" "$work/$fixture/$outputs"
