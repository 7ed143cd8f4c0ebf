import pandas as pd
from scipy import stats

df = pd.read_csv("data/survey.csv")
res = stats.linregress(df["score_before"], df["score_after"])
print(f"slope={res.slope:.3f} intercept={res.intercept:.2f} r={res.rvalue:.3f} p={res.pvalue:.1e}")
r, p = stats.pearsonr(df["age"], df["satisfaction"])
rho, p2 = stats.spearmanr(df["age"], df["satisfaction"])
print(f"age vs satisfaction: pearson {r:.3f} (p={p:.2f}), spearman {rho:.3f} (p={p2:.2f})")
print(stats.describe(df["age"]))
