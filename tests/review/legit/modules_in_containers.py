import json
import math
import statistics

import numpy as np
import pandas as pd

# modules kept in containers and passed to functions: the everyday kind
libs = {"numpy": np, "pandas": pd}
for name, mod in libs.items():
    print(name, mod.__version__.split(".")[0])

backends = [statistics, np]
values = pd.read_csv("data/stock.csv").iloc[:, -1].dropna().tolist()[:50]
for b in backends:
    print(b.__name__, round(float(b.mean(values)), 3))


def describe(xs, lib=np):
    return {"mean": float(lib.mean(xs)), "std": float(lib.std(xs))}


print(json.dumps(describe(values), indent=1))
square_root = (lambda m: m.sqrt)(math)
print(square_root(16.0))


class Report:
    def __init__(self):
        self.np = np

    def spread(self, xs):
        return float(self.np.ptp(xs))


print(Report().spread(values))
