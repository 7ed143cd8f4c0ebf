import json

import numpy as np

durations = {}
with open("data/events.jsonl") as f:
    for line in f:
        ev = json.loads(line)
        durations.setdefault(ev["event"], []).append(ev["duration_ms"])

print(f"{'event':<10}{'n':>5}{'p50':>8}{'p90':>8}{'p99':>8}")
for event, values in sorted(durations.items()):
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    print(f"{event:<10}{len(values):>5}{p50:>8.0f}{p90:>8.0f}{p99:>8.0f}")
