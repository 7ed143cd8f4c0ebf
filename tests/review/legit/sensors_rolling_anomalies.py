import numpy as np
import pandas as pd

df = pd.read_csv("data/sensors.csv", parse_dates=["timestamp"]).sort_values("timestamp")
flags = []
for sensor, g in df.groupby("sensor_id"):
    s = g.set_index("timestamp")["temperature"].interpolate()
    mean = s.rolling(12, min_periods=6).mean()
    std = s.rolling(12, min_periods=6).std()
    z = (s - mean) / std
    hits = z[np.abs(z) > 2.0]
    flags.append(pd.DataFrame({"sensor": sensor, "z": hits.round(2)}))
    print(f"{sensor}: {len(hits)} readings off the rolling mean by more than 2 sd")
pd.concat(flags).to_csv("anomalies.csv")
