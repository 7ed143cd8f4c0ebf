import importlib.util

import pandas as pd

# probing for optional libraries, as agents do before choosing an approach
have = {name: importlib.util.find_spec(name) is not None for name in ("scipy", "sklearn", "seaborn")}
print(have)
if have["scipy"]:
    from scipy import stats

    sales = pd.read_csv("data/sales.csv").dropna()
    print(stats.describe(sales["units"]))
agg = "median"
print(getattr(pd.read_csv("data/sales.csv")["unit_price"], agg)())
