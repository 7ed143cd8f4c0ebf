#!/usr/bin/env python3
"""Plot bench/sessions.py's results: docs/sessions-bench.png.

    bench/plot-sessions.py [RESULTS_JSON] [PNG]
        (default bench/out/sessions.json, docs/sessions-bench.png)

Left: a new session ready with pandas + matplotlib imported, warm and cold,
beside the same import under `corral exec` and bare on the host (every
sample, log scale).  Right: the five-turn sales scenario, each step's
execution time (p50, the bars; min to max, the whiskers) with a session and
with a fresh process per step, and in a warm session when it was measured.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STEPS = ["load", "clean", "top 5", "plot", "anomalies"]


def median(xs):
    s = sorted(xs)
    n = len(s)
    return (s[n // 2] + s[(n - 1) // 2]) / 2


def latency(ax, r):
    series = []
    if r.get("start"):
        series += [("warm session\n(zygote)", r["start"]["warm_ms"], "tab:green"),
                   ("cold session", r["start"]["cold_ms"], "tab:orange")]
    series += [("corral exec\npython3 -c import", r["imports"]["exec"], "tab:red"),
               ("bare python3 -c\nimport (host)", r["imports"]["bare"], "tab:gray")]
    for i, (_, xs, color) in enumerate(series):
        jitter = [i + 0.25 * ((k * 7919) % 100 / 100 - 0.5) for k in range(len(xs))]
        ax.scatter(jitter, xs, s=9, alpha=0.6, color=color)
        m = median(xs)
        ax.hlines(m, i - 0.3, i + 0.3, color="black", lw=1.5)
    ax.axhline(30, color="tab:green", ls="--", lw=0.8)
    ax.annotate("target 30 ms", (len(series) - 0.15, 32), ha="right", fontsize=8, color="tab:green")
    ax.set_yscale("log")
    ax.set_ylim(5, 5000)
    ax.set_yticks([10, 30, 100, 300, 1000, 3000], ["10", "30", "100", "300", "1000", "3000"])
    ax.set_xticks(range(len(series)), [f"{name}\np50 {median(xs):.0f} ms" for name, xs, _ in series], fontsize=8)
    ax.set_xlim(-0.5, len(series) - 0.1)
    ax.set_ylabel("ms (log scale); bar: p50")
    ax.set_title("Ready with pandas + matplotlib.pyplot imported", fontsize=10)


def scenario(ax, sc):
    modes = [("session", "corral run (warm session)", "tab:blue"),
             ("cold", "corral run --cold", "tab:purple"),
             ("stateless", "fresh process (--stateless)", "tab:orange")]
    if sc.get("warm"):
        modes.append(("warm", "warm session (session exec)", "tab:green"))
    width = 0.8 / len(modes)
    for j, (key, label, color) in enumerate(modes):
        runs = sc[key]
        p50 = [median([r["jail_ms"][i] for r in runs]) for i in range(5)]
        lo = [p - min(r["jail_ms"][i] for r in runs) for i, p in enumerate(p50)]
        hi = [max(r["jail_ms"][i] for r in runs) - p for i, p in enumerate(p50)]
        total = median([sum(r["jail_ms"]) for r in runs])
        xs = [i + (j - (len(modes) - 1) / 2) * width for i in range(5)]
        ax.bar(xs, p50, width, yerr=[lo, hi], capsize=2, color=color,
               label=f"{label}: {total / 1000:.2f} s in all")
    ax.set_xticks(range(5), [f"{i + 1} {s}" for i, s in enumerate(STEPS)], fontsize=8)
    ax.set_ylabel("execution time per step, ms")
    ax.set_title(f"Five-turn sales scenario (p50 of {len(sc['session'])} runs)", fontsize=10)
    ax.legend(fontsize=8)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "out", "sessions.json")
    dst = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "docs", "sessions-bench.png")
    with open(src) as f:
        r = json.load(f)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1, 1.3]})
    latency(a1, r)
    scenario(a2, r["scenario"])
    loads = list(r["load"].values())
    fig.suptitle(f"corral sessions (bench/sessions.py); 1-min load average {min(loads)}-{max(loads)} "
                 "during the run", fontsize=9)
    fig.tight_layout()
    fig.savefig(dst, dpi=100)


if __name__ == "__main__":
    main()
