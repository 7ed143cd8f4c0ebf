import pandas as pd
from scipy.stats import chi2_contingency

df = pd.read_csv("data/survey.csv")
df["satisfied"] = df["satisfaction"] >= 4
table = pd.crosstab(df["group"], df["satisfied"])
print(table)
chi2, p, dof, expected = chi2_contingency(table)
print(f"chi2={chi2:.3f} dof={dof} p={p:.3f}")
print("expected counts:")
print(pd.DataFrame(expected, index=table.index, columns=table.columns).round(1))
