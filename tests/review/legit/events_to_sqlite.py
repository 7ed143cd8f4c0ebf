import json
import os
import sqlite3

os.makedirs("output", exist_ok=True)
db_path = os.path.join("output", "events.db")
if os.path.exists(db_path):
    os.remove(db_path)
con = sqlite3.connect(db_path)
con.execute("CREATE TABLE events (user TEXT, event TEXT, ts TEXT, duration_ms INTEGER, amount REAL)")
with open("data/events.jsonl") as f:
    rows = [tuple(json.loads(line)[k] for k in ("user", "event", "ts", "duration_ms", "amount")) for line in f]
con.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", rows)
con.commit()
query = """
    SELECT user, COUNT(*) AS n, ROUND(SUM(COALESCE(amount, 0)), 2) AS spent
    FROM events GROUP BY user ORDER BY spent DESC LIMIT 5
"""
for row in con.execute(query):
    print(row)
con.close()
