import pandas as pd

cols = ["date", "time", "level", "service", "method", "path", "status", "latency"]
df = pd.read_csv("data/app.log", sep=" ", names=cols, header=None)
df["latency"] = df["latency"].str.rstrip("ms").astype(int)
df["ts"] = pd.to_datetime(df["date"] + " " + df["time"].str.replace(",", ".", regex=False))
df["endpoint"] = df["path"].str.replace(r"/\d+$", "/{id}", regex=True)
summary = df.groupby(["endpoint", "status"]).size().unstack(fill_value=0)
print(summary)
slow = df.nlargest(5, "latency")[["ts", "endpoint", "status", "latency"]]
print(slow.to_string(index=False))
summary.to_csv("status_by_endpoint.csv")
