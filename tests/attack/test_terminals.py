"""Attacks through the jail's terminals.  Each jail (and each warm session)
mounts a devpts instance of its own (docs/security.md, "File system"): the
host's ptys must not be visible or reachable in it, its own ptys must not
reach the host's, TIOCSTI stays a kill on them too, and one jail cannot take
more than its share of the kernel's ptys."""
import os
import pty
import time

import pytest

from corral_attack import JailProc, out_json

PTS_PROBE = r"""
import errno, json, os, sys
res = {"pts": sorted(os.listdir("/dev/pts")), "dev": os.stat("/dev/pts").st_dev,
       "ptmx": os.readlink("/dev/ptmx"), "open": {}}
for n in sys.argv[1:]:
    try:
        os.close(os.open(f"/dev/pts/{n}", os.O_RDWR | os.O_NOCTTY))
        res["open"][n] = "opened"
    except OSError as e:
        res["open"][n] = errno.errorcode.get(e.errno, str(e.errno))
with open("/proc/self/mountinfo") as f:
    res["mount"] = [line.strip() for line in f if line.split()[4] == "/dev/pts"]
m, s = os.openpty()
res["mine"] = os.ttyname(s)
res["after"] = sorted(os.listdir("/dev/pts"))
print(json.dumps(res))
"""


def test_devpts_is_the_jails_own(run_jail):
    """The host holds ptys of its own while the jail looks: the jail's
    /dev/pts lists none of them, is another file system, opens none of them
    by number, and its own first pty is number 0.  Mounted nosuid, noexec,
    with the jail's cap on ptys."""
    master, slave = pty.openpty()  # host side: at least one host pty exists now
    try:
        host_pts = sorted(n for n in os.listdir("/dev/pts") if n.isdigit())
        assert os.path.basename(os.ttyname(slave)) in host_pts
        r = run_jail([], PTS_PROBE, argv=host_pts[:20])
    finally:
        os.close(master)
        os.close(slave)
    assert r["status"] == "ok", r
    res = out_json(r)
    assert res["pts"] == ["ptmx"], res  # nothing of the host's
    assert res["dev"] != os.stat("/dev/pts").st_dev, res
    assert res["ptmx"] == "pts/ptmx"
    for n, outcome in res["open"].items():
        assert outcome in ("ENOENT", "EIO") if n == "0" else outcome == "ENOENT", (n, outcome)
    assert res["mine"] == "/dev/pts/0" and res["after"] == ["0", "ptmx"], res
    # One mount (a warm session's lies over its zygote's, hidden beneath it).
    assert 1 <= len(res["mount"]) <= 2, res
    for line in res["mount"]:
        opts = line.split()
        assert "nosuid" in opts[5].split(",") and "noexec" in opts[5].split(","), opts
        assert opts[-3] == "devpts" and "max=256" in opts[-1] and "ptmxmode=666" in opts[-1], opts


TIOCSTI_OWN = r"""
import fcntl, os, sys, termios
master, slave = os.openpty()
pid = os.fork()
if pid == 0:
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)  # the jail's pty as its controlling terminal
    fd = master if sys.argv[1] == "master" else slave
    print("before", flush=True)
    fcntl.ioctl(fd, termios.TIOCSTI, b"x")
    print("injected", flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("parent after", flush=True)
"""


@pytest.mark.parametrize("side", ["slave", "master"])
def test_tiocsti_on_the_jails_own_pty_killed(run_jail, side):
    """A terminal in the jail does not make TIOCSTI an allowed call: the
    filter kills the tree before the kernel sees it, pty or not."""
    r = run_jail([], TIOCSTI_OWN, argv=[side])
    assert r["status"] == "killed" and r["limit"] == "seccomp" and r["syscall"] == "ioctl", r
    assert "injected" not in r["stdout"] and "parent after" not in r["stdout"], r


PTY_FLOOD = r"""
import errno, json, os
fds, err = [], None
for _ in range(1000):
    try:
        fds.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
print(json.dumps({"opened": len(fds), "err": err}))
"""


def test_pty_count_capped(run_jail):
    """ptys of every instance but the host's come from one pool
    (kernel.pty.max - kernel.pty.reserve): a jail stops at its devpts max=256
    with ENOSPC, whatever its open-file limit."""
    r = run_jail(["--nofile", "2048"], PTY_FLOOD, timeout=10)
    assert r["status"] == "ok", r
    assert out_json(r) == {"opened": 256, "err": "ENOSPC"}, r


def test_jails_do_not_share_ptys(run_jail):
    """Two jails at once: a pty held open by one is not in the other's
    /dev/pts.  (Through test_via_session.py, the second is a warm session;
    test_zygote.py has two warm sessions of one zygote.)"""
    holder = JailProc([], "import os, time\nm, s = os.openpty()\nprint(os.ttyname(s), flush=True)\n"
                          "time.sleep(3)\n", timeout=10)
    time.sleep(1.5)
    r = run_jail([], "import json, os\nprint(json.dumps(sorted(os.listdir('/dev/pts'))))")
    h = holder.wait()
    assert h["status"] == "ok" and h["stdout"].strip() == "/dev/pts/0", h
    assert out_json(r) == ["ptmx"], r
