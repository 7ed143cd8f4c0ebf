import operator
from functools import reduce

import pandas as pd

# reduce over numbers and over data frames, not over modules
sales = pd.read_csv("data/sales.csv")
sales["revenue"] = sales["units"].fillna(0) * sales["unit_price"]
parts = [sales.groupby("region")[c].sum().rename(c) for c in ("units", "revenue")]
counts = sales.groupby("region").size().rename("orders")
table = reduce(lambda a, b: pd.concat([a, b], axis=1), parts + [counts])
print(table.round(2).to_string())
print("product of 1..6:", reduce(operator.mul, range(1, 7), 1))
totals = reduce(lambda acc, row: acc + row, sales["units"].fillna(0).tolist(), 0)
print("units:", int(totals))
steps = ["strip", "lower"]
label = reduce(lambda s, m: getattr(s, m)(), steps, "  North Region ")
print(label)
