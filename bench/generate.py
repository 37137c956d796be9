"""Deterministic benchmark inputs: the same arguments give the same bytes.

  python3 bench/generate.py canonical OUT.jsonl N [--variant V] [--seed S]
      N small canonical-format records (about 400 bytes each): question_id, variant_id,
      language, a short input, target, prediction, correct (a tenth unknown), one score.
      Two files with the same N and different --variant/--seed are two runs of the same
      questions, as `babel compare --other-run` joins them.
  python3 bench/generate.py harness OUT.jsonl (--lines N | --bytes B) [--seed S]
      lm-evaluation-harness 0.4 `samples_*.jsonl` lines of multiple-choice tasks: a
      few-shot context per subject, repeated in every choice's request as the harness
      writes it (1 to 6 KB of contexts per line), 4 to 10 choices, non-ASCII text (Turkish,
      Greek, Cyrillic, Arabic, Japanese), two filters per document (filter-major, as the
      harness writes them), stringified log-likelihoods, the three hashes and acc/acc_norm.
  python3 bench/generate.py mixed OUT.jsonl N
      The N records of the canonical mode with original and rephrased variants
      interleaved (one run holding both sides of a variant comparison).
  python3 bench/generate.py inspect OUT.json N
      An Inspect AI `.json` log of N samples (about 12 KB each, pretty-printed as Inspect
      writes them): the mc log of tests/fixtures/inspect-ai-0.3.285 with its 20 samples
      repeated, each under its own id (q000000, ...), its header unchanged.
  python3 bench/generate.py inspect-eval OUT.eval N
      The same N samples as an Inspect `.eval` log, Inspect's default format: a ZIP
      archive of one Zstandard member (method 93, level 3) per sample, compact JSON, and
      the fixture's header members; at most 65,535 samples (no ZIP64 records). Needs the
      `zstandard` package (.ci/setup-data-tools).
  python3 bench/generate.py paired OUT.jsonl N [--seed S]
      N paired lines as the bundled example writes them (about 750 bytes each): a question
      ID, language and rephrasing model, a shared correct_index, and `original` and
      `rephrased` objects with a question, four choices (the rephrase's reordered in a
      fifth of the lines, with its own correct_index), pred_acc, pred_acc_norm and
      logprobs and logprobs_norm of four numbers each.
  python3 bench/generate.py eee OUT.jsonl N
      N Every Eval Ever 0.3 instance-level rows: the rows of the fixtures'
      tests/fixtures/every-eval-ever-0.3.0 `_samples.jsonl` files repeated in file order,
      each under its own sample_id (s0000000, ...), their model `dummy-a`.
  python3 bench/generate.py panel OUT.jsonl N --side K --sides S
      Side K of a panel of S sides over the same N questions (ten languages): a model of
      ability rising with K answers question q correctly with a logistic chance of its
      ability less the question's difficulty (the same difficulties on every side); one
      record in fifty has unknown correctness, a few questions have a wrong answer key
      (wrong on every side). Short predictions and responses, as a multiple-choice run.
"""
import argparse
import hashlib
import json
import random

WORDS = ["capital", "Türkiye", "başkent", "şehir", "Αθήνα", "πόλη", "Москва", "город",
         "مدينة", "عاصمة", "東京", "首都", "river", "mountain", "answer", "question",
         "ölçüm", "çözüm", "model", "number", "value", "which", "of", "the", "following"]
