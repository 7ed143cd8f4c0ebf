import os
import pickle

import numpy as np
import pandas as pd

cache = "output/fit.pkl"
os.makedirs("output", exist_ok=True)
df = pd.read_csv("data/experiment.csv")
fit = {"coef": np.polyfit(df["x"], df["y"], 2), "n": len(df)}
with open(cache, "wb") as f:
    pickle.dump(fit, f)
with open(cache, "rb") as f:
    again = pickle.load(f)
print("cached coefficients:", np.round(again["coef"], 3), "n =", again["n"])
