"""What a user could write in SQL instead of `babel panel --all --variant original`: each
side's known and correct counts, and all pairwise 2x2 tables (a self-join on a dense item
number), with DuckDB on babel's own Parquet records files.

  python3 bench/panel_sql.py 'ARCHIVE/runs/p*/records/*.parquet'
"""
import sys

import duckdb

glob = sys.argv[1]
con = duckdb.connect()
con.execute(f"""
CREATE TABLE r AS
  SELECT run_id AS side, benchmark, language, script, question_id, filter, repeat_id, correct
  FROM read_parquet('{glob}')
  WHERE identity_scope = 'stable' AND variant_id = 'original'
""")
con.execute("""
CREATE TABLE items AS
  SELECT benchmark, language, script, question_id, filter, repeat_id,
         row_number() OVER () AS item
  FROM (SELECT DISTINCT benchmark, language, script, question_id, filter, repeat_id FROM r)
""")
con.execute("""
CREATE TABLE c AS
  SELECT r.side, items.item, r.correct
  FROM r JOIN items
    ON r.benchmark = items.benchmark AND r.language IS NOT DISTINCT FROM items.language
   AND r.script IS NOT DISTINCT FROM items.script AND r.question_id = items.question_id
   AND r.filter = items.filter AND r.repeat_id = items.repeat_id
  WHERE r.correct IS NOT NULL
""")
sides = con.execute("SELECT side, count(*), sum(correct::INT) FROM c GROUP BY side").fetchall()
pairs = con.execute("""
SELECT a.side, b.side, count(*) AS known_pairs,
       sum((a.correct AND b.correct)::INT) AS both_correct,
       sum((a.correct AND NOT b.correct)::INT) AS a_only_correct,
       sum((NOT a.correct AND b.correct)::INT) AS b_only_correct,
       sum((NOT a.correct AND NOT b.correct)::INT) AS both_wrong
FROM c a JOIN c b ON a.item = b.item AND a.side < b.side
GROUP BY a.side, b.side
""").fetchall()
print(len(sides), len(pairs))
