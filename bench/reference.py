"""A straightforward Python implementation of the work babel does, for comparison.

  python3 bench/reference.py import IN.jsonl OUTDIR       canonical input: copy the raw bytes
      (hashing them), parse each line strictly (duplicate keys and NaN/Infinity refused),
      check the canonical contract's required fields, write normalized records (hashing
      them), check identity uniqueness.
  python3 bench/reference.py import-harness IN.jsonl OUTDIR
      the same for lm-evaluation-harness samples: the question ID from doc.id, correctness
      from a binary acc, the doc and the requests kept as the input.
  python3 bench/reference.py validate OUTDIR              re-hash both files, re-parse every
      record, check source lines and identities.
  python3 bench/reference.py compare OUTDIR REPORT        join original and rephrased records
      by item identity, count outcomes, and write one JSON line per item with both full
      records (what `babel compare --items x.jsonl` writes).
  python3 bench/reference.py compare-runs DIR_A DIR_B     join two imported runs by item
      identity and count the outcomes (what `babel compare A --other-run B` prints).
"""
import hashlib
import json
import os
import sys


def no_duplicates(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def no_constants(token):
    raise ValueError(f"non-finite number {token}")


def parse(line):
    value = json.loads(line, object_pairs_hook=no_duplicates, parse_constant=no_constants)
    if not isinstance(value, dict):
        raise ValueError("not an object")
    return value


def canonical_record(v, number):
    if not isinstance(v.get("correct"), (bool, type(None))):
        raise ValueError(f"line {number}: correct")
    return {
        "schema_version": 1, "run_id": "r1", "benchmark": "bench", "script": None,
        "language": v.get("language"), "question_id": v["question_id"],
        "variant_id": v["variant_id"], "filter": v.get("filter", "none"),
        "repeat_id": v.get("repeat_id", 0), "identity_scope": "stable", "model": "m",
        "rephrasing_model": None, "input": v.get("input"), "target": v.get("target"),
        "prediction": v.get("prediction"), "correct": v.get("correct"),
        "scores": v.get("scores", {}), "metrics": v.get("metrics", {}),
        "response": v.get("response"), "source": {"path": "raw.jsonl", "line": number},
        "warnings": [], "extra": {},
    }


def harness_record(v, number):
    acc = v.get("acc")
    correct = None if acc is None else bool(acc)
    return {
        "schema_version": 1, "run_id": "r1", "benchmark": "mmlu", "script": None,
        "language": None, "question_id": v["doc"]["id"], "variant_id": "original",
        "filter": v.get("filter", "none"), "repeat_id": 0, "identity_scope": "stable",
        "model": "m", "rephrasing_model": None,
        "input": {"doc": v["doc"], "arguments": v.get("arguments")},
        "target": v.get("target"), "prediction": None, "correct": correct,
        "scores": {}, "metrics": {m: v.get(m) for m in v.get("metrics", [])},
        "response": {"resps": v.get("resps"), "filtered_resps": v.get("filtered_resps")},
        "source": {"path": "raw.jsonl", "line": number}, "warnings": [], "extra": {},
    }


def do_import(src, outdir, normalize):
    os.makedirs(outdir, exist_ok=True)
    raw_hash, rec_hash = hashlib.sha256(), hashlib.sha256()
    seen = set()
    with open(src, "rb") as f, open(os.path.join(outdir, "raw.jsonl"), "wb") as raw, \
            open(os.path.join(outdir, "records.jsonl"), "wb") as rec:
        for number, line in enumerate(f, 1):
            raw.write(line)
            raw_hash.update(line)
            if not line.strip():
                continue
            record = normalize(parse(line.decode("utf-8")), number)
            key = (record["benchmark"], record["language"], record["question_id"],
                   record["variant_id"], record["filter"], record["repeat_id"])
            if key in seen:
                raise ValueError(f"line {number}: duplicate identity")
            seen.add(key)
            out = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            rec.write(out)
            rec_hash.update(out)
        raw.flush(); os.fsync(raw.fileno()); rec.flush(); os.fsync(rec.fileno())
    print(raw_hash.hexdigest(), rec_hash.hexdigest())


def do_validate(outdir):
    raw_hash = hashlib.sha256()
    nonblank = []
    with open(os.path.join(outdir, "raw.jsonl"), "rb") as f:
        for line in f:
            raw_hash.update(line)
            nonblank.append(bool(line.strip()))
    rec_hash = hashlib.sha256()
    seen = set()
    with open(os.path.join(outdir, "records.jsonl"), "rb") as f:
        for line in f:
            rec_hash.update(line)
            r = parse(line.decode("utf-8"))
            if not nonblank[r["source"]["line"] - 1]:
                raise ValueError("source line")
            key = (r["benchmark"], r["language"], r["question_id"], r["variant_id"], r["filter"], r["repeat_id"])
            if key in seen:
                raise ValueError("duplicate")
            seen.add(key)
    print(raw_hash.hexdigest(), rec_hash.hexdigest())


def outcome(b, v):
    if b is None:
        return "only_variant"
    if v is None:
        return "only_baseline"
    if b["correct"] is None or v["correct"] is None:
        return "unscored"
    return {(True, True): "both_correct", (False, False): "both_wrong",
            (True, False): "correct_to_wrong", (False, True): "wrong_to_correct"}[(b["correct"], v["correct"])]


def item_key(r):
    return (r["benchmark"], r["language"] or "", r["script"] or "", r["question_id"], r["filter"], r["repeat_id"])


def do_compare(outdir, report):
    sides = {"original": {}, "rephrased": {}}
    with open(os.path.join(outdir, "records.jsonl"), "rb") as f:
        for line in f:
            r = parse(line.decode("utf-8"))
            if r["variant_id"] in sides and r["identity_scope"] == "stable":
                sides[r["variant_id"]][item_key(r)] = r
    counts = {}
    with open(report, "w", encoding="utf-8") as out:
        for key in sorted(set(sides["original"]) | set(sides["rephrased"])):
            b, v = sides["original"].get(key), sides["rephrased"].get(key)
            o = outcome(b, v)
            counts[o] = counts.get(o, 0) + 1
            out.write(json.dumps({"outcome": o, "identity": list(key), "baseline": b, "variant": v},
                                 ensure_ascii=False, separators=(",", ":")) + "\n")
    print(counts)


def do_compare_runs(dir_a, dir_b):
    def side(directory):
        rows = {}
        with open(os.path.join(directory, "records.jsonl"), "rb") as f:
            for line in f:
                r = parse(line.decode("utf-8"))
                if r["identity_scope"] == "stable":
                    rows[item_key(r)] = r["correct"]
        return rows
    a, b = side(dir_a), side(dir_b)
    counts = {}
    for key in set(a) | set(b):
        o = outcome({"correct": a[key]} if key in a else None, {"correct": b[key]} if key in b else None)
        counts[o] = counts.get(o, 0) + 1
    print(counts)


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "import":
        do_import(sys.argv[2], sys.argv[3], canonical_record)
    elif command == "import-harness":
        do_import(sys.argv[2], sys.argv[3], harness_record)
    elif command == "compare":
        do_compare(sys.argv[2], sys.argv[3])
    elif command == "compare-runs":
        do_compare_runs(sys.argv[2], sys.argv[3])
    else:
        do_validate(sys.argv[2])
