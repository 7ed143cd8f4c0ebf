#!/usr/bin/python3
"""Entering a cgroup v1 controller: the two ways a jail can get there.

  procs  the supervisor writes the child's pid to the cgroup's
         `cgroup.procs` (how corral attached a jail before issue 24; how a
         warm session's init is still attached at its claim)
  self   the child, single-threaded, writes "0" to the cgroup's `tasks`
         file, opened beforehand by the supervisor (how a one-shot jail
         enters its cgroups now, src/lib/cgroup.c)

The first takes the kernel's global threadgroup lock for writing, which
waits for an RCU grace period unless the hierarchy is mounted with
`favordynmods`; the second skips that lock.  Each sample is one write, timed
around the write(2) alone, into a fresh cgroup beneath this process's own in
the v1 memory (or pids) hierarchy; the two are interleaved.  Needs write
access there (root, or a delegated v1 tree); prints why not otherwise.
"""

import argparse
import os
import random
import sys
import time

import benchlib as bl


def v1_dir(controller):
    """This process's own cgroup in the v1 hierarchy of controller, or None."""
    rel = None
    for line in open("/proc/self/cgroup"):
        _, ctrls, path = line.rstrip("\n").split(":", 2)
        if controller in ctrls.split(","):
            rel = path
    if rel is None:
        return None
    for line in open("/proc/self/mountinfo"):
        pre, _, post = line.partition(" - ")
        fields, sfields = pre.split(), post.split()
        if sfields[0] == "cgroup" and controller in sfields[2].split(","):
            root, mnt = fields[3], fields[4]
            if rel.startswith(root):
                return mnt + "/" + rel[len(root):].lstrip("/")
    return None


def favordynmods():
    return any("favordynmods" in line for line in open("/proc/self/mountinfo"))


def one(parent_dir, how):
    """Time one move of a fresh child into a fresh cgroup; ms."""
    cg = os.path.join(parent_dir, f"corral-bench-{os.getpid()}-{how}")
    os.mkdir(cg)
    try:
        r, w = os.pipe()
        go_r, go_w = os.pipe()
        tasks = os.open(os.path.join(cg, "tasks"), os.O_WRONLY) if how == "self" else -1
        pid = os.fork()
        if pid == 0:
            os.read(go_r, 1)
            if how == "self":
                t0 = time.perf_counter()
                os.write(tasks, b"0")
                t1 = time.perf_counter()
                os.write(w, str((t1 - t0) * 1e3).encode())
            os._exit(0)
        if tasks >= 0:
            os.close(tasks)
        if how == "procs":
            fd = os.open(os.path.join(cg, "cgroup.procs"), os.O_WRONLY)
            t0 = time.perf_counter()
            os.write(fd, str(pid).encode())
            t1 = time.perf_counter()
            os.close(fd)
            ms = (t1 - t0) * 1e3
        os.write(go_w, b"g")
        os.waitpid(pid, 0)
        os.close(w)
        if how == "self":
            ms = float(os.read(r, 64))
        for fd in (r, go_r, go_w):
            os.close(fd)
        return ms
    finally:
        os.rmdir(cg)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50, help="samples of each (default 50)")
    ap.add_argument("--md", help="also write a markdown section to this file")
    a = ap.parse_args()
    base = v1_dir("memory") or v1_dir("pids")
    if base is None or not os.access(base, os.W_OK):
        print(f"skipped: no writable cgroup v1 memory or pids directory for this process ({base or 'none'})")
        return 0
    fav = favordynmods()
    samples = {"procs": [], "self": []}
    for _ in range(a.runs):
        order = list(samples)
        random.shuffle(order)
        for how in order:
            samples[how].append(one(base, how))
    rows = [[how, f"{bl.pct(s, 50):.3f}", f"{bl.pct(s, 90):.3f}", f"{bl.mean(s):.3f}", str(len(s))]
            for how, s in samples.items()]
    header = ["move", "p50 ms", "p90 ms", "mean ms", "runs"]
    print(f"cgroup v1 attach in {base}; favordynmods {'set' if fav else 'not set'}")
    print(bl.table(header, rows))
    if a.md:
        bl.write_md(a.md, f"### Entering a cgroup v1 controller ({a.runs} interleaved runs)\n\n"
                    f"In `{base}`; the hierarchy is mounted {'with' if fav else 'without'} `favordynmods`. "
                    "`procs`: the supervisor writes the child's pid to `cgroup.procs` (the old way); `self`: "
                    "the child writes \"0\" to `tasks` (a one-shot jail now).\n\n"
                    + bl.md_table(header, rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
