import json

import pandas as pd

with open("data/config.json") as f:
    cfg = json.load(f)
managers = pd.DataFrame([{"region": r, "manager": v["manager"]} for r, v in cfg["regions"].items()])
sales = pd.read_csv("data/sales.csv")
merged = sales.merge(managers, on="region", how="left", validate="many_to_one")
assert merged["manager"].notna().all()
print(merged.groupby("manager")["units"].sum().astype(int))
