import pandas as pd

px = pd.read_csv("data/stock.csv", parse_dates=["date"])
px["weekday"] = px["date"].dt.day_name()
px["range"] = (px["close"] - px["open"]).abs()
out = px.groupby("weekday")[["volume", "range"]].mean()
order = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
print(out.reindex(order).round(2))
corr = px["volume"].corr(px["range"], method="spearman")
print(f"spearman(volume, |close-open|) = {corr:.3f}")
