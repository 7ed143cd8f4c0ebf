import numpy as np
import pandas as pd
from scipy.optimize import minimize

df = pd.read_csv("data/experiment.csv")
x, y = df["x"].to_numpy(), df["y"].to_numpy()


def huber_loss(params, delta=2.0):
    a, b, c = params
    r = y - (a * x ** 2 + b * x + c)
    small = np.abs(r) <= delta
    return np.sum(np.where(small, 0.5 * r ** 2, delta * (np.abs(r) - 0.5 * delta)))


res = minimize(huber_loss, x0=[1.0, 0.0, 0.0], method="Nelder-Mead", options={"maxiter": 4000})
print("converged:", res.success, "after", res.nit, "iterations")
print("params:", np.round(res.x, 3))