LANGS = ["en", "tr", "el", "ru", "ar", "ja"]


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def canonical(path, n, variant, seed, mixed=False):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            q = i // 2 if mixed else i
            v = ("original" if i % 2 == 0 else "rephrased") if mixed else variant
            target = rng.randrange(4)
            predicted = target if rng.random() < 0.7 else rng.randrange(4)
            correct = None if rng.random() < 0.1 else predicted == target
            record = {
                "question_id": f"q{q:08d}",
                "variant_id": v,
                "language": LANGS[q % len(LANGS)],
                "input": {"question": sentence(rng, 12), "choices": [sentence(rng, 2) for _ in range(4)]},
                "target": {"index": target},
                "prediction": {"index": predicted},
                "correct": correct,
                "scores": {"logprob": round(-rng.random() * 5, 6)},
            }
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def harness(path, lines, size, seed):
    rng = random.Random(seed)
    subjects = []
    for s in range(57):
        shots = []
        for _ in range(rng.randrange(1, 4)):
            shots.append(f"Soru: {sentence(rng, rng.randrange(8, 30))}\nCevap: {sentence(rng, 3)}\n\n")
        subjects.append(("subject_%02d" % s, "".join(shots), rng.randrange(4, 11)))
    filters = ["none", "strict-match"]
    written = 0
    count = 0
    docs_per_block = 500
    doc = 0
    with open(path, "w", encoding="utf-8") as f:
        while True:
            block = []
            for _ in range(docs_per_block):
                name, prefix, n_choices = subjects[doc % len(subjects)]
                question = sentence(rng, rng.randrange(8, 30))
                choices = [sentence(rng, rng.randrange(1, 5)) for _ in range(n_choices)]
                answer = rng.randrange(n_choices)
                lls = [round(-rng.random() * 8, 12) for _ in range(n_choices)]
                block.append((doc, name, prefix, question, choices, answer, lls))
                doc += 1
            for filt in filters:
                for (d, name, prefix, question, choices, answer, lls) in block:
                    context = f"{prefix}Soru: {question}\nCevap:"
                    predicted = max(range(len(lls)), key=lls.__getitem__)
                    if filt != "none" and d % 3 == 0:
                        predicted = (predicted + 1) % len(choices)
                    doc_obj = {"id": f"{name}-{d:07d}", "question": question, "choices": choices,
                               "answer": answer, "subject": name}
                    line = {
                        "doc_id": d,
                        "doc": doc_obj,
                        "target": str(answer),
                        "arguments": {f"gen_args_{k}": {"arg_0": context, "arg_1": " " + c}
                                      for k, c in enumerate(choices)},
                        "resps": [[[repr(ll), "False"]] for ll in lls],
                        "filtered_resps": [[repr(ll), "False"] for ll in lls],
                        "filter": filt,
                        "metrics": ["acc", "acc_norm"],
                        "doc_hash": hashlib.sha256(json.dumps(doc_obj).encode()).hexdigest(),
                        "prompt_hash": hashlib.sha256(context.encode()).hexdigest(),
                        "target_hash": hashlib.sha256(str(answer).encode()).hexdigest(),
                        "acc": 1.0 if predicted == answer else 0.0,
                        "acc_norm": 1.0 if predicted == answer else 0.0,
                    }
                    text = json.dumps(line, ensure_ascii=False) + "\n"
                    f.write(text)
                    written += len(text.encode("utf-8"))
                    count += 1
                    if (lines is not None and count >= lines) or (size is not None and written >= size):
                        return count, written


PANEL_LANGS = ["en", "tr", "el", "ru", "ar", "ja", "de", "fr", "hi", "sw"]


def panel(path, n, side, sides):
    import math
    difficulty = random.Random(1234)
    difficulties = [difficulty.gauss(0, 1.2) for _ in range(n)]
    ability = -1.5 + 3.0 * side / max(sides - 1, 1)
    rng = random.Random(10_000 + side)
    with open(path, "w", encoding="utf-8") as f:
        for q in range(n):
            broken_key = q % 997 == 0
            chance = 0.0 if broken_key else 1 / (1 + math.exp(difficulties[q] - ability))
            right = rng.random() < chance
            letter = "ABCD"[q % 4] if right else "ABCD"[(q + 1 + rng.randrange(3)) % 4]
            record = {
                "question_id": f"q{q:07d}",
                "variant_id": "original",
                "language": PANEL_LANGS[q % len(PANEL_LANGS)],
                "input": {"question": f"Question {q}: {sentence(rng, 6)}?"},
                "target": "ABCD"[q % 4],
                "prediction": letter,
                "response": f"The answer is {letter}.",
                "correct": None if rng.random() < 0.02 else right,
            }
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def paired(path, n, seed):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            choices = [sentence(rng, rng.randint(1, 3)) for _ in range(4)]
            key = rng.randrange(4)
            def version(choices):
                return {"question": sentence(rng, rng.randint(8, 16)) + "?", "choices": choices,
                        "pred_acc": rng.randrange(4), "pred_acc_norm": rng.randrange(4),
                        "logprobs": [round(-rng.random() * 6, 4) for _ in choices],
                        "logprobs_norm": [round(-rng.random() * 2, 4) for _ in choices]}
            line = {"question_id": f"p{i:07d}", "language": rng.choice(LANGS),
                    "rephrasing_model": "bench-rephraser", "correct_index": key,
                    "original": version(choices)}
            if rng.random() < 0.2:
                order = rng.sample(range(4), 4)
                line["rephrased"] = version([choices[o] for o in order])
                line["rephrased"]["correct_index"] = order.index(key)
            else:
                line["rephrased"] = version(choices)
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


