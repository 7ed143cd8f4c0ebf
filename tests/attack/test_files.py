"""Attacks on the host's file system: reading secrets, writing outside
/workspace, devices, and symlinks planted in a host workspace."""
import hashlib
import os
import shutil
import socket
import stat
import tempfile

import pytest

from corral_attack import IS_ROOT, UNREACHABLE, marker, out_json

# Tries each path and reports what happened, never raising.
PROBE = r"""
import json, os, sys
res = {}
for p in sys.argv[1:]:
    try:
        if os.path.isdir(p):
            res[p] = "dir:" + ",".join(sorted(os.listdir(p)))
        else:
            with open(p, "rb") as f:
                res[p] = "data:" + f.read(4096).decode("utf-8", "replace")
    except OSError as e:
        res[p] = "err:" + (os.strerror(e.errno) if e.errno else str(e))
print(json.dumps(res))
"""


@pytest.fixture
def host_secret(host_file):
    """A world-readable host file with a random name and random content: only
    the jail's own root, never permissions, keeps it out of reach."""
    content = marker("file-secret")
    return host_file(content + "\n"), content


def _host_shadow_lines():
    try:
        with open("/etc/shadow") as f:
            return [ln.strip() for ln in f if ln.strip()]
    except OSError:
        return []


@pytest.mark.parametrize("path", ["/etc/shadow", "/etc/gshadow", "/root", "/root/.bashrc",
                                  "/proc/1/root/etc/shadow", "/proc/1/root/root", "/var/log", "/boot",
                                  "/etc/ssh"])
def test_host_system_files_absent(run_jail, path):
    r = run_jail([], PROBE, argv=[path])
    assert r["status"] == "ok", r
    if path.startswith("/proc/1/"):
        # corral-init is not dumpable: its root link is refused outright
        # (EACCES); a missing file behind it would be safe too.
        assert out_json(r)[path] in UNREACHABLE, r
    else:
        assert out_json(r)[path] == "err:No such file or directory", r
    for line in _host_shadow_lines():
        assert line not in r["stdout"]


def test_home_is_only_the_workspace(run_jail):
    """The jail's /home is its own: one entry, user, a link to /workspace
    (for programs written for E2B); no host user's home is there."""
    host_homes = sorted(os.listdir("/home")) if os.path.isdir("/home") else []
    probes = ["/home", "/proc/self/root/home"] + [f"/home/{h}" for h in host_homes if h != "user"]
    code = PROBE.replace("print(json.dumps(res))",
                         "res['link'] = os.readlink('/home/user')\n"
                         "res['same'] = os.path.samefile('/home/user', '/workspace')\nprint(json.dumps(res))")
    r = run_jail([], code, argv=probes)
    res = out_json(r)
    assert r["status"] == "ok", r
    assert res["/home"] == res["/proc/self/root/home"] == "dir:user", res
    assert res["link"] == "/workspace" and res["same"] is True, res
    for p in probes[2:]:
        assert res[p] == "err:No such file or directory", (p, res[p])


def test_host_tmp_file_invisible(run_jail, host_secret):
    path, content = host_secret
    name = os.path.basename(path)
    paths = [path, f"/proc/1/root{path}", f"/proc/self/root{path}", f"/dev/shm/{name}", "/tmp"]
    r = run_jail([], PROBE, argv=paths)
    res = out_json(r)
    assert r["status"] == "ok", r
    # The secret stays on the host: not in anything the jail printed.
    assert content not in r["stdout"] + r["stderr"]
    for p in paths[:4]:
        if p.startswith("/proc/1/"):
            assert res[p] in UNREACHABLE, (p, res[p])
        else:
            assert res[p] == "err:No such file or directory", (p, res[p])
    assert name not in res["/tmp"]
    with open(path) as f:
        assert f.read().strip() == content  # untouched on the host


