import json
from collections import Counter
from itertools import chain

with open("data/inventory.json") as f:
    warehouses = json.load(f)["warehouses"]

tags = Counter(chain.from_iterable(item["tags"] for wh in warehouses for item in wh["items"]))
print("tag frequency:", tags.most_common())
promo_value = sum(i["qty"] * i["price"] for wh in warehouses for i in wh["items"] if "promo" in i["tags"])
print(f"stock value on promotion: {promo_value:,.2f}")
