#!/usr/bin/env python3
"""Agent overhead per iteration of `corral run`, without the model and the
execution: a scripted OpenAI-compatible server (tests/model-server) answers
instantly, and each run's trace says how long the model and the jails took.

    overhead per iteration = (run wall time - time waiting for the model
                              - time inside corral_jail_run) / iterations

So it counts everything corral itself does per turn: building and parsing
the HTTP exchange, the trace, the workspace snapshots and diff, the
observation, and its share of process start-up and teardown.  Two
workloads: every turn a run_python (print(1), a real jail) and every turn a
list_files (host-side only).  Prints a markdown table; no pass/fail.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from benchlib import ENV, find_corral  # noqa: E402


def one_run(corral, turns_n, make_turn):
    turns = [make_turn(i) for i in range(turns_n - 1)] + [text("done")]
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(turns) as srv:
        trace = os.path.join(tmp, "trace.jsonl")
        proc = subprocess.run([corral, "run", "--base-url", srv.base_url, "--model", "bench", "--json",
                               "--max-iterations", str(turns_n), "--trace", trace, "benchmark"],
                              capture_output=True, cwd=tmp, env=ENV, timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"corral run failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
        res = json.loads(proc.stdout)
        events = [json.loads(line) for line in open(trace)]
    jail_ms = sum(e.get("exec", {}).get("jail_ms", 0) for e in events if e["type"] == "tool_result")
    model_ms = res["usage"]["wait_ms"]
    iters = res["iterations"]
    return {"iterations": iters, "wall_ms": res["wall_ms"], "model_ms": model_ms, "jail_ms": jail_ms,
            "overhead_ms": (res["wall_ms"] - model_ms - jail_ms) / iters}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--turns", type=int, default=40)
    ap.add_argument("--md", help="write the markdown table here too")
    a = ap.parse_args()
    corral, why = find_corral()
    if corral is None:
        raise SystemExit(why)
    workloads = [
        ("run_python `print(1)` every turn", lambda i: tool_call("run_python", code=f"print({i})")),
        ("list_files every turn (no jail)", lambda i: tool_call("list_files")),
    ]
    lines = ["### Agent overhead per iteration (`bench/agent_overhead.py`)", "",
             f"{a.runs} runs of `corral run` with {a.turns} model turns each against the scripted server "
             "(which answers at once); overhead = run wall time − time waiting for the model − time inside "
             "the jails, per turn. Target: ≤ 5 ms.", "",
             "| workload | overhead per turn p50 (min–max) | model wait per turn p50 | jail per step p50 |",
             "|---|---|---|---|"]
    for name, make in workloads:
        rs = [one_run(corral, a.turns, make) for _ in range(a.runs)]
        ov = [r["overhead_ms"] for r in rs]
        mw = [r["model_ms"] / r["iterations"] for r in rs]
        jl = [r["jail_ms"] / max(1, r["iterations"] - 1) for r in rs]
        jail = f"{statistics.median(jl):.1f} ms" if max(jl) > 0 else "–"
        lines.append(f"| {name} | {statistics.median(ov):.2f} ms ({min(ov):.2f}–{max(ov):.2f}) | "
                     f"{statistics.median(mw):.2f} ms | {jail} |")
    out = "\n".join(lines) + "\n"
    print(out)
    if a.md:
        with open(a.md, "w") as f:
            f.write(out)


if __name__ == "__main__":
    main()
