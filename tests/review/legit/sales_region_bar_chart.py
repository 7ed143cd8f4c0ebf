import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

df = pd.read_csv("data/sales.csv")
df["revenue"] = df["units"].fillna(0) * df["unit_price"]
table = df.pivot_table(index="region", columns="product", values="revenue", aggfunc="sum", fill_value=0)

os.makedirs("output/plots", exist_ok=True)
fig, ax = plt.subplots(figsize=(8, 5))
bottom = np.zeros(len(table))
for product in table.columns:
    ax.bar(table.index, table[product], bottom=bottom, label=product)
    bottom += table[product].to_numpy()
ax.legend(fontsize=8)
ax.set_ylabel("revenue")
fig.savefig(os.path.join("output", "plots", "stacked_revenue.png"))
print("saved", os.path.getsize("output/plots/stacked_revenue.png"), "bytes")
