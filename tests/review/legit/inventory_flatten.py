import json

import pandas as pd

with open("data/inventory.json") as f:
    doc = json.load(f)
items = pd.json_normalize(doc["warehouses"], record_path="items", meta=["name", "city"])
items["value"] = items["qty"] * items["price"]
print(items.groupby(["name", "city"])["value"].sum().round(2))
low = items[items["qty"] < 50][["name", "sku", "qty"]]
print(f"\n{len(low)} SKUs below 50 units:")
print(low.to_string(index=False))
items.drop(columns="tags").to_csv("inventory_flat.csv", index=False)
