import re
from collections import Counter, defaultdict

LINE = re.compile(r"^(?P<date>\S+) (?P<time>\S+) (?P<level>[A-Z]+) \[(?P<svc>\w+)\] "
                  r"(?P<method>[A-Z]+) (?P<path>\S+) (?P<status>\d{3}) (?P<ms>\d+)ms$")

levels = Counter()
per_minute = defaultdict(lambda: [0, 0])
bad = 0
with open("data/app.log") as f:
    for line in f:
        m = LINE.match(line.strip())
        if not m:
            bad += 1
            continue
        levels[m["level"]] += 1
        minute = m["time"][:5]
        per_minute[minute][0] += 1
        per_minute[minute][1] += m["status"].startswith("5")

print("levels:", dict(levels), "unparsed:", bad)
worst = sorted(per_minute.items(), key=lambda kv: kv[1][1] / kv[1][0], reverse=True)[:5]
for minute, (total, errors) in worst:
    print(f"{minute}  {errors}/{total} server errors")
