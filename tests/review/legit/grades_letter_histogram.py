from bisect import bisect
from collections import Counter

CUTS = [50, 60, 70, 80, 90]
LETTERS = "FEDCBA"


def letter(score):
    return LETTERS[bisect(CUTS, score)]


counts = Counter()
with open("data/grades.tsv") as f:
    next(f)
    for line in f:
        student, subject, grade, term = line.rstrip("\n").split("\t")
        counts[letter(int(grade))] += 1
total = sum(counts.values())
for grade in reversed(LETTERS):
    n = counts[grade]
    print(f"{grade} {n:>4} {n / total:6.1%} {'*' * (n // 4)}")
