"""Shared helpers for corral's benchmarks: spawn-and-time, percentiles,
markdown tables, and finding the binaries under test.

Timing uses os.posix_spawn + wait4 around time.perf_counter_ns, which adds
far less overhead than subprocess. Nothing here passes or fails: the
scripts print numbers (see bench/README.md).
"""

import json
import os
import select
import shlex
import shutil
import signal
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The same small, fixed environment for every contender, so a stray
# variable in the caller's shell cannot change one tool's start-up.
ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
    "HOME": os.environ.get("HOME", "/"),
    "LANG": "C.UTF-8",
}


def find_corral():
    """Return (path, None) for $CORRAL (default build/corral), or (None, reason)."""
    path = os.environ.get("CORRAL", os.path.join(ROOT, "build", "corral"))
    if os.access(path, os.X_OK):
        return path, None
    return None, f"corral not found at '{path}' (set $CORRAL)"


def find_tool(name, env_var=None):
    """Return (path, None) for $env_var or `name` on PATH, or (None, reason)."""
    path = os.environ.get(env_var) if env_var else None
    if path:
        if os.access(path, os.X_OK):
            return path, None
        return None, f"${env_var}='{path}' is not executable"
    path = shutil.which(name)
    if path:
        return path, None
    hint = f" (set ${env_var})" if env_var else ""
    return None, f"'{name}' not on PATH{hint}"


def spawn(argv, stdout=None, limit_s=None, env=None):
    """Start argv with stdin and stderr on /dev/null, stdout on the given fd
    (or /dev/null). The child leads its own process group when limit_s is
    set, so a runaway can be killed with its descendants. Returns the pid."""
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    if stdout is None:
        actions.append((os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0))
    else:
        actions.append((os.POSIX_SPAWN_DUP2, stdout, 1))
    kw = {"setpgroup": 0} if limit_s is not None else {}
    return os.posix_spawn(argv[0], argv, ENV if env is None else env, file_actions=actions, **kw)


def reap(pid, limit_s=None):
    """Wait for pid; after limit_s seconds kill its process group first.
    Returns (wait status, rusage, killed_by_watchdog)."""
    killed = False
    if limit_s is not None:
        pidfd = os.pidfd_open(pid)
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            if not poller.poll(limit_s * 1000):
                os.killpg(pid, signal.SIGKILL)
                killed = True
        finally:
            os.close(pidfd)
    _, status, rusage = os.wait4(pid, 0)
    return status, rusage, killed


def timed_run(argv, limit_s=None, env=None):
    """Run argv once with output discarded (environment ENV unless env).
    Returns (elapsed_ns, exit_code, rusage, killed_by_watchdog)."""
    t0 = time.perf_counter_ns()
    pid = spawn(argv, limit_s=limit_s, env=env)
    status, rusage, killed = reap(pid, limit_s)
    t1 = time.perf_counter_ns()
    return t1 - t0, os.waitstatus_to_exitcode(status), rusage, killed


def pct(samples, p):
    """p-th percentile (0..100) by linear interpolation between order statistics."""
    s = sorted(samples)
    if len(s) == 1:
        return s[0]
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def mean(samples):
    return statistics.fmean(samples)


def quote(argv):
    """The argv as a copy-pasteable shell command."""
    return shlex.join(argv)


def table(header, rows):
    """Render rows (lists of str) as an aligned plain-text table."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    line = lambda r: "  ".join(str(c).rjust(w) if i else str(c).ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths])]
                     + [line(r) for r in rows])


def md_table(header, rows, text_cols=1):
    """Render rows as a GitHub markdown table: the first text_cols columns
    left-aligned, the numbers after them right-aligned."""
    align = [" --- "] * text_cols + [" ---: "] * (len(header) - text_cols)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def write_md(path, text):
    """Write a markdown fragment (for bench/run-all.sh to collect)."""
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write(text.rstrip() + "\n")


def build_kind(build):
    """'release build', 'debug build with address,undefined', ... from meson's introspection."""
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            o = {x["name"]: x["value"] for x in json.load(f)}
    except (OSError, ValueError, KeyError):
        return "build of unknown type"
    san = o.get("b_sanitize", "none")
    return f"{o.get('buildtype', '?')} build" + (f" with {san}" if san not in ("none", "") else "")
