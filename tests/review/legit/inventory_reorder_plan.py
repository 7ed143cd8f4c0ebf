import csv
import json
import math
from dataclasses import asdict, dataclass


@dataclass
class Reorder:
    warehouse: str
    sku: str
    qty: int
    order: int
    cost: float


with open("data/inventory.json") as f:
    doc = json.load(f)

TARGET = 300
PACK = 25
plan = []
for wh in doc["warehouses"]:
    for item in wh["items"]:
        if item["qty"] < TARGET:
            order = math.ceil((TARGET - item["qty"]) / PACK) * PACK
            plan.append(Reorder(wh["name"], item["sku"], item["qty"], order, round(order * item["price"], 2)))

with open("reorder_plan.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(asdict(plan[0])))
    w.writeheader()
    w.writerows(asdict(r) for r in plan)
print(f"{len(plan)} lines, total cost {sum(r.cost for r in plan):.2f}")
