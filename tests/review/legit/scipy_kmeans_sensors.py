import numpy as np
import pandas as pd
from scipy.cluster.vq import kmeans2, whiten

df = pd.read_csv("data/sensors.csv").dropna()
X = whiten(df[["temperature", "humidity", "pressure"]].to_numpy())
rng = np.random.default_rng(0)
centroids, labels = kmeans2(X, 3, seed=rng, minit="++")
df["cluster"] = labels
print(df.groupby("cluster")[["temperature", "humidity", "pressure"]].mean().round(2))
print(pd.crosstab(df["cluster"], df["sensor_id"]))
