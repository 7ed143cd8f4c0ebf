import pandas as pd

ev = pd.read_json("data/events.jsonl", lines=True)
ev["ts"] = pd.to_datetime(ev["ts"])
purchases = ev[ev["event"] == "purchase"]
per_user = purchases.groupby("user")["amount"].agg(["count", "sum", "mean"]).sort_values("sum", ascending=False)
print(per_user.head(10).round(2))
hourly = purchases.set_index("ts")["amount"].resample("H").sum()
print("\nrevenue by hour:")
print(hourly[hourly > 0].round(2).to_string())
per_user.to_json("purchases_per_user.json", orient="index", indent=2)
