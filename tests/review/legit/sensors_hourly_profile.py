import csv
import statistics
from collections import defaultdict
from datetime import datetime

by_hour = defaultdict(list)
with open("data/sensors.csv", newline="") as f:
    for row in csv.DictReader(f):
        if row["temperature"] == "":
            continue
        hour = datetime.fromisoformat(row["timestamp"]).hour
        by_hour[hour].append(float(row["temperature"]))

for hour in sorted(by_hour):
    vals = by_hour[hour]
    print(f"{hour:02d}:00  mean={statistics.mean(vals):6.2f}  sd={statistics.stdev(vals):5.2f}  n={len(vals)}")
warmest = max(by_hour, key=lambda h: statistics.mean(by_hour[h]))
print("warmest hour:", warmest)
