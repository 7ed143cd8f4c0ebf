import csv
import json
from decimal import ROUND_HALF_UP, Decimal

with open("data/config.json") as f:
    vat = Decimal(str(json.load(f)["vat"]))
cent = Decimal("0.01")
totals = {}
with open("data/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        if not row["units"]:
            continue
        net = (Decimal(row["unit_price"]) * int(row["units"])).quantize(cent, ROUND_HALF_UP)
        totals[row["customer_id"]] = totals.get(row["customer_id"], Decimal(0)) + net
lines = [f"{c},{t},{(t * vat).quantize(cent, ROUND_HALF_UP)},{(t * (1 + vat)).quantize(cent)}"
         for c, t in sorted(totals.items())]
with open("invoices.csv", "w") as f:
    f.write("customer,net,vat,gross\n" + "\n".join(lines) + "\n")
print(len(lines), "invoices; grand total", sum(totals.values()))
