import csv
import io

for path in ("data/sales.csv", "data/grades.tsv"):
    with open(path, newline="") as f:
        sample = f.read(2048)
        dialect = csv.Sniffer().sniff(sample)
        has_header = csv.Sniffer().has_header(sample)
        f.seek(0)
        rows = list(csv.reader(f, dialect))
    print(f"{path}: delimiter={dialect.delimiter!r} header={has_header} rows={len(rows)}")
out = io.StringIO()
csv.writer(out, quoting=csv.QUOTE_NONNUMERIC).writerows([["a", 1], ["b, c", 2.5]])
print(out.getvalue().strip())
