import os
import shutil
import zipfile

import pandas as pd

os.makedirs("output/tables", exist_ok=True)
df = pd.read_csv("data/sales.csv")
for region, g in df.groupby("region"):
    g.to_csv(f"output/tables/{region.lower()}.csv", index=False)
archive = shutil.make_archive("output/tables_bundle", "zip", root_dir="output/tables")
with zipfile.ZipFile(archive) as z:
    print(sorted(z.namelist()))
shutil.rmtree("output/tables")
print("kept:", sorted(os.listdir("output")))
