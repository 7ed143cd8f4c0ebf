import pandas as pd
from scipy.stats import wilcoxon

g = pd.read_csv("data/grades.tsv", sep="\t")
wide = g.pivot_table(index=["student", "subject"], columns="term", values="grade").reset_index()
wide["delta"] = wide["T2"] - wide["T1"]
print(wide.groupby("subject")["delta"].describe().round(2))
for subject, part in wide.groupby("subject"):
    stat, p = wilcoxon(part["T1"], part["T2"])
    print(f"{subject}: wilcoxon p={p:.3f}")
