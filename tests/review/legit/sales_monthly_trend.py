import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from pathlib import Path

out = Path("output")
out.mkdir(exist_ok=True)

sales = pd.read_csv("data/sales.csv", parse_dates=["date"])
sales["revenue"] = sales["units"].fillna(0) * sales["unit_price"]
monthly = sales.set_index("date").resample("M")["revenue"].sum()

fig, ax = plt.subplots(figsize=(8, 4))
monthly.plot(ax=ax, marker="o")
ax.set_title("Monthly revenue")
ax.set_ylabel("EUR")
ax.grid(alpha=0.3)
fig.tight_layout()
fig.savefig(out / "monthly_revenue.png", dpi=80)
plt.close(fig)

change = monthly.pct_change().dropna() * 100
print("month-over-month change (%):")
print(change.round(1).to_string())
