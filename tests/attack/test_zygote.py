"""Hostile steps against warm sessions: sessions forked from one zygote must
not see or signal each other, must not change what the next session starts
from, and must be as confined as `corral exec` (docs/sessions.md, "Warm
sessions").  Each attack is checked from the host side.

Runs behind the suite's preflight (conftest.py) and this module's own: a warm
session must be in its own pid, network, mount, ipc, uts and user namespaces,
none of them the zygote's, as a uid that is not 0 on the host; otherwise the
module stops before any attack.  Several sessions over one zygote come from
tests/e2e/warm-sessions (warmhost.py).
"""
import ast
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

from corral_attack import CORRAL, UID_RANGE, alive  # noqa: E402
from warmhost import WarmHost, available, host_uid, ns_inode_of, procs_named, session_host_pids  # noqa: E402

pytestmark = pytest.mark.skipif(not available(), reason="warm sessions need tests/warm-sessions")

NS_KINDS = ("pid", "net", "mnt", "user", "ipc", "uts")
PROBE = "import os, json\njson.dumps({k: os.stat(f'/proc/self/ns/{k}').st_ino for k in %r})" % (NS_KINDS,)


def probe(host, s):
    return json.loads(ast.literal_eval(host.value(s, PROBE)))


@pytest.fixture(scope="module", autouse=True)
def warm_preflight():
    if not available():
        yield
        return
    h = WarmHost()
    try:
        a, b = h.start(), h.start()
        na, nb = probe(h, a), probe(h, b)
        z = h.zygote_pid()
        problems = []
        for kind in NS_KINDS:
            host_ino = os.stat(f"/proc/self/ns/{kind}").st_ino
            if na[kind] in (host_ino, ns_inode_of(z, kind)):
                problems.append(f"a warm session shares the {'host' if na[kind] == host_ino else 'zygote'}'s "
                                f"{kind} namespace")
            if na[kind] == nb[kind]:
                problems.append(f"two warm sessions share a {kind} namespace")
        pids = session_host_pids(na["pid"])
        if not pids or any(host_uid(p) == 0 for p in pids):
            problems.append(f"a warm session's processes {pids} run as host uid 0 (or were not found)")
        if problems:
            pytest.exit("zygote attack preflight FAILED, no attack was run:\n  " + "\n  ".join(problems),
                        returncode=1)
    finally:
        h.close()
    yield


@pytest.fixture
def host():
    h = WarmHost(env=dict(os.environ))
    yield h
    h.close()


def interpreter_pid(host, s):
    """Host pid of session s's interpreter (pid 2 of its namespace)."""
    ino = probe(host, s)["pid"]
    for p in session_host_pids(ino):
        with open(f"/proc/{p}/status") as f:
            nspid = [line.split()[1:] for line in f if line.startswith("NSpid:")][0]
        if nspid[-1] == "2":
            return p
    raise AssertionError("no interpreter found for the session")


# ---- seeing each other ----

def test_sessions_cannot_see_each_others_files(host):
    secret = f"corral-zyg-{uuid.uuid4().hex}"
    a, b = host.start(), host.start()
    assert host.step(a, f"for d in ('/tmp', '/workspace', '/dev/shm'):\n"
                        f"    open(d + '/{secret}', 'w').write('{secret}')")["status"] == "ok"
    found = host.value(b, "import os\nhits = []\n"
                          "for top in ('/tmp', '/workspace', '/dev/shm', '/run', '/var/tmp'):\n"
                          "    for root, dirs, files in os.walk(top):\n"
                          "        hits += [os.path.join(root, f) for f in files]\nhits")
    assert secret not in found
    # and a's own files are there for a
    assert secret in host.value(a, "import os\nos.listdir('/tmp') + os.listdir('/workspace')")


