#!/usr/bin/env python3
"""Compare CPython's own regression suite on the bare host and in corral's jail.

    tests/compat/cpython_compare.py [--corral PATH] [--set quick|full] [-j N] [--json FILE] [MODULE...]

Each module of Debian's libpython3.11-testsuite runs twice, at the same time:
bare (python3 in a temporary directory, as whoever runs this) and through
`corral exec` with the limits of issue 25 (JAIL_OPTIONS), by the same runner
(cpython_runner.py), which reports every test case's outcome.  A test that
passes bare (or is skipped there) and fails, errors, is skipped or is missing
in the jail is a difference; so is a module the jail killed or timed out.
Every difference must match an entry of cpython-differences.txt, which gives
its reason; the rest are rerun once, bare and jailed, and what still differs
is unexplained: the exit status is 1 then, 0 otherwise.  docs/compatibility.md
has the results and the reasons.

The quick set runs in `make test` (tests/compat/test_cpython.py); the full set
is the comparison docs/compatibility.md reports (run it as root and as an
ordinary user).
"""
import argparse
import concurrent.futures
import fnmatch
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "cpython_runner.py")
# The interpreter the jail runs (the host's /usr, bound read-only), not whatever
# python3 comes first on this PATH.
PYTHON = "/usr/bin/python3"
DIFFERENCES = os.path.join(HERE, "cpython-differences.txt")
TESTSUITE = "/usr/lib/python3.11/test"
MARKER = "COMPAT-RESULT "

# The limits of the runs.
JAIL_OPTIONS = ["-t", "400", "-m", "4G", "--pids", "1024", "--disk", "2G", "--nofile", "4096",
                "--output-limit", "16M"]
MODULE_TIMEOUT = 300  # regrtest's own per-test timeout (faulthandler)

# Fast modules (a few seconds each) that cover what issue 25 fixed: probes
# answered with EPERM (test_os: chroot; test_time: clock_settime), terminals
# (test_pty), the jail's loopback (test_epoll; test_logging, which hung until
# the time limit without it), and what stays different (test_resource:
# RLIMIT_FSIZE).
QUICK = ["test_os", "test_time", "test_pty", "test_epoll", "test_logging", "test_select", "test_fcntl",
         "test_posix", "test_resource", "test_tempfile", "test_shutil", "test_getpass"]

# The comparison docs/compatibility.md reports: modules that do not need the
# network (regrtest leaves the network resource off anyway).
# Not here: test_socketserver (regrtest skips it without its network
# resource), test_ioctl (needs a controlling terminal, bare too), test_curses
# (its curses resource).
FULL = QUICK + [
    "test_subprocess", "test_pickle", "test_io", "test_selectors", "test_signal", "test_socket",
    "test_threading", "test_mmap", "test_json", "test_re", "test_csv", "test_zipfile", "test_tarfile",
    "test_gzip", "test_bz2", "test_lzma", "test_zlib", "test_hashlib", "test_ssl", "test_httpservers",
    "test_urllib2_localnet", "test_xmlrpc", "test_ftplib", "test_wsgiref", "test_concurrent_futures",
    "test_pathlib", "test_glob", "test_fileio", "test_file", "test_stat", "test_pwd", "test_grp",
    "test_platform", "test_sysconfig", "test_site", "test_compileall", "test_py_compile", "test_datetime",
    "test_decimal", "test_math", "test_random", "test_uuid", "test_locale", "test_codecs", "test_faulthandler",
    "test_sys", "test_posixpath", "test_shlex", "test_fileinput", "test_zipimport", "test_cmd_line",
    "test_cmd_line_script", "test_exceptions", "test_traceback", "test_tracemalloc", "test_gc",
    "test_asyncio", "test_multiprocessing_fork", "test_multiprocessing_forkserver",
    "test_multiprocessing_spawn", "test_smtplib", "test_poplib", "test_imaplib", "test_telnetlib",
    "test_asynchat", "test_asyncore", "test_readline", "test_openpty", "test_genericpath",
    "test_support", "test_venv", "test_unittest", "test_doctest", "test_importlib", "test_builtin",
    "test_syslog", "test_largefile", "test_sched", "test_queue", "test_thread", "test_threading_local",
    "test_poll", "test_wait3", "test_wait4", "test_fork1", "test_mailbox", "test_netrc", "test_tabnanny",
    "test_pipes", "test_popen", "test_getopt", "test_dbm", "test_dbm_dumb", "test_shelve", "test_ctypes",
    "test_embed",
]

GOOD = ("ok", "skip", "xfail")

# Tests left out on both sides, with the reason: they cannot run on the bare
# host here, so they would take the rest of their module with them.
IGNORE = {
    # On a VM with a vsock device (Firecracker here) the VSOCK tests wait for
    # a peer that never comes, bare, until regrtest's timeout ends the whole
    # module; in the jail AF_VSOCK is refused (EAFNOSUPPORT) and they skip.
    "test_socket": ["*VSOCK*"],
}


