import heapq
import re

entries = []
with open("data/app.log") as f:
    for line in f:
        m = re.search(r" (\S+) (\d{3}) (\d+)ms$", line)
        if m:
            entries.append((int(m.group(3)), m.group(1), line[:19]))
for ms, path, when in heapq.nlargest(5, entries):
    print(f"{ms:>5} ms  {path:<18} {when}")
print("fastest:", heapq.nsmallest(3, entries)[0][:2])