def eee(path, n):
    import glob
    import os
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                           "every-eval-ever-0.3.0", "out")
    rows = []
    for samples in sorted(glob.glob(os.path.join(fixture, "**", "*_samples.jsonl"), recursive=True)):
        with open(samples, encoding="utf-8") as f:
            rows.extend(json.loads(line) for line in f if line.strip())
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            row = dict(rows[i % len(rows)])
            row["sample_id"] = f"s{i:07d}"
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def inspect(path, n):
    import copy
    import glob
    import os
    logs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                        "inspect-ai-0.3.285", "logs", "seed1", "*_babel-mc_*.json")
    with open(sorted(glob.glob(logs))[0], encoding="utf-8") as f:
        log = json.load(f)
    samples = log["samples"]
    log["samples"] = []
    for i in range(n):
        sample = copy.deepcopy(samples[i % len(samples)])
        sample["id"] = f"q{i:06d}"
        log["samples"].append(sample)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(log, f, indent=2, ensure_ascii=False)


def inspect_eval(path, n):
    import glob
    import os
    import struct
    import zipfile
    import zlib
    import zstandard
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                           "inspect-ai-0.3.285", "logs", "seed1")
    with open(sorted(glob.glob(os.path.join(fixture, "*_babel-mc_*.json")))[0], encoding="utf-8") as f:
        samples = json.load(f)["samples"]
    log = sorted(glob.glob(os.path.join(fixture, "*_babel-mc_*.eval")))[0]
    with open(log, "rb") as f:
        raw = f.read()
    # zipfile lists the members but cannot inflate method 93: each is read from its local
    # header and inflated here.
    headers = {}
    for info in zipfile.ZipFile(log).infolist():
        if info.filename.startswith("samples/"):
            continue
        at = info.header_offset
        name_len, extra_len = struct.unpack("<HH", raw[at + 26:at + 30])
        start = at + 30 + name_len + extra_len
        headers[info.filename] = zstandard.ZstdDecompressor().decompressobj().decompress(
            raw[start:start + info.compress_size])
    compressor = zstandard.ZstdCompressor(level=3)
    members = []
    for i in range(n):
        sample = dict(samples[i % len(samples)])
        sample["id"] = f"q{i:06d}"
        members.append((f"samples/q{i:06d}_epoch_1.json", json.dumps(sample, ensure_ascii=False, separators=(",", ":")).encode()))
    members.extend(headers.items())
    central = []
    with open(path, "wb") as out:
        for name, data in members:
            packed, crc, offset, name = compressor.compress(data), zlib.crc32(data), out.tell(), name.encode()
            sizes = (93, 0, 0, crc, len(packed), len(data), len(name))
            out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 63, 0, *sizes, 0) + name + packed)
            central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 63, 63, 0, *sizes, 0, 0, 0, 0, 0, offset) + name)
        start = out.tell()
        for entry in central:
            out.write(entry)
        out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central),
                              out.tell() - start, start, 0))


