"""The comparison in pandas, as a notebook would do it on the canonical inputs: read both
JSON Lines files, merge on the item identity, count the outcomes.

  python3 bench/pandas_join.py a.jsonl b.jsonl
"""
import sys

import pandas

keys = ["question_id", "language"]
a = pandas.read_json(sys.argv[1], lines=True)[keys + ["correct"]]
b = pandas.read_json(sys.argv[2], lines=True)[keys + ["correct"]]
joined = a.merge(b, on=keys, how="outer", suffixes=("_a", "_b"), indicator=True)
both = joined[joined["_merge"] == "both"]
known = both.dropna(subset=["correct_a", "correct_b"])
ca, cb = known["correct_a"].astype(bool), known["correct_b"].astype(bool)
print({
    "both_correct": int((ca & cb).sum()), "both_wrong": int((~ca & ~cb).sum()),
    "correct_to_wrong": int((ca & ~cb).sum()), "wrong_to_correct": int((~ca & cb).sum()),
    "unscored": int(len(both) - len(known)),
    "only_baseline": int((joined["_merge"] == "left_only").sum()),
    "only_variant": int((joined["_merge"] == "right_only").sum()),
})
