import pandas as pd
from scipy import stats

df = pd.read_csv("data/sensors.csv").dropna()
groups = [g["temperature"].to_numpy() for _, g in df.groupby("sensor_id")]
f, p = stats.f_oneway(*groups)
print(f"one-way ANOVA across sensors: F={f:.2f} p={p:.3g}")
h, p_kw = stats.kruskal(*groups)
print(f"Kruskal-Wallis: H={h:.2f} p={p_kw:.3g}")
for name, g in df.groupby("sensor_id"):
    w, p_norm = stats.shapiro(g["temperature"])
    print(f"{name}: shapiro W={w:.3f} p={p_norm:.3g}")