def lighteval(path, n):
    """A lighteval output folder (the fixture's dummy-seed42 run) whose multiple-choice
    details hold `n` rows: the fixture's rows repeated with new ids and a longer query."""
    import copy
    import glob
    import os
    import shutil
    import pyarrow as pa
    import pyarrow.parquet as pq
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                           "lighteval-0.13.0", "out", "dummy-seed42")
    shutil.copytree(fixture, path)
    writable(path)
    rewritten = 0
    for details in glob.glob(os.path.join(path, "details", "*", "*", "*.parquet")):
        if "babel_mc" not in os.path.basename(details):
            os.remove(details)
            continue
        rewritten += 1
        table = pq.read_table(details)
        rows = table.to_pylist()
        out = []
        for i in range(n):
            row = copy.deepcopy(rows[i % len(rows)])
            row["doc"]["id"] = str(i)
            row["doc"]["specific"]["id"] = f"s{i}"
            row["doc"]["query"] += " and a longer prompt" * 20
            out.append(row)
        pq.write_table(pa.Table.from_pylist(out, schema=table.schema), details, row_group_size=10_000)
    assert rewritten == 1, f"{rewritten} multiple-choice details files in {fixture}"


def writable(path):
    """Makes a copied fixture folder's files and folders writable (the fixtures are read-only)."""
    import os
    import stat
    for folder, _, names in os.walk(path):
        os.chmod(folder, os.stat(folder).st_mode | stat.S_IWUSR)
        for name in names:
            file = os.path.join(folder, name)
            os.chmod(file, os.stat(file).st_mode | stat.S_IWUSR)


def helm(path, n):
    """A HELM run folder (the fixture's babel_mc run) of `n` request states: the fixture's
    request states and per-instance stats repeated under new instance ids."""
    import os
    import shutil
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                           "crfm-helm-0.5.16", "runs", "babel_mc:model=simple_model1")
    shutil.copytree(fixture, path)
    writable(path)
    def load(name):
        with open(os.path.join(path, name), encoding="utf-8") as f:
            return json.load(f)
    def save(name, value):
        with open(os.path.join(path, name), "w", encoding="utf-8") as f:
            json.dump(value, f, indent=2)
    stats, state = load("per_instance_stats.json"), load("scenario_state.json")
    states = state["request_states"]
    copies = -(-n // len(states))
    save("per_instance_stats.json", [dict(e, instance_id=f"{e['instance_id']}-{k}")
                                     for k in range(copies) for e in stats])
    repeated = []
    for k in range(copies):
        for request in states:
            request = json.loads(json.dumps(request))
            request["instance"]["id"] = f"{request['instance']['id']}-{k}"
            repeated.append(request)
    state["request_states"] = repeated[:n]
    save("scenario_state.json", state)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["canonical", "harness", "mixed", "panel", "inspect", "inspect-eval",
                                         "lighteval", "helm", "paired", "eee"])
    parser.add_argument("out")
    parser.add_argument("n", nargs="?", type=int)
    parser.add_argument("--variant", default="original")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--lines", type=int)
    parser.add_argument("--bytes", type=int)
    parser.add_argument("--side", type=int, default=0)
    parser.add_argument("--sides", type=int, default=2)
    args = parser.parse_args()
    if args.mode == "inspect":
        inspect(args.out, args.n)
    elif args.mode == "lighteval":
        lighteval(args.out, args.n)
    elif args.mode == "helm":
        helm(args.out, args.n)
    elif args.mode == "paired":
        paired(args.out, args.n, args.seed)
    elif args.mode == "eee":
        eee(args.out, args.n)
    elif args.mode == "inspect-eval":
        inspect_eval(args.out, args.n)
    elif args.mode == "panel":
        panel(args.out, args.n, args.side, args.sides)
    elif args.mode == "canonical":
        canonical(args.out, args.n, args.variant, args.seed)
    elif args.mode == "mixed":
        canonical(args.out, args.n, None, args.seed, mixed=True)
    else:
        count, written = harness(args.out, args.lines, args.bytes, args.seed)
        print(f"{count} lines, {written} bytes")


if __name__ == "__main__":
    main()
