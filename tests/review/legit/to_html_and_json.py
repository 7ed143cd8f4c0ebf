from pathlib import Path

import pandas as pd

out = Path("output")
out.mkdir(exist_ok=True)
df = pd.read_csv("data/sales.csv", parse_dates=["date"])
table = df.groupby(df["date"].dt.to_period("M"))["units"].agg(["count", "sum"])
table.index = table.index.astype(str)
(out / "monthly.html").write_text(table.to_html(border=0))
table.to_json(out / "monthly.json", orient="table", indent=1)
print(sorted(p.name for p in out.iterdir()))
print(pd.read_json(out / "monthly.json", orient="table").head(3))
