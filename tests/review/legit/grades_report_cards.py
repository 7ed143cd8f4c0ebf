import csv
from collections import defaultdict
from pathlib import Path

grades = defaultdict(dict)
with open("data/grades.tsv", newline="") as f:
    for row in csv.DictReader(f, delimiter="\t"):
        grades[row["student"]][(row["subject"], row["term"])] = int(row["grade"])

out_dir = Path("output") / "report_cards"
out_dir.mkdir(parents=True, exist_ok=True)
for student, marks in grades.items():
    lines = [f"Report card: {student}", ""]
    for subject in sorted({s for s, _ in marks}):
        t1, t2 = marks[(subject, "T1")], marks[(subject, "T2")]
        trend = "up" if t2 > t1 else "down" if t2 < t1 else "flat"
        lines.append(f"{subject:<8} T1={t1:>3} T2={t2:>3} ({trend})")
    (out_dir / f"{student}.txt").write_text("\n".join(lines) + "\n")
print(len(list(out_dir.glob("*.txt"))), "report cards written")
