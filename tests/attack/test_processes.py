"""Attacks on other processes: who the jail is on the host, signalling and
reading host processes and other jails, daemons that try to outlive the jail,
inherited file descriptors, and TIOCSTI into the caller's terminal."""
import json
import os
import pty
import select
import signal
import sys
import time

import pytest

from corral_attack import (IS_ROOT, ROOT_ONLY, UID_RANGE, USER_ONLY, alive, corral_argv, host_procs, host_uid_of,
                           marker, out_json, wait_for_procs)

IDS = r"""
import json, os
with open("/proc/self/uid_map") as f:
    uid_map = f.read().split()
with open("/proc/self/gid_map") as f:
    gid_map = f.read().split()
print(json.dumps({"resuid": os.getresuid(), "resgid": os.getresgid(), "groups": os.getgroups(),
                  "uid_map": uid_map, "gid_map": gid_map}))
"""


def test_uid_inside_is_not_root(run_jail):
    r = run_jail([], IDS)
    res = out_json(r)
    assert r["status"] == "ok", r
    assert res["resuid"] == [1000, 1000, 1000] and res["resgid"] == [1000, 1000, 1000], res
    assert 0 not in res["groups"]
    # One id mapped, and on the host it is not root.
    inside, host, count = (int(x) for x in res["uid_map"])
    assert (inside, count) == (1000, 1)
    assert host != 0 and int(res["gid_map"][1]) != 0
    if IS_ROOT:
        assert host in UID_RANGE
    else:
        assert host == os.getuid()


SLEEPER = "import sys, time\nprint('up', flush=True)\ntime.sleep(float(sys.argv[2]))\nprint('done')"


def _jail_host_uid(start_jail, m, seconds=1.5):
    """Start a sleeping jail tagged m; return (JailProc, host pid, host uid)."""
    p = start_jail([], SLEEPER, timeout=seconds + 3, argv=[m, str(seconds)])
    procs = wait_for_procs(m)
    assert procs, "the jail's process never showed up on the host"
    pid = next(iter(procs))
    return p, pid, host_uid_of(pid)


@pytest.mark.skipif(not IS_ROOT, reason=ROOT_ONLY)
def test_host_uid_of_jail_process_as_root(start_jail):
    m = marker("hostuid")
    p, pid, uid = _jail_host_uid(start_jail, m, 0.5)
    assert uid != 0, f"jail process {pid} runs as host root"
    assert uid in UID_RANGE, uid
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    assert all(int(x) == uid for x in status["Uid"].split())
    assert all(int(x) != 0 for x in status["Gid"].split())
    assert status["Groups"].split() == [] or "0" not in status["Groups"].split()
    assert p.wait()["status"] == "ok"


@pytest.mark.skipif(IS_ROOT, reason=USER_ONLY)
def test_host_uid_of_jail_process_as_user(start_jail):
    m = marker("hostuid")
    p, pid, uid = _jail_host_uid(start_jail, m, 0.5)
    assert uid == os.getuid()
    assert p.wait()["status"] == "ok"


KILL_ALL = r"""
import ctypes, errno, json, os, signal, sys, time
deadline = time.monotonic() + 3
while not os.path.exists("/workspace/go") and time.monotonic() < deadline:
    time.sleep(0.01)
with open("/workspace/go") as f:
    victims = [int(x) for x in f.read().split()]
res = {}
child = os.fork()  # something of its own for kill(-1) to hit
if child == 0:
    time.sleep(30)
    os._exit(0)
try:
    os.kill(-1, signal.SIGKILL)
    res["kill(-1)"] = "sent"
except OSError as e:
    res["kill(-1)"] = errno.errorcode[e.errno]
res["own child"] = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for v in victims:
    try:
        os.kill(v, signal.SIGKILL)
        res[f"kill {v}"] = "sent"
    except OSError as e:
        res[f"kill {v}"] = errno.errorcode[e.errno]
    ctypes.set_errno(0)
    fd = libc.syscall(ctypes.c_long(434), ctypes.c_long(v), ctypes.c_long(0))  # pidfd_open
    res[f"pidfd_open {v}"] = "fd" if fd >= 0 else errno.errorcode[ctypes.get_errno()]
print(json.dumps(res))
"""


def test_kill_all_spares_the_host(start_jail, host_process, host_dir):
    """kill(-1, SIGKILL) from the jail, with host victims running under the
    very same host uid as the jail."""
    m = marker("killall")
    p = start_jail(["-w", host_dir], KILL_ALL, timeout=5, argv=[m])
    procs = wait_for_procs(m)
    assert procs, "the jail never showed up on the host"
    jail_uid = host_uid_of(next(iter(procs)))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    same_uid = host_process(["sleep", "30"], env=env, uid=jail_uid if IS_ROOT else None)
    mine = host_process(["sleep", "30"], env=env)
    assert host_uid_of(same_uid.pid) == jail_uid
    with open(os.path.join(host_dir, "go.tmp"), "w") as f:
        f.write(f"{same_uid.pid} {mine.pid} {os.getpid()} 1")
    os.rename(os.path.join(host_dir, "go.tmp"), os.path.join(host_dir, "go"))
    r = p.wait()
    assert r["status"] == "ok", r
    res = out_json(r)
    assert res["kill(-1)"] == "sent" and res["own child"] == -signal.SIGKILL, res  # it really worked inside
    for v in (same_uid.pid, mine.pid, os.getpid()):
        assert res[f"kill {v}"] == "ESRCH" and res[f"pidfd_open {v}"] == "ESRCH", res
    # Host side: every victim is alive.
    assert same_uid.poll() is None and mine.poll() is None
    assert alive(same_uid.pid) and alive(mine.pid)


