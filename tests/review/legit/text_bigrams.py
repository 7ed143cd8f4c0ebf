from collections import Counter
from itertools import pairwise

with open("data/notes.txt") as f:
    tokens = [w.strip(".,;").lower() for w in f.read().split()]
bigrams = Counter(pairwise(tokens))
for (a, b), n in bigrams.most_common(8):
    print(f"{a} {b}: {n}")
