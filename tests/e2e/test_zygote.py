"""Warm sessions: interpreters forked from a zygote with the data libraries
imported (docs/sessions.md, "Warm sessions").

Most tests drive several sessions over one zygote through
tests/e2e/warm-sessions (warmhost.py); the CLI tests use `corral session start
--warm`.  They run as root and, a second time (scripts/run-tests.sh), as an
ordinary user; the cold path stays the default and is tested by
test_session.py.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from warmhost import CORRAL, ZYGOTE_COMM, WarmHost, available, limits_backend, procs_named  # noqa: E402

pytestmark = pytest.mark.skipif(not available(), reason="warm sessions need tests/warm-sessions")

DATA_LIBS = ("numpy", "pandas", "matplotlib", "matplotlib.pyplot", "scipy")


@pytest.fixture
def host():
    h = WarmHost()
    yield h
    h.close()


def test_warm_session_has_the_data_libraries_imported(host):
    s = host.start()
    res = host.step(s, f"import sys\nsorted(m for m in {DATA_LIBS!r} if m in sys.modules)")
    assert res["status"] == "ok", res
    assert res["value"]["text"] == repr(sorted(DATA_LIBS))
    # and a real step with them
    text = host.value(s, "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})\nint(df.a.sum())")
    assert text == "6"


def test_warm_session_keeps_state_and_saves_figures(host, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    s = host.start(workspace=str(ws))
    assert host.step(s, "x = 41")["status"] == "ok"
    assert host.value(s, "x + 1") == "42"
    res = host.step(s, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])")
    assert res["status"] == "ok", res
    assert len(res["figures"]) == 1
    png = ws / "output" / "figures" / "step3-1.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_warm_session_runs_in_the_given_workspace(host, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "in.csv").write_text("a,b\n1,2\n3,4\n")
    s = host.start(workspace=str(ws))
    assert host.value(s, "import os, pandas as pd\n(os.getcwd(), int(pd.read_csv('in.csv').b.sum()))") == \
        "('/workspace', 6)"
    assert host.step(s, "open('out.txt', 'w').write('hi')")["status"] == "ok"
    assert (ws / "out.txt").read_text() == "hi"
    # written as the directory's owner on the host (idmapped), not as the jail's uid
    assert (ws / "out.txt").stat().st_uid == ws.stat().st_uid


def test_warm_session_without_a_workspace_gets_a_writable_one_of_its_own(host):
    a, b = host.start(), host.start()
    res = host.value(a, "import os\nopen('/workspace/mine', 'w').write('x')\nos.makedirs('/workspace/d/e')\n"
                        "st = os.stat('/workspace/mine')\n(st.st_uid, os.stat('/workspace').st_uid, "
                        "sorted(os.listdir('/workspace')))")
    assert res == "(1000, 1000, ['d', 'mine'])", res
    assert host.value(b, "import os\nos.listdir('/workspace')") == "[]"


def test_warm_session_gets_its_environment(host):
    s = host.start(env=["CORRAL_TEST_VAR=hello"])
    assert host.value(s, "import os\nos.environ.get('CORRAL_TEST_VAR')") == "'hello'"


def test_lost_interpreter_restarts_warm(host):
    s = host.start()
    assert host.step(s, "y = 5")["status"] == "ok"
    res = host.step(s, "import os\nos._exit(3)")
    assert res["status"] == "lost" and res["state_lost"] and res["exit_code"] == 3, res
    res = host.step(s, "import sys\n('y' in globals(), 'pandas' in sys.modules)")
    assert res["restarted"], res
    assert res["value"]["text"] == "(False, True)"


def test_timeout_interrupts_and_keeps_state(host):
    s = host.start()
    assert host.step(s, "z = 7")["status"] == "ok"
    res = host.step(s, "import time\ntime.sleep(30)", timeout=1)
    assert res["status"] == "timeout" and not res["state_lost"], res
    assert host.value(s, "z") == "7"


def test_memory_limit_applies_to_a_warm_session(host):
    s = host.start(memory=256 << 20)
    assert host.step(s, "kept = 7")["status"] == "ok"
    res = host.step(s, "b = bytearray(600 << 20)\nb[::4096] = b'x' * len(b[::4096])", timeout=30)
    if limits_backend() == "rlimit":
        # No cgroup (an ordinary user without a delegated one): RLIMIT_AS
        # refuses the allocation, the interpreter lives on with its state.
        assert res["status"] == "error" and not res["state_lost"], res
        assert res["error"]["type"] == "MemoryError", res
        assert host.value(s, "kept") == "7"
    else:
        assert res["status"] == "lost" and res["state_lost"], res
        assert res["limit"] == "memory" or res["exit_code"] == 137, res


def test_cold_is_still_the_default(host):
    s = host.start(warm=False)
    assert host.value(s, "import sys\n'pandas' in sys.modules") == "False"


def test_pool_refills_and_many_sessions_start(host):
    ids = [host.start() for _ in range(5)]
    for i in ids:
        assert host.value(i, "1 + 1") == "2"
    deadline = time.time() + 20
    while time.time() < deadline and host.request(op="zygote")["pool"] < 1:
        time.sleep(0.1)
    assert host.request(op="zygote")["pool"] >= 1


def _descendants(pid):
    children = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(p))
            except OSError:
                pass
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def test_cli_warm_start_exec_stop_leaves_nothing():
    rundir = tempfile.mkdtemp(prefix="corral-zygote-run-")
    os.chmod(rundir, 0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=rundir)
    try:
        r = subprocess.run([CORRAL, "session", "start", "--warm", "--json"], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        info = json.loads(r.stdout)
        r = subprocess.run([CORRAL, "session", "exec", info["id"], "--json", "-c",
                            "import sys\n'pandas' in sys.modules"], capture_output=True, text=True, env=env,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["value"]["text"] == "True"
        zygotes = [p for p in _descendants(info["pid"]) if p in procs_named(ZYGOTE_COMM)]
        assert zygotes, "no zygote under the session's supervisor"
        r = subprocess.run([CORRAL, "session", "stop", info["id"]], capture_output=True, text=True, env=env,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        deadline = time.time() + 10
        while time.time() < deadline and any(os.path.exists(f"/proc/{p}") for p in zygotes + [info["pid"]]):
            time.sleep(0.05)
        assert not any(os.path.exists(f"/proc/{p}") for p in zygotes + [info["pid"]])
        cgroups = [d for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified")
                   if os.path.isdir(root) for d in os.listdir(root)
                   if d.startswith(f"corral-{info['pid']}-")]
        assert cgroups == []
    finally:
        shutil.rmtree(rundir, ignore_errors=True)


def test_cli_warm_refuses_what_it_cannot_do(tmp_path):
    r = subprocess.run([CORRAL, "session", "start", "--warm", "--bind", f"{tmp_path}:/data"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path)))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "warm sessions take no --bind" in r.stderr


def test_cli_warm_refuses_a_system_directory_as_workspace(tmp_path):
    # as a cold session does: as root, what the session wrote there would land as root
    r = subprocess.run([CORRAL, "session", "start", "--warm", "-w", "/usr/local"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path)))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "refusing to give the jail write access to the system directory '/usr/local'" in r.stderr
    # library path too: no session was started over it
    h = WarmHost()
    try:
        r = h.request(op="start", warm=True, workspace="/usr/local")
        assert not r["ok"] and "system directory" in r["error"], r
    finally:
        h.close()
