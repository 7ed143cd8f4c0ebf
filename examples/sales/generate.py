#!/usr/bin/env python3
"""Generate a year of sales transactions with a few injected outliers.

    generate.py [--seed N] [--out DIR]

writes DIR/sales.csv (10,000 rows: Product, Revenue, Date, Region), sorted
by date, and DIR/outliers.csv (the injected rows: Product, Revenue, Date,
Region, factor), which is kept aside for the checks and never staged.  The
same seed gives the same files on every machine (numpy's PCG64).

Ten products with their own price and popularity; sales grow through the
year, with a peak in November and December; a transaction is 1-13 units at
the list price less an occasional discount.  Eight transactions are bulk
orders at 8-20 times their usual revenue.
"""
import argparse
import csv
import os

import numpy as np

ROWS = 10000
OUTLIERS = 8
PRODUCTS = {  # name: (unit price, popularity)
    "Widget": (12.5, 14), "Gadget": (31.0, 10), "Doohickey": (7.25, 12), "Gizmo": (54.0, 6),
    "Sprocket": (3.1, 16), "Thingamajig": (19.9, 9), "Whatsit": (88.0, 4), "Flange": (15.75, 8),
    "Grommet": (2.4, 13), "Contraption": (129.0, 3),
}
REGIONS = {"North": 0.3, "South": 0.2, "East": 0.28, "West": 0.22}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=2025, help="random seed (2025)")
    ap.add_argument("--out", default=".", help="directory for the two files (.)")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)

    names = list(PRODUCTS)
    price = np.array([PRODUCTS[n][0] for n in names])
    weight = np.array([PRODUCTS[n][1] for n in names], dtype=float)
    product = rng.choice(len(names), ROWS, p=weight / weight.sum())
    region = rng.choice(list(REGIONS), ROWS, p=list(REGIONS.values()))
    # Days of 2025, weighted by a growth trend and a year-end peak.
    day = np.arange(365)
    season = (1 + 0.4 * day / 365) * (1 + 0.6 * np.exp(-((day - 340) / 25.0) ** 2))
    date = np.sort(rng.choice(day, ROWS, p=season / season.sum()))
    units = 1 + rng.binomial(12, 0.35, ROWS)
    discount = np.where(rng.random(ROWS) < 0.15, rng.choice([0.9, 0.8], ROWS), 1.0)
    revenue = price[product] * units * discount
    hit = rng.choice(ROWS, OUTLIERS, replace=False)
    factor = rng.uniform(8, 20, OUTLIERS)
    revenue[hit] *= factor
    revenue = np.round(revenue, 2)

    dates = (np.datetime64("2025-01-01") + date.astype("timedelta64[D]")).astype(str)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "sales.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["Product", "Revenue", "Date", "Region"])
        for i in range(ROWS):
            w.writerow([names[product[i]], f"{revenue[i]:.2f}", dates[i], region[i]])
    with open(os.path.join(args.out, "outliers.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["Product", "Revenue", "Date", "Region", "factor"])
        for i, x in sorted(zip(hit, factor)):
            w.writerow([names[product[i]], f"{revenue[i]:.2f}", dates[i], region[i], f"{x:.1f}"])


if __name__ == "__main__":
    main()
