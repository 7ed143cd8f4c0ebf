import pandas as pd

df = pd.read_csv("data/survey.csv")
labels = {1: "very unhappy", 2: "unhappy", 3: "neutral", 4: "happy", 5: "very happy"}
df["mood"] = pd.Categorical(df["satisfaction"].map(labels), categories=list(labels.values()), ordered=True)
print(df["mood"].value_counts(sort=False))
print("at least happy:", int((df["mood"] >= "happy").sum()))
print(df.groupby("mood", observed=False)["age"].median())
