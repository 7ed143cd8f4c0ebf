import numpy as np
import pandas as pd

rng = np.random.default_rng(42)
df = pd.read_csv("data/survey.csv")
gain = (df["score_after"] - df["score_before"]).to_numpy()
boots = np.array([rng.choice(gain, size=gain.size, replace=True).mean() for _ in range(2000)])
lo, hi = np.percentile(boots, [2.5, 97.5])
print(f"mean gain {gain.mean():.2f}, 95% bootstrap CI [{lo:.2f}, {hi:.2f}]")