def test_sessions_cannot_reach_each_others_workspace_by_any_path(host):
    """Host directories as workspaces (-w): b cannot reach a's, by its host
    path, through /proc or by walking its whole tree.  (Its own mountinfo
    names its own workspace's host path: a path, not a way in.)"""
    secret = f"corral-zyg-ws-{uuid.uuid4().hex}"
    wa = tempfile.mkdtemp(prefix="corral-zyg-wa-", dir="/tmp")
    wb = tempfile.mkdtemp(prefix="corral-zyg-wb-", dir="/tmp")
    try:
        a, b = host.start(workspace=wa), host.start(workspace=wb)
        assert host.step(a, f"open('/workspace/{secret}', 'w').write('{secret}')")["status"] == "ok"
        with open(os.path.join(wa, secret)) as f:  # host side: a wrote into its own
            assert f.read() == secret
        code = ("import os\nhits = []\n"
                f"paths = [{wa!r} + '/{secret}', '/workspace/{secret}']\n"
                "for p in os.listdir('/proc'):\n"
                "    if p.isdigit():\n"
                f"        paths += [f'/proc/{{p}}/root{wa}/{secret}', f'/proc/{{p}}/root/workspace/{secret}',"
                f" f'/proc/{{p}}/cwd/{secret}']\n"
                "for p in paths:\n"
                "    try:\n        open(p).read(); hits.append(p)\n"
                "    except OSError:\n        pass\n"
                "for root, dirs, files in os.walk('/'):\n"
                "    if root == '/':\n        dirs[:] = [d for d in dirs if d not in ('proc', 'sys', 'usr')]\n"
                f"    hits += [os.path.join(root, f) for f in files if f == '{secret}']\n"
                "mi = open('/proc/self/mountinfo').read()\n"
                f"(hits, {wa!r} in mi, {wb!r} in mi)")
        res = host.step(b, code, timeout=60)
        assert res["status"] == "ok", res
        hits, a_named, b_named = ast.literal_eval(res["value"]["text"])
        assert hits == [] and not a_named, res["value"]
        assert b_named  # the documented leak: its own workspace's host path
        # the same search in a finds the file: the search works
        res = host.step(a, code, timeout=60)
        assert res["status"] == "ok", res
        own = ast.literal_eval(res["value"]["text"])[0]
        assert f"/workspace/{secret}" in own and os.path.join("/workspace", secret) in own, own
    finally:
        shutil.rmtree(wa, ignore_errors=True)
        shutil.rmtree(wb, ignore_errors=True)


def test_sessions_cannot_see_each_others_processes(host):
    a, b = host.start(), host.start()
    pa = interpreter_pid(host, a)
    seen = ast.literal_eval(host.value(b, "import os\nsorted(int(p) for p in os.listdir('/proc') if p.isdigit())"))
    assert seen == [1, 2], seen  # its init and itself, nothing of a's or the host's
    assert pa not in seen
    cmdlines = host.value(b, "import os\n[open(f'/proc/{p}/cmdline','rb').read() for p in os.listdir('/proc') "
                             "if p.isdigit()]")
    assert "sleep" not in cmdlines


def test_sessions_cannot_signal_each_other(host):
    a, b = host.start(), host.start()
    assert host.step(a, "import signal\ngot = []\nsignal.signal(signal.SIGUSR1, lambda *x: got.append(1))")[
        "status"] == "ok"
    pa = interpreter_pid(host, a)
    # b: a's host pid (not in b's namespace), then a's namespace pid (2, which is b itself there)
    res = host.value(b, "import os, signal\ngot = []\nsignal.signal(signal.SIGUSR1, lambda *x: got.append(1))\n"
                        "out = []\n"
                        f"for sig in (signal.SIGKILL, signal.SIGTERM):\n"
                        f"    try:\n        os.kill({pa}, sig); out.append('sent')\n"
                        f"    except OSError as e:\n        out.append(e.errno)\n"
                        f"try:\n    os.pidfd_open({pa}); out.append('pidfd')\nexcept OSError as e:\n"
                        f"    out.append(e.errno)\n"
                        "os.kill(2, signal.SIGUSR1)\nimport time\ntime.sleep(0.1)\n(out, len(got))")
    import errno
    assert res == repr(([errno.ESRCH, errno.ESRCH, errno.ESRCH], 1)), res
    # host side: a lives on, untouched, with its state
    assert alive(pa)
    assert host.value(a, "len(got)") == "0"
    # kill(-1) in b reaches only b's own namespace
    host.step(b, "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass")
    assert alive(pa) and host.value(a, "1 + 1") == "2"


