"""A data analysis of the kind the agent writes: sales by product, region
and month, with a few statistics, figures and files in output/.  Input:
bench/review.c reviews this file; it is never run by the benchmark."""
import csv
import json
import os
import re
import statistics
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from itertools import groupby
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

INPUT = Path("input")
OUTPUT = Path("output")
os.makedirs(OUTPUT / "figures", exist_ok=True)


def load_sales(path):
    """Read the sales table, parse dates and drop broken rows."""
    df = pd.read_csv(path)
    df.columns = [c.strip().lower().replace(" ", "_") for c in df.columns]
    df["date"] = pd.to_datetime(df["date"], errors="coerce")
    df["revenue"] = pd.to_numeric(df["revenue"], errors="coerce")
    before = len(df)
    df = df.dropna(subset=["date", "revenue"])
    print(f"loaded {len(df)} rows ({before - len(df)} dropped) from {path}")
    return df


def load_regions(path):
    regions = {}
    if not os.path.exists(path):
        return regions
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            regions[row["region"]] = row.get("manager", "unknown")
    return regions


def monthly(df):
    m = df.set_index("date").groupby([pd.Grouper(freq="M"), "product"])["revenue"].sum()
    return m.unstack(fill_value=0.0)


def top_products(df, n=5):
    return df.groupby("product")["revenue"].sum().nlargest(n)


def region_summary(df):
    g = df.groupby("region")["revenue"]
    out = pd.DataFrame({
        "total": g.sum(),
        "mean": g.mean(),
        "median": g.median(),
        "orders": g.count(),
    })
    out["share"] = out["total"] / out["total"].sum()
    return out.sort_values("total", ascending=False)


def growth(series):
    values = series.to_numpy(dtype=float)
    if len(values) < 2:
        return float("nan")
    x = np.arange(len(values))
    slope, intercept, r, p, se = stats.linregress(x, values)
    return slope, r ** 2, p


def weekday_profile(df):
    counts = Counter(d.strftime("%A") for d in df["date"])
    order = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    return [(day, counts.get(day, 0)) for day in order]


def outliers(df, z=3.0):
    r = df["revenue"]
    scores = np.abs(stats.zscore(r))
    return df[scores > z]


def compare_regions(df, a, b):
    ra = df.loc[df["region"] == a, "revenue"]
    rb = df.loc[df["region"] == b, "revenue"]
    if len(ra) < 2 or len(rb) < 2:
        return None
    t, p = stats.ttest_ind(ra, rb, equal_var=False)
    return {"t": float(t), "p": float(p), "mean_a": float(ra.mean()), "mean_b": float(rb.mean())}


def sku_family(product):
    m = re.match(r"([A-Za-z]+)", str(product))
    return m.group(1).lower() if m else "other"


def plot_monthly(table, path):
    fig, ax = plt.subplots(figsize=(9, 5))
    for col in table.columns[:8]:
        ax.plot(table.index, table[col], marker="o", label=str(col))
    ax.set_title("Monthly revenue by product")
    ax.set_xlabel("month")
    ax.set_ylabel("revenue")
    ax.legend(loc="upper left", fontsize="small")
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_regions(summary, path):
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(summary.index.astype(str), summary["total"], color="tab:blue")
    ax.set_title("Revenue by region")
    for i, v in enumerate(summary["total"]):
        ax.text(i, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(path, facts):
    lines = ["# Sales report", "", f"Generated {datetime.now():%Y-%m-%d %H:%M}", ""]
    for key, value in facts.items():
        if isinstance(value, float):
            value = f"{value:,.2f}"
        lines.append(f"- **{key}**: {value}")
    Path(path).write_text("\n".join(lines) + "\n")


def main():
    df = load_sales(INPUT / "sales.csv")
    managers = load_regions(INPUT / "regions.csv")
    df["family"] = df["product"].map(sku_family)
    df["manager"] = df["region"].map(managers).fillna("unknown")

    top = top_products(df)
    print("top products:")
    print(top.to_string())
    top.to_csv(OUTPUT / "top_products.csv", header=["revenue"])

    summary = region_summary(df)
    summary.to_csv(OUTPUT / "regions.csv")
    plot_regions(summary, OUTPUT / "figures" / "regions.png")

    table = monthly(df)
    table.to_csv(OUTPUT / "monthly.csv")
    plot_monthly(table, OUTPUT / "figures" / "monthly.png")

    trend = {}
    for product in table.columns:
        result = growth(table[product])
        if isinstance(result, tuple):
            slope, r2, p = result
            trend[str(product)] = {"slope": round(slope, 3), "r2": round(r2, 3), "p": round(p, 4)}

    weekly = weekday_profile(df)
    by_family = {k: len(list(g)) for k, g in groupby(sorted(df["family"]))}
    odd = outliers(df)
    odd.to_csv(OUTPUT / "outliers.csv", index=False)

    regions = list(summary.index)
    tests = {}
    for i, a in enumerate(regions):
        for b in regions[i + 1:]:
            res = compare_regions(df, a, b)
            if res:
                tests[f"{a} vs {b}"] = res

    daily = df.groupby(df["date"].dt.date)["revenue"].sum()
    last_week = [d for d in daily.index if d >= max(daily.index) - timedelta(days=6)]
    facts = {
        "rows": len(df),
        "total revenue": float(df["revenue"].sum()),
        "mean order": statistics.mean(df["revenue"]),
        "median order": statistics.median(df["revenue"]),
        "best product": str(top.index[0]),
        "best region": str(summary.index[0]),
        "outliers": len(odd),
        "days in last week": len(last_week),
        "busiest weekday": max(weekly, key=lambda kv: kv[1])[0],
    }
    write_report(OUTPUT / "report.md", facts)
    with open(OUTPUT / "analysis.json", "w") as f:
        json.dump({"facts": facts, "trend": trend, "families": by_family, "tests": tests}, f, indent=2,
                  default=str)
    print(json.dumps(facts, indent=2, default=str))


if __name__ == "__main__":
    main()
