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
    out.append(("corral pre-made", path and [path, "exec", "--"], why))
    return out


# Per contender, the environment its runs get (default bl.ENV): `corral`
# starts its jail directly (CORRAL_EXEC_POOL=0), `corral pre-made` claims
# one from the pool of a session host started for the benchmark
# (docs/exec-pool.md).
ENVS = {}


def start_pool_host(corral, size):
    """Start a session host with a pool of `size` pre-made jails in a runtime
    directory of its own; return (env for its clients, None) or (None, why)."""
    import tempfile
    rt = tempfile.mkdtemp(prefix="corral-bench-pool-")
    env = dict(bl.ENV, XDG_RUNTIME_DIR=rt, CORRAL_EXEC_POOL=str(size))
    r = subprocess.run([corral, "session", "start", "--cold"], env=env, capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        return None, f"session start failed: {r.stderr.strip()[:200]}"
    # The pool fills in the background: wait until it is full.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if pool_status(corral, env).get("size", 0) >= size:
            return env, None
        time.sleep(0.1)
    return env, None


def host_status(corral, env):
    r = subprocess.run([corral, "session", "status", "--json"], env=env, capture_output=True, text=True,
                       timeout=60)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {}


def pool_status(corral, env):
    return host_status(corral, env).get("exec_pool") or {}


def host_cpu_ms(pid):
    """CPU the session host and its reaped children (the jails it made and
    ran) have used, ms: the pool's share of a pre-made run's cost, which the
    client's own rusage does not see."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    return ticks * 1000.0 / os.sysconf("SC_CLK_TCK")


def stop_pool_host(corral, env):
    import shutil
    subprocess.run([corral, "session", "shutdown"], env=env, capture_output=True, timeout=120)
    shutil.rmtree(env["XDG_RUNTIME_DIR"], ignore_errors=True)


def served_from(corral, env):
    """Where `corral exec` got its jail with env: "pool" or "direct"."""
    r = subprocess.run([corral, "exec", "--json", "--", "/bin/true"], env=env, capture_output=True, text=True,
                       timeout=60)
    try:
        return json.loads(r.stdout).get("from")
    except ValueError:
        return None


def check(prefix, argv, env=None):
    """Run once, capturing output. Return None if it works, else a reason."""
    try:
        r = subprocess.run(prefix + argv, env=env or bl.ENV, capture_output=True,
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
                               env=ENVS.get("corral", bl.ENV), capture_output=True, text=True, timeout=60)
            for k, v in parse_phases(r.stdout).items():
                acc.setdefault(k, []).append(v)
        if acc:
            out[wname] = acc
    return out


def sustained(argv, seconds, env=None):
    """Run argv back to back for `seconds`; return (runs/s, CPU ms per run, runs)."""
    n, cpu = 0, 0.0
    t0 = time.perf_counter()
    while True:
        _, _, ru, _ = bl.timed_run(argv, env=env)
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
    ap.add_argument("--pool", type=int, default=4,
                    help="pre-made jails in the pool of `corral pre-made` (default 4; 0 skips it)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    corral = bl.find_corral()[0]
    try:
        run_all(args, rng, corral)
    finally:
        if ENVS.get("corral pre-made"):
            stop_pool_host(corral, ENVS["corral pre-made"])


def run_all(args, rng, corral):
    pool_why = "no corral" if corral is None else "--pool 0" if args.pool <= 0 else None
    if pool_why is None:
        ENVS["corral"] = dict(bl.ENV, CORRAL_EXEC_POOL="0")
        pool_env, pool_why = start_pool_host(corral, args.pool)
        if pool_env:
            ENVS["corral pre-made"] = pool_env
            got = served_from(corral, pool_env)
            if got != "pool":
                pool_why = f"a check run was served by {got!r}, not the pool"

    # Decide who runs: skip missing tools and (contender, workload) pairs
    # whose check run fails.
    active, skipped, cmds = [], [], {}
    for name, prefix, why in contenders():
        if name == "corral pre-made" and prefix is not None and pool_why:
            prefix, why = None, pool_why
        if prefix is None:
            skipped.append((name, why))
            continue
        cmds[name] = bl.quote(prefix + ["CMD..."]) if prefix else "CMD..."
        if name == "corral pre-made":
            cmds[name] += f" (a session host running with CORRAL_EXEC_POOL={args.pool})"
        elif name == "corral" and "corral" in ENVS:
            cmds[name] += " (CORRAL_EXEC_POOL=0: a jail started directly)"
        for wname, argv in WORKLOADS.items():
            why = check(prefix, argv, ENVS.get(name))
            if why:
                skipped.append((f"{name} [{wname}]", why))
            else:
                active.append((name, wname, prefix + argv, ENVS.get(name)))
    for what, why in skipped:
        print(f"skip {what}: {why}")
    if {w for n, w, _, _ in active if n == "bare"} != set(WORKLOADS):
        sys.exit("a bare run failed; nothing to compare against")
    names = list(dict.fromkeys(n for n, _, _, _ in active))

    samples, rows = {}, []
    for r in range(-args.warmup, args.rounds):
        order = active[:]
        rng.shuffle(order)
        for pos, (name, wname, argv, env) in enumerate(order):
            ns, code, _, _ = bl.timed_run(argv, env=env)
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
            for name, w, argv, env in active:
                if w == wname:
                    host = host_status(corral, env) if name == "corral pre-made" else None
                    host_cpu = host_cpu_ms(host.get("pid")) if host else 0.0
                    rate, cpu, n = sustained(argv, args.sustained, env)
                    if host is not None:
                        # The host made and supervised the jails: its CPU
                        # counts.  Back to back, the pool may run dry: the
                        # runs it did not serve started their jails directly.
                        cpu += (host_cpu_ms(host.get("pid")) - host_cpu) / n
                        claimed = pool_status(corral, env).get("claimed", 0) - host["exec_pool"].get("claimed", 0)
                        name = f"{name} ({claimed} of {n} from the pool)"
                    tab.append([name, f"{rate:.1f}", f"{cpu:.2f}", str(n)])
            text.append(f"\n== sustained back-to-back runs, {wname} ({args.sustained:g} s each) ==\n"
                        + bl.table(hdr, tab))
            md.append(f"Sustained back-to-back runs, `{wname}` ({args.sustained:g} s each; CPU of the run and "
                      "everything it waited for, and for `corral pre-made` the session host's making and "
                      "supervising of the jails):\n\n" + bl.md_table(hdr, tab) + "\n")
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
