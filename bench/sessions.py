#!/usr/bin/env python3
"""Sessions against the targets of the sessions issue, side by side.

    bench/sessions.py [--n 30] [--steps 2000] [--cli-steps 200] [--runs 3]
                      [--json F] [--md F] [--plot F]

Measures, in one run (bench/README.md says how each is taken):

1. a new session ready with pandas + matplotlib imported: warm (forked from
   the zygote) and cold, through the library (bench/session-start); for
   comparison the bare import on the host and the same import under
   `corral exec`, interleaved;
2. a trivial step `x + 1` in a live session: through the library
   (bench/session-step) and through `corral session exec` (a CLI process,
   a socket, the step);
3. trivial steps per second, one session and two in parallel;
4. the USS (Private_* of smaps_rollup) of each additional idle warm session
   beyond the zygote, after 1, 5 and 10 sessions;
5. the five-turn sales scenario (bench/sales5-*.jsonl, bench/make-sales5.py)
   replayed by `corral run`, with its default (warm) session, with --cold and
   with --stateless: the execution time of each step, from the run's trace.

Prints a table of target / measured / met-or-explained and writes the raw
figures as JSON (for bench/plot-sessions.py) and the table as markdown.
The library benchmarks (bench/session-start) run warm sessions as root; the
CLI parts as any user (the session host).  Figures, not
pass/fail; the load average is recorded with each part.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from benchlib import ENV, ROOT, build_kind, find_corral, pct, timed_run, write_md

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"  # Debian's: pandas and matplotlib
IMPORT = "import pandas, matplotlib.pyplot"
# What every jail's environment sets (docs/sessions.md), so that the bare
# import on the host differs from the jailed one by the sandbox only.
JAIL_LIKE = {"MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
             "NUMEXPR_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
TASK = "sales scenario: load, clean, top 5, plot, anomalies"


def load():
    return round(os.getloadavg()[0], 2)


def say(msg):
    print(msg, flush=True)


def stats(xs):
    return {"n": len(xs), "p50": pct(xs, 50), "p90": pct(xs, 90), "p99": pct(xs, 99),
            "min": min(xs), "max": max(xs)}


def run_c(prog, args, env):
    """A bench/ C program with --json; its figures, or None and why."""
    if not os.access(prog, os.X_OK):
        return None, f"{prog} is not built"
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([prog, *args, "--json", f.name], env=env, capture_output=True, text=True,
                           timeout=1800)
        sys.stdout.write(p.stdout)
        if p.returncode != 0:
            return None, f"{os.path.basename(prog)} exited {p.returncode}: {p.stderr.strip()[-500:]}"
        with open(f.name) as fh:
            return json.load(fh), None


def imports(corral, n):
    """The import timed bare on the host and under `corral exec`, interleaved."""
    env = dict(ENV, **JAIL_LIKE)
    bare = [PY, "-c", IMPORT]
    jailed = [corral, "exec", "--", "python3", "-c", IMPORT]
    out = {"bare": [], "exec": []}
    for argv in (bare, jailed):  # warm-up: the page cache, the .pyc files
        subprocess.run(argv, env=env, capture_output=True, check=True)
    for _ in range(n):
        for key, argv in (("bare", bare), ("exec", jailed)):
            t0 = time.perf_counter_ns()
            p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            ms = (time.perf_counter_ns() - t0) / 1e6
            if p.returncode != 0:
                raise SystemExit(f"{argv}: exit {p.returncode}: {p.stderr.decode()[-500:]}")
            out[key].append(ms)
    return out


def cli_steps(corral, n, warm_n, env):
    """`corral session exec ID -c 'x + 1'` from a new process each time; and,
    with the session host up (its zygote ready), `corral session start` (warm,
    the default) + a first import step, warm_n times; the first start, which
    launches the host and its zygote, timed apart."""
    out = {}
    p = subprocess.run([corral, "session", "start", "--json"], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": f"corral session start exited {p.returncode}: {p.stderr.strip()}"}
    sid = json.loads(p.stdout)["id"]
    try:
        argv = [corral, "session", "exec", sid, "-c", "x = 1"]
        subprocess.run(argv, env=env, capture_output=True, check=True)
        argv = [corral, "session", "exec", sid, "-c", "x + 1"]
        for _ in range(20):
            timed_run(argv, env=env)
        ms = []
        for _ in range(n):
            ns, rc, _, _ = timed_run(argv, env=env)
            if rc != 0:
                return {"error": f"corral session exec exited {rc}"}
            ms.append(ns / 1e6)
        out["step_ms"] = ms
    finally:
        subprocess.run([corral, "session", "stop", sid], env=env, capture_output=True)
    subprocess.run([corral, "session", "shutdown"], env=env, capture_output=True)
    if warm_n:
        first, start, ready = None, [], []
        for i in range(warm_n + 1):
            t0 = time.perf_counter_ns()
            p = subprocess.run([corral, "session", "start", "--warm"], env=env, capture_output=True, text=True)
            t1 = time.perf_counter_ns()
            if p.returncode != 0:
                out["warm_error"] = p.stderr.strip()
                break
            sid = p.stdout.strip()
            p = subprocess.run([corral, "session", "exec", sid, "-c", IMPORT + "\n1"], env=env,
                               capture_output=True)
            t2 = time.perf_counter_ns()
            subprocess.run([corral, "session", "stop", sid], env=env, capture_output=True)
            if p.returncode != 0:
                out["warm_error"] = p.stderr.decode().strip()
                break
            if i == 0:
                first = (t2 - t0) / 1e6  # the host and its zygote start too
            else:
                start.append((t1 - t0) / 1e6)
                ready.append((t2 - t0) / 1e6)
        out["warm_first_ms"] = first
        out["warm_start_only_ms"] = start
        out["warm_start_ms"] = ready
    return out


def scenario_run(corral, data, mode):
    """One replay of the five-turn scenario; the per-step times from its trace."""
    transcript = os.path.join(HERE, f"sales5-{'stateless' if mode == 'stateless' else 'session'}.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.jsonl")
        argv = [corral, "run", "-q", "--model", "replay:" + transcript, "--trace", trace, "-i", data,
                "-o", os.path.join(tmp, "out")]
        if mode in ("stateless", "cold"):
            argv.append("--" + mode)
        p = subprocess.run(argv + [TASK], cwd=tmp, env=ENV, capture_output=True, text=True, timeout=600)
        events = [json.loads(line) for line in open(trace)] if os.path.exists(trace) else []
        out = os.path.join(tmp, "out")
        outputs = sorted(os.listdir(out)) if os.path.isdir(out) else []
    steps = [e for e in events if e["type"] == "tool_result" and e["name"] == "run_python"]
    end = next((e for e in events if e["type"] == "run_end"), {})
    bad = [s for s in steps if not s["ok"]]
    if p.returncode != 0 or end.get("status") != "answered" or len(steps) != 5 or bad:
        why = bad[0]["content"][-800:] if bad else p.stderr.strip()[-800:]
        raise SystemExit(f"the {mode} scenario failed (exit {p.returncode}, {len(steps)} steps): {why}")
    for f in ("top5.csv", "trend.png", "anomalies.csv"):
        if f not in outputs:
            raise SystemExit(f"the {mode} scenario left no {f} (got {outputs})")
    return {"jail_ms": [s["exec"]["jail_ms"] for s in steps], "wall_ms": [s["exec"]["wall_ms"] for s in steps],
            "tool_ms": [s["ms"] for s in steps], "run_wall_ms": end.get("wall_ms"),
            "stdout": [s["exec"]["stdout"] for s in steps]}


def scenario_warm(corral, data, env):
    """The session transcript's five steps in a warm session over the CLI
    (`corral run` has no warm sessions yet): each step's `corral session
    exec` round trip; the session's start (the host's zygote up) timed apart."""
    codes = []
    with open(os.path.join(HERE, "sales5-session.jsonl")) as f:
        for line in f:
            call = json.loads(line).get("reply", {}).get("message", {}).get("tool_calls", [{}])[0]
            if call.get("function", {}).get("name") == "run_python":
                codes.append(json.loads(call["function"]["arguments"])["code"])
    with tempfile.TemporaryDirectory() as ws:
        os.mkdir(os.path.join(ws, "input"))
        with open(data, "rb") as src, open(os.path.join(ws, "input", "sales.csv"), "wb") as dst:
            dst.write(src.read())
        t0 = time.perf_counter_ns()
        p = subprocess.run([corral, "session", "start", "--warm", "-w", ws], env=env, capture_output=True,
                           text=True)
        if p.returncode != 0:
            return {"error": p.stderr.strip()}
        start_ms = (time.perf_counter_ns() - t0) / 1e6
        sid = p.stdout.strip()
        ms = []
        try:
            for code in codes:
                t0 = time.perf_counter_ns()
                p = subprocess.run([corral, "session", "exec", sid, "-c", code], env=env, capture_output=True,
                                   text=True)
                ms.append((time.perf_counter_ns() - t0) / 1e6)
                if p.returncode != 0:
                    return {"error": f"step {len(ms)} exited {p.returncode}: {p.stderr.strip()[-500:]}"}
        finally:
            subprocess.run([corral, "session", "stop", sid], env=env, capture_output=True)
    return {"jail_ms": ms, "start_ms": start_ms}


def scenario(corral, runs, env):
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([PY, os.path.join(ROOT, "examples", "sales", "generate.py"), "--out", tmp], check=True,
                       capture_output=True)
        data = os.path.join(tmp, "sales.csv")
        out = {"session": [], "cold": [], "stateless": []}
        warm = True
        out["warm"] = []
        scenario_run(corral, data, "stateless")  # warm-up: the page cache
        for _ in range(runs):
            for mode in ("session", "cold", "stateless"):
                out[mode].append(scenario_run(corral, data, mode))
            # The same analysis both ways: every step printed the same.
            if out["session"][-1]["stdout"] != out["stateless"][-1]["stdout"]:
                raise SystemExit("the two transcripts printed different results: see bench/make-sales5.py")
            if warm:
                w = scenario_warm(corral, data, env)
                if "error" in w:
                    say(f"warm session over the CLI: {w['error']}")
                    del out["warm"]
                    warm = False
                else:
                    out["warm"].append(w)
    return out


def fmt(ms):
    return f"{ms:,.0f} ms" if ms >= 100 else f"{ms:.1f} ms" if ms >= 1 else f"{ms:.2f} ms"


def verdict(ok, why):
    return "met" if ok else f"not met: {why}"


def table(r):
    """(target, measured, met or explained) rows, and the notes under them."""
    rows = []
    st, cli, step, imp = r.get("start"), r.get("cli"), r.get("step"), r.get("imports")
    if st:
        w, c = stats(st["warm_ms"]), stats(st["cold_ms"])
        rows.append(("new session ready with pandas + matplotlib imported, warm (zygote): ≤ 30 ms p50",
                     f"p50 {fmt(w['p50'])}, p90 {fmt(w['p90'])}, p99 {fmt(w['p99'])} ({w['n']} sessions)",
                     verdict(w["p50"] <= 30, f"at load average {r['load']['after start']} on 2 cores, other "
                             "work's time slices show in every figure (see the notes below)")))
        rows.append(("the same, cold (jail + interpreter + the import), for comparison",
                     f"p50 {fmt(c['p50'])}, p90 {fmt(c['p90'])}, p99 {fmt(c['p99'])}",
                     f"warm is {c['p50'] / w['p50']:.0f}× faster at p50"))
    else:
        rows.append(("new session ready with pandas + matplotlib imported: ≤ 30 ms p50", "–",
                     f"not measured: {r.get('start_error')}"))
    if imp:
        b, e = stats(imp["bare"]), stats(imp["exec"])
        rows.append(("cold import 400–700 ms: `python3 -c \"import pandas, matplotlib.pyplot\"` on the host",
                     f"p50 {fmt(b['p50'])}, p90 {fmt(b['p90'])}", "reference (the issue's 400–700 ms)"))
        rows.append(("the same import under `corral exec`", f"p50 {fmt(e['p50'])}, p90 {fmt(e['p90'])}",
                     f"the jail adds {e['p50'] - b['p50']:.0f} ms at p50" if e["p50"] > b["p50"] else
                     "no more than bare: the difference is within the noise of a loaded machine"))
    if step:
        s = stats(step["step_ms"])
        rows.append(("trivial step `x + 1` in a live session, library: ≤ 3 ms p50, ≤ 10 ms p99",
                     f"p50 {fmt(s['p50'])}, p99 {fmt(s['p99'])}, max {fmt(s['max'])} ({s['n']} steps)",
                     verdict(s["p50"] <= 3 and s["p99"] <= 10, "tail from other work on the 2 cores")))
    else:
        rows.append(("trivial step `x + 1`, library: ≤ 3 ms p50, ≤ 10 ms p99", "–",
                     f"not measured: {r.get('step_error')}"))
    if cli and cli.get("warm_start_ms"):
        w, o = stats(cli["warm_start_ms"]), stats(cli["warm_start_only_ms"])
        rows.append(("the same through the CLI, the session host up: `corral session start` + a first step "
                     "`import pandas, matplotlib.pyplot`",
                     f"p50 {fmt(w['p50'])}, p90 {fmt(w['p90'])} ({w['n']} sessions); `start` alone p50 "
                     f"{fmt(o['p50'])}",
                     "two corral processes and a step on top of the library's figure; the first start of a "
                     f"host (launching it and its zygote) took {fmt(cli['warm_first_ms'])}"))
    if cli and "step_ms" in cli:
        s = stats(cli["step_ms"])
        rows.append(("the same through `corral session exec ID -c 'x + 1'` (CLI round trip)",
                     f"p50 {fmt(s['p50'])}, p99 {fmt(s['p99'])} ({s['n']} steps)",
                     "met" if s["p50"] <= 3 and s["p99"] <= 10 else
                     "the target is the library's; this adds a corral process (exec, dynamic linking, "
                     "argument parsing), a socket connect and the peer check"))
    if step:
        rows.append(("trivial steps per second, one session: ≥ 300/s", f"{step['one_session_per_s']:,.0f}/s",
                     verdict(step["one_session_per_s"] >= 300, "loaded machine")))
        rows.append(("trivial steps per second, two sessions in parallel: ≥ 300/s",
                     f"{step['two_sessions_per_s']:,.0f}/s in all",
                     verdict(step["two_sessions_per_s"] >= 300, "loaded machine")))
    if st:
        for u in st["uss"]:
            rows.append((f"USS of each additional idle warm session beyond the zygote, {u['sessions']} "
                         f"session{'s' if u['sessions'] > 1 else ''}: ≤ 10 MB",
                         f"{u['per_session_mib']:.1f} MiB",
                         "not measured: the processes changed under the measurement" if u["per_session_mib"] <= 0
                         else verdict(u["per_session_mib"] * 1.048576 <= 10, "see the notes")))
        rows.append(("the zygote itself (paid once per process)", f"{st['zygote_rss_mib']:.0f} MiB RSS, "
                     f"started in {fmt(st['zygote_start_ms'])}", "not per session"))
    sc = r.get("scenario")
    if sc:
        tot = {m: pct([sum(x["jail_ms"]) for x in sc[m]], 50) for m in sc}
        rows.append(("five-turn sales scenario, execution time in all: `corral run` (its warm session) vs "
                     "`--cold` vs `--stateless`",
                     f"{fmt(tot['session'])} vs {fmt(tot['cold'])} vs {fmt(tot['stateless'])} (p50 of "
                     f"{len(sc['session'])} runs)",
                     f"the session {tot['stateless'] / tot['cold']:.1f}× less time in execution than fresh "
                     "processes; warm, step 1 waits for the zygote the run started (a replayed model answers "
                     "at once; a real one's first turn hides it), every later step is warm"))
        if "warm" in sc:
            rows.append(("the same five steps in a warm session (`corral session exec`, not `corral run`)",
                         f"{fmt(tot['warm'])} (+ {fmt(pct([x['start_ms'] for x in sc['warm']], 50))} "
                         "for `session start`, the host's zygote up)",
                         f"{tot['stateless'] / tot['warm']:.1f}× less than `--stateless`"))
    return rows


