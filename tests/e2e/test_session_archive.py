"""Pause and resume: `corral session archive`, `stop --archive` and
`start --from` (docs/sessions.md, "Pause and resume").

A session's workspace goes into a tar archive between steps and a new
session starts from it with the same files; the interpreter's variables do
not survive, by design.  The module has its own runtime directory and its own
TMPDIR (where temporary workspaces go), both private to the user running the
suite (root or corraltest), and its tests share that directory's session host
(a warm host starts a zygote, seconds under ASan on a busy host); each hostile
archive's test has a directory, a TMPDIR and a host of its own
(`fresh_sessions`), so "nothing left behind" can be checked."""
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time

import pytest

from conftest import CORRAL

# Run inside a session: {path: [sha256, mode, kind]} of the whole workspace,
# symlinks as their targets; .corral/ is corral's and left out.
MANIFEST = r"""
import hashlib, os, stat
def _manifest():
    out = {}
    for root, dirs, files in os.walk('.', followlinks=False):
        dirs.sort()
        for name in sorted(dirs + files):
            p = os.path.join(root, name)[2:]
            if p == '.corral' or p.startswith('.corral/'):
                continue
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[p] = [os.readlink(p), 0, 'symlink']
            elif stat.S_ISDIR(st.st_mode):
                out[p] = ['', stat.S_IMODE(st.st_mode), 'dir']
            else:
                out[p] = [hashlib.sha256(open(p, 'rb').read()).hexdigest(), stat.S_IMODE(st.st_mode), 'file']
    return out
import json as _json
print(_json.dumps(_manifest()))
"""

WRITE_FILES = r"""
import os, random
import matplotlib.pyplot as plt
os.makedirs('data/nested/deeper', exist_ok=True)
with open('data/sales.csv', 'w') as f:
    f.write('region,amount\n' + ''.join(f'r{i},{i * 7}\n' for i in range(500)))
random.seed(7)
open('data/nested/deeper/blob.bin', 'wb').write(bytes(random.getrandbits(8) for _ in range(70000)))
open('data/nested/run.sh', 'w').write('#!/bin/sh\necho hi\n')
os.chmod('data/nested/run.sh', 0o750)
os.symlink('../sales.csv', 'data/nested/link.csv')
os.makedirs('output/empty-dir')
plt.figure(figsize=(3, 2))
plt.plot([1, 3, 2])
x = 6 * 7
"""


