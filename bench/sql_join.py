"""The comparison a user could write in SQL instead of `babel compare A --other-run B`:
the same full outer join on the item identity, and the outcome counts, with DuckDB.

  python3 bench/sql_join.py parquet 'runs/a/records/*.parquet' 'runs/b/records/*.parquet'
  python3 bench/sql_join.py jsonl a.jsonl b.jsonl      (the canonical inputs themselves)
"""
import sys

import duckdb

kind, a, b = sys.argv[1:4]
if kind == "parquet":
    side = "SELECT benchmark, language, script, question_id, filter, repeat_id, correct FROM read_parquet('{}') WHERE identity_scope = 'stable'"
else:
    # The inputs name no benchmark, script, filter or repeat: the run supplies them.
    side = ("SELECT 'bench' AS benchmark, language, NULL AS script, question_id, 'none' AS filter, 0 AS repeat_id, correct "
            "FROM read_json('{}', format = 'newline_delimited')")
query = f"""
WITH a AS ({side.format(a)}), b AS ({side.format(b)})
SELECT
  count(*) FILTER (WHERE a.correct AND b.correct) AS both_correct,
  count(*) FILTER (WHERE NOT a.correct AND NOT b.correct) AS both_wrong,
  count(*) FILTER (WHERE a.correct AND NOT b.correct) AS correct_to_wrong,
  count(*) FILTER (WHERE NOT a.correct AND b.correct) AS wrong_to_correct,
  count(*) FILTER (WHERE a.question_id IS NOT NULL AND b.question_id IS NOT NULL
                   AND (a.correct IS NULL OR b.correct IS NULL)) AS unscored,
  count(*) FILTER (WHERE b.question_id IS NULL) AS only_baseline,
  count(*) FILTER (WHERE a.question_id IS NULL) AS only_variant
FROM a FULL OUTER JOIN b
  ON a.benchmark = b.benchmark AND a.language IS NOT DISTINCT FROM b.language
 AND a.script IS NOT DISTINCT FROM b.script AND a.question_id = b.question_id
 AND a.filter = b.filter AND a.repeat_id = b.repeat_id
"""
print(duckdb.sql(query).fetchall())
