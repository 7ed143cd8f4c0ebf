import pandas as pd

df = pd.read_csv("data/sensors.csv", parse_dates=["timestamp"])
wide = df.pivot(index="timestamp", columns="sensor_id", values="temperature")
gaps = wide.isna().sum()
print("missing readings per sensor:")
print(gaps.to_string())
filled = wide.interpolate(method="time", limit=3)
print("still missing after interpolation:", int(filled.isna().sum().sum()))
filled.round(2).to_csv("temperature_filled.csv")
