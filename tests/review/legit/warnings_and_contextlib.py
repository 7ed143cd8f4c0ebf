import contextlib
import io
import warnings

import numpy as np
import pandas as pd

df = pd.read_csv("data/sensors.csv")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", category=RuntimeWarning)
    ratios = np.log(df["temperature"].to_numpy() - 15)
print("finite log ratios:", int(np.isfinite(ratios).sum()), "of", len(ratios))

buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    df.info()
print("info() printed", len(buf.getvalue().splitlines()), "lines")
with contextlib.suppress(FileNotFoundError):
    open("data/not-there.csv").close()
print("done")