def test_sessions_cannot_read_each_others_memory(host):
    secret = f"corral-zyg-mem-{uuid.uuid4().hex}"
    a, b = host.start(), host.start()
    assert host.step(a, f"s = '{secret}' * 1000")["status"] == "ok"
    pa = interpreter_pid(host, a)
    # b looks for a's secret (spelled backwards here) in every process it can see but itself
    code = (f"import os, re\nneedle = '{secret[::-1]}'[::-1].encode()\nfound = []\n"
            "for p in os.listdir('/proc'):\n"
            "    if not p.isdigit() or int(p) == os.getpid():\n        continue\n"
            "    try:\n        maps = open(f'/proc/{p}/maps').read()\n        mem = open(f'/proc/{p}/mem', 'rb')\n"
            "    except OSError:\n        continue\n"
            "    for m in re.finditer(r'^([0-9a-f]+)-([0-9a-f]+) r', maps, re.M):\n"
            "        try:\n            mem.seek(int(m[1], 16)); data = mem.read(int(m[2], 16) - int(m[1], 16))\n"
            "        except OSError:\n            continue\n"
            "        if needle in data:\n            found.append(p)\n"
            f"for p in ({pa}, 1):\n"
            "    try:\n        open(f'/proc/{p}/mem', 'rb').read(1)\n        found.append(('opened', p))\n"
            "    except OSError:\n        pass\nfound")
    res = host.step(b, code, timeout=60)
    assert res["status"] == "ok", (res["reason"], res["stderr"][-2000:])
    assert res["value"]["text"] == "[]", res
    # and the host does find it in a: the search works
    assert _readable_memory_has(pa, secret.encode())


def test_kill_all_spares_the_host_and_the_zygote(host, host_process):
    a = host.start()
    pa = interpreter_pid(host, a)
    z = host.zygote_pid()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    # a host process running as the session's own host uid, and one as the
    # caller (as an ordinary user they are one and the same uid: ours)
    if os.geteuid() != 0:
        assert host_uid(pa) == os.getuid()
    same_uid = host_process(["sleep", "30"], env=env, uid=host_uid(pa) if os.geteuid() == 0 else None)
    mine = host_process(["sleep", "30"], env=env)
    victims = [same_uid.pid, mine.pid, os.getpid(), host.proc.pid, z]
    res = host.value(a, "import os, signal, subprocess\nout = {}\n"
                        "child = subprocess.Popen(['sleep', '30'])\n"
                        "os.kill(-1, signal.SIGKILL)\nout['own child'] = child.wait()\n"
                        f"for v in {victims!r}:\n"
                        "    try:\n        os.kill(v, signal.SIGKILL); out[v] = 'sent'\n"
                        "    except OSError as e:\n        out[v] = e.strerror\nout")
    out = ast.literal_eval(res)
    assert out["own child"] == -signal.SIGKILL, out  # it worked inside
    assert all(out[v] == "No such process" for v in victims), out
    # host side: everyone lives, and the session too
    assert same_uid.poll() is None and mine.poll() is None and alive(z)
    assert host.value(a, "6 * 7") == "42"


def test_host_files_and_the_zygote_are_out_of_reach(host, host_file):
    secret = "corral-zyg-file-" + uuid.uuid4().hex
    path = host_file(secret)
    a = host.start()
    res = host.step(a, "out = {}\n"
                       f"for p in [{path!r}, '/proc/1/root' + {path!r}, '/proc/1/environ', '/proc/1/mem',"
                       " '/etc/shadow', '/root', '/run/corral-zygote/stage']:\n"
                       "    try:\n        open(p, 'rb').read(16); out[p] = 'read'\n"
                       "    except OSError as e:\n        out[p] = e.strerror\nout")
    assert res["status"] == "ok", res
    assert secret not in res["value"]["text"] + res["stdout"] + res["stderr"]
    assert "'read'" not in res["value"]["text"], res["value"]
    with open(path) as f:
        assert f.read() == secret


def test_writes_outside_the_workspace_do_not_reach_the_host_or_the_zygote(host):
    m = "corral-zyg-write-" + uuid.uuid4().hex
    a = host.start()
    targets = [f"/usr/{m}", f"/etc/{m}", f"/{m}", f"/run/corral-zygote/{m}", "/run/corral-zygote/python3-zygote",
               "/run/corral-session/driver.py", "/proc/sys/kernel/hostname"]
    res = host.value(a, "out = {}\n"
                        f"for p in {targets!r}:\n"
                        "    try:\n        open(p, 'a').write('x'); out[p] = 'written'\n"
                        "    except OSError as e:\n        out[p] = e.strerror\nout")
    out = ast.literal_eval(res)
    assert all(v in ("Read-only file system", "Permission denied", "No such file or directory")
               for v in out.values()), out
    for p in targets[:3]:
        assert not os.path.lexists(p), f"{p} appeared on the host"
    # the next session still starts from an intact zygote and driver
    b = host.start()
    assert host.value(b, "import sys\n'pandas' in sys.modules") == "True"


