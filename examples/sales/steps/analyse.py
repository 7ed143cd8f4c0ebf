import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

df = pd.read_csv("input/sales.csv", parse_dates=["Date"])
os.makedirs("output", exist_ok=True)


def markdown(frame):
    """A markdown table (pandas' to_markdown needs tabulate, which is not installed)."""
    def cell(v):
        if isinstance(v, pd.Timestamp):
            return f"{v:%Y-%m-%d}"
        return f"{v:,.2f}" if isinstance(v, float) else str(v)

    rows = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    rows += ["| " + " | ".join(cell(v) for v in r) + " |" for r in frame.itertuples(index=False)]
    return "\n".join(rows)


# Top 5 products by total revenue.
totals = df.groupby("Product").Revenue.sum().sort_values(ascending=False)
top5 = totals.head(5).round(2).rename("revenue").reset_index()
top5.to_csv("output/top5.csv", index=False)

# Monthly revenue: all products, and each of the top 5.
monthly = df.groupby(df.Date.dt.to_period("M")).Revenue.sum()
by_product = (df[df.Product.isin(top5.Product)]
              .groupby([df.Date.dt.to_period("M"), "Product"]).Revenue.sum().unstack()[top5.Product])
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
monthly.plot(ax=ax1, marker="o", color="tab:blue")
ax1.set_title("Monthly revenue, all products")
by_product.plot(ax=ax2, marker=".")
ax2.set_title("Monthly revenue, top 5 products")
for ax in (ax1, ax2):
    ax.set_xlabel("")
    ax.set_ylabel("revenue")
fig.tight_layout()
fig.savefig("output/trend.png", dpi=100)

# Anomalies: transactions more than 3 standard deviations from their
# product's mean (prices differ by 40x, so one global mean would only see
# the expensive products).
g = df.groupby("Product").Revenue
df["z"] = ((df.Revenue - g.transform("mean")) / g.transform("std")).round(2)
anomalies = df[df.z.abs() > 3].sort_values("z", ascending=False)
anomalies.to_csv("output/anomalies.csv", index=False, date_format="%Y-%m-%d")

lines = ["# Sales report", "",
         f"{len(df):,} transactions, {df.Date.min():%Y-%m-%d} to {df.Date.max():%Y-%m-%d}, "
         f"total revenue {df.Revenue.sum():,.2f}.", "",
         "## Top 5 products by revenue", "",
         markdown(top5), "",
         f"## Anomalies: {len(anomalies)} transactions beyond 3 standard deviations of their product", "",
         markdown(anomalies.head(15)), "",
         "![trend](trend.png)", ""]
with open("output/report.md", "w") as f:
    f.write("\n".join(lines))
print(top5.to_string(index=False))
far = anomalies[anomalies.z.abs() > 5]
z = anomalies.z.abs()
print(f"{len(anomalies)} transactions beyond 3 sd of their product: {len(far)} beyond 5 sd, "
      f"{len(anomalies) - len(far)} between 3 and 5 (|z| {z.min():.2f} to {z.max():.2f}); largest:")
print(anomalies.head(8).to_string(index=False))
