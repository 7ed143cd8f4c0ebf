import numpy as np
import pandas as pd

close = pd.read_csv("data/stock.csv")["close"].to_numpy()
r = np.diff(np.log(close))
r = r - r.mean()
acf = [1.0] + [float(np.dot(r[:-k], r[k:]) / np.dot(r, r)) for k in range(1, 11)]
bound = 1.96 / np.sqrt(len(r))
for k, v in enumerate(acf):
    flag = "*" if k and abs(v) > bound else ""
    print(f"lag {k:>2}: {v:+.3f} {flag}")
