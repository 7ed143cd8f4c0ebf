import pandas as pd

df = pd.read_csv("data/sensors.csv", parse_dates=["timestamp"])
daily = (df.set_index("timestamp")
           .groupby("sensor_id")
           .resample("D")["temperature"]
           .agg(["min", "mean", "max"])
           .round(2))
print(daily.head(12))
daily.to_csv("daily_temperature.csv")
