#!/usr/bin/python3
"""Start-up latency: corral against bare exec, unshare, bubblewrap,
firejail and nsjail, on `python3 -c 'print(1)'` and `/bin/true`.

Every contender runs in the same process, interleaved: each round runs
every (contender, workload) pair once, in a freshly shuffled order, so
drift in machine load hits all of them alike. A contender that is missing
or fails a first check run is skipped with the reason printed.

Prints p50/p90/mean per contender, the ratio of its p50 to bare and the
overhead (p50 - bare p50); writes raw samples to CSV and a box plot PNG.
If corral's `--json` output has a "phases" object, an extra pass reports
the median of each phase.  A sustained pass then runs each contender back
to back for --sustained seconds per workload: runs per second, and the CPU
time one run costs (user + system of it and everything it waited for,
from wait4(); the workload's own share is bare's figure).
"""

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import time

import benchlib as bl

WORKLOADS = {
    "python3 -c 'print(1)'": ["/usr/bin/python3", "-c", "print(1)"],
    "/bin/true": ["/bin/true"],
}


def root_links(symlink_opt, bind_opt):
    """Options that recreate /bin, /sbin, /lib, /lib64 as on the host:
    symlinks into /usr on merged-/usr systems, read-only binds otherwise."""
    opts = []
    for d in ("/bin", "/sbin", "/lib", "/lib64"):
        if os.path.islink(d):
            opts += symlink_opt(os.readlink(d), d)
        elif os.path.isdir(d):
            opts += bind_opt(d)
    return opts


def contenders():
    """Return [(name, argv prefix or None, skip reason)] in report order.
    Each sandbox gets comparable isolation: new user (where the tool does
    that), pid, net, mount, ipc and uts namespaces; a read-only /usr; a
    fresh /proc, a minimal /dev, an empty /tmp; no inherited environment."""
    root = os.geteuid() == 0
    out = [("bare", [], None)]

    path, why = bl.find_tool("unshare")
    if path and root:
        out.append(("unshare", [path, "-pfnimu"], None))
    elif path:
        out.append(("unshare", [path, "--user", "--map-root-user", "--pid",
                                "--fork", "--mount", "--net", "--ipc", "--uts"], None))
    else:
        out.append(("unshare", None, why))

    path, why = bl.find_tool("bwrap")
    out.append(("bwrap", path and [
        path, "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534",
        "--die-with-parent", "--new-session", "--clearenv",
        "--setenv", "PATH", "/usr/bin:/bin",
        "--ro-bind", "/usr", "/usr",
        *root_links(lambda t, d: ["--symlink", t, d], lambda d: ["--ro-bind", d, d]),
        "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
        "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--chdir", "/tmp",
        "--"], why))

    # firejail is setuid root; as root it adds no user namespace.
    path, why = bl.find_tool("firejail")
    out.append(("firejail", path and [
        path, "--quiet", "--noprofile", "--net=none", "--private",
        "--private-tmp", "--private-dev", "--"], why))

    path, why = bl.find_tool("nsjail", "NSJAIL")
    out.append(("nsjail", path and [
        path, "-Mo", "--really_quiet", "-u", "65534", "-g", "65534",
        "-R", "/usr",
        *root_links(lambda t, d: ["-s", f"{t}:{d}"], lambda d: ["-R", d]),
        "-R", "/etc/ld.so.cache",
        "-B", "/dev/null", "-B", "/dev/zero", "-B", "/dev/urandom",
        "-T", "/tmp", "-D", "/tmp", "-E", "PATH=/usr/bin:/bin",
        "--"], why))

    path, why = bl.find_corral()
    out.append(("corral", path and [path, "exec", "--"], why))
    return out


