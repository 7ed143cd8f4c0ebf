import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

df = pd.read_csv("data/survey.csv")
os.makedirs("figures", exist_ok=True)
for col in ["age", "score_before", "score_after"]:
    fig, ax = plt.subplots(figsize=(4, 3))
    for grp, g in df.groupby("group"):
        ax.hist(g[col], bins=15, alpha=0.5, label=grp)
    ax.set_title(col)
    ax.legend()
    path = os.path.join("figures", f"hist_{col}.png")
    fig.savefig(path)
    plt.close(fig)
print(sorted(os.listdir("figures")))