# ---- what the next session starts from ----

def test_monkeypatching_and_litter_do_not_reach_the_next_session(host):
    a = host.start()
    res = host.step(a, "import os, pandas, numpy, fractions\npandas.DataFrame = None\nnumpy.pi = 3\n"
                       "fractions.Fraction = lambda *a, **k: 'patched'\nos.environ['CORRAL_LITTER'] = '1'\n"
                       "open('/tmp/litter', 'w').write('x')\nos.chdir('/')\nimport sys\n"
                       "sys.modules['evil'] = object()\nsys.path.insert(0, '/tmp')")
    assert res["status"] == "ok", res
    for concurrent in (True, False):
        if not concurrent:
            host.stop(a)
        b = host.start()
        got = host.value(b, "import os, pandas, numpy, sys, fractions\n"
                            "(pandas.DataFrame.__name__, numpy.pi, str(fractions.Fraction(1)),"
                            " 'CORRAL_LITTER' in os.environ, os.path.exists('/tmp/litter'), os.getcwd(),"
                            " 'evil' in sys.modules, '/tmp' in sys.path)")
        assert got == "('DataFrame', 3.141592653589793, '1', False, False, '/workspace', False, False)", got
        host.stop(b)


def test_filling_memory_leaves_others_and_the_next_session_alone(host, preflight):
    a = host.start(memory=256 << 20)
    b = host.start(memory=256 << 20)
    assert host.step(b, "kept = 42")["status"] == "ok"
    z = host.zygote_pid()
    res = host.step(a, "chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))", timeout=60)
    if preflight["backend"] == "rlimit":
        # No cgroup: RLIMIT_AS refuses the allocation inside a alone.
        assert res["status"] == "error" and res["error"]["type"] == "MemoryError", res
        assert len(session_host_pids(probe(host, a)["pid"])) == 2
    else:
        assert res["state_lost"] and res["status"] == "lost", res
        assert res["limit"] == "memory" or res["exit_code"] == 137, res
    assert alive(z)  # host side: the zygote survived
    assert host.value(b, "kept") == "42"
    c = host.start()
    assert host.value(c, "import pandas\nint(pandas.Series([1, 2]).sum())") == "3"


FORK_BOMB = (
    "import os, time\nmade = 0\nfor i in range(200):\n    try:\n        if os.fork() == 0:\n"
    "            time.sleep(30)\n            os._exit(0)\n        made += 1\n    except OSError:\n        break\nmade"
)


def test_fork_bomb_is_bounded_by_the_sessions_pids_limit(host):
    a, b = host.start(pids=32), host.start()
    res = host.step(a, FORK_BOMB, timeout=20)
    assert res["status"] == "ok", res
    assert int(res["value"]["text"]) < 32, res
    # host side: the session's pid namespace holds no more than its limit
    assert len(session_host_pids(probe(host, a)["pid"])) <= 32
    assert host.value(b, "1 + 1") == "2"  # the neighbour can still fork and run


def test_a_neighbours_processes_do_not_count_against_a_sessions_pids_limit(host):
    """Under rlimits as an ordinary user every session is the same uid of the
    zygote's namespace: RLIMIT_NPROC must count each session's own processes,
    not all of them (a neighbour with many processes must not stop a small
    session from forking)."""
    a, b = host.start(pids=16), host.start(pids=128)
    res = host.step(b, "import os, time\nkids = []\nfor i in range(40):\n    pid = os.fork()\n"
                       "    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n    kids.append(pid)\n"
                       "len(kids)", timeout=30)
    assert res["status"] == "ok" and res["value"]["text"] == "40", res
    # host side: b really holds them
    assert len(session_host_pids(probe(host, b)["pid"])) >= 42
    assert host.value(a, "import subprocess\nsubprocess.run(['true']).returncode") == "0"
    # and a's own limit still holds
    res = host.step(a, FORK_BOMB, timeout=20)
    assert res["status"] == "ok" and int(res["value"]["text"]) < 16, res