def test_proc_1_root_is_the_jail(run_jail):
    """The program's own /proc/self/root is the jail's root, and corral-init's
    (/proc/1/root, /proc/1/cwd) is refused: init is not dumpable."""
    paths = ["/", "/proc/self/root", "/proc/self/root/etc/passwd", "/proc/self/cwd", "/proc/1/root",
             "/proc/1/root/", "/proc/1/root/etc/passwd", "/proc/1/root/workspace", "/proc/1/cwd", "/proc/1/cwd/"]
    r = run_jail([], PROBE, argv=paths)
    res = out_json(r)
    assert r["status"] == "ok", r
    assert res["/proc/self/root"].startswith("dir:"), res
    jail_root = set(res["/proc/self/root"].split(":", 1)[1].split(","))
    assert res["/proc/self/root"] == res["/"], res  # the same tree as the program's /
    assert "workspace" in jail_root and "run" in jail_root, jail_root
    # Host-only top-level entries are not there (/home is the jail's own:
    # test_home_is_only_the_workspace).
    assert not jail_root & {"root", "sys", "var", "boot", "srv", "opt", "mnt"}, jail_root
    with open("/etc/passwd") as f:
        host_passwd = f.read()
    assert res["/proc/self/root/etc/passwd"] != "data:" + host_passwd[:4096]
    assert "sandbox:x:1000" in res["/proc/self/root/etc/passwd"]
    assert res["/proc/self/cwd"].startswith("dir:"), res
    # corral-init's root and cwd: refused, not merely empty or missing.
    for p in paths[4:]:
        assert res[p] == "err:Permission denied", (p, res[p])


def test_host_process_environ_unreachable(run_jail, host_process):
    secret = marker("environ-secret")
    victim = host_process(["sleep", "30"], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                                "CORRAL_ATTACK_SECRET": secret})
    code = r"""
import json, os, sys
hostpid = int(sys.argv[1])
res = {"direct": None, "scan": [], "pids": []}
try:
    with open(f"/proc/{hostpid}/environ", "rb") as f:
        res["direct"] = f.read().decode("utf-8", "replace")
except OSError as e:
    res["direct"] = "err:" + os.strerror(e.errno)
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    res["pids"].append(int(p))
    for what in ("environ", "cmdline"):
        try:
            with open(f"/proc/{p}/{what}", "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"CORRAL_ATTACK_SECRET" in data or b"environ-secret" in data:
            res["scan"].append([p, what, data.decode("utf-8", "replace")])
print(json.dumps(res))
"""
    r = run_jail([], code, argv=[str(victim.pid)])
    res = out_json(r)
    assert r["status"] == "ok", r
    assert secret not in r["stdout"] + r["stderr"]
    assert res["direct"] == "err:No such file or directory", res
    assert victim.pid not in res["pids"]
    assert res["scan"] == [], res
    assert victim.poll() is None  # and the victim is still there


WRITE_PROBE = r"""
import json, os, sys
res = {}
for p in sys.argv[1:]:
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, b"corral-attack-was-here\n")
        os.close(fd)
        res[p] = "wrote"
    except OSError as e:
        res[p] = "err:" + os.strerror(e.errno)
print(json.dumps(res))
"""


