import csv
import re
import string
from collections import Counter

STOP = {"is", "it", "a", "the", "will", "would", "not", "too"}
words = Counter()
empty = 0
with open("data/survey.csv", newline="", encoding="utf-8") as f:
    for row in csv.DictReader(f):
        text = row["comment"].strip().lower()
        if not text:
            empty += 1
            continue
        text = text.translate(str.maketrans("", "", string.punctuation))
        words.update(w for w in re.split(r"\s+", text) if w and w not in STOP)
print(f"{empty} empty comments")
for word, n in words.most_common(8):
    print(f"{word:<12}{n}")