def test_no_network_to_the_host(host, listener):
    lst = listener()
    a = host.start()
    res = host.step(a, "import socket\ntry:\n"
                       f"    socket.create_connection(('127.0.0.1', {lst.address[1]}), timeout=2); r = 'connected'\n"
                       "except OSError as e:\n    r = e.strerror\nr")
    assert res["status"] == "ok" and res["value"]["text"] != "'connected'", res
    time.sleep(0.2)
    assert lst.hits == []  # host side: nobody came
    assert host.value(a, "import socket\n[n for _, n in socket.if_nameindex()]") == "['lo']"


# ---- the interpreter's confinement ----

def test_session_uid_is_not_root_on_the_host(host):
    a, b = host.start(), host.start()
    z = host.zygote_pid()
    for s in (a, b):
        pids = session_host_pids(probe(host, s)["pid"])
        assert len(pids) == 2, pids  # its init and its interpreter
        for p in pids:
            uid = host_uid(p)
            assert uid != 0
            # root: from corral's uid pool; an ordinary user: the only uid it has
            assert uid in UID_RANGE if os.geteuid() == 0 else uid == os.getuid(), uid
        assert host.value(s, "import os\n(os.getuid(), os.geteuid(), os.getgid())") == "(1000, 1000, 1000)"
    ua, ub = host_uid(interpreter_pid(host, a)), host_uid(interpreter_pid(host, b))
    if os.geteuid() == 0:
        # each interpreter has a host uid of its own, neither the zygote's nor the other's
        assert len({ua, ub, host_uid(z)}) == 3, (ua, ub, host_uid(z))
    else:
        # one host uid for all: what keeps them apart is a user namespace each
        # (and the pid, mount, ... namespaces the other tests attack)
        users = {ns_inode_of(interpreter_pid(host, s), "user") for s in (a, b)}
        assert len(users | {ns_inode_of(z, "user"), os.stat("/proc/self/ns/user").st_ino}) == 4, users
    caps = host.value(a, "[l for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm', 'CapBnd', "
                         "'NoNewPrivs', 'Seccomp:'))]")
    assert "CapEff:\\t0000000000000000" in caps and "CapBnd:\\t0000000000000000" in caps, caps
    assert "NoNewPrivs:\\t1" in caps and "Seccomp:\\t2" in caps, caps


SYSCALL = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
           "(libc.syscall(ctypes.c_long({nr}), 0, 0, 0, 0, 0), ctypes.get_errno())")


@pytest.mark.parametrize("name, nr", [("ptrace", 101), ("bpf", 321), ("keyctl", 250), ("userfaultfd", 323),
                                      ("io_uring_enter", 426), ("perf_event_open", 298), ("kcmp", 312)])
def test_killed_syscalls_are_killed_as_in_exec(host, name, nr):
    a = host.start()
    assert host.step(a, "x = 1")["status"] == "ok"
    res = host.step(a, SYSCALL.format(nr=nr))
    assert res["state_lost"] and res["status"] == "lost", res
    assert res["limit"] == "seccomp" and res.get("syscall") == name, res
    assert res["exit_code"] == 128 + signal.SIGSYS, res
    res = host.step(a, "'x' in dir()")
    assert res["restarted"] and res["value"]["text"] == "False", res


# Allowed by the zygote's own filter (it makes sessions with them) or not:
# the session's filter answers each with EPERM, as corral exec's does, and
# the session keeps its state.
@pytest.mark.parametrize("name, nr", [("unshare", 272), ("mount", 165), ("setns", 308), ("move_mount", 429),
                                      ("umount2", 166), ("open_tree", 428), ("fsopen", 430), ("chroot", 161),
                                      ("clock_settime", 227), ("sethostname", 170), ("mount_setattr", 442)])
def test_eperm_syscalls_are_refused_as_in_exec(host, name, nr):
    a = host.start()
    assert host.step(a, "x = 1")["status"] == "ok"
    res = host.step(a, SYSCALL.format(nr=nr))
    assert res["status"] == "ok" and not res["state_lost"], res
    assert res["value"]["text"] == f"(-1, {errno.EPERM})", res
    assert host.value(a, "'x' in dir()") == "True"


