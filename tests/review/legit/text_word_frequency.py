import re
from collections import Counter
from pathlib import Path

text = Path("data/notes.txt").read_text(encoding="utf-8")
words = re.findall(r"[a-z']+", text.lower())
freq = Counter(words)
print(f"{len(words)} words, {len(freq)} distinct")
for word, n in freq.most_common(10):
    print(f"{word:<12}{n:>4}")
Path("word_counts.tsv").write_text("".join(f"{w}\t{n}\n" for w, n in freq.most_common()))
