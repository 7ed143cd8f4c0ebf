import csv
from functools import lru_cache, partial, reduce


@lru_cache(maxsize=None)
def price_band(price):
    return "low" if price < 5 else "mid" if price < 10 else "high"


def add(acc, row, key):
    acc[row[key]] = acc.get(row[key], 0) + 1
    return acc


with open("data/sales.csv", newline="") as f:
    rows = list(csv.DictReader(f))
for row in rows:
    row["band"] = price_band(round(float(row["unit_price"])))
by_band = reduce(partial(add, key="band"), rows, {})
by_region = reduce(partial(add, key="region"), rows, {})
print(by_band, by_region)
print(price_band.cache_info())
