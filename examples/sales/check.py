#!/usr/bin/env python3
"""Check the sales example's artifacts against the data they came from.

    check.py OUTPUT_DIR DATA_DIR

prints two lines: whether OUTPUT_DIR/top5.csv names the five products with
the highest total revenue in DATA_DIR/sales.csv, in order, and how many of
the injected outliers (DATA_DIR/outliers.csv, never staged) are among the
transactions in OUTPUT_DIR/anomalies.csv (matched on product, date and
revenue).  Exit status 0 when the top 5 match and every outlier is flagged,
1 when not, 2 when a file is missing or unreadable.
"""
import os
import sys

import pandas as pd


def read(path):
    try:
        return pd.read_csv(path)
    except (OSError, ValueError) as e:
        print(f"check.py: cannot read '{path}': {e}", file=sys.stderr)
        sys.exit(2)


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    out, data = sys.argv[1:]
    sales = read(os.path.join(data, "sales.csv"))
    injected = read(os.path.join(data, "outliers.csv"))
    top5 = read(os.path.join(out, "top5.csv"))
    anomalies = read(os.path.join(out, "anomalies.csv"))

    want = sales.groupby("Product").Revenue.sum().sort_values(ascending=False).head(5).index.tolist()
    got = top5.iloc[:, 0].astype(str).str.strip().tolist()[:5]
    ok = got == want
    print(f"top 5: {', '.join(got)}: " + ("matches the data" if ok else f"the data says {', '.join(want)}"))

    cols = {c.lower(): c for c in anomalies.columns}
    if not {"product", "date", "revenue"} <= cols.keys():
        print(f"anomalies.csv lacks Product, Date or Revenue (columns: {', '.join(anomalies.columns)})")
        return 1
    flagged = {(str(p), str(d)[:10], round(float(r), 2)) for p, d, r in
               zip(anomalies[cols["product"]], anomalies[cols["date"]], anomalies[cols["revenue"]])}
    found = sum((p, d, round(r, 2)) in flagged for p, d, r in zip(injected.Product, injected.Date, injected.Revenue))
    print(f"outliers: {found} of the {len(injected)} injected among the {len(anomalies)} transactions flagged")
    return 0 if ok and found == len(injected) else 1


if __name__ == "__main__":
    sys.exit(main())
