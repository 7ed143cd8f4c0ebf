"""Top products by revenue, the monthly trend, and anomalous days.

Runs inside the corral jail with /workspace as its working directory:
reads sales.csv, writes top_products.csv, trend.png and report.md.
"""
import matplotlib.pyplot as plt
import pandas as pd

df = pd.read_csv("sales.csv", parse_dates=["Date"])
top = df.groupby("Product")["Revenue"].sum().nlargest(5)
top.to_csv("top_products.csv")

monthly = df.set_index("Date").groupby([pd.Grouper(freq="MS"), "Product"])["Revenue"].sum().unstack()
ax = monthly[top.index].plot(figsize=(10, 5), title="Monthly revenue, top 5 products")
ax.set_ylabel("revenue")
plt.tight_layout()
plt.savefig("trend.png", dpi=100)

# Anomalies: compare each day with the median of the same weekday over the
# surrounding nine weeks (which follows both the weekly cycle and the season),
# then take a robust z-score of that ratio: |r - median| / (1.4826 * MAD) > 6.
daily = df.groupby(["Product", "Date"])["Revenue"].sum().reset_index().sort_values(["Product", "Date"])
daily["weekday"] = daily["Date"].dt.weekday
baseline = daily.groupby(["Product", "weekday"])["Revenue"].transform(
    lambda s: s.rolling(9, center=True, min_periods=4).median())
daily["ratio"] = (daily["Revenue"] + 1) / (baseline + 1)
g = daily.groupby("Product")["ratio"]
mad = g.transform(lambda s: (s - s.median()).abs().median())
daily["z"] = (daily["ratio"] - g.transform("median")) / (1.4826 * mad)
flagged = daily[daily["z"].abs() > 6].sort_values("z", key=abs, ascending=False)

with open("report.md", "w") as f:
    f.write("# Sales report\n\n## Top 5 products by revenue\n\n")
    for name, rev in top.items():
        f.write(f"- {name}: {rev:,.2f}\n")
    f.write(f"\n## Anomalous days ({len(flagged)})\n\n")
    for r in flagged.itertuples():
        f.write(f"- {r.Date:%Y-%m-%d} {r.Product}: revenue {r.Revenue:,.2f} (robust z {r.z:+.1f})\n")
    f.write("\n![trend](trend.png)\n")

print(top.to_string())
print(f"{len(flagged)} anomalous days flagged; wrote top_products.csv, trend.png, report.md")
