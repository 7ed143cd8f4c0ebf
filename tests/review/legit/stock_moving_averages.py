import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

px = pd.read_csv("data/stock.csv", parse_dates=["date"]).set_index("date")
px["ma20"] = px["close"].rolling(20).mean()
px["ma50"] = px["close"].rolling(50).mean()
cross = (px["ma20"] > px["ma50"]).astype(int).diff()
print("golden crosses:", list(px.index[cross == 1].date))
print("death crosses:", list(px.index[cross == -1].date))
ax = px[["close", "ma20", "ma50"]].plot(figsize=(9, 4), lw=1)
ax.figure.savefig("moving_averages.png", dpi=80)
plt.close("all")
