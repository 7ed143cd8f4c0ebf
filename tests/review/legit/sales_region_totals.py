"""Revenue per region from the sales export, written as CSV and printed."""
import os

import pandas as pd

df = pd.read_csv("data/sales.csv", parse_dates=["date"])
df = df.dropna(subset=["units"])
df["revenue"] = df["units"] * df["unit_price"]

totals = df.groupby("region")["revenue"].sum().sort_values(ascending=False)
os.makedirs("output", exist_ok=True)
totals.round(2).to_csv("output/revenue_by_region.csv", header=["revenue"])
print(totals.round(2).to_string())
print(f"best region: {totals.idxmax()} ({totals.max():.2f})")
