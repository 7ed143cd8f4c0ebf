"""The jail's attack suite again, its `corral exec` runs served by a session
host's pool of pre-made jails (docs/exec-pool.md): the same tests, collected
here a second time with a pool host in their environment.

A pre-made jail is made before anyone claims it, and its caller's limits,
workspace and binds are attached at the claim: the files, processes and
limits attacks are where such a jail could differ from a direct one, so they
run here in make test, with the syscalls attacks on its privileges, its
filter and its init (started before the claim, adopting the program's
process); the whole suite through the pool runs in make stress
(tests/stress/exec-pool-attack.sh).  Each run through `run_jail` whose
options a pooled jail takes must say `"from": "pool"` (the pool is waited
for before it, so a miss is a fallback, not a race); the others, and the
jails a test starts in the background, may be served either way and must
hold either way.

Runs behind the suite's preflight (conftest.py) and this module's own: a
pooled jail must be in its own pid and network namespaces, as an
unprivileged uid, before any attack.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from corral_attack import CORRAL, JailProc, preflight_problems
# The suite's files whose attacks a pre-made jail could answer differently.
from test_files import *  # noqa: F401,F403,E402
from test_limits import *  # noqa: F401,F403,E402
from test_processes import *  # noqa: F401,F403,E402
# A pre-made jail's init is started before the claim and adopts the program's
# process, which loads the filter itself (src/lib/enter.c): the privileges,
# the filter's kill and EPERM answers, and init's own protection, checked here.
from test_syscalls import (test_capabilities_and_no_new_privs, test_eperm_calls_do_nothing,  # noqa: F401,E402
                           test_eperm_syscall_refused, test_init_fds_unreachable, test_init_maps_unreadable,
                           test_init_mem_write_refused, test_init_memory_not_writable,
                           test_init_status_pipe_not_writable, test_killed_syscall_kills, test_plain_fork_still_works)

POOL = 4
# Options every pooled jail takes (docs/exec-pool.md, "When corral exec uses
# the pool"); a run with any other may fall back, silently and as safely.
POOL_OPTIONS = {"-t", "--timeout", "-m", "--memory", "--pids", "--disk", "--nofile", "--output-limit",
                "--cpu-time", "-e", "--env", "--json", "--lang", "-c", "--code", "--net", "-w", "--workspace",
                "--bind", "--ro-bind"}


class PoolHost:
    """A session host with a pool of pre-made jails in a runtime directory
    of its own, for the module."""

    def __init__(self):
        self.rundir = tempfile.mkdtemp(prefix="corral-attack-pool-")
        os.chmod(self.rundir, 0o700)
        # A loaded test host may take longer than the 50 ms corral exec
        # waits for a pooled jail by default.
        self.env = {"XDG_RUNTIME_DIR": self.rundir, "CORRAL_EXEC_POOL": str(POOL),
                    "CORRAL_EXEC_POOL_WAIT_MS": "5000", "CORRAL_EXEC_POOL_QUIET_MS": "0"}
        r = self.corral("start", "--cold")
        assert r.returncode == 0, r.stderr

    def corral(self, *args):
        return subprocess.run([CORRAL, "session", *args], capture_output=True, text=True,
                              env=dict(os.environ, **self.env), timeout=120, stdin=subprocess.DEVNULL)

    def status(self):
        r = self.corral("status", "--json")
        return json.loads(r.stdout)["exec_pool"] if r.returncode == 0 else {}

    def wait_ready(self, seconds=30):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.status().get("size", 0) >= 1:
                return
            time.sleep(0.02)
        raise AssertionError(f"the pool made no jail in {seconds} s: {self.status()}")

    def close(self):
        self.corral("shutdown")
        shutil.rmtree(self.rundir, ignore_errors=True)


@pytest.fixture(scope="module")
def pool_host():
    host = PoolHost()
    # Every corral of the module (the tests' background jails too) finds the
    # pool: the environment is the tests' own.
    saved = {k: os.environ.get(k) for k in host.env}
    os.environ.update(host.env)
    yield host
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    status = host.status()
    host.close()
    assert status.get("failed", 0) == 0, f"the pool failed to make jails: {status}"


def _pool_options_only(args):
    for a in args:
        if a.startswith("-") and a.split("=", 1)[0] not in POOL_OPTIONS:
            return False
        if a.startswith("--net") and ("host" in a or "allow=" in a):
            return False
    return "host" not in args and not any(str(a).startswith("allow=") for a in args)


@pytest.fixture(scope="module", autouse=True)
def pool_suite_preflight(pool_host):
    """The suite's preflight again, for a pooled jail."""
    pool_host.wait_ready()
    problems, run = preflight_problems(lambda *a, **kw: JailProc(*a, **kw).wait(), "none")
    if run is not None and run.get("from") != "pool":
        problems.append(f"the probe was not served by the pool: {run.get('from')!r}")
    if problems:
        pytest.exit("pool suite preflight FAILED, no attack was run:\n  " + "\n  ".join(problems), returncode=1)


@pytest.fixture
def run_jail(pool_host):
    def run(args=(), code=None, timeout=2, **kw):
        pool_host.wait_ready()
        r = JailProc(args, code, timeout, **kw).wait()
        env = kw.get("env")
        refused = r.rc in (2, 125)  # bad input or a set-up failure: the direct jail says it in its words
        if _pool_options_only(list(args)) and not kw.get("pass_fds") and not refused and \
                (env is None or "XDG_RUNTIME_DIR" in env):
            assert r.get("from") == "pool", f"a run a pooled jail takes was served by {r.get('from')!r}: {args}"
        return r
    return run


@pytest.fixture
def kill_race_jails():
    """Not here: the kill race runs directly and through sessions."""
    pytest.skip("the kill race on a busy host is test_syscalls.py's (direct) and test_via_session.py's")
