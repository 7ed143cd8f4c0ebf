import re
import statistics

pattern = re.compile(r"(GET|POST) (/\S+) (\d{3}) (\d+)ms")
normalise = re.compile(r"/\d+")
latency = {}
with open("data/app.log", encoding="utf-8") as f:
    for line in f:
        m = pattern.search(line)
        if m:
            endpoint = normalise.sub("/{id}", m.group(2))
            latency.setdefault(endpoint, []).append(int(m.group(4)))

rows = []
for endpoint, values in latency.items():
    q = statistics.quantiles(values, n=20)
    rows.append((endpoint, len(values), statistics.median(values), q[-1]))
for endpoint, n, median, p95 in sorted(rows, key=lambda r: -r[3]):
    print(f"{endpoint:<18} n={n:<4} median={median:>6.1f}ms p95={p95:>6.1f}ms")
