"""Generate a year of daily sales for a small shop: sales.csv.

Deterministic (seeded) so the demo's findings are the same on every machine.
Columns: Date, Product, Region, Units, Revenue.  A few days carry injected
anomalies (a bulk order, a refund-like dip), which the analysis should flag.
"""
import csv
import datetime
import math
import random
import sys

random.seed(7)
products = {"Widget": 12.5, "Gadget": 31.0, "Doohickey": 7.25, "Gizmo": 54.0,
            "Sprocket": 3.1, "Thingamajig": 19.9, "Whatsit": 88.0}
regions = ["North", "South", "East", "West"]
anomalies = {("Gizmo", 123): 9.0, ("Widget", 200): 7.0, ("Whatsit", 287): 0.05}

out = csv.writer(open(sys.argv[1], "w", newline=""))
out.writerow(["Date", "Product", "Region", "Units", "Revenue"])
for day in range(365):
    date = (datetime.date(2025, 1, 1) + datetime.timedelta(days=day)).isoformat()
    season = 1.0 + 0.3 * math.sin(2 * math.pi * day / 365)
    weekend = 1.4 if day % 7 in (5, 6) else 1.0
    for product, price in products.items():
        region = regions[(day + len(product)) % 4]
        units = max(0, int(random.gauss(20, 2.5) * season * weekend * anomalies.get((product, day), 1.0)))
        out.writerow([date, product, region, units, round(units * price, 2)])
