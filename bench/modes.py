#!/usr/bin/env python3
"""What each mode of `corral run` (docs/modes.md) costs: extra model calls,
tokens and wall time, on 12 scripted data tasks.

Each task is a scripted conversation (tests/model-server) over one small sales
CSV: code steps, then an answer.  Every task runs once per mode: the baseline
(--no-verify --no-compact), --verify, --plan, compaction (a 4096-token
context, against the baseline at the same context), --reproduce and --mode team
(alone, and at the 4096-token context, where the long outputs are summarised).  The
scripted server answers the modes' side calls with its defaults (a complete
verdict, a three-line plan, a one-line summary, an approval) and estimates tokens at 4
bytes each, so the figures are corral's side: the requests and the prompt a
mode adds, and the time corral itself spends (the model answers at once).

With --model M (and --base-url, or the environment's settings), the same tasks
run against a real endpoint instead, and the table says per mode how many
answers held the expected result: whether a mode makes answers better needs a
real model.  Prints a markdown table; no pass/fail.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from benchlib import ENV, find_corral  # noqa: E402

SALES = "Product,Revenue,Date,Region\n" + "".join(
    f"{p},{r},2024-01-{d:02d},{g}\n" for d, (p, r, g) in enumerate([
        ("Widget", 120.5, "North"), ("Gadget", 80.0, "South"), ("Widget", 99.5, "East"),
        ("Doohickey", 300.0, "West"), ("Gizmo", 45.25, "North"), ("Thingamajig", 12.0, "South"),
        ("Gadget", 60.0, "East"), ("Sprocket", 150.0, "West")] * 4, start=1) if d <= 28)

LOAD = "import pandas as pd\ndf = pd.read_csv('input/sales.csv')\n"

# (task, [code steps], answer, what a correct answer holds)
TASKS = [
    ("Which product has the highest total revenue?",
     [LOAD + "print(df.groupby('Product')['Revenue'].sum().idxmax())"], "Doohickey.", "Doohickey"),
    ("What is the total revenue?", [LOAD + "print(df['Revenue'].sum())"], "The total is 3201.75.", "3201.75"),
    ("How many rows does the file have?", [LOAD + "print(len(df))"], "28 rows.", "28"),
    ("Revenue per region, as output/region.csv.",
     [LOAD + "t = df.groupby('Region')['Revenue'].sum()\nt.to_csv('output/region.csv')\nprint(t.to_string())"],
     "West leads with 1650.0; see output/region.csv.", "West"),
    ("A bar chart of revenue per product in output/products.png.",
     [LOAD + "t = df.groupby('Product')['Revenue'].sum()\nprint(t.to_string())",
      "import matplotlib.pyplot as plt\nt.plot.bar(); plt.tight_layout(); plt.savefig('output/products.png')"],
     "Chart in output/products.png; Doohickey is the tallest bar.", "Doohickey"),
    ("What is the mean revenue per sale?", [LOAD + "print(round(df['Revenue'].mean(), 2))"], "114.35.", "114.35"),
    ("Which region sells the most Widgets?",
     [LOAD + "w = df[df.Product == 'Widget']\nprint(w.groupby('Region')['Revenue'].sum().idxmax())"],
     "North.", "North"),
    ("The top 3 products by revenue, as output/top3.csv.",
     [LOAD + "t = df.groupby('Product')['Revenue'].sum().nlargest(3)\nt.to_csv('output/top3.csv')\n"
             "print(t.to_string())"], "Doohickey, Widget, Gadget; see output/top3.csv.", "Doohickey"),
    ("What is the cheapest sale?", [LOAD + "print(df.loc[df.Revenue.idxmin()].to_dict())"],
     "A Thingamajig for 12.0.", "12"),
    ("Daily revenue as a line chart in output/daily.png and the numbers in output/daily.csv.",
     [LOAD + "d = df.groupby('Date')['Revenue'].sum()\nd.to_csv('output/daily.csv')\nprint(d.describe())",
      "import matplotlib.pyplot as plt\nd.plot(); plt.savefig('output/daily.png')"],
     "See output/daily.png and output/daily.csv.", "daily"),
    ("How many distinct products are there?", [LOAD + "print(df.Product.nunique())"], "6.", "6"),
    ("Share of revenue per region in percent.",
     [LOAD + "s = df.groupby('Region')['Revenue'].sum()\nprint((100 * s / s.sum()).round(1).to_string())"],
     "West 51.5, North 19.3, East 18.1, South 11.1 (percent).", "West"),
]

MODES = [
    ("baseline", ["--no-verify", "--no-compact"]),
    ("verify", ["--verify", "--no-compact"]),
    ("plan", ["--plan", "--no-verify", "--no-compact"]),
    ("baseline, 4096-token context", ["--no-verify", "--no-compact", "--context-tokens", "4096"]),
    ("compact, 4096-token context", ["--no-verify", "--compact", "--context-tokens", "4096"]),
    ("reproduce", ["--reproduce", "--no-verify", "--no-compact"]),
    ("team", ["--mode", "team", "--no-verify", "--no-compact"]),
    ("team, 4096-token context", ["--mode", "team", "--no-verify", "--no-compact", "--context-tokens", "4096"]),
]


def scripted_turns(steps, answer, padded):
    turns = [tool_call("run_python", code=c) for c in steps]
    if padded:  # long outputs, so that a small context fills up
        turns += [tool_call("run_python", code=f"print('{i}' * 3000)") for i in range(4)]
    return turns + [text(answer)]


def one_run(corral, tmp, task, args, base_url, model, timeout):
    trace = os.path.join(tmp, f"trace-{time.monotonic_ns()}.jsonl")
    env = dict(ENV, XDG_STATE_HOME=os.path.join(tmp, "state"))
    if "CORRAL_CACHE_DIR" in os.environ:
        env["CORRAL_CACHE_DIR"] = os.environ["CORRAL_CACHE_DIR"]
    for k in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CORRAL_MODEL", "XDG_CONFIG_HOME"):
        if k in os.environ and base_url is None:
            env[k] = os.environ[k]
    cmd = [corral, "run", "--json", "--cold", "--max-iterations", "14", "--trace", trace,
           "-i", os.path.join(tmp, "sales.csv"), *args, task]
    if model:
        cmd[2:2] = ["--model", model]
    if base_url:
        cmd[2:2] = ["--base-url", base_url]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, cwd=tmp, env=env, timeout=timeout)
    wall = (time.perf_counter() - t0) * 1000
    try:
        res = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(f"corral run failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    u = res["usage"]
    return {"rc": proc.returncode, "answer": res.get("answer") or "", "requests": u["requests"],
            "tokens": u["prompt_tokens"] + u["completion_tokens"], "wall_ms": wall, "res": res}


def scripted(corral, rounds, only=None):
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "sales.csv"), "w") as f:
            f.write(SALES)
        for name, args in MODES:
            if only and name not in only:
                continue
            padded = "4096" in args
            per = []
            for _ in range(rounds):
                for task, steps, answer, _want in TASKS:
                    with ScriptedServer(scripted_turns(steps, answer, padded)) as srv:
                        r = one_run(corral, tmp, task, args, srv.base_url, "bench", 600)
                    if r["rc"] != 0:
                        raise SystemExit(f"{name}: {task}: exit {r['rc']}")
                    r["side"] = len(srv.side_requests)
                    per.append(r)
            rows[name] = per
    return rows


def table(rows):
    def mean(name, key):
        return statistics.mean(r[key] for r in rows[name])

    out = ["| mode | model requests / task | extra | tokens / task | extra | wall ms / task (median) | extra |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for name, _ in MODES:
        if name not in rows:
            continue
        base = "baseline, 4096-token context" if "4096" in name else "baseline"
        req, treq = mean(name, "requests"), mean(base, "requests")
        tok, ttok = mean(name, "tokens"), mean(base, "tokens")
        wall = statistics.median(r["wall_ms"] for r in rows[name])
        twall = statistics.median(r["wall_ms"] for r in rows[base])
        extra = (lambda a, b, f: "" if name == base else f.format(a - b))
        out.append(f"| {name} | {req:.2f} | {extra(req, treq, '{:+.2f}')} | {tok:,.0f} | {extra(tok, ttok, '{:+,.0f}')}"
                   f" | {wall:,.0f} | {extra(wall, twall, '{:+,.0f}')} |")
    return "\n".join(out)


def real(corral, base_url, model):
    """The same tasks against a real endpoint: answers holding the expected result, per mode."""
    out = ["| mode | answers holding the expected result | model requests / task | tokens / task |",
           "|---|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "sales.csv"), "w") as f:
            f.write(SALES)
        for name, args in MODES:
            if "4096" in name:
                continue
            runs = [(want, one_run(corral, tmp, task, args, base_url, model, 1800)) for task, _s, _a, want in TASKS]
            ok = sum(1 for want, r in runs if r["rc"] == 0 and want.lower() in r["answer"].lower())
            out.append(f"| {name} | {ok}/{len(runs)} | {statistics.mean(r['requests'] for _, r in runs):.1f} | "
                       f"{statistics.mean(r['tokens'] for _, r in runs):,.0f} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1, help="runs of every task per mode (default 1)")
    ap.add_argument("--model", help="a real model: run the tasks against it and report success per mode")
    ap.add_argument("--base-url", help="its endpoint (default: the environment's and config file's)")
    ap.add_argument("--md", help="also write the table here")
    ap.add_argument("--modes", help="only these modes, space-separated (verify plan compact reproduce team): "
                                    "their rows, with and without the small context, and the baselines")
    a = ap.parse_args()
    corral, why = find_corral()
    if corral is None:
        raise SystemExit(why)
    corral = os.path.abspath(corral)
    if a.model:
        md = f"### Modes against {a.model} (`bench/modes.py --model`)\n\n" + real(corral, a.base_url, a.model)
    else:
        only = None
        if a.modes:
            only = {"baseline", "baseline, 4096-token context"}
            for m in a.modes.split():
                rows_of = {name for name, _ in MODES if name.split(",")[0] == m}
                if not rows_of:
                    raise SystemExit(f"--modes: unknown mode {m!r}; known: verify plan compact reproduce team")
                only |= rows_of
        rows = scripted(corral, a.rounds, only)
        md = (f"### Modes of corral run (`bench/modes.py`, {len(TASKS)} scripted tasks, {a.rounds} round(s))\n\n"
              + table(rows))
    print(md)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md + "\n")


if __name__ == "__main__":
    main()
