import pandas as pd

df = pd.read_csv("data/survey.csv")
scores = df["score_after"]
for agg in ("mean", "median", "std", "min", "max"):
    value = getattr(scores, agg)()
    print(f"{agg:<7}{value:8.2f}")
methods = {name: getattr(df.groupby("group")["satisfaction"], name)() for name in ("mean", "count")}
print(pd.DataFrame(methods))
