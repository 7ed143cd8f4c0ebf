import pandas as pd

totals = None
rows = 0
for chunk in pd.read_csv("data/sensors.csv", chunksize=100):
    rows += len(chunk)
    part = chunk.groupby("sensor_id")["humidity"].agg(["sum", "count"])
    totals = part if totals is None else totals.add(part, fill_value=0)
print(f"{rows} rows read in chunks")
print((totals["sum"] / totals["count"]).round(2))
pd.read_csv("data/sensors.csv").to_csv("sensors.csv.gz", index=False, compression="gzip")
print(len(pd.read_csv("sensors.csv.gz")), "rows after a gzip roundtrip")
