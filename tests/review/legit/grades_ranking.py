import pandas as pd

g = pd.read_csv("data/grades.tsv", sep="\t")
avg = g.groupby("student")["grade"].mean()
ranking = avg.rank(ascending=False, method="min").astype(int).sort_values()
top = pd.DataFrame({"average": avg.round(1), "rank": ranking}).sort_values("rank").head(10)
print(top)
best_subject = g.groupby(["student", "subject"])["grade"].mean().groupby(level=0).idxmax().map(lambda t: t[1])
print(best_subject.value_counts())
