import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

sales = pd.read_csv("data/sales.csv")
survey = pd.read_csv("data/survey.csv")
fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
share = sales.groupby("region")["units"].sum()
a.pie(share, labels=share.index, autopct="%1.0f%%", startangle=90)
a.set_title("units by region")
sc = b.scatter(survey["score_before"], survey["score_after"], c=survey["age"], cmap="plasma", s=12)
fig.colorbar(sc, ax=b, label="age")
b.plot([30, 90], [30, 90], "k--", lw=0.8)
b.set_xlabel("before")
b.set_ylabel("after")
fig.tight_layout()
fig.savefig("pie_scatter.png")
fig.savefig("pie_scatter.svg")
print("figures written")
