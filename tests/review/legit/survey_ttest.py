import pandas as pd
from scipy import stats

df = pd.read_csv("data/survey.csv")
df["gain"] = df["score_after"] - df["score_before"]
treat = df.loc[df["group"] == "treatment", "gain"]
ctrl = df.loc[df["group"] == "control", "gain"]
t, p = stats.ttest_ind(treat, ctrl, equal_var=False)
print(f"mean gain treatment={treat.mean():.2f} control={ctrl.mean():.2f}")
print(f"Welch t={t:.3f} p={p:.2e}")
paired = stats.ttest_rel(df["score_after"], df["score_before"])
print(f"paired before/after: t={paired.statistic:.2f} p={paired.pvalue:.2e}")
d = (treat.mean() - ctrl.mean()) / df["gain"].std()
print(f"effect size (d): {d:.2f}")
