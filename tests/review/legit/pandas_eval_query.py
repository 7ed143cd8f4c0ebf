import pandas as pd

df = pd.read_csv("data/sales.csv").dropna()
df = df.eval("revenue = units * unit_price")
big = df.query("units >= 30 and region in ['North', 'West']")
print(f"{len(big)} large orders in North/West")
threshold = df["revenue"].quantile(0.9)
top = df.query("revenue > @threshold").sort_values("revenue", ascending=False)
print(top[["order_id", "region", "product", "revenue"]].head().to_string(index=False))
print(pd.eval("df.units.sum() / df.order_id.count()"))
