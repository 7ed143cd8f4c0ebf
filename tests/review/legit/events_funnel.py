import json
from collections import Counter

counts = Counter()
users_by_step = {"login": set(), "view": set(), "search": set(), "purchase": set()}
with open("data/events.jsonl") as f:
    for line in f:
        ev = json.loads(line)
        counts[ev["event"]] += 1
        if ev["event"] in users_by_step:
            users_by_step[ev["event"]].add(ev["user"])

print("events:", dict(counts.most_common()))
prev = None
for step in ["login", "view", "search", "purchase"]:
    n = len(users_by_step[step])
    rate = f" ({n / prev:.0%} of previous step)" if prev else ""
    print(f"{step:<9} {n:>3} users{rate}")
    prev = n or None
