import logging
import os
import sqlite3
import tarfile
import zipfile
from pathlib import Path

import pandas as pd

# output paths built with f-strings, os.path.join, joinpath and chdir
out = Path("output")
out.mkdir(exist_ok=True)
logging.basicConfig(filename=os.path.join("output", "run.log"), level=logging.INFO)
logging.getLogger(__name__).addHandler(logging.FileHandler(out / "extra.log"))
logging.info("start")
grades = pd.read_csv("data/grades.tsv", sep="\t")
for col in grades.columns[:2]:
    grades[[col]].to_csv(f"output/{col}.csv", index=False)
grades.to_json(path_or_buf=out.joinpath("grades.json"))
db = sqlite3.connect(os.path.join("output", "grades.db"))
grades.to_sql("grades", db, index=False, if_exists="replace")
print(db.execute("select count(*) from grades").fetchone())
db.close()
with tarfile.open(out / "bundle.tar.gz", "w:gz") as t:
    t.add("output/grades.json", arcname="grades.json")
with zipfile.ZipFile("output/bundle.zip", "w") as z:
    z.write("output/grades.json", "grades.json")
prefix = "output/" + "report"
with open(prefix + "_summary.txt", "w") as f:
    f.write(str(grades.shape))
print(sorted(p.name for p in out.iterdir()))
