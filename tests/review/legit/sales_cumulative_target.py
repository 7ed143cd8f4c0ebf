import json
from datetime import date

import pandas as pd

with open("data/config.json") as f:
    config = json.load(f)

df = pd.read_csv("data/sales.csv", parse_dates=["date"]).sort_values("date")
df["units"] = df["units"].fillna(0).astype(int)
df["cum_units"] = df["units"].cumsum()
hit = df.loc[df["cum_units"] >= config["target_units"], "date"]
if hit.empty:
    print(f"target of {config['target_units']} units not reached; total {df['units'].sum()}")
else:
    when = hit.iloc[0].date()
    print(f"target of {config['target_units']} units reached on {when} "
          f"({(when - date(2024, 1, 1)).days} days into the year)")
gross = (df["units"] * df["unit_price"]).sum()
print(f"gross revenue incl. VAT: {gross * (1 + config['vat']):.2f} {config['currency']}")