def check(prefix, argv):
    """Run once, capturing output. Return None if it works, else a reason."""
    try:
        r = subprocess.run(prefix + argv, env=bl.ENV, capture_output=True,
                           text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "check run timed out after 60 s"
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines() or ["(no stderr)"]
        err = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
        return f"exit {r.returncode}: {err}"
    if argv[0].endswith("python3") and r.stdout.strip() != "1":
        return f"unexpected output {r.stdout.strip()[:60]!r}"
    return None


def parse_phases(text):
    """Return the "phases" dict of the last JSON object in text that starts
    a line (the program's own output may come first), or {}."""
    decoder = json.JSONDecoder()
    starts = [i for i in range(len(text)) if text[i] == "{" and (i == 0 or text[i - 1] == "\n")]
    for i in reversed(starts):
        try:
            obj, _ = decoder.raw_decode(text, i)
        except ValueError:
            continue
        phases = obj.get("phases")
        if not isinstance(phases, dict):
            return {}
        return {k: float(v) for k, v in phases.items() if isinstance(v, (int, float))}
    return {}


def phase_pass(corral, runs):
    """Run `corral exec --json` per workload; return {workload: {phase: [ms]}}."""
    out = {}
    for wname, argv in WORKLOADS.items():
        acc = {}
        for _ in range(runs):
            r = subprocess.run([corral, "exec", "--json", "--"] + argv,
                               env=bl.ENV, capture_output=True, text=True, timeout=60)
            for k, v in parse_phases(r.stdout).items():
                acc.setdefault(k, []).append(v)
        if acc:
            out[wname] = acc
    return out


def sustained(argv, seconds):
    """Run argv back to back for `seconds`; return (runs/s, CPU ms per run, runs)."""
    n, cpu = 0, 0.0
    t0 = time.perf_counter()
    while True:
        _, _, ru, _ = bl.timed_run(argv)
        n += 1
        cpu += ru.ru_utime + ru.ru_stime
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return n / elapsed, cpu * 1e3 / n, n


def favordynmods():
    """Whether a cgroup hierarchy is mounted with favordynmods (docs/limits.md)."""
    return any("favordynmods" in line for line in open("/proc/self/mountinfo"))


def minor_label(v, _pos):
    """Label the 2s and 5s between decades of a log axis, leave the rest blank."""
    return f"{v:g}" if f"{v:e}"[0] in "25" else ""


def plot(path, samples, names):
    """Box plot (log ms) per workload, one box per contender."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, axes = plt.subplots(1, len(WORKLOADS), figsize=(12, 4.5))
    for ax, wname in zip(axes, WORKLOADS):
        present = [n for n in names if samples.get((n, wname))]
        data = [[ns / 1e6 for ns in samples[(n, wname)]] for n in present]
        labels = [f"{n}\np50 {bl.pct(d, 50):.2f} ms" for n, d in zip(present, data)]
        ax.boxplot(data, vert=False, labels=labels, whis=(5, 95), sym=".")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(minor_label))
        ax.set_xlabel("wall time per run, ms (log; box = p25..p75, whiskers p5..p95)")
        ax.set_title(wname)
        ax.invert_yaxis()
        ax.grid(axis="x", which="both", alpha=0.3)
    n = max(len(v) for v in samples.values())
    fig.suptitle(f"corral start-up vs other sandboxes ({n} interleaved rounds)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200, help="timed rounds (default 200)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default 3)")
    ap.add_argument("--phase-runs", type=int, default=50,
                    help="runs of `corral exec --json` per workload for phases (default 50)")
    ap.add_argument("--sustained", type=float, default=3,
                    help="seconds of back-to-back runs per contender and workload (default 3; 0 skips)")
    ap.add_argument("--csv", default=os.path.join(bl.HERE, "out", "startup-samples.csv"))
    ap.add_argument("--plot", default=os.path.join(bl.ROOT, "docs", "benchmarks-startup.png"))
    ap.add_argument("--md", help="also write a markdown section to this file")
    ap.add_argument("--seed", type=int, help="shuffle seed (default: random)")
    args = ap.parse_args()
    rng = random.Random(args.seed)

    # Decide who runs: skip missing tools and (contender, workload) pairs
    # whose check run fails.
    active, skipped, cmds = [], [], {}
    for name, prefix, why in contenders():
        if prefix is None:
            skipped.append((name, why))
            continue
        cmds[name] = bl.quote(prefix + ["CMD..."]) if prefix else "CMD..."
        for wname, argv in WORKLOADS.items():
            why = check(prefix, argv)
            if why:
                skipped.append((f"{name} [{wname}]", why))
            else:
                active.append((name, wname, prefix + argv))
    for what, why in skipped:
        print(f"skip {what}: {why}")
    if {w for n, w, _ in active if n == "bare"} != set(WORKLOADS):
        sys.exit("a bare run failed; nothing to compare against")
    names = list(dict.fromkeys(n for n, _, _ in active))

    samples, rows = {}, []
    for r in range(-args.warmup, args.rounds):
        order = active[:]
        rng.shuffle(order)
        for pos, (name, wname, argv) in enumerate(order):
            ns, code, _, _ = bl.timed_run(argv)
            if r < 0:
                continue
            if code != 0:
                print(f"warning: {name} [{wname}] exited {code} in round {r}", file=sys.stderr)
            samples.setdefault((name, wname), []).append(ns)
            rows.append((r, wname, name, pos, ns, code))
        if r >= 0 and (r + 1) % 50 == 0:
            print(f"  {r + 1}/{args.rounds} rounds", file=sys.stderr)

    os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round", "workload", "contender", "position", "elapsed_ns", "exit"])
        w.writerows(rows)

    header = ["contender", "p50 ms", "p90 ms", "mean ms", "p50/bare", "overhead ms"]
    text, md = [], [f"### Start-up latency ({args.rounds} interleaved rounds)\n"]
    for wname in WORKLOADS:
        base = bl.pct(samples[("bare", wname)], 50)
        tab = []
        for name in names:
            s = samples.get((name, wname))
            if not s:
                continue
            p50 = bl.pct(s, 50)
            tab.append([name, f"{p50 / 1e6:.2f}", f"{bl.pct(s, 90) / 1e6:.2f}",
                        f"{bl.mean(s) / 1e6:.2f}", f"{p50 / base:.2f}x",
                        f"{(p50 - base) / 1e6:+.2f}"])
        text.append(f"\n== {wname} ({args.rounds} rounds) ==\n" + bl.table(header, tab))
        md.append(f"Workload `{wname}`:\n\n" + bl.md_table(header, tab) + "\n")

    if "corral" in names and args.phase_runs > 0:
        phases = phase_pass(bl.find_corral()[0], args.phase_runs)
        if not phases:
            text.append("\ncorral --json reported no \"phases\"; phase pass skipped")
        for wname, acc in phases.items():
            tab = [[k, f"{bl.pct(v, 50):.3f}", str(len(v))] for k, v in acc.items()]
            hdr = ["phase", "median ms", "runs"]
            text.append(f"\n== corral phases, {wname} ==\n" + bl.table(hdr, tab))
            md.append(f"corral's own phase timings (`--json`), `{wname}`:\n\n"
                      + bl.md_table(hdr, tab) + "\n")

    if args.sustained > 0:
        hdr = ["contender", "runs/s", "CPU ms per run", "runs"]
        for wname in WORKLOADS:
            tab = []
            for name, w, argv in active:
                if w == wname:
                    rate, cpu, n = sustained(argv, args.sustained)
                    tab.append([name, f"{rate:.1f}", f"{cpu:.2f}", str(n)])
            text.append(f"\n== sustained back-to-back runs, {wname} ({args.sustained:g} s each) ==\n"
                        + bl.table(hdr, tab))
            md.append(f"Sustained back-to-back runs, `{wname}` ({args.sustained:g} s each; CPU of the run and "
                      "everything it waited for):\n\n" + bl.md_table(hdr, tab) + "\n")
    fav = "set" if favordynmods() else "not set"
    text.append(f"\ncgroup favordynmods: {fav}")
    md.append(f"cgroup `favordynmods` on this host: {fav} (docs/limits.md, \"Performance note\").\n")

    print("\n".join(text))
    md.append("Command line per contender (`CMD...` is the workload):\n")
    md += [f"- {n}: `{c}`" for n, c in cmds.items()]
    if skipped:
        md.append("\nSkipped:\n")
        md += [f"- {what}: {why}" for what, why in skipped]
    bl.write_md(args.md, "\n".join(md))

    if args.plot:
        try:
            plot(args.plot, samples, names)
            print(f"\nplot: {args.plot}")
        except ImportError as e:
            print(f"no plot ({e}); install python3-matplotlib", file=sys.stderr)
    print(f"samples: {args.csv}")


if __name__ == "__main__":
    main()
