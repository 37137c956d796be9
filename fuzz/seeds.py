"""Writes seed inputs for the adapter_inspect, adapter_helm and adapter_units fuzz targets
from the fixtures, in the line layout those targets read (fuzz/fuzz_targets/common.rs,
run_log and run_items): the header on the first line, then one item (or stats element)
per line; an adapter_units seed opens with the byte that picks the format ("1":
OpenCompass; lighteval's items are Parquet rows, which base Python cannot read).

    python3 fuzz/seeds.py inspect CORPUS_DIR
    python3 fuzz/seeds.py helm CORPUS_DIR
    python3 fuzz/seeds.py units CORPUS_DIR
"""

import glob
import json
import os
import sys

# Small seeds keep the rate of inputs high (each one writes and reads a records file).
MAX_BYTES = 16_000

# What a sample holds that the adapter never reads: the transcript.
TRANSCRIPT = ("events", "messages", "attachments", "model_usage", "store")

# Of HELM's many stats per instance, the ones that set correctness or differ in shape.
KEPT_STATS = ("exact_match", "quasi_exact_match", "num_references")


def write(corpus, name, lines, prefix=""):
    data, kept = prefix, []
    for line in lines:
        text = json.dumps(line, ensure_ascii=False)
        if len(data) + len(text) + 1 > MAX_BYTES and kept:
            break
        kept.append(text)
        data += text + "\n"
    with open(os.path.join(corpus, name), "w", encoding="utf-8") as out:
        out.write(data)


def inspect(corpus):
    for path in sorted(glob.glob("tests/fixtures/inspect-ai-*/logs/*/*.json")):
        with open(path, encoding="utf-8") as f:
            log = json.load(f)
        header = {k: log[k] for k in ("version", "status", "eval", "results") if k in log}
        samples = [
            {k: v for k, v in sample.items() if k not in TRANSCRIPT}
            for sample in log.get("samples", [])
        ]
        write(corpus, os.path.basename(path), [header] + samples)


def helm(corpus):
    for run in sorted(glob.glob("tests/fixtures/crfm-helm-*/runs/*/")):
        def read(name):
            with open(os.path.join(run, name), encoding="utf-8") as f:
                return json.load(f)

        # Of scenario.json the adapter reads only the name.
        header = {"run_spec.json": read("run_spec.json"), "scenario.json": {"name": read("scenario.json")["name"]}}
        stats = [
            dict(entry, stats=[s for s in entry["stats"] if s["name"]["name"] in KEPT_STATS])
            for entry in read("per_instance_stats.json")[:4]
        ]
        states = read("scenario_state.json")["request_states"][:4]
        write(corpus, os.path.basename(run.rstrip("/")).replace(":", "_"), [header] + stats + states)


def units(corpus):
    for path in sorted(glob.glob("tests/fixtures/opencompass-*/outputs/*/predictions/*/*.json")):
        results = path.replace("/predictions/", "/results/")
        with open(path, encoding="utf-8") as f:
            predictions = json.load(f)
        with open(results, encoding="utf-8") as f:
            header = json.load(f)
        model = os.path.basename(os.path.dirname(path))
        write(corpus, f"{model}-{os.path.basename(path)}", [header] + list(predictions.values()), "1")


if __name__ == "__main__":
    target, corpus = sys.argv[1], sys.argv[2]
    os.makedirs(corpus, exist_ok=True)
    {"inspect": inspect, "helm": helm, "units": units}[target](corpus)
