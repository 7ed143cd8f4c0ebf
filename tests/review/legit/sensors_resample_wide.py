import pandas as pd

df = pd.read_csv("data/sensors.csv", parse_dates=["timestamp"])
wide = df.pivot_table(index="timestamp", columns="sensor_id", values=["temperature", "humidity"])
wide.columns = [f"{a}_{b}" for a, b in wide.columns]
six_hourly = wide.resample("6H").mean()
print(six_hourly.shape)
print(six_hourly.iloc[:4, :3].round(2))
six_hourly.to_csv("sensors_6h.csv", float_format="%.2f")
