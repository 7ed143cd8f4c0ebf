import csv
import os
import shutil
import tempfile

# Stage the cleaned file in a temporary directory, then move it into place.
with tempfile.TemporaryDirectory() as tmp:
    staged = os.path.join(tmp, "clean.csv")
    with open("data/sales.csv", newline="") as src, open(staged, "w", newline="") as dst:
        r, w = csv.reader(src), csv.writer(dst)
        header = next(r)
        w.writerow(header)
        w.writerows(row for row in r if all(row))
    os.makedirs("output", exist_ok=True)
    shutil.copy(staged, "output/sales_clean.csv")
    print("staged in", os.path.dirname(staged).startswith(tempfile.gettempdir()))
print(sum(1 for _ in open("output/sales_clean.csv")) - 1, "clean rows")
