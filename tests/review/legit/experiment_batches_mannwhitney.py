import pandas as pd
from scipy import stats

df = pd.read_csv("data/experiment.csv")
df["resid"] = df["y"] - (2.5 * df["x"] ** 2 - 1.2 * df["x"] + 3)
a = df.loc[df["batch"] == "a", "resid"]
b = df.loc[df["batch"] == "b", "resid"]
u, p = stats.mannwhitneyu(a, b)
print(f"batch a n={len(a)} median={a.median():.3f}")
print(f"batch b n={len(b)} median={b.median():.3f}")
print(f"Mann-Whitney U={u:.0f} p={p:.3f}")
