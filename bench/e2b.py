#!/usr/bin/python3
"""The official E2B JavaScript SDK against `corral serve`: Sandbox.create()
then the first runCode('1+1'), as an E2B user waits for them.

Starts `corral serve` as bench/serve.py does (127.0.0.1, a port, data
directory and token of its own, a session of its own), gets Node and the
SDK (e2b, @e2b/code-interpreter from npm, pinned in tests/e2b) through
tests/e2b/setup.sh, and runs bench/e2b.mjs: --rounds sandboxes one after
the other (after --warmup not counted), each killed off the clock; p50, p90,
p99 and max in ms of the create, the first runCode and both.  Then stops
the server with SIGTERM and says what of it was left.

Writes every sample to --json (default bench/out/e2b.json) and a markdown
fragment to --md (for bench/run-all.sh).  Skipped, with the reason, when
corral, or a Node and npm to install the SDK with, cannot be had.  Figures,
not pass/fail.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from benchlib import ENV, ROOT, build_kind, find_corral, md_table, write_md
from serve import Server, machine

SETUP = os.path.join(ROOT, "tests", "e2b", "setup.sh")
NO_NODE = 77  # setup.sh: no Node or npm to be had


def say(msg):
    print(msg, flush=True)


def markdown(r):
    s = r["summary"]
    names = r["names"]
    rows = [[names[k]] + [f"{s[k][p]:.1f}" for p in ("p50", "p90", "p99", "max")] for k in ("total", "create", "first")]
    return "\n".join([
        f"The official E2B JavaScript SDK (e2b {r['sdk']['e2b']}, @e2b/code-interpreter "
        f"{r['sdk']['@e2b/code-interpreter']}, unmodified, on Node {r['node']}) pointed at `corral serve` with "
        "`E2B_API_URL` and `E2B_SANDBOX_URL`: `Sandbox.create()` then the first `runCode('1+1')`, "
        f"{r['rounds']} sandboxes one after the other (after {r['warmup']} not counted), each killed "
        f"off the clock. Times in ms; {r['build']}, as {r['user']}; {r['machine']}; {r['date']}.",
        "",
        md_table(["what", "p50", "p90", "p99", "max"], rows),
    ])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "out", "e2b.json"))
    ap.add_argument("--md")
    a = ap.parse_args()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
    corral, why = find_corral()
    if corral is None:
        say(f"e2b: skipped: {why}")
        write_md(a.md, f"Skipped: {why}.")
        return
    setup = subprocess.run([SETUP], capture_output=True, text=True)
    if setup.returncode == NO_NODE:
        why = setup.stderr.strip().removeprefix("setup.sh: ")
        say(f"e2b: skipped: {why}")
        write_md(a.md, f"Skipped: {why}.")
        return
    if setup.returncode != 0:
        sys.exit(f"e2b: tests/e2b/setup.sh failed:\n{setup.stderr}")
    node, modules = setup.stdout.split("\n")[:2]
    sdk = {}
    for pkg in ("e2b", "@e2b/code-interpreter"):
        with open(os.path.join(modules, "node_modules", pkg, "package.json")) as f:
            sdk[pkg] = json.load(f)["version"]

    corral = os.path.abspath(corral)
    build = os.path.dirname(corral)
    env = dict(ENV)
    for var, name in (("CORRAL_ZYGOTE", "corral-zygote"), ("CORRAL_INIT", "corral-init")):
        env[var] = os.environ.get(var, os.path.join(build, name))
    cmd = ["bench/e2b.py"] + sys.argv[1:]
    if "CORRAL" in os.environ:
        cmd = [f"CORRAL={os.environ['CORRAL']}"] + cmd
    tmp = tempfile.mkdtemp(prefix="corral-bench-e2b-")
    srv = None
    left = []
    try:
        env["XDG_RUNTIME_DIR"] = os.path.join(tmp, "run")
        os.mkdir(env["XDG_RUNTIME_DIR"], 0o700)
        srv = Server(corral, tmp, env)
        url = f"http://127.0.0.1:{srv.port}"
        say(f"== corral serve on port {srv.port} (pid {srv.pid}); the E2B SDK from {modules}, {node}")
        samples = os.path.join(tmp, "e2b.json")
        node_env = {"PATH": ENV["PATH"], "HOME": ENV["HOME"], "LANG": ENV["LANG"], "E2B_API_KEY": srv.token,
                    "E2B_API_URL": url, "E2B_SANDBOX_URL": url, "CORRAL_E2B_MODULES": modules}
        run = subprocess.run([node, os.path.join(ROOT, "bench", "e2b.mjs"), "--rounds", str(a.rounds),
                              "--warmup", str(a.warmup), "--json", samples], env=node_env)
        if run.returncode != 0:
            sys.exit(f"e2b: bench/e2b.mjs exited {run.returncode}; the server said:\n{srv.stderr()[-3000:]}")
        with open(samples) as f:
            r = json.load(f)
    finally:
        if srv is not None:
            left = srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    if left:
        say(f"warning: processes of the server left after it stopped: {left}")
    r.update(command=" ".join(cmd), corral=corral, build=build_kind(build), user=f"uid {os.geteuid()}",
             machine=machine(), date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), sdk=sdk,
             server_argv=srv.argv, left_after_stop=left)
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(r, f)
    write_md(a.md, markdown(r))
    say(f"wrote {a.json}" + (f" and {a.md}" if a.md else ""))


if __name__ == "__main__":
    main()
