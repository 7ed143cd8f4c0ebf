#!/usr/bin/env python3
"""Generate a year of hourly readings from an office building's electricity
meter, with anomalies of known kinds injected, and the ground truth kept aside.

    generate.py [--seed N] [--out DIR]

writes DIR/building_energy.csv (8,760 rows: timestamp, kwh, outdoor_temp_c)
and DIR/ground_truth.csv (one row per injected event: kind, start, end,
hours, detail).  Only building_energy.csv is meant for the agent; the ground
truth is for score.py.  The same seed gives the same files on every machine
(numpy's PCG64).

The normal load is a night base, an occupancy schedule (weekdays 07-19, a
short Saturday morning), heating below 15 C and cooling above 21 C, both
stronger while the building is occupied, and noise (3.5 % plus 1.5 kWh).  The
weather is a seasonal curve, a daily cycle and multi-day fronts.  Injected,
each at least three days from any other event and a week from either end of
the year:

  spike    one hour at 1.5-3x the normal value (a chiller short-cycling)
  dropout  1-6 hours of zero or near-zero readings (the logger lost its link)
  stuck    10-36 hours repeating the last good reading (a frozen sensor)
  drift    5-12 days of a calibration drift ramping up to +30-50 %, ending
           abruptly when the meter is recalibrated
"""
import argparse
import csv
import os

import numpy as np

YEAR_START = np.datetime64("2025-01-01T00:00")
HOURS = 8760
COUNTS = {"spike": 12, "dropout": 6, "stuck": 4, "drift": 2}
GAP = 72  # hours between events
MARGIN = 7 * 24


def weather(rng):
    """Outdoor temperature in C for every hour of the year."""
    t = np.arange(HOURS)
    doy = t / 24.0
    season = 10.5 - 10.0 * np.cos(2 * np.pi * (doy - 15) / 365)
    amplitude = 3.5 + 1.5 * (1 - np.cos(2 * np.pi * (doy - 15) / 365)) / 2
    daily = amplitude * np.cos(2 * np.pi * (t % 24 - 15) / 24)
    # Weather fronts: an AR(1) day-to-day anomaly, interpolated hourly.
    days = HOURS // 24 + 2
    front = np.zeros(days)
    for d in range(1, days):
        front[d] = 0.8 * front[d - 1] + rng.normal(0, 1.8)
    fronts = np.interp(doy, np.arange(days), front)
    return season + daily + fronts + rng.normal(0, 0.3, HOURS)


def occupancy(hour, dow):
    """Share of the building in use, 0..1, by hour of day and day of week."""
    weekday = np.array([0, 0, 0, 0, 0, 0, 0.3, 0.7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.7, 0.3, 0, 0, 0, 0])
    saturday = np.array([0] * 8 + [0.25] * 5 + [0] * 11)
    return np.where(dow < 5, weekday[hour], np.where(dow == 5, saturday[hour], 0.0))


def normal_load(temp, occ, rng):
    heating = np.clip(15.0 - temp, 0, None) * (1.4 + 1.6 * occ)
    cooling = np.clip(temp - 21.0, 0, None) * (0.4 + 3.6 * occ)
    load = 38.0 + 62.0 * occ + heating + cooling
    return load + rng.normal(0, 1, HOURS) * (0.035 * load) + rng.normal(0, 1.5, HOURS)


def place(rng, taken, length):
    """A start hour for an event of length hours, clear of the others."""
    for _ in range(10000):
        start = int(rng.integers(MARGIN, HOURS - MARGIN - length))
        if all(start + length + GAP <= s or e + GAP <= start for s, e in taken):
            taken.append((start, start + length))
            return start
    raise SystemExit("cannot place the anomalies: too many for one year")


def inject(kwh, rng):
    """Inject the anomalies into kwh in place; returns the events."""
    events, taken = [], []
    # Long events first, so that they find room.
    for kind in ("drift", "stuck", "dropout", "spike"):
        for _ in range(COUNTS[kind]):
            if kind == "spike":
                length = 1
            elif kind == "dropout":
                length = int(rng.integers(1, 7))
            elif kind == "stuck":
                length = int(rng.integers(10, 37))
            else:
                length = int(rng.integers(5, 13)) * 24
            s = place(rng, taken, length)
            span = slice(s, s + length)
            if kind == "spike":
                factor = rng.uniform(1.5, 3.0)
                kwh[s] *= factor
                detail = f"x{factor:.2f}"
            elif kind == "dropout":
                zero = rng.random() < 0.5
                kwh[span] = 0.0 if zero else rng.uniform(0, 0.4, length)
                detail = "zero" if zero else "near zero"
            elif kind == "stuck":
                kwh[span] = kwh[s - 1]
                detail = f"frozen at {kwh[s - 1]:.2f}"
            else:
                top = rng.uniform(0.3, 0.5)
                kwh[span] *= 1 + top * np.arange(1, length + 1) / length
                detail = f"ramp to +{top * 100:.0f}%"
            events.append((s, length, kind, detail))
    return sorted(events)


def stamp(hour):
    return str(YEAR_START + np.timedelta64(int(hour), "h")).replace("T", " ")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=2025, help="random seed (2025)")
    ap.add_argument("--out", default=".", help="directory for the two files (.)")
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    temp = weather(rng)
    t = np.arange(HOURS)
    dow = ((YEAR_START + t.astype("timedelta64[h]")).astype("datetime64[D]").view("int64") - 4) % 7  # 0 = Monday
    kwh = normal_load(temp, occupancy(t % 24, dow), rng)
    kwh = np.clip(np.round(kwh, 2), 0.5, None)  # a live meter never reads zero
    events = inject(kwh, rng)
    kwh = np.round(kwh, 2)

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "building_energy.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["timestamp", "kwh", "outdoor_temp_c"])
        for h in range(HOURS):
            w.writerow([stamp(h), f"{kwh[h]:.2f}", f"{temp[h]:.1f}"])
    with open(os.path.join(args.out, "ground_truth.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["kind", "start", "end", "hours", "detail"])
        for s, length, kind, detail in events:
            w.writerow([kind, stamp(s), stamp(s + length - 1), length, detail])


if __name__ == "__main__":
    main()
