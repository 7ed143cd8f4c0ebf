"""Anomalies in input/building_energy.csv: a weather-aware baseline per hour
of week, robust z-scores of the residuals, and rules for dropouts and stuck
readings.  Writes output/anomalies.csv, output/energy_anomalies.png and
output/report.md."""
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

# 8,760 hours are 8,760 tests: the textbook 3.5 would raise false alarms
# every week, so one hour must reach |z| >= 5 (for a normal, under 1 in a million).
Z_SPIKE = 5.0     # |robust z| of one hour
Z_DRIFT = 2.0     # median robust z over 48 hours (a sustained shift)
STUCK_HOURS = 4   # identical readings in a row

df = pd.read_csv("input/building_energy.csv", parse_dates=["timestamp"])
df = df.sort_values("timestamp").reset_index(drop=True)
df["how"] = df.timestamp.dt.dayofweek * 24 + df.timestamp.dt.hour  # 0 = Monday 00:00
kwh = df.kwh.to_numpy()

# Rules first, for readings that are not consumption at all.
dropout = kwh < 0.05 * np.median(kwh)
run = df.kwh.diff().ne(0).cumsum()
stuck = (df.groupby(run).kwh.transform("size") >= STUCK_HOURS).to_numpy() & ~dropout
ok = ~(dropout | stuck)


def robust_fit(X, y, rounds=6):
    """Least squares with Huber weights: outliers cannot pull the fit."""
    w = np.ones(len(y))
    for _ in range(rounds):
        sw = np.sqrt(w)
        beta = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)[0]
        r = y - X @ beta
        s = 1.4826 * np.median(np.abs(r - np.median(r)))
        w = np.minimum(1.0, 1.5 * s / np.maximum(np.abs(r), 1e-9))
    return beta


# Baseline = hour-of-week profile (median) + heating/cooling response, the
# response stronger in busy hours (busy = the profile's share of its range).
temp = df.outdoor_temp_c.to_numpy()
hdd = np.clip(15.5 - temp, 0, None)
cdd = np.clip(temp - 22.0, 0, None)
how = df.how.to_numpy()
weather = np.zeros(len(df))
for _ in range(3):
    profile = pd.Series(kwh - weather)[ok].groupby(how[ok]).median()
    base = profile.reindex(how).to_numpy()
    busy = ((profile - profile.min()) / (profile.max() - profile.min())).reindex(how).to_numpy()
    X = np.column_stack([np.ones(len(df)), hdd, hdd * busy, cdd, cdd * busy])
    beta = robust_fit(X[ok], (kwh - base)[ok])
    weather = X @ beta
expected = base + weather
df["expected"] = expected.round(2)

# Robust z of the residual, per hour of week: median and MAD of the good hours.
resid = pd.Series(kwh - expected)
centre = resid[ok].groupby(how[ok]).median().reindex(how).to_numpy()
mad = resid[ok].groupby(how[ok]).apply(lambda r: np.median(np.abs(r - r.median()))).reindex(how).to_numpy()
z = (resid.to_numpy() - centre) / (1.4826 * np.maximum(mad, 0.5))
df["robust_z"] = z.round(2)

sustained = pd.Series(np.where(ok, z, np.nan)).rolling(48, center=True, min_periods=24).median().to_numpy()
drift = ok & (sustained >= Z_DRIFT)
kind = np.select([dropout, stuck, drift, ok & (z >= Z_SPIKE), ok & (z <= -Z_SPIKE)],
                 ["dropout", "stuck", "drift", "spike", "dip"], default="")
df["kind"] = kind
anom = df[kind != ""][["timestamp", "kwh", "expected", "robust_z", "kind"]]

os.makedirs("output", exist_ok=True)
anom.to_csv("output/anomalies.csv", index=False, date_format="%Y-%m-%d %H:%M")

# Events: runs of consecutive flagged hours of one kind.
new = (anom.kind != anom.kind.shift()) | (anom.timestamp.diff() != pd.Timedelta(hours=1))
events = anom.assign(event=new.cumsum()).groupby("event").agg(
    kind=("kind", "first"), start=("timestamp", "first"), end=("timestamp", "last"),
    hours=("kwh", "size"), peak_z=("robust_z", lambda s: s.loc[s.abs().idxmax()]))
counts = events.groupby("kind").agg(events=("hours", "size"), hours=("hours", "sum"))

