import pandas as pd

df = pd.read_csv("data/sales.csv")
df["units"] = df["units"].fillna(df["units"].median())
pivot = pd.pivot_table(df, index="product", columns="region", values="units", aggfunc="sum", margins=True)
print(pivot)
pivot.to_csv("pivot_units.csv")
share = pivot.drop(index="All", columns="All")
share = share.div(share.sum(axis=1), axis=0).round(3)
print("\nshare of units by region for each product:")
print(share)
