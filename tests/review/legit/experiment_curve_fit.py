import numpy as np
import pandas as pd
from scipy.optimize import curve_fit


def model(x, a, b, c):
    return a * x ** 2 + b * x + c


df = pd.read_csv("data/experiment.csv")
params, cov = curve_fit(model, df["x"], df["y"])
errors = np.sqrt(np.diag(cov))
for name, value, err in zip("abc", params, errors):
    print(f"{name} = {value:.3f} ± {err:.3f}")
resid = df["y"] - model(df["x"], *params)
print(f"residual sd: {resid.std():.3f}")
