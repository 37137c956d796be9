#!/usr/bin/env python3
"""Imports every run a producer wrote into babel and compares babel's accuracy per task
with the producer's own aggregate (bench/producer-runs.sh). Exits 1 on any difference.

    producer_check.py lighteval|opencompass BABEL ARCHIVE OUTPUTS
"""
import json
import pathlib
import subprocess
import sys

TOLERANCE = 1e-12


def babel(binary, archive, *args):
    out = subprocess.run([binary, "--root", archive, *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"babel {' '.join(args)} failed:\n{out.stderr}")
    return out.stdout


def records(binary, archive, run):
    return [json.loads(line) for line in babel(binary, archive, "records", run).splitlines()]


def share(values):
    values = list(values)
    return sum(1 for v in values if v) / len(values)


def lighteval(binary, archive, outputs):
    rows = []
    for folder in sorted(p for p in outputs.iterdir() if p.is_dir()):
        results_file = next(folder.glob("results/*/results_*.json"))
        results = json.loads(results_file.read_text())
        model = results["config_general"]["model_name"]
        run = folder.name
        babel(binary, archive, "run", "create", run, "--model", model)
        babel(binary, archive, "import", run, "--format", "lighteval", str(folder))
        by_task = {}
        for record in records(binary, archive, run):
            by_task.setdefault(record["extra"]["task"], []).append(record["correct"])
        for task, correct in sorted(by_task.items()):
            metric = "acc" if "acc" in results["results"][task] else "em"
            rows.append((run, task, metric, share(correct), results["results"][task][metric]))
    return rows


def opencompass(binary, archive, outputs):
    rows = []
    for stamp in sorted(p for p in outputs.iterdir() if p.is_dir()):
        for model_dir in sorted((stamp / "predictions").iterdir()):
            run = f"{stamp.name}-{model_dir.name}"
            babel(binary, archive, "run", "create", run, "--model", model_dir.name)
            babel(binary, archive, "import", run, "--format", "opencompass", str(stamp))
            by_dataset = {}
            for record in records(binary, archive, run):
                by_dataset.setdefault(record["extra"]["dataset"], []).append(record)
            for abbr, items in sorted(by_dataset.items()):
                results = json.loads((stamp / "results" / model_dir.name / f"{abbr}.json").read_text())
                if any(r["correct"] is None for r in items):
                    assert all(r["correct"] is None for r in items), abbr
                    rows.append((run, abbr, "unknown (no per-item correct)", None, None))
                    continue
                if "perf_circular" not in results:
                    rows.append((run, abbr, "accuracy", share(r["correct"] for r in items), results["accuracy"] / 100))
                    continue
                per_question = {}
                for r in items:
                    per_question.setdefault(r["question_id"], []).append(r["correct"])
                origin = [r["correct"] for r in items if r["variant_id"] == "circular-0"]
                rows.append((run, abbr, "acc_origin", share(origin), results["acc_origin"] / 100))
                rows.append((run, abbr, "acc_circular", share(r["correct"] for r in items), results["acc_circular"] / 100))
                rows.append((run, abbr, "perf_circular", share(all(v) for v in per_question.values()), results["perf_circular"] / 100))
                for k in (1, 2, 3):
                    at_least = share(sum(v) >= k for v in per_question.values())
                    rows.append((run, abbr, f"more_{k}_circular", at_least, results[f"more_{k}_circular"] / 100))
    return rows


def main():
    tool, binary, archive, outputs = sys.argv[1], sys.argv[2], sys.argv[3], pathlib.Path(sys.argv[4])
    rows = {"lighteval": lighteval, "opencompass": opencompass}[tool](binary, archive, outputs)
    failed = 0
    print(f"{'run':<32} {'task':<22} {'metric':<30} {'babel':>10} {'tool':>10}")
    for run, task, metric, ours, theirs in rows:
        verdict = ""
        if ours is not None and abs(ours - theirs) > TOLERANCE:
            verdict = "  DIFFERS"
            failed += 1
        shown = lambda v: "-" if v is None else f"{v:.6f}"
        print(f"{run:<32} {task:<22} {metric:<30} {shown(ours):>10} {shown(theirs):>10}{verdict}")
    babel(binary, archive, "validate")
    print(f"{len(rows)} aggregates checked, {failed} differ; validate ok")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
