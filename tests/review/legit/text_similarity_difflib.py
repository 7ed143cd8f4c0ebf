import difflib

with open("data/notes.txt") as f:
    paragraphs = [p.strip() for p in f.read().split("\n\n") if p.strip()]
pairs = []
for i in range(len(paragraphs)):
    for j in range(i + 1, len(paragraphs)):
        ratio = difflib.SequenceMatcher(None, paragraphs[i], paragraphs[j]).quick_ratio()
        pairs.append((ratio, i, j))
pairs.sort(reverse=True)
for ratio, i, j in pairs[:3]:
    print(f"paragraphs {i} and {j}: similarity {ratio:.2f}")
close = difflib.get_close_matches("inventroy", " ".join(paragraphs).split(), n=3)
print("did you mean:", close)
