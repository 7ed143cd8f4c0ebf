#!/usr/bin/python3
"""What a pre-made jail takes off the request path, measured in the library (issue 24, docs/exec-pool.md).

Interleaved runs of /bin/true: a direct jail (`corral exec --json`) and a jail made in advance and then claimed
(tests/premade-jails, built beside corral).  Each sample is the sum of the result's phases before the program
starts (prepare, clone, mounts, exec, seccomp): for the direct jail from the start of the call, for the pre-made
one from its claim (its making is left out: the pool does it off the request path).  Not the whole `corral exec`
(a process start, its options, the claim over host.sock): `corral exec` does not claim from the pool yet.

  bench/premade_phases.py [RUNS]      (default 40; $CORRAL, $CORRAL_PREMADE_JAILS name the binaries)
"""
import json
import os
import statistics
import subprocess
import sys

CORRAL = os.environ.get("CORRAL", "build/corral")
PREMADE = os.environ.get("CORRAL_PREMADE_JAILS") or os.path.join(os.path.dirname(os.path.abspath(CORRAL)), "tests",
                                                                   "premade-jails")


def before_program(result):
    p = result["phases"]
    return sum(p.get(k) or 0 for k in ("prepare", "clone", "mounts", "exec", "seccomp"))


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    pre, direct = [], []
    for _ in range(runs):
        out = subprocess.run([PREMADE, "{}", "{}", "--", "/bin/true"], capture_output=True, text=True, check=True)
        pre.append(before_program(json.loads(out.stdout.splitlines()[-1])["result"]))
        out = subprocess.run([CORRAL, "exec", "--json", "--", "/bin/true"], capture_output=True, text=True)
        direct.append(before_program(json.loads(out.stdout)))
    with open("/proc/self/mountinfo") as f:
        favordynmods = "favordynmods" in f.read()
    print(f"{runs} interleaved runs of /bin/true; load {os.getloadavg()[0]:.1f}; favordynmods: {favordynmods}")
    for name, v in (("direct, start to program", direct), ("pre-made, claim to program", pre)):
        v.sort()
        print(f"  {name:28} p50 {statistics.median(v):6.2f} ms   p90 {v[int(len(v) * 0.9)]:6.2f} ms")


if __name__ == "__main__":
    main()