PS_INSIDE = r"""
import json, os
procs = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                procs[p] = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError as e:
            procs[p] = "err:" + os.strerror(e.errno)
res = {"procs": procs, "probe": {}}
import sys
for pid in (int(x) for x in sys.argv[1:]):
    try:
        os.kill(pid, 0)
        res["probe"][pid] = "exists"
    except OSError as e:
        res["probe"][pid] = os.strerror(e.errno)
print(json.dumps(res))
"""


def test_host_processes_invisible(run_jail, host_process):
    m = marker("visible")
    victim = host_process(["sleep", "30", m])
    r = run_jail([], PS_INSIDE, argv=[str(victim.pid), str(os.getpid())])
    res = out_json(r)
    assert r["status"] == "ok", r
    assert sorted(res["procs"]) == ["1", "2"], res["procs"]  # init and the program itself
    assert res["procs"]["1"] == "corral-init"
    assert m not in r["stdout"]
    for pid, outcome in res["probe"].items():
        assert outcome == "No such process", (pid, outcome)
    with open("/proc/1/cmdline", "rb") as f:
        host_init = f.read().split(b"\0")[0].decode()
    if host_init and "corral-init" not in host_init:
        assert host_init not in res["procs"].values()


DAEMON = r"""
import os, sys, time
m = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import signal
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        os.execvp("bash", ["bash", "-c", "trap '' TERM HUP INT; while :; do echo beat >> /workspace/heartbeat;"
                                         " sleep 0.05; done", m])
    os._exit(0)
deadline = time.monotonic() + 2
while not os.path.exists("/workspace/heartbeat") and time.monotonic() < deadline:
    time.sleep(0.01)
print("daemon started" if os.path.exists("/workspace/heartbeat") else "daemon did not start")
"""


def test_double_forked_daemon_dies_with_the_jail(run_jail, host_dir):
    m = marker("daemon")
    r = run_jail(["-w", host_dir], DAEMON, argv=[m])
    assert r["status"] == "ok", r
    assert r["stdout"].strip() == "daemon started", r
    time.sleep(0.2)
    beat = os.path.join(host_dir, "heartbeat")
    size = os.path.getsize(beat)
    assert size > 0
    time.sleep(0.4)  # a live daemon would write ~8 more lines meanwhile
    assert os.path.getsize(beat) == size, "the daemon is still writing after corral returned"
    assert host_procs(m) == {}, f"daemon processes outlived the jail: {host_procs(m)}"


def test_killing_corral_kills_the_jail(start_jail):
    """If corral itself dies (SIGKILL, no cleanup), nothing of the jail survives."""
    m = marker("orphan")
    code = ("import os, sys, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
            "print('up', flush=True)\ntime.sleep(60)")
    p = start_jail([], code, timeout=60, argv=[m])
    assert len(wait_for_procs(m, count=2)) >= 2
    os.kill(p.pid, signal.SIGKILL)  # corral only, not its process group
    p.p.wait()
    deadline = time.monotonic() + 2
    while host_procs(m) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert host_procs(m) == {}, f"jail processes outlived corral: {host_procs(m)}"


NEIGHBOUR = r"""
import json, os, signal, sys, time
target, target_pid = sys.argv[2], int(sys.argv[3])
res = {"seen": [], "pids": [], "direct": None}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    res["pids"].append(int(p))
    if int(p) == os.getpid():
        continue  # its own argv names the target
    for what in ("cmdline", "environ", "status"):
        try:
            with open(f"/proc/{p}/{what}", "rb") as f:
                if target.encode() in f.read():
                    res["seen"].append([p, what])
        except OSError:
            pass
try:
    with open(f"/proc/{target_pid}/cmdline", "rb") as f:
        res["direct"] = f.read().decode("utf-8", "replace")
except OSError as e:
    res["direct"] = "err:" + os.strerror(e.errno)
for pid in range(2, 4096):
    if pid != os.getpid():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
try:
    os.kill(-1, signal.SIGKILL)
except ProcessLookupError:
    pass  # nobody else to signal in its own namespace
print(json.dumps(res), flush=True)
time.sleep(0.5)
"""


