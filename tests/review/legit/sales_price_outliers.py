import numpy as np
import pandas as pd

df = pd.read_csv("data/sales.csv")
stats = df.groupby("product")["unit_price"].agg(["mean", "std"])
df = df.join(stats, on="product")
df["z"] = (df["unit_price"] - df["mean"]) / df["std"]
outliers = df.loc[np.abs(df["z"]) > 1.5, ["order_id", "product", "unit_price", "z"]]
print(f"{len(outliers)} orders priced more than 1.5 sd from their product's mean")
print(outliers.sort_values("z").head(15).to_string(index=False))
outliers.to_csv("price_outliers.csv", index=False)
