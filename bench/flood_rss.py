#!/usr/bin/python3
"""Peak memory of corral itself while a sandboxed program floods 1 GiB
of output against `--output-limit 1M`.

Reads corral's stdout through a pipe (counting the bytes that get through)
and takes ru_maxrss from wait4(). That figure is the largest resident set
of corral or any descendant it reaped, so a corral that buffers the flood
shows up here. Skipped when corral is missing.
"""

import argparse
import os
import signal
import sys
import threading
import time

import benchlib as bl

FLOOD = ["/bin/sh", "-c", "head -c 1073741824 /dev/zero"]


def run_flood(argv, limit_s):
    """Run argv draining its stdout; kill its process group after limit_s.
    Returns (elapsed_s, stdout_bytes, exit_code, maxrss_kib, killed)."""
    rfd, wfd = os.pipe()
    t0 = time.perf_counter()
    pid = bl.spawn(argv, stdout=wfd, limit_s=limit_s)
    os.close(wfd)
    killed = threading.Event()

    def watchdog():
        killed.set()
        os.killpg(pid, signal.SIGKILL)

    dog = threading.Timer(limit_s, watchdog)
    dog.start()
    total = 0
    while chunk := os.read(rfd, 1 << 20):
        total += len(chunk)
    os.close(rfd)
    status, ru, _ = bl.reap(pid)
    elapsed = time.perf_counter() - t0
    dog.cancel()
    return elapsed, total, os.waitstatus_to_exitcode(status), ru.ru_maxrss, killed.is_set()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="runs (default 5)")
    ap.add_argument("--md", help="also write a markdown section to this file")
    args = ap.parse_args()

    corral, why = bl.find_corral()
    if not corral:
        print(f"skip flood benchmark: {why}")
        bl.write_md(args.md, f"### Peak RSS under a 1 GiB output flood\n\nSkipped: {why}.")
        return

    argv = [corral, "exec", "--output-limit", "1M", "--"] + FLOOD
    rss, secs, rows = [], [], []
    for i in range(args.runs):
        elapsed, nbytes, code, maxrss, killed = run_flood(argv, limit_s=120)
        rss.append(maxrss / 1024)
        secs.append(elapsed)
        rows.append([str(i + 1), f"{maxrss / 1024:.1f}", f"{elapsed:.3f}", str(nbytes),
                     "watchdog" if killed else str(code)])

    header = ["run", "peak RSS MiB", "elapsed s", "stdout bytes", "exit"]
    summary = (f"peak RSS median {bl.pct(rss, 50):.1f} MiB, max {max(rss):.1f} MiB; "
               f"elapsed median {bl.pct(secs, 50):.3f} s")
    print(f"== {bl.quote(argv)} ==")
    print(bl.table(header, rows))
    print(summary)
    bl.write_md(args.md, "\n".join([
        "### Peak RSS under a 1 GiB output flood\n",
        f"Command: `{bl.quote(argv)}`, stdout drained through a pipe. "
        "Peak RSS is ru_maxrss from wait4() (corral or any descendant it reaped).\n",
        bl.md_table(header, rows), "", summary + ".",
    ]))


if __name__ == "__main__":
    sys.exit(main())