def ignore_args(module):
    return [a for p in IGNORE.get(module, []) for a in ("--ignore", p)]


def bare_env(home):
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "USER": os.environ.get("USER", ""),
            "LOGNAME": os.environ.get("LOGNAME", "")}


def parse_runner(stdout):
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                return json.loads(line[len(MARKER):])
            except ValueError:
                return None
    return None


def module_status(res):
    """pass, fail (regrtest's status) or skipped: regrtest skips a whole
    module that needs a resource it leaves off (network) or another
    platform."""
    if res["rc"] == 0 and not res["tests"]:
        for line in res.get("tail", "").splitlines():
            if " skipped -- " in line:
                return "skipped (" + line.split(" skipped -- ", 1)[1].strip() + ")"
            if line.startswith("setUpModule") and "skipped" in line:
                return "skipped (" + line.split("skipped", 1)[1].strip(" '") + ")"
        return "skipped (no test ran)"
    return "pass" if res["rc"] == 0 else f"fail (regrtest {res['rc']})"


def default_signals():
    """For the bare run: the dispositions a fresh session has (a shell's
    background job ignores SIGINT, nohup SIGHUP; the jail's init starts the
    program with defaults), else tests of KeyboardInterrupt fail bare."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def run_bare(module, only=()):
    """The module on the bare host: {"status", "tests", ...}."""
    with tempfile.TemporaryDirectory(prefix="compat-bare-") as home:
        start = time.monotonic()
        try:
            p = subprocess.run([PYTHON, RUNNER, module, str(MODULE_TIMEOUT), *ignore_args(module), *only], cwd=home,
                               env=bare_env(home), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               errors="replace", timeout=float(JAIL_OPTIONS[1]) + 60,
                               preexec_fn=default_signals, start_new_session=True)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "tests": {}, "seconds": time.monotonic() - start}
    res = parse_runner(p.stdout)
    if res is None:
        return {"status": "no-result", "tests": {}, "tail": (p.stdout + p.stderr)[-2000:],
                "seconds": time.monotonic() - start}
    res["status"] = module_status(res)
    return res


def run_jail(corral, module, only=()):
    """The module through `corral exec --json`: the runner's summary plus the
    jail's verdict (status, limit, syscall, denied)."""
    cmd = [corral, "exec", "--json", *JAIL_OPTIONS, RUNNER, module, str(MODULE_TIMEOUT), *ignore_args(module), *only]
    start = time.monotonic()
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                       timeout=float(JAIL_OPTIONS[1]) + 120)
    seconds = time.monotonic() - start
    try:
        jail = json.loads(p.stdout)
    except ValueError:
        return {"status": f"corral failed (exit {p.returncode}): {p.stderr.strip()[-300:]}", "tests": {},
                "seconds": seconds}
    res = parse_runner(jail.get("stdout", "")) or {"tests": {}, "tail": jail.get("stdout", "")[-2000:]}
    res["jail"] = {k: jail.get(k) for k in ("status", "exit_code", "limit", "syscall", "reason", "denied")}
    res["seconds"] = res.get("seconds", round(seconds, 1))
    if jail["status"] == "killed" and jail.get("limit") == "seccomp":
        res["status"] = f"killed (system call {jail.get('syscall')})"
    elif jail["status"] in ("timeout", "oom", "killed"):
        res["status"] = f"{jail['status']} ({jail.get('reason')})"
    elif "rc" in res:
        res["status"] = module_status(res)
    else:
        res["status"] = f"no result ({jail['status']}, exit {jail['exit_code']})"
    return res


def load_differences(path=DIFFERENCES):
    """[(pattern, who, reason)]: PATTERN WHO REASON per line, # comments.
    PATTERN is fnmatch'd against a test id without its "test." prefix
    (test_os.ChownFileTests.test_chown) or names a module; WHO is any, root
    or user."""
    rules = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3 or parts[1] not in ("any", "root", "user"):
                raise ValueError(f"{path}:{n}: expected PATTERN any|root|user REASON")
            rules.append(tuple(parts))
    return rules


def explain(name, rules, who):
    for pattern, rule_who, reason in rules:
        if rule_who in ("any", who) and fnmatch.fnmatchcase(name, pattern):
            return reason
    return None


def short(test_id):
    return test_id[5:] if test_id.startswith("test.") else test_id


def differences(module, bare, jail):
    """[(name, bare outcome, jail outcome, message)] of what the jail does
    worse than the bare host."""
    out = []
    if jail["status"].startswith(("killed", "timeout", "oom", "no result", "corral")):
        out.append((module, bare["status"], jail["status"], ""))
    for tid, b in sorted(bare.get("tests", {}).items()):
        j = jail.get("tests", {}).get(tid, "missing")
        if j == b or j == "xfail":
            continue
        if (b == "ok" and j != "ok") or (b in GOOD and j in ("fail", "error")) or (j == "missing" and jail["tests"]):
            out.append((short(tid), b, j, jail.get("messages", {}).get(tid, "")))
    for tid, j in sorted(jail.get("tests", {}).items()):
        if tid not in bare.get("tests", {}) and j in ("fail", "error"):
            out.append((short(tid), "absent", j, jail.get("messages", {}).get(tid, "")))
    return out


