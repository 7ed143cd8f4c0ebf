"""The attack suite through a session: hostile steps run by `corral session
exec` in a persistent interpreter, each checked from the host side.

A session's jail is started by the same code as `corral exec`'s, but a
session lives on between steps and its interpreter is a long-lived Python
process with control pipes, so the isolation is proved again first (this
module's preflight, after the suite's own): the interpreter must be in its
own pid and network namespaces, as an unprivileged uid.  If it is not, the
whole run stops before any attack.
"""
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from corral_attack import CORRAL, IS_ROOT, marker, ns_inode

PROBE_NS = r"""
import json, os, socket
ns = {k: os.stat(f"/proc/self/ns/{k}").st_ino for k in ("pid", "net", "mnt", "user", "ipc", "uts")}
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print(json.dumps({"ns": ns, "pids": pids, "ifaces": [n for _, n in socket.if_nameindex()],
                  "uid": os.getuid()}))
"""


PIDNS = "import os\nos.stat('/proc/self/ns/pid').st_ino"


class Session:
    """One session, in a runtime dir shared by the module's sessions of its
    kind (so warm ones share one session host and its zygote) or by the
    test's own (`fresh_session`), stopped at the end of the test.

    kind "warm" is `corral session start`'s default (forked from the host's
    zygote), "cold" adds --cold.  linger: the host's CORRAL_SESSION_LINGER
    (a test's own host keeps no zygote after its last session)."""

    def __init__(self, rundir, kind, *opts, env=None, linger="0"):
        self.rundir = rundir
        self.env = dict(env or os.environ, XDG_RUNTIME_DIR=rundir, CORRAL_SESSION_LINGER=linger)
        if kind == "cold":
            opts = ("--cold",) + opts
        r = self._corral("start", "--json", *opts)
        assert r.returncode == 0, f"corral session start failed: {r.stderr}"
        self.info = json.loads(r.stdout)
        self.id = self.info["id"]
        assert self.info["warm"] == (kind == "warm"), self.info

    def _corral(self, *args, timeout=60):
        return subprocess.run([CORRAL, "session", *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env, stdin=subprocess.DEVNULL)

    def step(self, code, *opts, timeout=60):
        r = self._corral("exec", self.id, "--json", *opts, "-c", code, timeout=timeout)
        assert r.stdout, f"no JSON (rc={r.returncode}): {r.stderr[-800:]}"
        res = json.loads(r.stdout)
        res["rc"] = r.returncode
        return res

    def pidns(self):
        """The inode of the interpreter's pid namespace now (a step)."""
        return int(self.step(PIDNS)["value"]["text"])

    def interpreter_pids(self):
        """Host pids of the session's processes: those in its pid namespace."""
        return in_pidns(self.pidns())

    def stop(self):
        self._corral("stop", self.id)


def in_pidns(ino):
    out = set()
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.stat(f"/proc/{p}/ns/pid").st_ino == ino:
                    out.add(int(p))
            except OSError:
                pass
    return out


def last_json(res):
    lines = [ln for ln in res["stdout"].splitlines() if ln.strip()]
    assert lines, f"the step printed nothing: {res!r}"
    return json.loads(lines[-1])


# The module's tests share one session host per kind, in a runtime dir of the
# module's: a warm host starts a zygote with the data libraries imported,
# seconds under ASan on a busy host, which each test paid.  A test whose
# attack aims at the host itself (signals, forged frames) or whose host must
# start with its own environment (a key in the caller's environment) has a
# host of its own (`fresh_session`).  The shared host keeps its zygote
# SHARED_LINGER seconds between tests; the module's end shuts it down.
SHARED_LINGER = "120"


@pytest.fixture(scope="module")
def shared_rundirs():
    dirs = {}
    yield dirs
    for rundir in dirs.values():
        subprocess.run([CORRAL, "session", "shutdown"], capture_output=True, timeout=60,
                       env=dict(os.environ, XDG_RUNTIME_DIR=rundir))
        shutil.rmtree(rundir, ignore_errors=True)


@pytest.fixture(params=["warm", "cold"])
def session(request, shared_rundirs):
    """session(*opts) -> a Session on the module's host of this kind."""
    if request.param not in shared_rundirs:
        rundir = tempfile.mkdtemp(prefix="corral-attack-run-")
        os.chmod(rundir, 0o700)
        shared_rundirs[request.param] = rundir
    made = []

    def start(*opts):
        s = Session(shared_rundirs[request.param], request.param, *opts, linger=SHARED_LINGER)
        made.append(s)
        return s

    yield start
    for s in made:
        s.stop()


@pytest.fixture(params=["warm", "cold"])
def fresh_session(request):
    """session(*opts, env=None) -> a Session on a host of the test's own."""
    rundir = tempfile.mkdtemp(prefix="corral-attack-run-")
    os.chmod(rundir, 0o700)
    made = []

    def start(*opts, env=None):
        s = Session(rundir, request.param, *opts, env=env)
        made.append(s)
        return s

    yield start
    for s in made:
        s.stop()
    subprocess.run([CORRAL, "session", "shutdown"], capture_output=True, timeout=60,
                   env=dict(os.environ, XDG_RUNTIME_DIR=rundir))
    shutil.rmtree(rundir, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def session_preflight():
    """Prove, from the host, that a session's interpreter is isolated, warm
    and cold."""
    for kind in ("warm", "cold"):
        preflight_one(kind)


def preflight_one(kind):
    rundir = tempfile.mkdtemp(prefix="corral-attack-run-")
    os.chmod(rundir, 0o700)
    s = Session(rundir, kind, "--pids", "32", "-m", "256M")
    problems = []
    try:
        res = s.step(PROBE_NS)
        if res["status"] != "ok":
            problems.append(f"the probe did not run: {res!r}")
        else:
            info = last_json(res)
            for kind in ("pid", "net", "mnt", "user"):
                if info["ns"][kind] == ns_inode(kind):
                    problems.append(f"the session shares the host's {kind} namespace")
            if len(info["pids"]) > 4 or max(info["pids"]) > 16:
                problems.append(f"the session sees pids {info['pids'][:20]}")
            if info["ifaces"] != ["lo"]:
                problems.append(f"network interfaces {info['ifaces']} (expected only lo)")
            if info["uid"] == 0:
                problems.append("the session runs as uid 0")
        # Host side: the interpreter's own namespaces, read from the host.
        pids = s.interpreter_pids()
        if not pids:
            problems.append("no process in the session's pid namespace")
        for p in pids:
            for kind in ("pid", "net"):
                try:
                    if os.stat(f"/proc/{p}/ns/{kind}").st_ino == ns_inode(kind):
                        problems.append(f"host pid {p} of the session is in the host's {kind} namespace")
                except OSError:
                    pass
            with open(f"/proc/{p}/status") as f:
                uid = next(int(ln.split()[1]) for ln in f if ln.startswith("Uid:"))
            if uid == 0:
                problems.append(f"host pid {p} of the session runs as host root")
    finally:
        s.stop()
        subprocess.run([CORRAL, "session", "shutdown"], capture_output=True, timeout=60, env=s.env)
        shutil.rmtree(rundir, ignore_errors=True)
    if problems:
        problems.insert(0, f"({kind} sessions)")
        pytest.exit("session attack preflight FAILED, no attack was run:\n  " + "\n  ".join(problems), returncode=1)


# ---- processes ----

FORK_BOMB = r"""
import os, time
made = 0
for i in range(400):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        made += 1
    except OSError:
        break
print(made, flush=True)
"""


def test_fork_bomb_bounded_by_the_session_pids_limit(session):
    s = session("--pids", "48")
    res = s.step(FORK_BOMB, "--timeout", "10")
    made = int(res["stdout"].split()[0])
    assert made < 48, res
    # Host side: never more processes under the supervisor than the limit.
    assert len(s.interpreter_pids()) <= 48 + 1
    # The limit holds for the session, not just the step: still bounded later.
    res = s.step(FORK_BOMB, "--timeout", "10")
    assert int(res["stdout"].split()[0]) == 0 or int(res["stdout"].split()[0]) < 48
    assert len(s.interpreter_pids()) <= 48 + 1
    ns = s.pidns()
    s.stop()
    deadline = time.monotonic() + 5
    while in_pidns(ns) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert in_pidns(ns) == set(), "processes of the session outlived it"


KILL_ALL = r"""
import json, os, signal, subprocess, sys
res = {}
child = subprocess.Popen(["python3", "-c", "import time; time.sleep(30)"])
try:
    os.kill(-1, signal.SIGKILL)
    res["kill(-1)"] = "sent"
except OSError as e:
    res["kill(-1)"] = e.strerror
res["own child"] = child.wait()
for v in (int(a) for a in sys.argv_pids):
    try:
        os.kill(v, signal.SIGKILL)
        res[str(v)] = "sent"
    except OSError as e:
        res[str(v)] = e.strerror
print(json.dumps(res))
"""


def test_kill_all_from_a_session_spares_the_host(fresh_session, host_process):
    s = fresh_session()
    jail_uid = None
    for p in s.interpreter_pids():
        with open(f"/proc/{p}/status") as f:
            jail_uid = next(int(ln.split()[1]) for ln in f if ln.startswith("Uid:"))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    same_uid = host_process(["sleep", "30"], env=env, uid=jail_uid if IS_ROOT else None)
    mine = host_process(["sleep", "30"], env=env)
    victims = [same_uid.pid, mine.pid, os.getpid(), s.info["pid"]]
    code = KILL_ALL.replace("sys.argv_pids", repr([str(v) for v in victims]))
    res = s.step(code)
    assert res["status"] == "ok", res
    out = last_json(res)
    assert out["kill(-1)"] == "sent" and out["own child"] == -signal.SIGKILL, out  # it worked inside
    for v in victims:
        assert out[str(v)] == "No such process", out
    # Host side: every victim is alive, the supervisor too, and the session works.
    assert same_uid.poll() is None and mine.poll() is None
    os.kill(s.info["pid"], 0)
    assert s.step("6 * 7")["value"]["text"] == "42"


def test_host_processes_invisible_from_a_session(session, host_process):
    m = marker("visible")
    victim = host_process([sys.executable, "-c", "import time; time.sleep(30)", m])
    s = session()
    res = s.step("import json, os\nprocs = {}\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n"
                 "        procs[p] = open(f'/proc/{p}/cmdline', 'rb').read().replace(b'\\0', b' ').decode()\n"
                 "print(json.dumps(procs))\n")
    procs = last_json(res)
    assert sorted(procs) == ["1", "2"], procs  # corral-init and the interpreter
    if s.info["warm"]:  # both forked from the zygote: its init and the interpreter
        assert all("python3-zygote" in c for c in procs.values()), procs
    else:
        assert procs["1"].strip() == "corral-init" and "driver.py" in procs["2"]
    assert m not in res["stdout"] and str(victim.pid) not in procs


def test_two_sessions_cannot_see_or_signal_each_other(session):
    a, b = session(), session()
    m = marker("peer")
    res = a.step(f"import os, subprocess\nopen('/tmp/{m}', 'w').write('a')\n"
                 f"p = subprocess.Popen(['python3', '-c', 'import time; time.sleep(30)', '{m}'])\n"
                 f"time = __import__('time'); time.sleep(0.3)\np.poll()")
    assert res["status"] == "ok" and res["value"] is None, res  # the sleeper runs
    res = b.step(f"import os, json\n"
                 f"seen = [p for p in os.listdir('/proc') if p.isdigit() and "
                 f"'{m}' in open(f'/proc/{{p}}/cmdline', 'rb').read().decode(errors='replace')]\n"
                 f"print(json.dumps({{'file': os.path.exists('/tmp/{m}'), 'procs': seen}}))")
    assert last_json(res) == {"file": False, "procs": []}, res
    # a's sleeper is alive on the host, and a still sees its own file
    assert any(m.encode() in open(f"/proc/{p}/cmdline", "rb").read() for p in a.interpreter_pids())
    assert a.step(f"open('/tmp/{m}').read()")["value"]["text"] == "'a'"


# ---- files and secrets ----

def test_host_files_invisible_from_a_session(session, host_file):
    secret = "corral-attack-secret-" + uuid.uuid4().hex
    path = host_file(secret)
    s = session()
    res = s.step("import json, sys\nout = {}\n"
                 f"for p in [{path!r}, '/proc/1/root' + {path!r}, '/etc/shadow', '/root']:\n"
                 "    try:\n        open(p).read(); out[p] = 'read'\n"
                 "    except OSError as e:\n        out[p] = e.strerror\n"
                 "print(json.dumps(out))")
    out = last_json(res)
    assert secret not in res["stdout"] + res["stderr"]
    assert all(v != "read" for v in out.values()), out
    with open(path) as f:
        assert f.read() == secret  # untouched on the host


def test_writes_outside_the_workspace_do_not_reach_the_host(session):
    m = marker("write")
    s = session()
    targets = [f"/usr/{m}", f"/etc/{m}", f"/{m}", f"/run/corral-session/{m}", "/run/corral-session/driver.py"]
    res = s.step("import json\nout = {}\n"
                 f"for p in {targets!r}:\n"
                 "    try:\n        open(p, 'a').write('x'); out[p] = 'written'\n"
                 "    except OSError as e:\n        out[p] = e.strerror\n"
                 "print(json.dumps(out))")
    out = last_json(res)
    assert all(v in ("Read-only file system", "Permission denied", "No such file or directory")
               for v in out.values()), out
    for p in targets[:3]:
        assert not os.path.lexists(p), f"{p} appeared on the host"
    # the driver the next session runs is unchanged
    src = os.path.join(os.environ.get("CORRAL_SOURCE_ROOT", "/work/main"), "src/session/driver.py")
    if os.path.exists(src):
        with open(src) as f:
            assert not f.read().endswith("x")


def test_api_key_in_the_callers_environment_is_nowhere_in_the_session(fresh_session):
    canary = "sk-canary-" + uuid.uuid4().hex
    env = dict(os.environ, OPENAI_API_KEY=canary, CORRAL_TEST_TOKEN=canary)
    s = fresh_session(env=env)
    res = s.step("import json, os\nfound = []\n"
                 "for p in os.listdir('/proc'):\n"
                 "    for what in ('environ', 'cmdline'):\n"
                 "        try:\n            data = open(f'/proc/{p}/{what}', 'rb').read()\n"
                 "        except OSError:\n            continue\n"
                 "        found.append(data.decode(errors='replace'))\n"
                 "print(json.dumps({'env': dict(os.environ), 'proc': found}))")
    assert res["status"] == "ok", res
    assert canary not in res["stdout"] and canary[10:] not in res["stdout"]
    inside = last_json(res)
    assert "OPENAI_API_KEY" not in inside["env"] and inside["env"]["HOME"] == "/tmp"


# ---- network ----

def test_host_listener_unreachable_from_a_session(session, listener):
    lst = listener()
    socket.create_connection(("127.0.0.1", lst.address[1]), timeout=2).close()  # control
    deadline = time.monotonic() + 2
    while not lst.hits and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lst.hits, "the host listener never saw the control connection"
    lst.hits.clear()
    s = session()
    res = s.step("import socket\ntry:\n"
                 f"    socket.create_connection(('127.0.0.1', {lst.address[1]}), timeout=2); r = 'connected'\n"
                 "except OSError as e:\n    r = e.strerror\nr")
    assert res["value"]["text"] != "'connected'", res
    time.sleep(0.2)
    assert lst.hits == []  # host side: nobody came


# ---- system calls and the control channel ----

SYSCALL = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall(ctypes.c_long({nr}), 0, 0, 0, 0, 0)
"""


@pytest.mark.parametrize("name, nr", [("ptrace", 101), ("bpf", 321)])
def test_killed_syscall_kills_the_interpreter_not_the_session(session, name, nr):
    s = session()
    s.step("x = 1")
    res = s.step(SYSCALL.format(nr=nr))
    assert res["state_lost"] is True and res["status"] == "lost", res
    assert res["limit"] == "seccomp" and res.get("syscall") == name, res
    assert res["rc"] == 128 + signal.SIGSYS
    # a clean interpreter, in a new jail, for the next step
    res = s.step("'x' in dir()")
    assert res["value"]["text"] == "False" and res["restarted"] is True


@pytest.mark.parametrize("name, nr", [("unshare", 272), ("mount", 165), ("chroot", 161)])
def test_eperm_syscall_leaves_the_interpreter_alone(session, name, nr):
    """Answered with EPERM: the step goes on, the session keeps its state."""
    s = session()
    s.step("x = 1")
    res = s.step("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
                 f"(libc.syscall(ctypes.c_long({nr}), 0, 0, 0, 0, 0), ctypes.get_errno())")
    assert res["status"] == "ok" and res["state_lost"] is False, res
    assert res["value"]["text"] == f"(-1, {errno.EPERM})", res
    assert s.step("'x' in dir()")["value"]["text"] == "True"


def test_forged_frames_cannot_break_the_supervisor(fresh_session):
    """User code shares the driver's process: it can write anything on the
    control pipe.  A frame too long, garbage and a flood end the
    interpreter at worst; the supervisor lives on."""
    s = fresh_session()
    res = s.step("import os\nos.write(4, b'\\xff\\xff\\xff\\xff' + b'junk' * 100)\nimport time\ntime.sleep(5)",
                 "--timeout", "10")
    assert res["state_lost"] is True and "malformed" in res["reason"], res
    res = s.step("import os, json\nb = json.dumps({'t': 'result', 'id': 999, 'status': 'ok'}).encode()\n"
                 "os.write(4, len(b).to_bytes(4, 'big') + b)\n7")
    assert res["status"] == "ok" and res["value"]["text"] == "7", res  # a frame for another step: ignored
    os.kill(s.info["pid"], 0)
    assert s.step("1 + 1")["value"]["text"] == "2"


def test_sessions_draw_their_own_random_numbers(session):
    """Two sessions (warm: two forks of one zygote) never share a random
    stream: numpy's global generator (which the zygote seeded once when it
    imported numpy), random's, and os.urandom.  Shared, one session could
    predict another's samples, shuffles and generated secrets."""
    code = ("import numpy, random, os, json\n"
            "print(json.dumps([numpy.random.rand(4).tolist(), random.random(), os.urandom(8).hex()]))")
    draws = []
    for _ in range(2):
        res = session().step(code)
        assert res["status"] == "ok", res
        draws.append(last_json(res))
    for a, b in zip(*draws):
        assert a != b, draws


def test_disk_and_open_file_limits_are_the_callers(session):
    """A session gets its caller's --disk and --nofile, not the zygote's own
    (64 MiB and 1024 files, which a warm session used to inherit while its
    header showed the caller's): a 100 MiB file under --disk 1G and 2000
    files under --nofile 4096 work; past lower limits, both still hold."""
    s = session("--disk", "1G", "--nofile", "4096")
    code = ("import resource\n"
            "with open('big.bin', 'wb') as f:\n"
            "    for _ in range(100): f.write(b'\\0' * (1 << 20))\n"
            "fds = [open('/dev/null') for _ in range(2000)]\n"
            "print(resource.getrlimit(resource.RLIMIT_FSIZE), resource.getrlimit(resource.RLIMIT_NOFILE))")
    res = s.step(code)
    assert res["status"] == "ok", res
    assert res["stdout"].strip() == "(1073741824, 1073741824) (4096, 4096)", res["stdout"]
    s = session("--disk", "8M", "--nofile", "64")
    res = s.step("fds = [open('/dev/null') for _ in range(100)]")
    assert res["status"] == "error" and "Too many open files" in json.dumps(res), res
    res = s.step("open('b', 'wb').write(b'x' * (9 << 20))")
    assert res["status"] != "ok" and "File too large" in json.dumps(res), res
