import re
import statistics

with open("data/notes.txt") as f:
    paragraphs = [p for p in f.read().split("\n\n") if p.strip()]
sentences = [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+", p.strip()) if s]
lengths = [len(s.split()) for s in sentences]
print(f"paragraphs: {len(paragraphs)}, sentences: {len(sentences)}")
print(f"words per sentence: mean {statistics.mean(lengths):.1f}, median {statistics.median(lengths)}, "
      f"mode {statistics.mode(lengths)}")
longest = max(sentences, key=len)
print("longest sentence:", longest[:80] + ("..." if len(longest) > 80 else ""))
