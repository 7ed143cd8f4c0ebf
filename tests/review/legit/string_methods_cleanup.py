import pandas as pd

s = pd.read_csv("data/survey.csv")["comment"].fillna("")
clean = (s.str.strip()
          .str.lower()
          .str.replace(r"[^a-z ]+", " ", regex=True)
          .str.replace(r"\s+", " ", regex=True)
          .str.strip())
print("distinct comments:", clean[clean != ""].nunique())
print(clean.str.split().str.len().describe().round(2))
print("mentions of price:", int(clean.str.contains("price").sum()))
