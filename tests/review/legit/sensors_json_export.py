import json
import os

import pandas as pd

df = pd.read_csv("data/sensors.csv", parse_dates=["timestamp"])
os.makedirs("output/sensors", exist_ok=True)
for sensor, g in df.groupby("sensor_id"):
    summary = {
        "sensor": sensor,
        "first": g["timestamp"].min().isoformat(),
        "last": g["timestamp"].max().isoformat(),
        "readings": int(g["temperature"].count()),
        "temperature": g["temperature"].describe().round(3).to_dict(),
    }
    path = os.path.join("output", "sensors", f"{sensor}.json")
    with open(path, "w") as f:
        json.dump(summary, f, indent=1)
    print("wrote", path)
print(sorted(os.listdir("output/sensors")))
