from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pandas as pd

ev = pd.read_json("data/events.jsonl", lines=True)
ts = pd.to_datetime(ev["ts"]).dt.tz_localize("UTC")
local = ts.dt.tz_convert("Europe/Paris")
print("first event UTC:", ts.min(), "Paris:", local.min())
print("events by local hour:")
print(local.dt.hour.value_counts().sort_index().to_string())
now = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)
print(now.astimezone(ZoneInfo("America/New_York")).isoformat())