def test_two_jails_cannot_touch_each_other(start_jail):
    ma, mb = marker("jail-a"), marker("jail-b")
    a = start_jail([], SLEEPER, timeout=6, argv=[ma, "2"])
    a_procs = wait_for_procs(ma)
    assert a_procs, "jail A never showed up on the host"
    a_pid = next(iter(a_procs))
    b = start_jail([], NEIGHBOUR, timeout=4, argv=[mb, ma, str(a_pid)])
    b_procs = wait_for_procs(mb)
    uid_a = host_uid_of(a_pid)
    uid_b = host_uid_of(next(iter(b_procs))) if b_procs else None
    rb = b.wait()
    assert alive(a_pid), "jail B killed jail A's process"
    ra = a.wait()
    assert rb["status"] == "ok", rb
    res = out_json(rb)
    assert res["seen"] == [] and res["direct"] == "err:No such file or directory", res
    assert a_pid not in res["pids"]
    # A ran to its end, untouched.
    assert ra["status"] == "ok" and ra["stdout"].split() == ["up", "done"], ra
    if IS_ROOT:
        assert uid_b is not None, "jail B never showed up on the host"
        assert uid_a != uid_b, f"both jails run as host uid {uid_a}"
        assert uid_a in UID_RANGE and uid_b in UID_RANGE


def test_inherited_fds_do_not_reach_the_jail(run_jail, host_file):
    secret = marker("fd-secret")
    path = host_file(secret)
    fd = os.open(path, os.O_RDONLY)
    os.set_inheritable(fd, True)
    high = 37
    os.dup2(fd, high)  # inheritable, no CLOEXEC
    code = r"""
import json, os
listed = sorted(int(x) for x in os.listdir("/proc/self/fd"))
open_now = []
for n in range(3, 1024):
    try:
        os.fstat(n)
        open_now.append(n)
    except OSError:
        pass
links = {}
for d in ("/proc/1/fd",):
    try:
        for n in os.listdir(d):
            try:
                links[f"{d}/{n}"] = os.readlink(f"{d}/{n}")
            except OSError as e:
                links[f"{d}/{n}"] = "err:" + os.strerror(e.errno)
    except OSError as e:
        links[d] = "err:" + os.strerror(e.errno)
print(json.dumps({"listed": listed, "open": open_now, "init": links}))
"""
    try:
        r = run_jail([], code, pass_fds=(fd, high))
    finally:
        os.close(fd)
        os.close(high)
    res = out_json(r)
    assert r["status"] == "ok", r
    assert set(res["listed"]) <= {0, 1, 2, 3}, res  # 3: listdir's own
    assert res["open"] == [], res
    assert secret not in r["stdout"] and path not in r["stdout"], res


PTY_HELPER = r"""
import json, os, select, subprocess, sys, tty
out = sys.argv[1]
tty.setraw(0)  # so any injected byte is readable at once
with open(out + ".json", "wb") as f:
    rc = subprocess.call(sys.argv[2:], stdout=f)  # stdin and stderr: the terminal
injected = b""
while select.select([0], [], [], 0.3)[0]:
    chunk = os.read(0, 4096)
    if not chunk:
        break
    injected += chunk
with open(out + ".tty", "w") as f:
    json.dump({"rc": rc, "injected": injected.decode("latin-1")}, f)
"""

TIOCSTI = r"""
import errno, fcntl, os, sys, termios
target, m = sys.argv[1], sys.argv[2]
if target == "tty":
    try:
        fd = os.open("/dev/tty", os.O_RDWR)
    except OSError as e:
        print("open", errno.errorcode[e.errno])
        sys.exit(3)
else:
    fd = int(target)
for ch in (m + "\n").encode():
    fcntl.ioctl(fd, termios.TIOCSTI, bytes([ch]))
print("injected")
"""


def _run_under_pty(cmd, timeout=15):
    """Run cmd with a fresh pseudo-terminal as its controlling terminal,
    stdin and stderr; return (what the terminal showed, helper report, JSON)."""
    out = os.path.join("/tmp", marker("pty"))
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.execv(sys.executable, [sys.executable, "-c", PTY_HELPER, out] + cmd)
        finally:
            os._exit(127)
    shown = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready = select.select([master], [], [], 0.2)[0]
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                shown += chunk
            elif os.waitpid(pid, os.WNOHANG)[0]:
                pid = 0
                break
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)
    try:
        with open(out + ".tty") as f:
            report = json.load(f)
        with open(out + ".json") as f:
            result = json.load(f)
    finally:
        for ext in (".tty", ".json"):
            try:
                os.unlink(out + ext)
            except OSError:
                pass
    return shown.decode("latin-1"), report, result


@pytest.mark.parametrize("target", ["0", "1", "2", "tty"])
def test_tiocsti_into_host_terminal(target):
    m = marker("tiocsti")
    shown, report, r = _run_under_pty(corral_argv(["-t", "2"], TIOCSTI, argv=[target, m]))
    # Host side: nothing reached the terminal's input queue, nothing echoed.
    assert report["injected"] == "", report
    assert m not in shown
    assert "injected" not in r["stdout"]
    if target == "tty":
        assert r["status"] == "error" and r["exit_code"] == 3, r  # no terminal in the jail at all
        assert r["stdout"].split()[1] in ("ENOENT", "ENXIO")
    else:
        assert r["status"] == "killed" and r["limit"] == "seccomp" and r["syscall"] == "ioctl", r
