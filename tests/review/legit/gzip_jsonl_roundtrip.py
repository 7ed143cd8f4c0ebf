import gzip
import json
import os

os.makedirs("output", exist_ok=True)
with open("data/events.jsonl") as src, gzip.open("output/events.jsonl.gz", "wt") as dst:
    for line in src:
        ev = json.loads(line)
        if ev["event"] != "view":
            dst.write(json.dumps(ev) + "\n")
with gzip.open("output/events.jsonl.gz", "rt") as f:
    kept = sum(1 for _ in f)
raw = os.path.getsize("data/events.jsonl")
packed = os.path.getsize("output/events.jsonl.gz")
print(f"kept {kept} events; {raw} -> {packed} bytes ({packed / raw:.0%})")
