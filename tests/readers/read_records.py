"""Reads babel's Parquet records with another tool and prints them as babel prints them.

  python3 tests/readers/read_records.py duckdb ROOT     DuckDB: read_parquet('ROOT/runs/*/records/*.parquet')
  python3 tests/readers/read_records.py pandas ROOT     pandas (pyarrow engine), file by file
  python3 tests/readers/read_records.py datasets ROOT   datasets.load_dataset(ROOT), offline: the
                                                        archive's README.md declares the records

Each row becomes one JSON line in the shape of `babel records`: the JSON columns parsed,
source_path and source_line folded into `source`. tests/it/records_readers.rs compares them
with babel's own output.
"""
import glob
import json
import os
import sys

JSON_COLUMNS = ["input", "target", "prediction", "scores", "metrics", "response", "warnings", "extra"]
ORDER = ["schema_version", "run_id", "benchmark", "script", "language", "question_id", "variant_id",
         "filter", "repeat_id", "identity_scope", "model", "rephrasing_model", "input", "target",
         "prediction", "correct", "scores", "metrics", "response", "source", "warnings", "extra"]


def shaped(row):
    row = dict(row)
    for name in JSON_COLUMNS:
        row[name] = json.loads(row[name])
    row["source"] = {"path": row.pop("source_path"), "line": int(row.pop("source_line"))}
    for name in ["schema_version", "repeat_id"]:
        row[name] = int(row[name])
    if row["correct"] is not None:
        row["correct"] = bool(row["correct"])
    return {name: row[name] for name in ORDER}


def rows(tool, root):
    pattern = os.path.join(root, "runs", "*", "records", "*.parquet")
    if tool == "duckdb":
        import duckdb
        relation = duckdb.sql(f"SELECT * FROM read_parquet('{pattern}')")
        names = relation.columns
        for values in relation.fetchall():
            yield dict(zip(names, values))
    elif tool == "pandas":
        import pandas
        for path in sorted(glob.glob(pattern)):
            frame = pandas.read_parquet(path, engine="pyarrow")
            for row in frame.to_dict(orient="records"):
                yield {key: (None if value is None or value != value else value) if not isinstance(value, str) else value
                       for key, value in row.items()}
    elif tool == "datasets":
        os.environ["HF_DATASETS_OFFLINE"] = "1"
        os.environ["HF_HUB_OFFLINE"] = "1"
        import datasets
        dataset = datasets.load_dataset(root, cache_dir=os.path.join(root, "..", "hf-cache"))
        for row in dataset["train"]:
            yield row
    else:
        raise SystemExit(f"unknown tool {tool}")


if __name__ == "__main__":
    tool, root = sys.argv[1], sys.argv[2]
    for row in rows(tool, root):
        print(json.dumps(shaped(row), ensure_ascii=False))
