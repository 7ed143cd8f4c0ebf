import json

import numpy as np
import pandas as pd

df = pd.read_csv("data/sales.csv")
report = {
    "rows": int(len(df)),
    "columns": list(df.columns),
    "missing": {c: int(n) for c, n in df.isna().sum().items() if n},
    "dtypes": {c: str(t) for c, t in df.dtypes.items()},
}
units = df["units"].to_numpy(dtype=float)
report["units_nan_share"] = float(np.isnan(units).mean())
filled = df["units"].fillna(df.groupby("product")["units"].transform("median"))
report["units_after_fill"] = int(filled.isna().sum())

with open("missing_report.json", "w") as f:
    json.dump(report, f, indent=2)
print(json.dumps(report, indent=2))
