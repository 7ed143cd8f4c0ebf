#!/usr/bin/env python3
"""`corral run` with the user's session host up against a run with a zygote of
its own (issue 15's benchmark).

Each run: ten run_python steps that each import pandas, then the answer,
from a scripted OpenAI-compatible server that answers at once
(tests/model-server), so the wall time is corral's.  Three ways:

  host, warm     the session host already runs (its zygote imported pandas
                 once): every run claims a pre-forked session from it
  own zygote     --no-session-host: the run starts a zygote of its own
                 while the model answers the first turn (pandas imported
                 by every run)
  cold           --cold: a fresh interpreter per run

and four concurrent runs against one host, which must share its zygote
(one zygote pid seen by all: checked, not assumed).  Prints a markdown
table; no pass/fail.  A private runtime directory keeps the user's own
session host out of it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from benchlib import ENV, find_corral  # noqa: E402

STEPS = 10


def one_run(corral, env, *opts):
    turns = [tool_call("run_python", code=f"import pandas as pd\nprint({i}, pd.__name__)") for i in range(STEPS)]
    turns.append(text("done"))
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(turns) as srv:
        t0 = time.monotonic()
        proc = subprocess.run([corral, "run", "--base-url", srv.base_url, "--model", "bench", "--json",
                               "--no-trace", "--max-iterations", str(STEPS + 1), *opts, "benchmark"],
                              capture_output=True, cwd=tmp, env=env, timeout=600)
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            raise SystemExit(f"corral run {' '.join(opts)} failed ({proc.returncode}): "
                             f"{proc.stderr.decode()[-2000:]}")
        srv.assert_ok()
    return wall


def host_status(corral, env):
    r = subprocess.run([corral, "session", "status", "--json"], capture_output=True, text=True, env=env)
    return json.loads(r.stdout) if r.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--md")
    a = ap.parse_args()
    corral, why = find_corral()
    if corral is None:
        sys.exit(why)
    rundir = tempfile.mkdtemp(prefix="corral-bench-run-")
    env = dict(ENV, XDG_RUNTIME_DIR=rundir, CORRAL_SESSION_LINGER="600")
    rows = []
    try:
        # The host's first run starts the host and its zygote: not counted.
        first = one_run(corral, env)
        zygote = (host_status(corral, env) or {}).get("zygote_pid")
        host = [one_run(corral, env) for _ in range(a.runs)]
        own = [one_run(corral, env, "--no-session-host") for _ in range(a.runs)]
        cold = [one_run(corral, env, "--cold") for _ in range(a.runs)]
        # Four at once, against the one host.
        walls, errors = [], []

        def runner():
            try:
                walls.append(one_run(corral, env))
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(e)
        t0 = time.monotonic()
        threads = [threading.Thread(target=runner) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        together = time.monotonic() - t0
        if errors:
            raise errors[0]
        after = host_status(corral, env) or {}
        shared = zygote is not None and after.get("zygote_pid") == zygote
    finally:
        subprocess.run([corral, "session", "shutdown"], env=env, capture_output=True)
        os.rmdir(rundir) if os.path.isdir(rundir) and not os.listdir(rundir) else None

    def cell(xs):
        return f"{statistics.median(xs):.2f} s (min {min(xs):.2f}, max {max(xs):.2f})"
    rows.append(("session host up (its zygote ready)", cell(host)))
    rows.append(("`--no-session-host` (a zygote of the run's own)", cell(own)))
    rows.append(("`--cold` (a fresh interpreter)", cell(cold)))
    lines = [f"`corral run`, {STEPS} `run_python` steps that each import pandas, a model that answers at once, "
             f"{a.runs} runs each (median, min, max of the whole run's wall time):", "",
             "| how | wall time |", "|---|---|"]
    lines += [f"| {h} | {v} |" for h, v in rows]
    lines += ["", f"The host's first run (starting the host and its zygote): {first:.2f} s. "
              f"Four runs at once against the host: {together:.2f} s for all four "
              f"(each {min(walls):.2f}-{max(walls):.2f} s); one zygote for all of them: "
              f"{'yes' if shared else 'NO'} (pid {zygote})."]
    text_out = "\n".join(lines) + "\n"
    print(text_out)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text_out)


if __name__ == "__main__":
    main()