def compare_module(corral, module, rules, who):
    """Run one module both ways (at once) and classify what differs.  Tests
    that differ without an entry are rerun once, both ways."""
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        fb = ex.submit(run_bare, module)
        fj = ex.submit(run_jail, corral, module)
        bare, jail = fb.result(), fj.result()
    diffs = differences(module, bare, jail)
    explained, unexplained = [], []
    for d in diffs:
        reason = explain(d[0], rules, who)
        (explained if reason else unexplained).append((*d, reason))
    rerun_ids = [t for t in bare.get("tests", {}) if short(t) in {d[0] for d in unexplained}]
    flaky = []
    if rerun_ids:
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            fb = ex.submit(run_bare, module, rerun_ids)
            fj = ex.submit(run_jail, corral, module, rerun_ids)
            bare2, jail2 = fb.result(), fj.result()
        still = {d[0] for d in differences(module, bare2, jail2)}
        flaky = [d for d in unexplained if d[0] not in still and d[0] != module]
        unexplained = [d for d in unexplained if d not in flaky]
    return {"module": module, "bare": summary(bare), "jail": summary(jail), "explained": explained,
            "unexplained": unexplained, "flaky": flaky}


def summary(res):
    counts = {}
    for o in res.get("tests", {}).values():
        counts[o] = counts.get(o, 0) + 1
    return {"status": res["status"], "counts": counts, "seconds": res.get("seconds"),
            "jail": res.get("jail"), "tail": res.get("tail", "")[-1500:] if res["status"] != "pass" else ""}


def available(modules):
    return [m for m in modules if os.path.exists(os.path.join(TESTSUITE, m + ".py"))
            or os.path.isdir(os.path.join(TESTSUITE, m))]


def jail_only(corral, modules, jobs, json_path):
    results = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        for m, res in zip(modules, ex.map(lambda m: run_jail(corral, m), modules)):
            s = summary(res)
            results.append({"module": m, "jail": s})
            print(f"{m:32} jail {s['status']:50} {s['counts']}", flush=True)
    n_pass = sum(r["jail"]["status"] == "pass" for r in results)
    print(f"\n{len(results)} modules in the jail as uid {os.geteuid()}: {n_pass} pass, {len(results) - n_pass} not")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"uid": os.geteuid(), "results": results}, f, indent=1)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corral", default=os.environ.get("CORRAL") or os.path.join(HERE, "../../build/corral"))
    ap.add_argument("--set", choices=("quick", "full"), default="full")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="modules at once (each runs bare and jailed)")
    ap.add_argument("--json", help="write every module's comparison here")
    ap.add_argument("--jail-only", action="store_true",
                    help="run the jail side alone and print each module's outcome (e.g. for an older corral)")
    ap.add_argument("modules", nargs="*")
    args = ap.parse_args()
    if not os.path.isdir(TESTSUITE) or not os.path.exists(os.path.join(TESTSUITE, "test_os.py")):
        sys.exit(f"no CPython test suite at {TESTSUITE}: apt-get install libpython3.11-testsuite")
    modules = args.modules or available(QUICK if args.set == "quick" else FULL)
    rules = load_differences()
    who = "root" if os.geteuid() == 0 else "user"
    if args.jail_only:
        return jail_only(args.corral, modules, args.jobs, args.json)
    results = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        for r in ex.map(lambda m: compare_module(args.corral, m, rules, who), modules):
            results.append(r)
            b, j = r["bare"], r["jail"]
            flaky = f", {len(r['flaky'])} passed on a rerun" if r["flaky"] else ""
            print(f"{r['module']:32} bare {b['status']:24} jail {j['status']:40} "
                  f"{len(r['explained'])} explained, {len(r['unexplained'])} unexplained{flaky}", flush=True)
            for d in r["unexplained"]:
                print(f"    UNEXPLAINED {d[0]}: bare {d[1]}, jail {d[2]}  {d[3]}", flush=True)
    skipped = [r for r in results if r["bare"]["status"].startswith("skipped")]
    results_run = [r for r in results if r not in skipped]
    bare_pass = sum(r["bare"]["status"] == "pass" for r in results_run)
    jail_pass = sum(r["jail"]["status"] == "pass" for r in results_run)
    bad = [r for r in results if r["unexplained"]]
    print(f"\n{len(results_run)} modules as {who} (uid {os.geteuid()}), {len(skipped)} more skipped whole by "
          f"regrtest bare: bare {bare_pass} pass, {len(results_run) - bare_pass} fail; jail {jail_pass} pass, "
          f"{len(results_run) - jail_pass} fail; "
          f"{sum(len(r['explained']) for r in results)} explained differences, "
          f"{sum(len(r['unexplained']) for r in results)} unexplained in {len(bad)} modules")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"who": who, "uid": os.geteuid(), "results": results}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
