import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

os.makedirs("output/figures", exist_ok=True)
stock = pd.read_csv("data/stock.csv", parse_dates=["date"])
sensors = pd.read_csv("data/sensors.csv", parse_dates=["timestamp"])
fig, axes = plt.subplots(2, 2, figsize=(10, 7))
axes[0, 0].plot(stock["date"], stock["close"])
axes[0, 0].set_title("close")
axes[0, 1].hist(np.diff(np.log(stock["close"])), bins=40)
axes[0, 1].set_title("log returns")
for sid, g in sensors.groupby("sensor_id"):
    axes[1, 0].plot(g["timestamp"], g["temperature"], lw=0.7, label=sid)
axes[1, 0].legend()
xs = np.sort(stock["volume"])
axes[1, 1].step(xs, np.arange(1, len(xs) + 1) / len(xs))
axes[1, 1].set_title("volume ECDF")
fig.autofmt_xdate()
fig.savefig(os.path.join("output", "figures", "dashboard.png"), dpi=70)
plt.close("all")
print(os.listdir("output/figures"))
