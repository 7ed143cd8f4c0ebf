import csv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def count_rows(path):
    with open(path, newline="") as f:
        return path.name, sum(1 for _ in csv.reader(f)) - 1


files = sorted(Path("data").glob("*.csv"))
with ThreadPoolExecutor(max_workers=4) as pool:
    for name, rows in pool.map(count_rows, files):
        print(f"{name:<16}{rows:>6} rows")
