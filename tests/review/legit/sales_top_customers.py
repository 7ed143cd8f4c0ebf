import csv
from collections import Counter, defaultdict

spend = defaultdict(float)
orders = Counter()
with open("data/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        if not row["units"]:
            continue
        spend[row["customer_id"]] += int(row["units"]) * float(row["unit_price"])
        orders[row["customer_id"]] += 1

top = sorted(spend.items(), key=lambda kv: kv[1], reverse=True)[:10]
print(f"{'customer':<10}{'orders':>8}{'spend':>12}")
for cust, total in top:
    print(f"{cust:<10}{orders[cust]:>8}{total:>12.2f}")

with open("top_customers.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["customer_id", "orders", "spend"])
    for cust, total in top:
        w.writerow([cust, orders[cust], round(total, 2)])
