import json
import os
from pathlib import Path

import pandas as pd


def atomic_write_json(path, obj):
    """Write to a temporary name next to the target, then rename over it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


df = pd.read_csv("data/stock.csv")
atomic_write_json("output/stock_summary.json", {"rows": len(df), "last_close": float(df["close"].iloc[-1])})
print(Path("output/stock_summary.json").read_text())
print("leftover temp files:", list(Path("output").glob("*.tmp")))
