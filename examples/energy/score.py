#!/usr/bin/env python3
"""Score the anomalies an agent flagged against the generator's ground truth.

    score.py ANOMALIES_CSV GROUND_TRUTH_CSV [--tolerance HOURS] [--by-kind]

prints one line, e.g.

    precision 0.96  recall 1.00  F1 0.98  (flagged 25, true 24; 419 hours flagged, tolerance 2 h)

The flagged hours are grouped into runs of consecutive hours: a run is one
finding ("flagged 25"), a true event one injected anomaly ("true 24"), so
a 10-day drift counts once on either side rather than as 240 hours.

- precision: the share of runs of which at least half the hours fall inside
  a true event, widened by the tolerance on either side (flagging whole
  months makes one run that is mostly wrong, so it cannot score well);
- recall: the share of true events with at least one flagged hour inside
  their widened window;
- F1: their harmonic mean.

The tolerance (2 hours by default) absorbs where an event's edges are fuzzy
by nature: a stuck sensor repeats the last good reading, so the hour before
the event already holds the frozen value; a rolling window places a drift's
end within an hour or two.  The kind an agent gives is not scored (its names
need not match ours); --by-kind adds the recall per injected kind.

The flagged hours are the rows of ANOMALIES_CSV: its "timestamp" column (or
the first column whose name contains "time" or "date"), parsed by pandas.
Exit status 0 after printing the line; 2 when a file is missing or has no
usable timestamps (the reason on stderr).
"""
import argparse
import sys

import pandas as pd


def load_flags(path):
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise SystemExit(f"score.py: cannot read '{path}': {e}") from None
    cols = [c for c in df.columns if str(c).strip().lower() == "timestamp"]
    cols = cols or [c for c in df.columns if "time" in str(c).lower() or "date" in str(c).lower()]
    if not cols:
        raise SystemExit(f"score.py: '{path}' has no timestamp column (columns: {', '.join(map(str, df.columns))})")
    ts = pd.to_datetime(df[cols[0]], errors="coerce")
    if len(df) and ts.isna().all():
        raise SystemExit(f"score.py: '{path}': the column '{cols[0]}' holds no timestamps")
    return pd.DatetimeIndex(ts.dropna().unique()).sort_values()


def score(flags, truth, tolerance):
    """(precision, recall, runs, per-kind recall) of flagged hours against the events."""
    tol = pd.Timedelta(hours=tolerance)
    inside = pd.Series(False, index=flags)
    found = []
    for a, b in zip(truth.start - tol, truth.end + tol):
        hit = (flags >= a) & (flags <= b)
        inside |= hit
        found.append(bool(hit.any()))
    run = pd.Series(flags).diff().ne(pd.Timedelta(hours=1)).cumsum().to_numpy()
    good = inside.groupby(run).mean() >= 0.5
    precision = float(good.mean()) if len(good) else 0.0
    recall = sum(found) / len(truth) if len(truth) else 0.0
    by_kind = truth.assign(found=found).groupby("kind").found.agg(["sum", "size"])
    return precision, recall, len(good), by_kind


def main():
    ap = argparse.ArgumentParser(description="precision/recall of flagged anomalies against the ground truth")
    ap.add_argument("anomalies")
    ap.add_argument("truth")
    ap.add_argument("--tolerance", type=int, default=2, help="hours either side of an event (2)")
    ap.add_argument("--by-kind", action="store_true", help="also print the recall per kind")
    args = ap.parse_args()

    try:
        truth = pd.read_csv(args.truth, parse_dates=["start", "end"])
    except (OSError, ValueError) as e:
        raise SystemExit(f"score.py: cannot read the ground truth '{args.truth}': {e}") from None
    flags = load_flags(args.anomalies)
    p, r, runs, by_kind = score(flags, truth, args.tolerance)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    print(f"precision {p:.2f}  recall {r:.2f}  F1 {f1:.2f}  "
          f"(flagged {runs}, true {len(truth)}; {len(flags)} hours flagged, tolerance {args.tolerance} h)")
    if args.by_kind:
        print("recall by kind: " + ", ".join(f"{k} {row['sum']}/{row['size']}" for k, row in by_kind.iterrows()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
