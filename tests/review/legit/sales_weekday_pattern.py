import calendar

import pandas as pd

df = pd.read_csv("data/sales.csv", parse_dates=["date"])
df["weekday"] = df["date"].dt.dayofweek
by_day = df.groupby("weekday")["order_id"].count().reindex(range(7), fill_value=0)
for day, n in by_day.items():
    print(f"{calendar.day_name[day]:<10} {'#' * (n // 2)} {n}")
busiest = calendar.day_name[int(by_day.idxmax())]
print("busiest day:", busiest)
