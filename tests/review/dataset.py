"""The small dataset the legitimate scripts in legit/ analyse.

write_dataset(DIR) fills DIR/data/ with a dozen files (CSV, TSV, JSON, JSON
lines, a log, plain text), generated from a fixed seed so every run sees the
same bytes.  Scripts run with /workspace (the copy of DIR) as their working
directory and read `data/...`; they write under `output/` or /tmp.
"""
import csv
import datetime as dt
import json
import os
import random

REGIONS = ["North", "South", "East", "West"]
PRODUCTS = {"widget": 4.5, "gadget": 12.0, "gizmo": 7.25, "doohickey": 2.1, "sprocket": 9.9}
SENSORS = ["s-01", "s-02", "s-03"]
WORDS = ("the data model shows a clear trend in sales while the sensors report stable readings across "
         "every region but the west warehouse lags behind forecast and needs a closer look at inventory "
         "turnover returns and seasonal demand from new customers").split()


def _sales(rng, path):
    start = dt.date(2024, 1, 1)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["order_id", "date", "region", "product", "units", "unit_price", "customer_id"])
        for i in range(240):
            product = rng.choice(sorted(PRODUCTS))
            units = "" if i % 37 == 5 else rng.randint(1, 40)
            price = round(PRODUCTS[product] * rng.uniform(0.9, 1.1), 2)
            day = start + dt.timedelta(days=rng.randint(0, 180))
            w.writerow([1000 + i, day.isoformat(), rng.choice(REGIONS), product, units, price,
                        f"c{rng.randint(1, 60):03d}"])


def _sensors(rng, path):
    t0 = dt.datetime(2024, 3, 1)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["timestamp", "sensor_id", "temperature", "humidity", "pressure"])
        for h in range(24 * 7):
            for k, s in enumerate(SENSORS):
                temp = 18 + 4 * k / 3 + 3 * ((h % 24) - 12) / 12 + rng.gauss(0, 0.6)
                if (h * 3 + k) % 97 == 13:
                    temp = ""  # a dropped reading
                else:
                    temp = round(temp, 2)
                w.writerow([(t0 + dt.timedelta(hours=h)).isoformat(timespec="minutes"), s, temp,
                            round(rng.uniform(30, 70), 1), round(rng.gauss(1013, 4), 1)])


def _events(rng, path):
    t0 = dt.datetime(2024, 5, 1, 8, 0, 0)
    kinds = ["login", "view", "view", "view", "search", "purchase", "logout"]
    with open(path, "w") as f:
        for i in range(400):
            kind = rng.choice(kinds)
            ev = {"user": f"u{rng.randint(1, 25):03d}", "event": kind,
                  "ts": (t0 + dt.timedelta(seconds=37 * i + rng.randint(0, 30))).isoformat(),
                  "duration_ms": rng.randint(5, 2500),
                  "amount": round(rng.uniform(3, 250), 2) if kind == "purchase" else None}
            f.write(json.dumps(ev) + "\n")


def _inventory(rng, path):
    doc = {"generated": "2024-06-01", "warehouses": []}
    for name, city in (("WH-A", "Lyon"), ("WH-B", "Porto"), ("WH-C", "Gdansk")):
        items = [{"sku": f"{p[:3].upper()}-{n}", "product": p, "qty": rng.randint(0, 500),
                  "price": PRODUCTS[p], "tags": rng.sample(["fragile", "bulk", "promo", "new"], 2)}
                 for p in sorted(PRODUCTS) for n in range(2)]
        doc["warehouses"].append({"name": name, "city": city, "items": items})
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)


