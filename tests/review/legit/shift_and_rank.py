import pandas as pd

g = pd.read_csv("data/grades.tsv", sep="\t").sort_values(["student", "subject", "term"])
g["previous"] = g.groupby(["student", "subject"])["grade"].shift()
g["change"] = g["grade"] - g["previous"]
g["rank_in_subject"] = g.groupby(["subject", "term"])["grade"].rank(ascending=False, method="dense")
g["attempt"] = g.groupby(["student", "subject"]).cumcount() + 1
print(g.dropna().nlargest(5, "change")[["student", "subject", "previous", "grade", "change"]])
g.to_csv("grades_enriched.csv", index=False)
