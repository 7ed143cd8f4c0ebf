"""The engine in one multi-threaded process, as a server holds it
(tests/e2e/engine-threads.c): 16 agent runs against scripted model servers
and 400 session steps over 8 sessions of one session host, all at once, 4 of
the runs cancelled midway; then nothing may be left: processes, mounts,
cgroups, file descriptors, temporary directories.

Run with the ASan build's helper (beside corral) and, when make test built
one, with a ThreadSanitizer build's ($CORRAL_ENGINE_THREADS_TSAN): any report
of either sanitizer fails the program."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from conftest import CORRAL  # noqa: E402

HELPER = os.environ.get("CORRAL_ENGINE_THREADS") or os.path.join(
    os.path.dirname(os.path.abspath(CORRAL)), "tests", "engine-threads")
TSAN_HELPER = os.environ.get("CORRAL_ENGINE_THREADS_TSAN")

RUNS, CANCELLED, SESSIONS, STEPS = 16, 4, 8, 50


def helpers():
    found = [pytest.param(HELPER, id="asan")]
    found.append(pytest.param(TSAN_HELPER, id="tsan", marks=pytest.mark.skipif(
        not TSAN_HELPER, reason="no ThreadSanitizer build (make test makes one: CORRAL_ENGINE_THREADS_TSAN)")))
    return found


def cgroups_of(pid):
    """The cgroups corral made for jails of process pid (cgroup.c names them corral-PID-N)."""
    left = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        left += [os.path.join(root, d) for d in dirs if d.startswith(f"corral-{pid}-")]
        if root.count("/") > 6:
            dirs[:] = []
    return left


def mounts_with(path):
    with open("/proc/self/mountinfo") as f:
        return [line for line in f if path in line]


@pytest.mark.parametrize("helper", helpers())
def test_runs_and_sessions_at_once_leave_nothing(helper, tmp_path):
    if not (helper and os.access(helper, os.X_OK)):
        pytest.skip(f"no {helper}")
    servers = []
    for i in range(RUNS):
        # Two rounds of the same conversation.
        if i < CANCELLED:
            # A step that outlives the test's cancel: the run ends cancelled.
            turns = [tool_call("run_python", code="import time\ntime.sleep(60)")] * 2
        else:
            turns = [tool_call("run_python", code=f"print({i} * 6 * 7)"),
                     text(f"run {i}: {i * 42}") | {"expect": {"contains": [str(i * 42)]}}] * 2
        servers.append(ScriptedServer(turns, models=["gpt-test"]).__enter__())
    tmpdir = tempfile.mkdtemp(prefix="engine-tmp-")
    records = tmp_path / "records"
    records.mkdir()
    env = dict(os.environ, TMPDIR=tmpdir, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.pop("OPENAI_API_KEY", None)
    urls = [("cancel:" if i < CANCELLED else "") + s.base_url for i, s in enumerate(servers)]
    p = subprocess.Popen([helper, str(records), str(SESSIONS), str(STEPS), *urls], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    try:
        stdout, stderr = p.communicate(timeout=900)
    finally:
        p.kill()
        for s in servers:
            s.__exit__(None, None, None)
    assert p.returncode == 0, (p.returncode, stdout[-3000:], stderr[-5000:])
    rounds = [json.loads(line) for line in stdout.splitlines()]
    assert [r["round"] for r in rounds] == [0, 1]
    for i in range(CANCELLED, RUNS):
        servers[i].assert_ok()
    slow = len([n for n in range(STEPS) if n % 5 == 4])
    for out in rounds:
        for i, r in enumerate(out["runs"]):
            if i < CANCELLED:
                assert r["status"] == "cancelled", (i, r)
            else:
                assert r["status"] == "answered" and r["answer"] == f"run {i}: {i * 42}", (i, r)
            # Every run's trace has its end, written by the library.
            with open(r["trace"]) as f:
                events = [json.loads(line) for line in f]
            assert events[0]["type"] == "run_start" and events[-1]["type"] == "run_end", (i, events[-1])
            assert events[-1]["status"] == r["status"]
        for s in out["sessions"]:
            assert s == {"steps": STEPS, "errors": 0, "timeouts": slow}, s
        assert out["host_empty"]
    # What the library caches is made in the first round: no fd more after the second.
    assert rounds[1]["fds"] == rounds[0]["fds"], [r["fds"] for r in rounds]
    # Nothing left on the host: the helper has exited, so nothing of it
    # may remain anywhere.
    assert os.listdir(tmpdir) == [], os.listdir(tmpdir)
    os.rmdir(tmpdir)
    assert cgroups_of(p.pid) == []
    assert mounts_with(tmpdir) == []
    ps = subprocess.run(["ps", "-eo", "pid,ppid,args"], capture_output=True, text=True).stdout
    assert not [line for line in ps.splitlines()[1:] if line.split()[1] == str(p.pid)], ps
    assert "sanitizer" not in stderr.lower(), stderr[-5000:]
