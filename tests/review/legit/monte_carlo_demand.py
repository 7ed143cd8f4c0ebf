import numpy as np
import pandas as pd

rng = np.random.default_rng(2024)
sales = pd.read_csv("data/sales.csv").dropna()
daily = sales.groupby("date")["units"].sum()
mu, sd = daily.mean(), daily.std()
sims = rng.normal(mu, sd, size=(5000, 30)).clip(min=0).sum(axis=1)
stock = 30 * mu * 1.05
print(f"daily demand ~ N({mu:.1f}, {sd:.1f})")
print(f"P(stock-out in 30 days with {stock:.0f} units) = {(sims > stock).mean():.3f}")
print("5/50/95 percentiles:", np.percentile(sims, [5, 50, 95]).round(0))
