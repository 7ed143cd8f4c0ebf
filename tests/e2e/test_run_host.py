"""`corral run` takes run_python's session from the user's session host
(docs/sessions.md): the host's zygote outlives the run, the session ends with
the run (also when the run is killed), the staged inputs are bound by the
run's descriptors, and no secret of the run reaches the host.  Each test has
a runtime directory of its own."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from conftest import CORRAL  # noqa: E402


@pytest.fixture
def rundir():
    d = tempfile.mkdtemp(prefix="corral-test-run-")
    os.chmod(d, 0o700)
    yield d
    env = dict(os.environ, XDG_RUNTIME_DIR=d)
    subprocess.run([CORRAL, "session", "shutdown"], env=env, capture_output=True, timeout=60)
    shutil.rmtree(d, ignore_errors=True)


def env_for(rundir, linger="600", **extra):
    return dict(os.environ, XDG_RUNTIME_DIR=rundir, CORRAL_SESSION_LINGER=linger, **extra)


def status(env):
    r = subprocess.run([CORRAL, "session", "status", "--json"], capture_output=True, text=True, env=env, timeout=30)
    return json.loads(r.stdout)


def sessions(env):
    r = subprocess.run([CORRAL, "session", "list", "--json"], capture_output=True, text=True, env=env, timeout=30)
    return json.loads(r.stdout)


def descendants(pid):
    out = subprocess.run(["ps", "-eo", "pid,ppid,comm"], capture_output=True, text=True).stdout.split("\n")[1:]
    kids = {}
    for line in out:
        f = line.split()
        if len(f) >= 3:
            kids.setdefault(int(f[1]), []).append((int(f[0]), f[2]))
    found, todo = [], [pid]
    while todo:
        for child, comm in kids.get(todo.pop(), []):
            found.append((child, comm))
            todo.append(child)
    return found


def ps_args():
    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout


def run(srv, env, cwd, *args, timeout=120):
    trace = [] if "--trace" in args else ["--no-trace"]
    return subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--json", *trace, *args,
                           "the task"], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def test_the_run_uses_the_hosts_zygote_and_its_session_ends_with_it(rundir, tmp_path):
    env = env_for(rundir)
    (tmp_path / "data.csv").write_text("a,b\n1,2\n3,4\n")
    turns = [tool_call("run_python", code="import os, pandas as pd\ndf = pd.read_csv('input/data.csv')\n"
                                          "print('sum', int(df.a.sum()), 'in', os.getpid())"),
             # The input is read-only in the host's session too.
             tool_call("run_python", code="open('input/data.csv', 'a').write('x')"),
             tool_call("run_python", code="df.b.sum()"),
             text("done") | {"expect": {"contains": ["sum 4", "Read-only file system", "6"]}}]
    trace = tmp_path / "trace.jsonl"
    with ScriptedServer(turns) as srv:
        r = run(srv, env, tmp_path, "-i", str(tmp_path / "data.csv"), "--trace", str(trace))
    assert r.returncode == 0, r.stderr
    srv.assert_ok()
    st = status(env)
    notices = [json.loads(line).get("message") for line in open(trace) if '"notice"' in line]
    # The host holds its zygote after the run; a zygote that could not
    # start is a cold session, never a silent one.
    assert st and (st["zygote_pid"] > 0 or any(w in (n or "") for n in notices for w in ("warm", "session host"))), \
        (st, notices)
    assert sessions(env) == []                     # the run's session ended with the run
    if st["zygote_pid"] <= 0:
        pytest.skip(f"the host's zygote did not start here: {notices}")
    # A second run claims from the same zygote.
    with ScriptedServer([tool_call("run_python", code="print(1)"), text("done")]) as srv:
        assert run(srv, env, tmp_path).returncode == 0
    assert status(env)["zygote_pid"] == st["zygote_pid"]


def test_no_session_host_leaves_no_host(rundir, tmp_path):
    env = env_for(rundir)
    with ScriptedServer([tool_call("run_python", code="print(6 * 7)"),
                         text("done") | {"expect": {"contains": ["42"]}}]) as srv:
        r = run(srv, env, tmp_path, "--no-session-host")
    assert r.returncode == 0, r.stderr
    srv.assert_ok()
    assert status(env) is None


def test_a_killed_run_takes_its_session_with_it(rundir, tmp_path):
    env = env_for(rundir)
    marker = f"corral-run-host-{os.getpid()}"
    code = (f"import subprocess, time\nsubprocess.Popen(['bash', '-c', 'exec -a {marker} sleep 60'])\n"
            "time.sleep(60)")
    with ScriptedServer([tool_call("run_python", code=code), text("never")]) as srv:
        p = subprocess.Popen([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--no-trace",
                              "--review-policy", "off", "go"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not sessions(env):
            time.sleep(0.1)
        listed = sessions(env)
        assert len(listed) == 1, listed
        assert listed[0]["busy"]
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and sessions(env):
            time.sleep(0.1)
        assert sessions(env) == []
    assert status(env) is not None
    # Nothing of the session is left: its processes went with its jail.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and marker in ps_args():
        time.sleep(0.1)
    assert marker not in ps_args()


def test_no_secret_of_the_run_reaches_the_host(rundir, tmp_path):
    key = "sk-test-host-" + "9" * 24
    env = env_for(rundir, OPENAI_API_KEY=key)
    with ScriptedServer([tool_call("run_python", code="print(1)"), text("done")]) as srv:
        r = run(srv, env, tmp_path)
    assert r.returncode == 0, r.stderr
    host = status(env)
    assert host is not None
    for pid in [host["pid"]] + [p for p, _ in descendants(host["pid"])]:
        for what in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    assert key.encode() not in f.read(), (pid, what)
            except (FileNotFoundError, PermissionError, ProcessLookupError):
                pass
