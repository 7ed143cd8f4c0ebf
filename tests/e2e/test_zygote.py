"""Warm sessions: interpreters forked from a zygote with the data libraries
imported (docs/sessions.md, "Warm sessions").

Most tests drive several sessions over one zygote through
tests/e2e/warm-sessions (warmhost.py); the CLI tests use `corral session start
--warm`.  They run as root and, a second time (scripts/run-tests.sh), as an
ordinary user; the cold path stays the default and is tested by
test_session.py.
"""
import ast
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


PIDNS_STEP = "import os\nos.stat('/proc/self/ns/pid').st_ino"


def _in_pidns(ino):
    """Host pids of the processes in the pid namespace with inode ino."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.stat(f"/proc/{p}/ns/pid").st_ino == ino:
                    out.append(int(p))
            except OSError:
                pass
    return out


def _wait_gone(pids, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline and any(os.path.exists(f"/proc/{p}") for p in pids):
        time.sleep(0.05)
    return [p for p in pids if os.path.exists(f"/proc/{p}")]


def _host_cgroups(pid):
    return [d for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified")
            if os.path.isdir(root) for d in os.listdir(root) if d.startswith(f"corral-{pid}-")]


class CliHost:
    """`corral session` in a private runtime dir (one session host)."""

    def __init__(self, **env):
        self.rundir = tempfile.mkdtemp(prefix="corral-zygote-run-")
        os.chmod(self.rundir, 0o700)
        self.tmp = tempfile.mkdtemp(prefix="corral-zygote-tmp-")
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.rundir, TMPDIR=self.tmp, **env)

    def corral(self, *args, timeout=120):
        return subprocess.run([CORRAL, "session", *args], capture_output=True, text=True, env=self.env,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def start(self, *opts):
        r = self.corral("start", "--json", *opts)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def step(self, sid, code):
        r = self.corral("exec", sid, "--json", "-c", code)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["value"]["text"]

    def zygotes(self, host_pid):
        """The host's zygote (`corral session status`), as a list."""
        info = json.loads(self.corral("status", "--json").stdout)
        assert info is None or info["pid"] == host_pid
        return [info["zygote_pid"]] if info and info["zygote_pid"] else []

    def close(self):
        self.corral("shutdown")
        shutil.rmtree(self.rundir, ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


def test_cli_sessions_share_one_zygote_and_shutdown_leaves_nothing():
    h = CliHost()
    try:
        a = h.start()
        assert a["warm"] is True  # the default where the options allow it
        assert h.step(a["id"], "import sys\n'pandas' in sys.modules") == "True"
        # The jail's /etc as in corral exec, whatever the host's umask (077)
        assert h.step(a["id"], "import os, pwd\npwd.getpwuid(os.getuid()).pw_name") == "'sandbox'"
        zygotes = h.zygotes(a["pid"])
        assert len(zygotes) == 1, "no zygote (or several) under the session host"
        b = h.start()
        assert b["pid"] == a["pid"], "a second session got a host of its own"
        assert h.zygotes(b["pid"]) == zygotes
        ns_a, ns_b = int(h.step(a["id"], PIDNS_STEP)), int(h.step(b["id"], PIDNS_STEP))
        assert ns_a != ns_b and _in_pidns(ns_a) and _in_pidns(ns_b)
        listed = json.loads(h.corral("list", "--json").stdout)
        assert sorted(s["id"] for s in listed) == sorted([a["id"], b["id"]])
        assert all(s["warm"] and s["pid"] == a["pid"] for s in listed)
        # stop: the session's processes and workspace go, the zygote stays for the next
        assert h.corral("stop", a["id"]).returncode == 0
        assert _wait_gone(_in_pidns(ns_a)) == []
        assert not os.path.exists(a["workspace"])
        assert h.corral("stop", b["id"]).returncode == 0
        assert _wait_gone(_in_pidns(ns_b)) == []
        assert all(os.path.exists(f"/proc/{p}") for p in zygotes + [a["pid"]]), "the host did not linger"
        c = h.start()
        assert c["pid"] == a["pid"]
        assert h.step(c["id"], "import sys\n'pandas' in sys.modules") == "True"
        # shutdown: every session stopped, then the zygote and the host, nothing left
        r = h.corral("shutdown")
        assert r.returncode == 0, r.stderr
        assert _wait_gone(zygotes + [a["pid"]]) == []
        assert _host_cgroups(a["pid"]) == []
        assert os.listdir(os.path.join(h.rundir, "corral", "sessions")) == []
        assert os.listdir(h.tmp) == [], "a temporary workspace outlived the host"
        assert h.corral("shutdown").returncode == 0  # none runs: nothing to do
    finally:
        h.close()


def test_cli_warm_by_default_falls_back_to_cold_with_a_notice(tmp_path):
    """A host whose zygote cannot start (CORRAL_ZYGOTE names no program):
    a default start is cold and says why; an explicit --warm fails."""
    h = CliHost(CORRAL_ZYGOTE=str(tmp_path / "no-zygote"))
    try:
        r = h.corral("start", "--json")
        assert r.returncode == 0, r.stderr
        info = json.loads(r.stdout)
        assert info["warm"] is False
        assert "no warm session (" in r.stderr and "a cold one instead" in r.stderr, r.stderr
        assert "no-zygote' is not a program" in r.stderr, r.stderr
        assert h.step(info["id"], "6 * 7") == "42"
        r = h.corral("start", "--warm")
        assert r.returncode == 125 and "no-zygote' is not a program" in r.stderr, (r.returncode, r.stderr)
    finally:
        h.close()


def test_cli_host_ends_after_its_linger():
    h = CliHost(CORRAL_SESSION_LINGER="0.5")
    try:
        s = h.start()
        zygotes = h.zygotes(s["pid"])
        assert zygotes
        assert h.corral("stop", s["id"]).returncode == 0
        assert _wait_gone(zygotes + [s["pid"]]) == []
        assert os.listdir(os.path.join(h.rundir, "corral", "sessions")) == []
        # and the next start brings a new host up
        t = h.start()
        assert t["pid"] != s["pid"] and h.step(t["id"], "1 + 1") == "2"
    finally:
        h.close()


def test_cli_cold_sessions_need_no_zygote_and_the_host_leaves_with_them():
    h = CliHost()
    try:
        s = h.start("--cold")
        assert s["warm"] is False
        assert not h.zygotes(s["pid"])
        assert h.step(s["id"], "import sys\n'pandas' in sys.modules") == "False"
        assert h.corral("stop", s["id"]).returncode == 0
        assert _wait_gone([s["pid"]]) == [], "a host without a zygote lingered"
    finally:
        h.close()


def test_cli_sigkill_of_the_host_leaves_no_session_running():
    h = CliHost()
    try:
        a, b = h.start(), h.start("--cold")
        ns = [int(h.step(x["id"], PIDNS_STEP)) for x in (a, b)]
        zygotes = h.zygotes(a["pid"])
        os.kill(a["pid"], 9)
        assert _wait_gone(zygotes + [p for n in ns for p in _in_pidns(n)]) == []
        # a stale socket is no obstacle: the next start makes a new host
        c = h.start()
        assert c["pid"] != a["pid"] and h.step(c["id"], "6 * 7") == "42"
        r = h.corral("exec", a["id"], "-c", "1")
        assert r.returncode == 2 and "no session" in r.stderr, r.stderr
    finally:
        h.close()


def test_cli_warm_refuses_what_it_cannot_do(tmp_path):
    r = subprocess.run([CORRAL, "session", "start", "--warm", "--bind", f"{tmp_path}:/data"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path)))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "warm sessions take binds only beneath /workspace (not '/data')" in r.stderr