def _fingerprint(path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    h = hashlib.sha256()
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as f:
            h.update(f.read())
    return (st.st_size, st.st_mtime_ns, st.st_mode, h.hexdigest())


def test_write_outside_workspace(run_jail):
    m = marker("write")
    new = [f"/usr/{m}", f"/usr/bin/{m}", f"/etc/{m}", f"/{m}", f"/lib/{m}", f"/proc/{m}", f"/dev/{m}"]
    existing = ["/usr/bin/env", "/etc/ld.so.cache", "/etc/passwd", "/etc/hostname", "/etc/hosts",
                "/proc/sys/kernel/core_pattern", "/proc/sys/vm/overcommit_memory", "/proc/sys/kernel/hostname"]
    before = {p: _fingerprint(p) for p in existing}
    r = run_jail([], WRITE_PROBE, argv=new + existing)
    res = out_json(r)
    assert r["status"] == "ok", r
    for p in new + existing:
        assert res[p].startswith("err:"), (p, res[p])
        assert res[p] in ("err:Read-only file system", "err:Permission denied", "err:No such file or directory"), \
            (p, res[p])
    for p in new:
        assert not os.path.lexists(p), f"{p} appeared on the host"
    for p in existing:
        assert _fingerprint(p) == before[p], f"{p} changed on the host"


def test_jail_tmp_is_private(run_jail):
    m = marker("tmp")
    code = r"""
import json, os, sys
m = sys.argv[1]
res = {}
for p in (f"/tmp/{m}", f"/dev/shm/{m}.shm", f"/workspace/{m}"):
    with open(p, "w") as f:
        f.write(m)
    res[p] = os.path.exists(p)
print(json.dumps(res))
"""
    r = run_jail([], code, argv=[m])
    assert r["status"] == "ok", r
    assert all(out_json(r).values()), r  # the jail could write its own /tmp ...
    for p in (f"/tmp/{m}", f"/dev/shm/{m}.shm", f"/var/tmp/{m}"):
        assert not os.path.lexists(p), f"{p} appeared on the host"  # ... which is not the host's
    assert not [n for n in os.listdir("/tmp") if m in n]


DEV_PROBE = r"""
import json, os, stat
res = {"dev": sorted(os.listdir("/dev")), "links": {}, "mknod": {}, "open": {}, "chmod": None}
for n in res["dev"]:
    p = "/dev/" + n
    if os.path.islink(p):
        res["links"][n] = os.readlink(p)
for name, mode in (("sda", stat.S_IFBLK | 0o600), ("mem", stat.S_IFCHR | 0o600),
                   ("fifo", stat.S_IFIFO | 0o600)):
    for d in ("/dev", "/tmp", "/workspace"):
        try:
            os.mknod(f"{d}/{name}", mode, os.makedev(8, 0) if name == "sda" else os.makedev(1, 1))
            res["mknod"][f"{d}/{name}"] = "made"
        except OSError as e:
            res["mknod"][f"{d}/{name}"] = "err:" + os.strerror(e.errno)
# (/dev/ptmx opens a pty of the jail's own devpts: tests/attack/test_terminals.py)
for p in ("/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg",
          "/dev/console", "/dev/tty", "/dev/tty0", "/dev/tty1", "/dev/ttyS0", "/dev/fuse", "/dev/kvm", "/dev/net/tun",
          "/dev/userfaultfd", "/dev/loop0", "/dev/loop-control", "/tmp/sda", "/workspace/sda"):
    try:
        with open(p, "rb") as f:
            res["open"][p] = "read:" + f.read(16).hex()
    except OSError as e:
        res["open"][p] = "err:" + os.strerror(e.errno)
try:
    os.chmod("/dev/null", 0o777)
    res["chmod"] = "changed"
except OSError as e:
    res["chmod"] = "err:" + os.strerror(e.errno)
with open("/dev/full", "wb", 0) as f:
    try:
        f.write(b"x")
        res["full"] = "wrote"
    except OSError as e:
        res["full"] = "err:" + os.strerror(e.errno)
print(json.dumps(res))
"""


def test_devices(run_jail):
    null_before = os.stat("/dev/null")
    r = run_jail([], DEV_PROBE)
    res = out_json(r)
    assert r["status"] == "ok", r
    nodes = set(res["dev"]) - set(res["links"])
    # pts: the jail's own devpts (tests/attack/test_terminals.py); tty: the
    # opener's controlling terminal, none here (ENXIO below)
    assert nodes <= {"null", "zero", "full", "random", "urandom", "tty", "pts"}, res["dev"]
    assert nodes >= {"null", "zero", "full", "random", "urandom", "pts"}, res["dev"]
    assert set(res["links"]) <= {"fd", "stdin", "stdout", "stderr", "shm", "ptmx"}, res["links"]
    assert res["links"].get("shm") in (None, "/tmp")
    assert res["links"].get("ptmx") == "pts/ptmx", res["links"]
    for p, v in res["mknod"].items():
        if p.endswith("fifo") and not p.startswith("/dev/"):
            continue  # a FIFO in a writable tmpfs is harmless
        assert v.startswith("err:"), (p, v)
    for p, v in res["open"].items():
        assert v.startswith("err:"), (p, v)
    assert res["chmod"].startswith("err:"), res
    assert res["full"] == "err:No space left on device"
    # Host side: the host's /dev/null kept its mode and owner.
    null_after = os.stat("/dev/null")
    assert (null_after.st_mode, null_after.st_uid) == (null_before.st_mode, null_before.st_uid)


def test_absent_host_dirs_and_hostname(run_jail):
    dirs = ["/sys", "/root", "/mnt", "/media", "/srv", "/var", "/opt", "/boot", "/snap", "/lost+found"]
    code = PROBE.replace("print(json.dumps(res))",
                         "import socket\nres['hostname'] = socket.gethostname()\n"
                         "res['uname'] = os.uname().nodename\nprint(json.dumps(res))")
    r = run_jail([], code, argv=dirs)
    res = out_json(r)
    assert r["status"] == "ok", r
    for d in dirs:
        assert res[d] == "err:No such file or directory", (d, res[d])
    assert res["hostname"] == res["uname"] == "corral"
    host = socket.gethostname()
    if host != "corral":
        assert host not in r["stdout"]


def test_workspace_symlinks_lead_nowhere(run_jail, host_dir, host_secret):
    secret_path, secret = host_secret
    target_dir = os.path.join(host_dir, "outside")  # a host dir the workspace must not reach
    ws = os.path.join(host_dir, "ws")
    os.mkdir(ws)
    os.mkdir(target_dir)
    os.chmod(ws, 0o777)
    os.chmod(target_dir, 0o777)
    victim = os.path.join(target_dir, "victim.txt")
    with open(victim, "w") as f:
        f.write("original\n")
    os.chmod(victim, 0o666)
    links = {"passwd": "/etc/passwd", "shadow": "/etc/shadow", "rootdir": "/root", "secret": secret_path,
             "up": "../outside/victim.txt", "victim": victim, "outdir": target_dir, "hostroot": "/"}
    for name, target in links.items():
        os.symlink(target, os.path.join(ws, name))
    code = r"""
import json, os
res = {}
for n in ("passwd", "shadow", "rootdir", "secret", "up", "victim", "outdir/victim.txt", "hostroot/root"):
    p = "/workspace/" + n
    try:
        if os.path.isdir(p):
            res[n] = "dir:" + ",".join(sorted(os.listdir(p)))
        else:
            with open(p) as f:
                res[n] = "data:" + f.read(4096)
    except OSError as e:
        res[n] = "err:" + os.strerror(e.errno)
for n in ("victim", "up", "outdir/new.txt"):
    try:
        with open("/workspace/" + n, "a") as f:
            f.write("pwned\n")
        res["write " + n] = "wrote"
    except OSError as e:
        res["write " + n] = "err:" + os.strerror(e.errno)
print(json.dumps(res))
"""
    r = run_jail(["-w", ws], code)
    res = out_json(r)
    assert r["status"] == "ok", r
    with open("/etc/passwd") as f:
        host_passwd = f.read()
    assert secret not in r["stdout"]
    assert res["passwd"] != "data:" + host_passwd[:4096]
    assert "sandbox:x:1000" in res["passwd"]  # the jail's own /etc/passwd, not the host's
    for line in host_passwd.splitlines():
        if line and not line.startswith(("root:", "nobody:")):
            assert line not in r["stdout"], line
    for n in ("shadow", "rootdir", "secret", "up", "victim", "outdir/victim.txt", "hostroot/root"):
        assert res[n] == "err:No such file or directory", (n, res[n])
    # Host side: writes through the links changed nothing outside the workspace.
    with open(victim) as f:
        assert f.read() == "original\n"
    assert sorted(os.listdir(target_dir)) == ["victim.txt"]
    with open(secret_path) as f:
        assert f.read().strip() == secret


@pytest.mark.skipif(not IS_ROOT, reason="needs root: only root can make the setuid-root binary bound into the jail")
def test_setuid_root_binary_gives_nothing(run_jail, host_dir):
    """A setuid-root copy of id(1) bound into the jail still runs as the jail user."""
    idbin = os.path.join(host_dir, "suid-id")
    with open("/usr/bin/id", "rb") as src, open(idbin, "wb") as dst:
        dst.write(src.read())
    os.chown(idbin, 0, 0)
    os.chmod(idbin, 0o4755)
    assert os.stat(idbin).st_mode & stat.S_ISUID
    r = run_jail(["--ro-bind", f"{idbin}:/opt/suid-id"], None, argv=["--", "/opt/suid-id"])
    assert r["status"] == "ok", r
    assert "euid=0" not in r["stdout"] and "uid=0(" not in r["stdout"], r
    assert r["stdout"].startswith("uid=1000"), r


PLANT_SETID = r"""
import json, os, shutil, stat
res = {}
shutil.copy("/usr/bin/id", "/workspace/id-chmod")
for name, how in (("id-chmod", "chmod"), ("id-creat", "open"), ("fifo", "mknod"), ("dir", "mkdir")):
    p = "/workspace/" + name
    try:
        if how == "chmod":
            os.chmod(p, 0o6755)
        elif how == "open":
            os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o6755))
        elif how == "mknod":
            os.mknod(p, stat.S_IFIFO | 0o6755)
        else:
            os.mkdir(p, 0o2777)
            os.chmod(p, 0o2777)
        res[name] = oct(os.stat(p).st_mode)
    except OSError as e:
        res[name] = "err:" + os.strerror(e.errno)
print(json.dumps(res))
"""


# What PLANT_SETID must report: the filter refuses every set-id mode.
PLANT_REFUSED = {n: "err:Operation not permitted" for n in ("id-chmod", "id-creat", "fifo", "dir")}


def _setid_files(d):
    """(name, owner uid, owner gid, mode) of files under d that carry a
    set-user-id bit, or a set-group-id bit on something executable."""
    found = []
    for name in os.listdir(d):
        st = os.lstat(os.path.join(d, name))
        if stat.S_ISLNK(st.st_mode):
            continue
        if st.st_mode & stat.S_ISUID or (st.st_mode & stat.S_ISGID and st.st_mode & 0o111 and
                                         not stat.S_ISDIR(st.st_mode)):
            found.append((name, st.st_uid, st.st_gid, oct(st.st_mode)))
    return found


@pytest.mark.skipif(not IS_ROOT, reason="needs root: only a root-run corral idmaps -w DIR to DIR's owner")
def test_workspace_cannot_plant_setuid_root(run_jail):
    d = tempfile.mkdtemp(prefix="corral-attack-suid-", dir="/tmp")
    try:
        os.chmod(d, 0o755)  # root's own directory, not even writable by others
        r = run_jail(["-w", d], PLANT_SETID)
        assert r["status"] == "ok", r
        assert out_json(r) == PLANT_REFUSED, r
        as_root = [f for f in _setid_files(d) if f[1] == 0 or f[2] == 0]
        assert as_root == [], f"set-id files owned by root on the host: {as_root}"
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_workspace_cannot_plant_setid_files(run_jail, host_dir):
    r = run_jail(["-w", host_dir], PLANT_SETID)
    assert r["status"] == "ok", r
    assert out_json(r) == PLANT_REFUSED, r
    assert _setid_files(host_dir) == [], f"set-id files left on the host: {_setid_files(host_dir)}"


# Set-id planting, one technique at a time, in a host workspace.  Each case
# first does the harmless version of the same thing (which must work, and
# show up on the host, so that a broken -w cannot pass vacuously), then the
# set-id version, which the filter must refuse with EPERM.
PLANT_ONE = r"""
import json, os, shutil, stat, subprocess, sys
how = sys.argv[1]
ws = "/workspace/"
res = {}
def attempt(key, fn):
    try:
        fn()
        res[key] = "done"
    except OSError as e:
        res[key] = "err:" + os.strerror(e.errno)
def new_file(p, mode):
    os.close(os.open(p, os.O_CREAT | os.O_WRONLY | os.O_EXCL, mode))
if how in ("chmod-4755", "chmod-2755"):
    new_file(ws + "prog", 0o644)
    attempt("control", lambda: os.chmod(ws + "prog", 0o755))
    attempt("attack", lambda: os.chmod(ws + "prog", int(how[-4:], 8)))
elif how == "open-creat-6755":
    attempt("control", lambda: new_file(ws + "control", 0o755))
    attempt("attack", lambda: new_file(ws + "prog", 0o6755))
elif how == "mknod-fifo-4644":
    attempt("control", lambda: os.mknod(ws + "control", stat.S_IFIFO | 0o644))
    attempt("attack", lambda: os.mknod(ws + "prog", stat.S_IFIFO | 0o4644))
elif how == "copy-id-chmod-u+s":
    attempt("control", lambda: shutil.copy("/usr/bin/id", ws + "prog"))
    attempt("attack", lambda: os.chmod(ws + "prog", os.stat(ws + "prog").st_mode | stat.S_ISUID))
    # and the way a shell user would do it: chmod(1), install(1)
    p = subprocess.run(["chmod", "u+s", ws + "prog"], capture_output=True, text=True)
    res["chmod(1)"] = [p.returncode, p.stderr.strip()]
    p = subprocess.run(["install", "-m", "4755", "/usr/bin/id", ws + "prog2"], capture_output=True, text=True)
    res["install(1)"] = [p.returncode, p.stderr.strip()]
    res["runs as"] = subprocess.run([ws + "prog"], capture_output=True, text=True).stdout.strip()
for n in sorted(os.listdir(ws)):
    res["mode " + n] = oct(os.lstat(ws + n).st_mode)
print(json.dumps(res))
"""

# The host-side result each case must leave: name -> (file type, permission
# bits) of everything in the workspace.  No entry carries S_ISUID/S_ISGID.
PLANT_ONE_HOST = {
    "chmod-4755": {"prog": (stat.S_IFREG, 0o755)},
    "chmod-2755": {"prog": (stat.S_IFREG, 0o755)},
    "open-creat-6755": {"control": (stat.S_IFREG, 0o755)},
    "mknod-fifo-4644": {"control": (stat.S_IFIFO, 0o644)},
    "copy-id-chmod-u+s": {"prog": (stat.S_IFREG, 0o755), "prog2": (stat.S_IFREG, None)},
}


def _any_setid(d):
    """Every path under d (d itself included) with S_ISUID or S_ISGID set,
    whatever its type: none may be left, executable or not."""
    found = []
    for root, dirs, files in os.walk(d):
        for name in [""] + dirs + files:
            p = os.path.join(root, name) if name else root
            st = os.lstat(p)
            if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                found.append((p, st.st_uid, st.st_gid, oct(st.st_mode)))
        # os.walk lists each directory once as root and once in its parent's dirs
    return sorted(set(found))


@pytest.mark.parametrize("how", list(PLANT_ONE_HOST))
def test_workspace_setid_planting_refused(run_jail, host_dir, how):
    """chmod 4755 / 2755, open(O_CREAT, 06755), mknod(S_IFIFO|04644) and a
    copy of id(1) made setuid: EPERM inside; on the host no file under the
    workspace has a set-id bit (as root the files are owned by root)."""
    r = run_jail(["-w", host_dir], PLANT_ONE, argv=[how])
    assert r["status"] == "ok", r
    res = out_json(r)
    assert res["control"] == "done", res  # the harmless version works ...
    assert res["attack"] == "err:Operation not permitted", res  # ... the set-id one is EPERM
    if how == "copy-id-chmod-u+s":
        assert res["chmod(1)"][0] != 0 and "Operation not permitted" in res["chmod(1)"][1], res
        assert res["install(1)"][0] != 0 and "Operation not permitted" in res["install(1)"][1], res
        assert res["runs as"].startswith("uid=1000") and "euid=" not in res["runs as"], res
    # Host side: exactly the expected entries, with the expected type and
    # mode, and nothing set-id anywhere under the workspace.
    assert _any_setid(host_dir) == [], f"set-id files left on the host: {_any_setid(host_dir)}"
    want = PLANT_ONE_HOST[how]
    assert sorted(os.listdir(host_dir)) == sorted(want), (os.listdir(host_dir), res)
    owner = os.stat(host_dir).st_uid
    for name, (kind, perm) in want.items():
        st = os.lstat(os.path.join(host_dir, name))
        assert stat.S_IFMT(st.st_mode) == kind, (name, oct(st.st_mode))
        if perm is not None:
            assert stat.S_IMODE(st.st_mode) == perm, (name, oct(st.st_mode))
        if IS_ROOT:  # idmapped to the directory's owner: root here, so a set-id bit would be set-id root
            assert st.st_uid == owner, (name, st.st_uid)
