import csv
from dataclasses import dataclass
from operator import attrgetter, itemgetter


@dataclass(frozen=True)
class Order:
    order_id: int
    region: str
    units: int
    unit_price: float

    @property
    def revenue(self):
        return self.units * self.unit_price


with open("data/sales.csv", newline="") as f:
    orders = [Order(int(r["order_id"]), r["region"], int(r["units"]), float(r["unit_price"]))
              for r in csv.DictReader(f) if r["units"]]
by_rev = sorted(orders, key=attrgetter("revenue"), reverse=True)[:5]
for o in by_rev:
    print(o.order_id, o.region, round(o.revenue, 2))
pairs = sorted(((o.region, o.units) for o in orders), key=itemgetter(1, 0))[-3:]
print(pairs)
