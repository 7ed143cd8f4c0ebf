from collections import Counter
from fractions import Fraction
from math import gcd

import csv

with open("data/survey.csv", newline="") as f:
    groups = Counter(r["gender"] for r in csv.DictReader(f))
total = sum(groups.values())
for g, n in sorted(groups.items()):
    share = Fraction(n, total)
    print(f"{g}: {share} ({float(share):.1%})")
values = list(groups.values())
common = values[0]
for v in values[1:]:
    common = gcd(common, v)
print("ratio:", ":".join(str(v // common) for v in values))
