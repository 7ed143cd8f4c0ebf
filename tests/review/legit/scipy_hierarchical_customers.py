import pandas as pd
from scipy.cluster.hierarchy import fcluster, linkage

sales = pd.read_csv("data/sales.csv").dropna()
profile = sales.pivot_table(index="customer_id", columns="product", values="units", aggfunc="sum", fill_value=0)
Z = linkage(profile.to_numpy(), method="ward")
profile["cluster"] = fcluster(Z, t=4, criterion="maxclust")
print(profile["cluster"].value_counts().sort_index())
print(profile.groupby("cluster").mean().round(1))
