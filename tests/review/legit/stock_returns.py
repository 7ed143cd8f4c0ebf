import numpy as np
import pandas as pd

px = pd.read_csv("data/stock.csv", parse_dates=["date"], index_col="date")
ret = px["close"].pct_change().dropna()
log_ret = np.log(px["close"]).diff().dropna()
ann_vol = ret.std() * np.sqrt(252)
print(f"trading days: {len(px)}")
print(f"total return: {px['close'].iloc[-1] / px['close'].iloc[0] - 1:.2%}")
print(f"annualised volatility: {ann_vol:.2%}")
print(f"mean log return per day: {log_ret.mean():.5f}")
monthly = px["close"].resample("M").last().pct_change().dropna()
print(monthly.map("{:.1%}".format).to_string())