def test_sessions_have_their_own_ptys(host):
    """Each session mounts a devpts of its own over the zygote's: a pty a
    holds is not in b's /dev/pts, and each numbers its own from 0."""
    a, b = host.start(), host.start()
    assert host.value(a, "import os\nm, s = os.openpty()\nos.ttyname(s)") == "'/dev/pts/0'"
    assert host.value(b, "import os\nsorted(os.listdir('/dev/pts'))") == "['ptmx']"
    assert host.value(b, "import os\nm, s = os.openpty()\nos.ttyname(s)") == "'/dev/pts/0'"
    assert host.value(a, "import os\nsorted(os.listdir('/dev/pts'))") == "['0', 'ptmx']"


def test_namespace_clone_is_refused(host):
    a = host.start()
    res = host.step(a, "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                       "before = os.readlink('/proc/self/ns/user')\n"
                       "(libc.syscall(ctypes.c_long(56), ctypes.c_ulong(0x10000000 | 17), 0, 0, 0, 0),"
                       " ctypes.get_errno(), before == os.readlink('/proc/self/ns/user'))")
    assert res["status"] == "ok" and res["value"]["text"] == f"(-1, {errno.EPERM}, True)", res


# ---- secrets and leftovers ----

def _readable_memory_has(pid, needle, chunk=8 << 20):
    """Search every readable mapping of pid for needle (a core of its memory, read through /proc)."""
    with open(f"/proc/{pid}/maps") as f:
        maps = f.read()
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for m in re.finditer(r"^([0-9a-f]+)-([0-9a-f]+) r", maps, re.M):
            start, end = int(m[1], 16), int(m[2], 16)
            if end - start > (1 << 30):
                continue  # sanitizer shadow reservations, never written
            pos = start
            while pos < end:
                n = min(chunk, end - pos)
                try:
                    mem.seek(pos)
                    if needle in mem.read(n + len(needle)):
                        return True
                except (OSError, OverflowError, ValueError):
                    break
                pos += n
    return False


def test_the_zygote_holds_no_api_key():
    secret = f"sk-corral-test-{uuid.uuid4().hex}"
    h = WarmHost(env=dict(os.environ, OPENAI_API_KEY=secret, CORRAL_API_KEY=secret))
    try:
        a = h.start()
        assert h.value(a, "import os\n[k for k, v in os.environ.items() if 'sk-corral' in v]") == "[]"
        z = h.zygote_pid()
        assert z > 0
        for what in ("environ", "cmdline"):
            with open(f"/proc/{z}/{what}", "rb") as f:
                assert secret.encode() not in f.read(), what
        assert not _readable_memory_has(z, secret.encode())
        pa = interpreter_pid(h, a)
        with open(f"/proc/{pa}/environ", "rb") as f:
            assert secret.encode() not in f.read()
        assert not _readable_memory_has(pa, secret.encode())
        # the search can succeed: the helper itself does hold it
        assert _readable_memory_has(h.proc.pid, secret.encode())
    finally:
        h.close()


ESCAPE_RO_BIND = r"""
import errno, json, os
out = {}
def attempt(name, f):
    try:
        f(); out[name] = "done"
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
attempt("write", lambda: open("data/a.txt", "a").write("x"))
attempt("create", lambda: open("data/new", "w").close())
attempt("chmod", lambda: os.chmod("data/a.txt", 0o777))
attempt("unlink", lambda: os.unlink("data/a.txt"))
attempt("rename bind", lambda: os.rename("data", "moved"))
attempt("replace file bind", lambda: os.rename("data/a.txt", "data/b.txt"))
attempt("rmdir mount point", lambda: os.rmdir("data"))
attempt("utime", lambda: os.utime("data/a.txt", (0, 0)))
print(json.dumps(out))
"""