colors = {"spike": "tab:red", "dip": "tab:purple", "dropout": "black", "stuck": "tab:orange", "drift": "tab:green"}
fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
ax1.plot(df.timestamp, df.kwh, lw=0.3, color="0.6", label="kWh")
ax1.plot(df.timestamp, pd.Series(expected).rolling(24, center=True).mean(), lw=0.8, color="tab:blue",
         label="expected (24 h mean)")
ax2.plot(df.timestamp, df.robust_z.clip(-15, 15), lw=0.3, color="0.5")
for k, c in colors.items():
    sel = anom[anom.kind == k]
    if len(sel):
        ax1.scatter(sel.timestamp, sel.kwh, s=8, color=c, label=f"{k} ({len(sel)} h)", zorder=3)
        ax2.scatter(sel.timestamp, sel.robust_z.clip(-15, 15), s=6, color=c, zorder=3)
for y in (Z_SPIKE, -Z_SPIKE):
    ax2.axhline(y, ls="--", lw=0.8, color="tab:red")
ax1.set_ylabel("kWh per hour")
ax1.set_title("Building energy: hourly consumption and flagged anomalies")
ax1.set_ylim(-5, df.kwh.max() * 1.3)  # room for the legend
ax1.legend(loc="upper left", fontsize=8, ncol=7)
ax2.set_ylabel("robust z (clipped)")
fig.tight_layout()
fig.savefig("output/energy_anomalies.png", dpi=100)

fmt = "%Y-%m-%d %H:%M"
lines = [
    "# Building energy: anomaly report", "",
    f"Data: `input/building_energy.csv`, {len(df):,} hourly readings from {df.timestamp.min():{fmt}} "
    f"to {df.timestamp.max():{fmt}}; mean {kwh.mean():.1f} kWh/h.", "",
    "## Method", "",
    "- **Baseline**: the median of each hour of the week (168 profiles) plus a heating/cooling response "
    f"(degree-hours below 15.5 C and above 22 C, stronger in busy hours), fitted robustly (Huber); "
    f"heating {beta[1]:.2f}+{beta[2]:.2f}*busy kWh per degree-hour, cooling {beta[3]:.2f}+{beta[4]:.2f}*busy.",
    "- **Robust z**: (residual - median) / (1.4826 * MAD) of the residuals of the same hour of the week.",
    f"- **Flags**: |z| >= {Z_SPIKE:g} in one hour (spike, or dip when negative); a 48-hour median z >= "
    f"{Z_DRIFT:g} (drift); readings under 5 % of the median (dropout); the same reading {STUCK_HOURS}+ hours "
    "in a row (stuck sensor).", "",
    "## Summary", "",
    f"{len(anom)} hours flagged in {len(events)} events.", "",
    "| kind | events | hours |", "|---|---:|---:|",
]
lines += [f"| {k} | {r.events} | {r.hours} |" for k, r in counts.iterrows()]
lines += ["", "## Largest single-hour anomalies", "",
          "| timestamp | kWh | expected | robust z |", "|---|---:|---:|---:|"]
top = anom[anom.kind.isin(["spike", "dip"])].reindex(
    anom[anom.kind.isin(["spike", "dip"])].robust_z.abs().sort_values(ascending=False).index).head(10)
lines += [f"| {r.timestamp:{fmt}} | {r.kwh:.2f} | {r.expected:.2f} | {r.robust_z:+.1f} |" for r in top.itertuples()]
lines += ["", "## All events", "", "| kind | start | end | hours | peak z |", "|---|---|---|---:|---:|"]
lines += [f"| {e.kind} | {e.start:{fmt}} | {e.end:{fmt}} | {e.hours} | {e.peak_z:+.1f} |" for e in events.itertuples()]
lines += ["", "![anomalies](energy_anomalies.png)", ""]
with open("output/report.md", "w") as f:
    f.write("\n".join(lines))

print(f"flagged {len(anom)} hours in {len(events)} events:",
      ", ".join(f"{k} {r.events} ({r.hours} h)" for k, r in counts.iterrows()))
print("largest:", "; ".join(f"{r.timestamp:{fmt}} {r.kind} z={r.robust_z:+.1f}" for r in top.head(5).itertuples()))
for e in events[events.kind.isin(["dropout", "stuck", "drift"])].itertuples():
    print(f"  {e.kind:8} {e.start:{fmt}} .. {e.end:{fmt}} ({e.hours} h)")
