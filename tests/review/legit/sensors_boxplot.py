import matplotlib
matplotlib.use("Agg")
from matplotlib import pyplot as plt
import pandas as pd

df = pd.read_csv("data/sensors.csv")
fig, axes = plt.subplots(1, 3, figsize=(10, 3.5))
for ax, col in zip(axes, ["temperature", "humidity", "pressure"]):
    data = [g[col].dropna() for _, g in df.groupby("sensor_id")]
    ax.boxplot(data, labels=sorted(df["sensor_id"].unique()))
    ax.set_title(col)
fig.tight_layout()
fig.savefig("sensor_boxplots.png", dpi=72)
print("medians:")
print(df.groupby("sensor_id")[["temperature", "humidity", "pressure"]].median())
