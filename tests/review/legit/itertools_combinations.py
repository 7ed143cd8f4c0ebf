import csv
from collections import Counter
from itertools import accumulate, combinations, groupby, islice, product

with open("data/sales.csv", newline="") as f:
    rows = sorted(csv.DictReader(f), key=lambda r: r["customer_id"])
baskets = {c: sorted({r["product"] for r in g}) for c, g in groupby(rows, key=lambda r: r["customer_id"])}
pairs = Counter(p for items in baskets.values() for p in combinations(items, 2))
print("products bought together:", pairs.most_common(3))
units = [int(r["units"]) for r in rows if r["units"]]
print("running total (first 5):", list(islice(accumulate(units), 5)))
print("region x product cells:", len(list(product({r["region"] for r in rows}, {r["product"] for r in rows}))))