BIND_PROBE = ("import os, json\n"
              "out = {'dir': sorted(os.listdir('data')), 'file': open('in/deep/a.txt').read()}\n"
              "for p in ('data/new', 'in/deep/a.txt'):\n"
              "    try:\n"
              "        open(p, 'a').close(); out[p] = 'written'\n"
              "    except OSError as e:\n"
              "        out[p] = e.errno\n"
              "json.dumps(out)")


@pytest.mark.parametrize("with_dir", [True, False], ids=["with-w", "tmpfs"])
def test_cli_warm_binds_beneath_the_workspace(tmp_path, with_dir):
    """--ro-bind into /workspace: a warm session takes it, read-only, its
    mount points made (parents included) in the workspace."""
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("hello")
    (src / "sub" / "b.txt").write_text("b")
    for d in (tmp_path, src, src / "sub"):
        os.chmod(d, 0o755)
    os.chmod(src / "sub" / "b.txt", 0o644)
    os.chmod(src / "a.txt", 0o666)  # writable by anyone: only the read-only bind stops a write (EROFS)
    h = CliHost()
    try:
        ws = []
        if with_dir:
            w = tmp_path / "ws"
            w.mkdir()
            ws = ["-w", str(w)]
        s = h.start("--ro-bind", f"{src}:/workspace/data", "--ro-bind", f"{src / 'a.txt'}:/workspace/in/deep/a.txt",
                    *ws)
        assert s["warm"] is True
        out = json.loads(ast.literal_eval(h.step(s["id"], BIND_PROBE)))
        assert out == {"dir": ["a.txt", "sub"], "file": "hello", "data/new": 30, "in/deep/a.txt": 30}, out
        assert sorted(os.listdir(src)) == ["a.txt", "sub"] and (src / "a.txt").read_text() == "hello"
        if with_dir:
            assert (tmp_path / "ws" / "in" / "deep" / "a.txt").is_file()  # the mount point, empty
            assert (tmp_path / "ws" / "in" / "deep" / "a.txt").read_text() == ""
    finally:
        h.close()