class Sessions:
    """Sessions in a private runtime dir and TMPDIR; all stopped at the end."""

    def __init__(self, base, linger="0"):
        self.base = base
        self.rundir = os.path.join(base, "run")
        self.tmpdir = os.path.join(base, "tmp")
        os.mkdir(self.rundir, 0o700)
        os.mkdir(self.tmpdir, 0o700)
        # A fresh host ends with its last session: nothing lingers (test_zygote.py
        # tests the linger); the module's shared host keeps its zygote for the next test.
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.rundir, TMPDIR=self.tmpdir, CORRAL_SESSION_LINGER=linger)
        self.started = []

    def corral(self, *args, timeout=120):
        return subprocess.run([CORRAL, "session", *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env)

    def start(self, *opts):
        r = self.corral("start", "--json", *opts)
        assert r.returncode == 0, r.stderr
        info = json.loads(r.stdout)
        self.started.append(info["id"])
        return info

    def step(self, sid, code, *opts):
        r = self.corral("exec", sid, "--json", *opts, "-c", code)
        assert r.stdout, f"no JSON (rc={r.returncode}, stderr={r.stderr!r})"
        return r.returncode, json.loads(r.stdout)

    def manifest(self, sid):
        rc, r = self.step(sid, MANIFEST)
        assert rc == 0, r
        return json.loads(r["stdout"])

    def listed(self):
        r = self.corral("list", "--json")
        assert r.returncode == 0, r.stderr
        return {s["id"]: s for s in json.loads(r.stdout)}

    def sockets(self):
        d = os.path.join(self.rundir, "corral", "sessions")
        return os.listdir(d) if os.path.isdir(d) else []

    def stop_started(self):
        for sid in self.started:
            self.corral("stop", sid)
        self.started = []

    def stop_all(self):
        self.stop_started()
        self.corral("shutdown")


# How long the module's shared host keeps its zygote between two tests (far
# longer than any test here); the module's end shuts it down.
SHARED_LINGER = "120"


@pytest.fixture(scope="module")
def shared_sessions():
    base = tempfile.mkdtemp(prefix="corral-test-pause-")
    s = Sessions(base, SHARED_LINGER)
    yield s
    s.stop_all()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def sessions(shared_sessions):
    """The module's shared host; the sessions the test starts are stopped at its end."""
    yield shared_sessions
    shared_sessions.stop_started()


@pytest.fixture
def fresh_sessions():
    """A runtime dir, a TMPDIR and a host of the test's own."""
    base = tempfile.mkdtemp(prefix="corral-test-pause-")
    s = Sessions(base)
    yield s
    s.stop_all()
    shutil.rmtree(base, ignore_errors=True)


def wait_until(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def host_manifest(root):
    """MANIFEST's view of a host directory (GNU tar's extraction)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            full = os.path.join(dirpath, name)
            p = os.path.relpath(full, root)
            if p == ".corral" or p.startswith(".corral/"):
                continue
            st = os.lstat(full)
            if os.path.islink(full):
                out[p] = [os.readlink(full), 0, "symlink"]
            elif os.path.isdir(full):
                out[p] = ["", st.st_mode & 0o7777, "dir"]
            else:
                with open(full, "rb") as f:
                    out[p] = [hashlib.sha256(f.read()).hexdigest(), st.st_mode & 0o7777, "file"]
    return out


def test_pause_and_resume_same_files_no_variables(sessions, tmp_path):
    a = sessions.start()
    rc, r = sessions.step(a["id"], WRITE_FILES)
    assert rc == 0, r
    assert [f["path"] for f in r["figures"]] == ["/workspace/output/figures/step1-1.png"]
    before = sessions.manifest(a["id"])
    assert before["data/sales.csv"][2] == "file" and before["output/figures/step1-1.png"][2] == "file"
    assert before["data/nested/link.csv"] == ["../sales.csv", 0, "symlink"]
    assert before["data/nested/run.sh"][1] == 0o750

    tar = tmp_path / "pause.tar"
    p = sessions.corral("stop", a["id"], "--archive", str(tar), "--json")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["path"] == str(tar) and rep["session"] == a["id"] and rep["stopped"] is True
    assert rep["bytes"] >= 70000 + 3000 and rep["entries"] >= len(before) and rep["skipped"] == []
    assert os.stat(tar).st_mode & 0o777 == 0o600
    # paused: the session and its temporary workspace are gone
    assert wait_until(lambda: not os.path.exists(a["workspace"]), 5)
    assert a["id"] not in sessions.listed()

    # GNU tar reads it: every file, with .corral/session.json first
    listing = subprocess.run(["tar", "-tvf", str(tar)], capture_output=True, text=True, check=True).stdout
    names = [line.split()[-1] if " -> " not in line else line.split(" -> ")[0].split()[-1]
             for line in listing.splitlines()]
    assert names[:2] == [".corral/", ".corral/session.json"], listing
    for path in before:
        assert path in names or path + "/" in names, (path, listing)
    meta = json.loads(subprocess.run(["tar", "-xOf", str(tar), ".corral/session.json"], capture_output=True,
                                     check=True).stdout)
    assert meta["session"] == a["id"] and meta["steps"] == 2 and meta["schema"] == 1
    assert meta["resumed_from"] is None and meta["corral_version"]
    out = tmp_path / "gnu"
    out.mkdir()
    subprocess.run(["tar", "-xf", str(tar), "-C", str(out)], check=True)
    assert host_manifest(out) == before

    # resume: the same files byte for byte, but not the variables
    b = sessions.start("--from", str(tar))
    assert b["from"]["session"] == a["id"] and b["from"]["archive"] == str(tar) and b["from"]["steps"] == 2
    assert b["workspace"] != a["workspace"] and os.stat(b["workspace"]).st_mode & 0o777 == 0o700
    assert sessions.manifest(b["id"]) == before
    rc, r = sessions.step(b["id"], "x")
    assert rc == 1 and r["error"]["type"] == "NameError", r
    rc, r = sessions.step(b["id"], "import pandas as pd\nlen(pd.read_csv('data/sales.csv'))")
    assert rc == 0 and r["value"]["text"] == "500", r
    assert sessions.listed()[b["id"]]["from"]["session"] == a["id"]


def test_resumed_session_says_so_and_chains(sessions, tmp_path):
    a = sessions.start()
    sessions.step(a["id"], "open('note.txt', 'w').write('one')")
    t1, t2 = tmp_path / "one.tar", tmp_path / "two.tar"
    assert sessions.corral("archive", a["id"], str(t1)).returncode == 0
    # plain start: the ID on stdout, what came back (and what did not) on stderr
    p = sessions.corral("start", "--from", str(t1))
    assert p.returncode == 0, p.stderr
    b = p.stdout.strip()
    sessions.started.append(b)
    assert f"resumed from an archive of session {a['id']}" in p.stderr
    assert "variables and imports are not" in p.stderr
    sessions.step(b, "open('note.txt', 'a').write(' two')")
    p = sessions.corral("archive", b, str(t2), "--json")
    assert p.returncode == 0, p.stderr
    meta = json.loads(subprocess.run(["tar", "-xOf", str(t2), ".corral/session.json"], capture_output=True,
                                     check=True).stdout)
    assert meta["session"] == b and meta["resumed_from"] == a["id"] and meta["steps"] == 1
    # the first session lives on, unchanged by the archive
    rc, r = sessions.step(a["id"], "open('note.txt').read()")
    assert rc == 0 and r["value"]["text"] == "'one'"
    c = sessions.start("--from", str(t2))
    rc, r = sessions.step(c["id"], "open('note.txt').read()")
    assert rc == 0 and r["value"]["text"] == "'one two'"
    assert sessions.listed()[a["id"]]["from"] is None


def test_archive_waits_for_a_running_step_or_refuses(sessions, tmp_path):
    a = sessions.start()
    sid = a["id"]
    step = subprocess.Popen([CORRAL, "session", "exec", sid, "-c",
                             "import time\ntime.sleep(3)\nopen('done.txt', 'w').write('slept')\ny = 1"],
                            env=sessions.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.8)  # the step is running
        refused = tmp_path / "refused.tar"
        t0 = time.monotonic()
        p = sessions.corral("archive", sid, str(refused), "--wait", "0.5")
        assert p.returncode == 1, p.stderr
        assert "still running a step" in p.stderr and "nothing was archived" in p.stderr
        assert time.monotonic() - t0 < 2.5
        waited = tmp_path / "waited.tar"
        p = sessions.corral("archive", sid, str(waited))
        assert p.returncode == 0, p.stderr
        assert "waiting for it to end" in p.stderr
        out, err = step.communicate(timeout=60)
        assert step.returncode == 0, err
    finally:
        if step.poll() is None:
            step.kill()
    # the archive is of the workspace after the step: done.txt is in it
    with tarfile.open(waited) as t:
        assert t.extractfile("done.txt").read() == b"slept"
    # the refused request wrote nothing, then or later
    time.sleep(0.5)
    assert not refused.exists()
    assert [n for n in os.listdir(tmp_path) if n != "waited.tar"] == []
    # and the session goes on with its state
    rc, r = sessions.step(sid, "y + 1")
    assert rc == 0 and r["value"]["text"] == "2"


def test_stop_archive_failure_keeps_the_session(sessions, tmp_path):
    a = sessions.start()
    sid = a["id"]
    sessions.step(sid, "z = 5\nopen('output/keep.txt', 'w').write('k')")
    (tmp_path / "afile").write_text("")
    p = sessions.corral("stop", sid, "--archive", str(tmp_path / "afile" / "x.tar"))
    assert p.returncode == 2 and "not archived nor stopped" in p.stderr, p.stderr
    assert "'afile' is a regular file, not a directory" in p.stderr, p.stderr
    # inside the workspace: the jail can write there (and stop would remove it)
    p = sessions.corral("stop", sid, "--archive", os.path.join(a["workspace"], "output", "x.tar"))
    assert p.returncode == 2 and "lies inside the session's workspace" in p.stderr, p.stderr
    assert not os.path.exists(os.path.join(a["workspace"], "output", "x.tar"))
    rc, r = sessions.step(sid, "z")
    assert rc == 0 and r["value"]["text"] == "5"
    assert os.path.exists(os.path.join(a["workspace"], "output", "keep.txt"))


def test_usage_errors(sessions, tmp_path):
    for args, want in ((["archive", "0123456789ab", str(tmp_path / "x.tar")], "no session"),
                       (["archive", "0123456789ab"], "usage: corral session archive"),
                       (["stop", "0123456789ab", "--archive", str(tmp_path / "x.tar")], "no session"),
                       (["archive", "0123456789ab", "x.tar", "--wait", "soon"], "--wait"),
                       (["start", "--from", str(tmp_path / "missing.tar")], "cannot open the archive")):
        p = sessions.corral(*args)
        assert p.returncode == (1 if args[0] == "start" else 2) and want in p.stderr, (args, p.stderr)
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    p = sessions.corral("start", "-w", str(full), "--from", str(tmp_path / "missing.tar"))
    assert p.returncode == 2 and "new or empty" in p.stderr, p.stderr
    assert os.listdir(full) == ["x"] and os.listdir(tmp_path) == ["full"]


def test_resume_into_a_new_workspace_directory(sessions, tmp_path):
    a = sessions.start()
    sessions.step(a["id"], "import os\nos.makedirs('d/e')\nopen('d/e/f.txt', 'w').write('deep')")
    tar = tmp_path / "ws.tar"
    assert sessions.corral("archive", a["id"], str(tar)).returncode == 0
    ws = tmp_path / "new-ws"
    b = sessions.start("-w", str(ws), "--from", str(tar))
    assert b["workspace"] == str(ws)
    assert (ws / "d" / "e" / "f.txt").read_text() == "deep"
    rc, r = sessions.step(b["id"], "open('d/e/f.txt').read()")
    assert rc == 0 and r["value"]["text"] == "'deep'"
    assert sessions.corral("stop", b["id"]).returncode == 0
    assert (ws / "d" / "e" / "f.txt").exists()  # -w DIR is the user's: kept


def hostile(path, kind, victim):
    """A tar archive with one entry that must be refused, after a good one."""
    with tarfile.open(path, "w") as t:
        i = tarfile.TarInfo("ok.txt")
        i.size = 2
        t.addfile(i, io.BytesIO(b"ok"))
        if kind == "traversal":
            i = tarfile.TarInfo("../" + os.path.basename(victim))
            i.size = 5
            t.addfile(i, io.BytesIO(b"owned"))
        elif kind == "absolute":
            i = tarfile.TarInfo(victim)
            i.size = 5
            t.addfile(i, io.BytesIO(b"owned"))
        elif kind == "symlink-out":
            i = tarfile.TarInfo("out")
            i.type = tarfile.SYMTYPE
            i.linkname = os.path.dirname(victim)
            t.addfile(i)
            i = tarfile.TarInfo("out/" + os.path.basename(victim))
            i.size = 5
            t.addfile(i, io.BytesIO(b"owned"))
        elif kind == "symlink-climb":
            i = tarfile.TarInfo("a/up")
            i.type = tarfile.SYMTYPE
            i.linkname = "../../" + os.path.basename(victim)
            t.addfile(i)
        elif kind == "hardlink-out":
            i = tarfile.TarInfo("pw")
            i.type = tarfile.LNKTYPE
            i.linkname = "/etc/passwd"
            t.addfile(i)
        elif kind == "device":
            i = tarfile.TarInfo("null")
            i.type = tarfile.CHRTYPE
            i.devmajor, i.devminor = 1, 3
            t.addfile(i)


HOSTILE = {
    "traversal": "'..' component",
    "absolute": "absolute path",
    "symlink-out": "symbolic link to the absolute path",
    "symlink-climb": "climbs out",
    "hardlink-out": "outside the tree",
    "device": "device",
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("with_dir", [False, True], ids=["temporary", "with-w"])
def test_hostile_archive_is_refused_and_leaves_nothing(fresh_sessions, tmp_path, kind, with_dir):
    victim = os.path.join(fresh_sessions.tmpdir, "victim")  # where '..' from the extraction would land
    if kind in ("absolute", "symlink-out"):
        victim = str(tmp_path / "outside" / "victim")
        os.mkdir(tmp_path / "outside")
    tar = tmp_path / "evil.tar"
    hostile(tar, kind, victim)
    before = set(os.listdir(tmp_path))
    opts = ["-w", str(tmp_path / "ws")] if with_dir else []
    p = fresh_sessions.corral("start", *opts, "--from", str(tar))
    assert p.returncode == 1, p.stderr
    assert "cannot extract" in p.stderr and HOSTILE[kind] in p.stderr, p.stderr
    assert not os.path.exists(victim)
    assert not os.path.lexists(os.path.join(os.path.dirname(fresh_sessions.tmpdir), "victim"))
    assert os.listdir(fresh_sessions.tmpdir) == []  # no temporary workspace, no extraction directory
    assert set(os.listdir(tmp_path)) == before  # no -w DIR, no .ws.corral-*
    assert fresh_sessions.listed() == {}
    assert wait_until(lambda: fresh_sessions.sockets() == [], 5), fresh_sessions.sockets()  # the host ends after the refusal
    assert not os.path.exists("/etc/passwd.corral") and os.path.exists("/etc/passwd")


def test_documented():
    """The behaviour is in `--help`: files come back, variables do not."""
    p = subprocess.run([CORRAL, "session", "--help"], capture_output=True, text=True)
    assert p.returncode == 0
    for want in ("corral session archive ID FILE.tar", "--archive FILE.tar", "--from FILE.tar",
                 "variables and imports do not", "--wait S"):
        assert want in p.stdout, want
