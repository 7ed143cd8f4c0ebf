import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

ev = pd.read_json("data/events.jsonl", lines=True, convert_dates=["ts"])
ev["hour"] = ev["ts"].dt.hour
table = pd.crosstab(ev["event"], ev["hour"])
fig, ax = plt.subplots(figsize=(9, 3))
ax.imshow(table.values, aspect="auto", cmap="viridis")
ax.set_yticks(range(len(table.index)), table.index)
ax.set_xticks(range(len(table.columns)), table.columns)
ax.set_xlabel("hour of day")
fig.tight_layout()
fig.savefig("events_by_hour.png")
print(table)
