"""Writes N canonical-format records (about 1.2 KB each, multilingual, with scores) to a file.

Usage: python3 bench/generate.py OUT.jsonl N
Deterministic: the same N gives the same bytes.
"""
import json
import random
import sys

out, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
langs = ["en", "tr", "ar", "ja", "el", "ru"]
words = ["capital", "Türkiye", "başkent", "مدينة", "東京", "Αθήνα", "Москва", "question", "answer", "model"]
with open(out, "w", encoding="utf-8") as f:
    for i in range(n):
        q = " ".join(rng.choice(words) for _ in range(40))
        choices = [" ".join(rng.choice(words) for _ in range(6)) for _ in range(4)]
        record = {
            "question_id": f"q{i // 2:08d}",
            "variant_id": "original" if i % 2 == 0 else "rephrased",
            "language": langs[i % len(langs)],
            "input": {"question": q, "choices": choices, "prompt": "Question: " + q + "\nAnswer:"},
            "target": {"index": i % 4},
            "prediction": {"index": (i * 7) % 4},
            "correct": (i * 7) % 4 == i % 4,
            "scores": {"logprobs": [round(-rng.random() * 5, 12) for _ in range(4)]},
            "metrics": {"acc": float((i * 7) % 4 == i % 4)},
        }
        f.write(json.dumps(record, ensure_ascii=False) + "\n")
