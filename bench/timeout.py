#!/usr/bin/python3
"""Timeout precision: how late past `--timeout` does `corral exec` return?

Runs `corral exec --timeout T -- CMD` N times for two programs that never
end by themselves: a shell whose background child holds on
(`sleep 10 & sleep 10`) and a Python busy loop. Prints p50/p90/p99/max of
(elapsed - T). coreutils `timeout -s KILL` on the same programs is printed
as a reference floor. Skipped when corral is missing.
"""

import argparse
import collections
import shutil
import sys

import benchlib as bl

PROGRAMS = {
    "sh: sleep 10 & sleep 10": ["/bin/sh", "-c", "sleep 10 & sleep 10"],
    "python3: while True: pass": ["/usr/bin/python3", "-c", "while True: pass"],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50, help="runs per program (default 50)")
    ap.add_argument("--timeout", type=float, default=0.2, help="seconds (default 0.2)")
    ap.add_argument("--md", help="also write a markdown section to this file")
    args = ap.parse_args()

    corral, why = bl.find_corral()
    if not corral:
        print(f"skip timeout benchmark: {why}")
        bl.write_md(args.md, f"### Timeout precision\n\nSkipped: {why}.")
        return

    t = f"{args.timeout:g}"
    runners = [("corral", [corral, "exec", "--timeout", t, "--"])]
    if shutil.which("timeout"):
        runners.append(("timeout(1) reference", [shutil.which("timeout"), "-s", "KILL", t]))

    header = ["runner", "program", "p50 ms", "p90 ms", "p99 ms", "max ms", "exit codes"]
    rows = []
    limit = args.timeout + 15  # watchdog: a runner that ignores the timeout
    for rname, prefix in runners:
        for pname, prog in PROGRAMS.items():
            late, codes = [], collections.Counter()
            for _ in range(args.runs):
                ns, code, _, killed = bl.timed_run(prefix + prog, limit_s=limit)
                late.append(ns / 1e6 - args.timeout * 1e3)
                codes["watchdog" if killed else code] += 1
            rows.append([rname, pname] + [f"{bl.pct(late, p):.1f}" for p in (50, 90, 99)]
                        + [f"{max(late):.1f}",
                           " ".join(f"{c}x{n}" for c, n in sorted(codes.items(), key=str))])
            print(f"  {rname} / {pname}: done", file=sys.stderr)

    print(f"== lateness past --timeout {t} s ({args.runs} runs each) ==")
    print(bl.table(header, rows))
    bl.write_md(args.md, "\n".join([
        "### Timeout precision\n",
        f"Time by which the run returns later than `--timeout {t}` "
        f"(elapsed − {t} s), {args.runs} runs per program. "
        "\"exit codes\" counts each exit code seen (code x count; "
        "a negative code is the signal that killed the runner).\n",
        bl.md_table(header, rows, text_cols=2), "",
        f"Command: `{bl.quote(runners[0][1] + ['PROGRAM...'])}`; reference: "
        + (f"`{bl.quote(runners[1][1] + ['PROGRAM...'])}`." if len(runners) > 1 else "none."),
    ]))


if __name__ == "__main__":
    sys.exit(main())