def test_cli_warm_bind_mount_point_is_never_a_symlink(tmp_path):
    """A workspace entry where a bind goes that is a symlink (planted by an
    earlier step, say) is not followed: the start fails, nothing is mounted
    over what it points to."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_text("x")
    for d in (tmp_path, src):
        os.chmod(d, 0o755)
    victim = tmp_path / "victim"
    victim.mkdir()
    w = tmp_path / "ws"
    w.mkdir()
    os.symlink(str(victim), w / "data")
    os.symlink(str(victim), w / "up")
    h = CliHost()
    try:
        for dst in ("/workspace/data", "/workspace/up/x"):
            r = h.corral("start", "--warm", "-w", str(w), "--ro-bind", f"{src}:{dst}")
            assert r.returncode == 125 and "cannot make the mount point" in r.stderr, r.stderr
        assert os.listdir(victim) == []
        with open("/proc/self/mountinfo") as f:
            assert str(victim) not in f.read()
    finally:
        h.close()


def test_cli_bind_outside_the_workspace_makes_a_cold_session(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(src, 0o755)
    h = CliHost()
    try:
        s = h.start("--ro-bind", f"{src}:/data")
        assert s["warm"] is False
        assert h.step(s["id"], "import os\nos.path.isdir('/data')") == "True"
    finally:
        h.close()


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


def test_cli_host_usage_errors_and_status_without_a_host():
    h = CliHost()
    try:
        r = h.corral("start", "--warm", "--cold")
        assert r.returncode == 2 and "--warm and --cold exclude each other" in r.stderr, r.stderr
        for verb in ("status", "list"):
            r = h.corral(verb, "--bogus")
            assert r.returncode == 2 and f"usage: corral session {verb} [--json]" in r.stderr, r.stderr
        r = h.corral("host", "--ready-fd", "x")
        assert r.returncode == 2 and "started by 'corral session start'" in r.stderr, r.stderr
        r = h.corral("status")
        assert r.returncode == 0 and r.stdout.strip() == "no session host is running", r
        r = h.corral("status", "--json")
        assert r.returncode == 0 and json.loads(r.stdout) is None, r
        r = h.corral("shutdown")
        assert r.returncode == 0, r.stderr  # none runs: nothing to do
    finally:
        h.close()


def test_threads_prestart_claim_and_step_at_once_and_leave_nothing():
    """8 threads of one process (as runs in a server) each prestart the zygote, claim a warm session and run
    steps that build on each other, all at once; every step's output is right and nothing outlives them."""
    tmp = tempfile.mkdtemp(prefix="corral-zygote-threads-")
    h = WarmHost(env=dict(os.environ, TMPDIR=tmp))
    try:
        n, steps = 8, 4
        r = h.request(op="threads", n=n, steps=steps)
        assert r["ok"], r
        assert len(r["threads"]) == n
        for t, out in enumerate(r["threads"]):
            assert "error" not in out, (t, out)
            assert len(out["steps"]) == steps
            for k, res in enumerate(out["steps"]):
                assert res.get("status") == "ok", (t, k, res)
                acc = (k + 1) * t * 1000 + k * (k + 1) // 2
                assert res["stdout"] == f"{t} {k} {acc}\n", (t, k, res)
        # One zygote served them all, and the last to leave stopped it.
        assert r["zygote"] > 0 and r["zygote_now"] == 0
        assert _wait_gone([r["zygote"]]) == []
        deadline = time.time() + 10
        while time.time() < deadline and _descendants(h.proc.pid):
            time.sleep(0.05)
        assert _descendants(h.proc.pid) == []
        assert _host_cgroups(h.proc.pid) == []
        assert os.listdir(tmp) == [], "a temporary workspace outlived its session"
        # The process goes on: a session after all that still works.
        s = h.start()
        assert h.value(s, "6 * 7") == "42"
    finally:
        h.close()
        shutil.rmtree(tmp, ignore_errors=True)
