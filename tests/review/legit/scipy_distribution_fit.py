import numpy as np
import pandas as pd
from scipy import stats

ev = pd.read_json("data/events.jsonl", lines=True)
d = ev["duration_ms"].to_numpy(dtype=float)
for name in ("norm", "expon", "uniform"):
    dist = getattr(stats, name)
    params = dist.fit(d)
    ks = stats.kstest(d, name, args=params)
    print(f"{name:<8} params={np.round(params, 1)} KS={ks.statistic:.3f} p={ks.pvalue:.3f}")
