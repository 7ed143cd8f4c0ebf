import numpy as np
import pandas as pd

df = pd.read_csv("data/sensors.csv").dropna()
H, xedges, yedges = np.histogram2d(df["temperature"], df["humidity"], bins=(6, 5))
print("temperature bins:", np.round(xedges, 1))
print("humidity bins:   ", np.round(yedges, 1))
print(H.astype(int))
i, j = np.unravel_index(H.argmax(), H.shape)
print(f"densest cell: temperature {xedges[i]:.1f}-{xedges[i + 1]:.1f}, humidity {yedges[j]:.1f}-{yedges[j + 1]:.1f}")
