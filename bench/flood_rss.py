#!/usr/bin/python3
"""Peak memory of corral itself while a sandboxed program floods 1 GiB
of output against `--output-limit 1M`.

Reads corral's stdout through a pipe (counting the bytes that get through).
Two figures: corral's own peak (VmHWM of the corral process, sampled from
/proc every few milliseconds until it exits), and ru_maxrss from wait4(),
the largest resident set of corral or any descendant it reaped (the jailed
sh and head included).  Runs both streaming and --json (which keeps up to
the limit in memory).  Skipped when corral is missing.
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
    hwm = [0]
    done = threading.Event()

    def sample():
        # VmHWM only grows; the last value read before exit is the peak.
        while not done.is_set():
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            hwm[0] = max(hwm[0], int(line.split()[1]))
            except OSError:
                pass
            time.sleep(0.003)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    total = 0
    while chunk := os.read(rfd, 1 << 20):
        total += len(chunk)
    os.close(rfd)
    done.set()
    sampler.join()
    status, ru, _ = bl.reap(pid)
    elapsed = time.perf_counter() - t0
    dog.cancel()
    return elapsed, total, os.waitstatus_to_exitcode(status), ru.ru_maxrss, hwm[0], killed.is_set()


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
    rss, own, secs, rows = [], {}, [], []
    for mode, extra in (("stream", []), ("--json", ["--json"])):
        own[mode] = []
        run_argv = argv[:2] + extra + argv[2:]
        for i in range(args.runs):
            elapsed, nbytes, code, maxrss, hwm, killed = run_flood(run_argv, limit_s=120)
            rss.append(maxrss / 1024)
            own[mode].append(hwm / 1024)
            secs.append(elapsed)
            rows.append([mode, str(i + 1), f"{hwm / 1024:.1f}", f"{maxrss / 1024:.1f}", f"{elapsed:.3f}",
                         str(nbytes), "watchdog" if killed else str(code)])

    header = ["mode", "run", "corral VmHWM MiB", "tree ru_maxrss MiB", "elapsed s", "stdout bytes", "exit"]
    summary = "; ".join(f"corral's own peak, {m}: median {bl.pct(v, 50):.1f} MiB, max {max(v):.1f} MiB"
                        for m, v in own.items())
    summary += f"; with descendants max {max(rss):.1f} MiB; elapsed median {bl.pct(secs, 50):.3f} s"
    print(f"== {bl.quote(argv)} ==")
    print(bl.table(header, rows))
    print(summary)
    bl.write_md(args.md, "\n".join([
        "### Peak RSS under a 1 GiB output flood\n",
        f"Command: `{bl.quote(argv)}`, stdout drained through a pipe. "
        "corral VmHWM is the corral process's own peak, sampled from /proc; tree ru_maxrss is from wait4() "
        "(corral or any descendant it reaped, including the jailed sh and head). With --json, corral keeps "
        "up to the limit (1 MiB per stream) to print it.\n",
        bl.md_table(header, rows), "", summary + ".",
    ]))


if __name__ == "__main__":
    sys.exit(main())