def test_a_warm_sessions_read_only_bind_stays_read_only(tmp_path):
    """--ro-bind beneath /workspace in a warm session (corral run binds its
    inputs so): nothing the session does writes through it or moves it."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("original")
    os.chmod(tmp_path, 0o755)
    os.chmod(src, 0o777)               # anyone may write here on the host:
    os.chmod(src / "a.txt", 0o666)     # only the bind's read-only flag stops the session
    rundir = tempfile.mkdtemp(prefix="corral-attack-run-")
    os.chmod(rundir, 0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=rundir, CORRAL_SESSION_LINGER="0")
    try:
        r = subprocess.run([CORRAL, "session", "start", "--warm", "--json", "--ro-bind", f"{src}:/workspace/data"],
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        sid = json.loads(r.stdout)["id"]
        r = subprocess.run([CORRAL, "session", "exec", sid, "--json", "-c", ESCAPE_RO_BIND],
                           capture_output=True, text=True, env=env, timeout=60)
        out = json.loads(json.loads(r.stdout)["stdout"].strip().splitlines()[-1])
        assert "done" not in out.values(), out
        assert out["write"] == "EROFS" and out["create"] == "EROFS", out
        assert out["rename bind"] in ("EBUSY", "EXDEV") and out["rmdir mount point"] == "EBUSY", out
        assert sorted(os.listdir(src)) == ["a.txt"] and (src / "a.txt").read_text() == "original"
        assert (src / "a.txt").stat().st_mode & 0o777 == 0o666
    finally:
        subprocess.run([CORRAL, "session", "shutdown"], capture_output=True, env=env, timeout=60)
        shutil.rmtree(rundir, ignore_errors=True)


def test_the_session_host_holds_no_api_key():
    """`corral session start` launches the session host from a client whose
    environment holds a key: the host is exec'd afresh with an allowlist, so
    neither its environment nor its memory nor its zygote holds the key."""
    secret = f"sk-corral-test-{uuid.uuid4().hex}"
    rundir = tempfile.mkdtemp(prefix="corral-attack-run-")
    os.chmod(rundir, 0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=rundir, OPENAI_API_KEY=secret, CORRAL_API_KEY=secret,
               SOME_TOKEN=secret)
    try:
        r = subprocess.run([CORRAL, "session", "start", "--json"], capture_output=True, text=True, env=env,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        info = json.loads(r.stdout)
        r = subprocess.run([CORRAL, "session", "exec", info["id"], "--json", "-c",
                            "import os\n[k for k, v in os.environ.items() if 'sk-corral' in v]"],
                           capture_output=True, text=True, env=env, timeout=60)
        assert json.loads(r.stdout)["value"]["text"] == "[]", r.stdout
        status = json.loads(subprocess.run([CORRAL, "session", "status", "--json"], capture_output=True,
                                           text=True, env=env, timeout=60).stdout)
        host, zygote = status["pid"], status["zygote_pid"]
        assert host == info["pid"] and zygote > 0
        for pid in (host, zygote):
            for what in ("environ", "cmdline"):
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    assert secret.encode() not in f.read(), (pid, what)
            assert not _readable_memory_has(pid, secret.encode()), pid
        # the search can succeed: a process that holds it is found out
        holder = subprocess.Popen([sys.executable, "-c", "import sys, time; k = sys.argv[1] * 1; time.sleep(30)",
                                   secret], stdin=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            assert _readable_memory_has(holder.pid, secret.encode())
        finally:
            holder.kill()
            holder.wait()
    finally:
        subprocess.run([CORRAL, "session", "shutdown"], capture_output=True, env=env, timeout=60)
        shutil.rmtree(rundir, ignore_errors=True)


def _cgroups_of(pid):
    out = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        out += [os.path.join(root, d) for d in dirs if d.startswith(f"corral-{pid}-")]
        dirs[:] = [d for d in dirs if not d.startswith("corral-")] if root.count("/") > 4 else dirs
    return out


def _descends_from(pid, ancestor):
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            return False
        if pid == ancestor:
            return True
    return False


def test_nothing_is_left_after_stop():
    h = WarmHost()
    helper = h.proc.pid
    a, b = h.start(), h.start()
    z = h.zygote_pid()
    pa = session_host_pids(probe(h, a)["pid"])
    assert pa
    h.stop(a)
    deadline = time.time() + 5
    while time.time() < deadline and any(alive(p) for p in pa):
        time.sleep(0.05)
    assert not any(alive(p) for p in pa)  # a stopped session's processes are gone at once
    assert h.value(b, "1") == "1"
    # ours only: other corral processes on this machine may run zygotes too
    everything = [p for p in procs_named("python3-zygote") if _descends_from(p, helper)]
    assert z in everything
    h.close()  # the last user goes: the zygote and the pool too
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(p) for p in everything):
        time.sleep(0.05)
    assert not any(alive(p) for p in everything)
    assert _cgroups_of(helper) == []