def _log(rng, path):
    t0 = dt.datetime(2024, 4, 2, 9, 0, 0)
    paths = ["/api/items", "/api/items/{}", "/api/orders", "/api/users/{}", "/health"]
    with open(path, "w") as f:
        for i in range(500):
            t = t0 + dt.timedelta(seconds=i * 7 + rng.randint(0, 6))
            p = rng.choice(paths).format(rng.randint(1, 99))
            status = rng.choices([200, 201, 304, 404, 500], [70, 8, 10, 8, 4])[0]
            level = "ERROR" if status >= 500 else "WARNING" if status >= 400 else "INFO"
            method = "POST" if status == 201 else "GET"
            f.write(f"{t:%Y-%m-%d %H:%M:%S},{rng.randint(0, 999):03d} {level} [api] {method} {p} "
                    f"{status} {rng.randint(2, 900)}ms\n")


def _survey(rng, path):
    comments = ["great service", "too slow, would not recommend", "ok", "", "loved it; will return",
                "price is high, quality \"fine\""]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["respondent", "age", "gender", "group", "score_before", "score_after",
                    "satisfaction", "comment"])
        for i in range(150):
            grp = "treatment" if i % 2 else "control"
            before = round(rng.gauss(60, 10), 1)
            after = round(before + rng.gauss(5 if grp == "treatment" else 1, 4), 1)
            w.writerow([f"r{i:03d}", rng.randint(18, 80), rng.choice("FMX"), grp, before, after,
                        rng.randint(1, 5), rng.choice(comments)])


def _stock(rng, path):
    day, price = dt.date(2023, 1, 2), 100.0
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["date", "open", "close", "volume"])
        while day < dt.date(2024, 1, 1):
            if day.weekday() < 5:
                o = price
                price = max(1.0, price * (1 + rng.gauss(0.0004, 0.015)))
                w.writerow([day.isoformat(), round(o, 2), round(price, 2), rng.randint(10000, 90000)])
            day += dt.timedelta(days=1)


def _experiment(rng, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["x", "y", "batch"])
        for i in range(80):
            x = i / 8
            w.writerow([x, round(2.5 * x ** 2 - 1.2 * x + 3 + rng.gauss(0, 2), 3), "ab"[i % 2]])


def _grades(rng, path):
    with open(path, "w") as f:
        f.write("student\tsubject\tgrade\tterm\n")
        for s in range(30):
            for subj in ("math", "physics", "history", "art"):
                for term in ("T1", "T2"):
                    f.write(f"st{s:02d}\t{subj}\t{rng.randint(40, 100)}\t{term}\n")


def _text(rng, path):
    with open(path, "w") as f:
        for p in range(12):
            sentences = []
            for _ in range(rng.randint(3, 6)):
                words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
                sentences.append(" ".join(words).capitalize() + ".")
            f.write(" ".join(sentences) + "\n\n")
        f.write("Contact: sales@example.com, support@example.org; phone +33 4 72 00 00 00.\n")


def _config(path):
    with open(path, "w") as f:
        json.dump({"currency": "EUR", "vat": 0.2, "target_units": 2500,
                   "regions": {r: {"manager": f"m-{r.lower()}"} for r in REGIONS}}, f, indent=2)


def write_dataset(root):
    """Write the dataset under ROOT/data/ (ROOT must exist)."""
    rng = random.Random(5)
    d = os.path.join(root, "data")
    os.makedirs(d, exist_ok=True)
    _sales(rng, os.path.join(d, "sales.csv"))
    _sensors(rng, os.path.join(d, "sensors.csv"))
    _events(rng, os.path.join(d, "events.jsonl"))
    _inventory(rng, os.path.join(d, "inventory.json"))
    _log(rng, os.path.join(d, "app.log"))
    _survey(rng, os.path.join(d, "survey.csv"))
    _stock(rng, os.path.join(d, "stock.csv"))
    _experiment(rng, os.path.join(d, "experiment.csv"))
    _grades(rng, os.path.join(d, "grades.tsv"))
    _text(rng, os.path.join(d, "notes.txt"))
    _config(os.path.join(d, "config.json"))


if __name__ == "__main__":
    import sys
    write_dataset(sys.argv[1] if len(sys.argv) > 1 else ".")