def markdown(r, rows):
    a = r["args"]
    lines = ["### Sessions (`bench/sessions.py`)", "",
             f"`bench/sessions.py --n {a['n']} --steps {a['steps']} --cli-steps {a['cli_steps']} --cli-warm "
             f"{a['cli_warm']} --runs {a['runs']}` as {r['user']}, corral {r['corral']} (a {r['build']}), "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average (1 min) "
             + ", ".join(f"{k} {v}" for k, v in r["load"].items()) + ". Figures, not thresholds; percentiles interpolate between samples.", "",
             "![sessions: new-session latency and the five-turn scenario](sessions-bench.png)", "",
             "| target | measured | met or explained |", "| --- | --- | --- |"]
    lines += [f"| {t} | {m} | {v} |" for t, m, v in rows]
    sc = r.get("scenario")
    if sc:
        lines += ["", "The five-turn scenario per step (p50 over the runs of the time `corral run` waited for "
                  "the execution, `exec.jail_ms` of the trace's `tool_result`: set-up, run and teardown of the "
                  "jail, or the session's round trip, which for step 1 includes starting the session):", "",
                  "| step | `corral run` (warm session) | `corral run --cold` | `corral run --stateless` "
                  "| stateless / cold | warm session, host up (`corral session exec`) |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        names = ["1 load the CSV", "2 clean", "3 top 5", "4 plot", "5 anomalies"]
        warm = "warm" in sc
        for i, name in enumerate(names):
            s = pct([x["jail_ms"][i] for x in sc["session"]], 50)
            c = pct([x["jail_ms"][i] for x in sc["cold"]], 50)
            f = pct([x["jail_ms"][i] for x in sc["stateless"]], 50)
            w = fmt(pct([x["jail_ms"][i] for x in sc["warm"]], 50)) if warm else "–"
            lines.append(f"| {name} | {fmt(s)} | {fmt(c)} | {fmt(f)} | {f / c:.1f}× | {w} |")
        s = pct([sum(x["jail_ms"]) for x in sc["session"]], 50)
        c = pct([sum(x["jail_ms"]) for x in sc["cold"]], 50)
        f = pct([sum(x["jail_ms"]) for x in sc["stateless"]], 50)
        w = f"**{fmt(pct([sum(x['jail_ms']) for x in sc['warm']], 50))}**" if warm else "–"
        lines.append(f"| **total** | **{fmt(s)}** | **{fmt(c)}** | **{fmt(f)}** | **{f / c:.1f}×** | {w} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=30, help="sessions of each kind, and imports timed (30)")
    ap.add_argument("--steps", type=int, default=2000, help="library steps timed (2000)")
    ap.add_argument("--cli-steps", type=int, default=200, help="`corral session exec` steps timed (200)")
    ap.add_argument("--cli-warm", type=int, default=20, help="`corral session start` (warm) timed (20)")
    ap.add_argument("--runs", type=int, default=3, help="runs of the five-turn scenario per mode (3)")
    ap.add_argument("--json", default=os.path.join(HERE, "out", "sessions.json"))
    ap.add_argument("--md", help="write the markdown table here too")
    ap.add_argument("--plot", default=os.path.join(ROOT, "docs", "sessions-bench.png"),
                    help="the plot (bench/plot-sessions.py); '' skips it")
    a = ap.parse_args()
    corral, why = find_corral()
    if corral is None:
        say(f"sessions: skipped: {why}")
        write_md(a.md, f"### Sessions (`bench/sessions.py`)\n\nSkipped: {why}.")
        return
    corral = os.path.abspath(corral)
    build = os.path.dirname(corral)
    env = dict(ENV)
    for var, name in (("CORRAL_ZYGOTE", "corral-zygote"), ("CORRAL_INIT", "corral-init")):
        env[var] = os.environ.get(var, os.path.join(build, name))
    r = {"args": vars(a), "corral": corral, "build": build_kind(build), "user": f"uid {os.geteuid()}",
         "load": {"start": load()}}

    say(f"== new session ready with {IMPORT}: warm vs cold (bench/session-start {a.n})")
    if os.geteuid() != 0:
        r["start_error"] = "warm sessions need root for now (docs/sessions.md)"
    else:
        r["start"], r["start_error"] = run_c(os.path.join(build, "bench", "session-start"), [str(a.n)], env)
    r["load"]["after start"] = load()
    say(f"== the import bare and under corral exec, {a.n} each, interleaved")
    r["imports"] = imports(corral, a.n)
    for k, v in r["imports"].items():
        s = stats(v)
        say(f"{k}: p50 {s['p50']:.0f} ms, p90 {s['p90']:.0f} ms")
    r["load"]["after imports"] = load()
    say(f"== trivial steps through the library (bench/session-step {a.steps})")
    r["step"], r["step_error"] = run_c(os.path.join(build, "bench", "session-step"), [str(a.steps)], env)
    r["load"]["after steps"] = load()
    say(f"== trivial steps through `corral session exec`, {a.cli_steps}")
    # The CLI's sessions in a runtime dir of their own: one session host.
    cli_env = dict(env, XDG_RUNTIME_DIR=tempfile.mkdtemp(prefix="corral-bench-run-"))
    os.chmod(cli_env["XDG_RUNTIME_DIR"], 0o700)
    r["cli"] = cli_steps(corral, a.cli_steps, a.cli_warm, cli_env)
    if "step_ms" in r["cli"]:
        s = stats(r["cli"]["step_ms"])
        say(f"p50 {s['p50']:.2f} ms, p99 {s['p99']:.2f} ms")
    if r["cli"].get("warm_start_ms"):
        say(f"corral session start + first import step, host up: p50 {pct(r['cli']['warm_start_ms'], 50):.0f} ms "
            f"(the first, starting the host: {r['cli']['warm_first_ms']:.0f} ms)")
    r["load"]["after cli"] = load()
    say(f"== the five-turn sales scenario, {a.runs} runs per mode")
    r["scenario"] = scenario(corral, a.runs, cli_env)
    subprocess.run([corral, "session", "shutdown"], env=cli_env, capture_output=True)
    os.rmdir(cli_env["XDG_RUNTIME_DIR"]) if not os.listdir(cli_env["XDG_RUNTIME_DIR"]) else None
    r["load"]["end"] = load()

    rows = table(r)
    md = markdown(r, rows)
    print()
    print(md)
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(r, f)
    write_md(a.md, md)
    if a.plot:
        subprocess.run([PY, os.path.join(HERE, "plot-sessions.py"), a.json, a.plot], check=True)
        say(f"wrote {a.plot}")


if __name__ == "__main__":
    main()
