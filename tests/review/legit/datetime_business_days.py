from datetime import date, datetime, timedelta, timezone

import numpy as np
import pandas as pd

sales = pd.read_csv("data/sales.csv", parse_dates=["date"])
first, last = sales["date"].min().date(), sales["date"].max().date()
bdays = np.busday_count(first, last)
print(f"{first} .. {last}: {(last - first).days} days, {bdays} business days")
holidays = [date(2024, 1, 1), date(2024, 5, 1), date(2024, 5, 8)]
print("business days minus holidays:", np.busday_count(first, last, holidays=holidays))
stamp = datetime(2024, 6, 30, 23, 59, tzinfo=timezone.utc)
print("end of half year (UTC):", stamp.isoformat(), "| +1 day:", (stamp + timedelta(days=1)).date())
