import numpy as np
import pandas as pd

df = pd.read_csv("data/sensors.csv").dropna()
features = df[["temperature", "humidity", "pressure"]].to_numpy()
mu, sigma = features.mean(axis=0), features.std(axis=0)
z = (features - mu) / sigma
np.savez_compressed("features.npz", z=z, mu=mu, sigma=sigma, sensor=df["sensor_id"].to_numpy())
loaded = np.load("features.npz", allow_pickle=True)
print(loaded["z"].shape, np.round(loaded["z"].mean(axis=0), 6))
np.save("/tmp/z.npy", z)
print(np.load("/tmp/z.npy").dtype)
