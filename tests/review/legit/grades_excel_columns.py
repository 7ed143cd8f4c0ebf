"""Name spreadsheet-style columns (A, B, ... AA) for a wide export."""
import csv


def column_name(i):
    name = ""
    i += 1
    while i:
        i, rem = divmod(i - 1, 26)
        name = chr(ord("A") + rem) + name
    return name


with open("data/grades.tsv") as f:
    rows = list(csv.reader(f, delimiter="\t"))
header, body = rows[0], rows[1:]
students = sorted({r[0] for r in body})
with open("grades_wide.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["key"] + [column_name(i) for i in range(len(students))])
    w.writerow(["student"] + students)
print(column_name(0), column_name(25), column_name(26), column_name(701))
