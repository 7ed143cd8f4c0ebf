"""Filter the sales file by region and minimum units (an argparse tool)."""
import argparse
import csv
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--input", default="data/sales.csv")
    parser.add_argument("--region", default="North", choices=["North", "South", "East", "West"])
    parser.add_argument("--min-units", type=int, default=10)
    parser.add_argument("--output", default="output/filtered.csv")
    args = parser.parse_args(argv)

    import os
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    kept = 0
    with open(args.input, newline="") as src, open(args.output, "w", newline="") as dst:
        reader = csv.DictReader(src)
        writer = csv.DictWriter(dst, fieldnames=reader.fieldnames)
        writer.writeheader()
        for row in reader:
            if row["region"] == args.region and row["units"] and int(row["units"]) >= args.min_units:
                writer.writerow(row)
                kept += 1
    print(f"kept {kept} rows for {args.region}")
    return 0 if kept else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["--region", "East", "--min-units", "5"]))
