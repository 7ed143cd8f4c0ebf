import pandas as pd

df = pd.read_csv("data/survey.csv")
bins = [17, 29, 44, 59, 80]
labels = ["18-29", "30-44", "45-59", "60-80"]
df["age_band"] = pd.cut(df["age"], bins=bins, labels=labels)
out = df.groupby(["age_band", "group"], observed=True)["satisfaction"].mean().unstack().round(2)
print(out)
with open("age_bands.txt", "w") as f:
    f.write(out.to_string())
    f.write("\n")
print(open("age_bands.txt").read().count("\n"), "lines written")
