"""Recency / frequency / monetary segmentation of customers."""
import pandas as pd

df = pd.read_csv("data/sales.csv", parse_dates=["date"]).dropna(subset=["units"])
df["revenue"] = df["units"] * df["unit_price"]
now = df["date"].max() + pd.Timedelta(days=1)
rfm = df.groupby("customer_id").agg(recency=("date", lambda d: (now - d.max()).days),
                                    frequency=("order_id", "count"),
                                    monetary=("revenue", "sum"))
rfm["R"] = pd.qcut(rfm["recency"], 3, labels=[3, 2, 1]).astype(int)
rfm["F"] = pd.qcut(rfm["frequency"].rank(method="first"), 3, labels=[1, 2, 3]).astype(int)
rfm["M"] = pd.qcut(rfm["monetary"], 3, labels=[1, 2, 3]).astype(int)
rfm["segment"] = rfm[["R", "F", "M"]].sum(axis=1).map(lambda s: "gold" if s >= 8 else "silver" if s >= 6 else "bronze")
print(rfm["segment"].value_counts())
rfm.to_csv("rfm.csv")
