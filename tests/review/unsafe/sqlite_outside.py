# rule: PY-FS-001
# attempts: unable to open database file
import sqlite3

db = sqlite3.connect("/var/lib/corral.db")
db.execute("create table t (x)")
