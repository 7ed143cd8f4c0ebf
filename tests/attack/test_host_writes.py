"""Host writes after jailed code ran: the jail plants links, corral must not
follow them (docs/security.md, "Host paths").

After a step, corral acts on the host with the caller's rights (root here in
CI): it copies output/ to --out, writes --archive, the trace, the transcript
and the run's records, archives a session, exports a trace.  Code in the
jail controls every entry of the workspace, so it turns each of them (and
each name a destination might use) into a symbolic link to a canary
directory on the host.  Every command that writes after that then runs, and
the canary must be exactly as it was: no file written, replaced, truncated
or created in it.  Destinations inside the workspace are refused before
anything runs; destinations outside it are written beneath a directory fd
that was opened before the jail ran.

The model's side is the scripted server of tests/model-server."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

import pytest

from corral_attack import CORRAL

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

# Names a destination could use, planted as links at the top of the
# workspace beside every entry that is there.
NAMES = ["output", ".corral", "results", "arch", "t", "rec", "out", "report.html", "nb.ipynb", "x.tar", "state"]

PLANT = r"""
import os, shutil
canary = {canary!r}
def plant(path, target):
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        print('kept', path, e)
        return
    os.symlink(target, path)
# every entry of output/, then every top-level entry and name
if {inside!r}:
    for n in os.listdir('output') + ['figures', 'a.csv', 'authorized_keys']:
        plant('output/' + n, canary + '/' + n)
for n in sorted(set(os.listdir('.')) | set({names!r})):
    if n == 'input' or (n == 'output' and {inside!r}):
        continue
    plant(n, canary + ('/authorized_keys' if '.' in n[1:] else ''))
print('planted', sorted(os.listdir('.')))
"""


def plant_code(canary, inside):
    return PLANT.format(canary=canary, names=NAMES, inside=inside)


def snapshot(d):
    """Every entry under d: type, mode, size, mtime and a digest of files."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            digest = None
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(p, d)] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return out


@pytest.fixture
def canary():
    """A host directory the jail's links point at, writable by whoever runs
    the tests (so a write through a link would succeed), with a stand-in
    authorized_keys."""
    d = tempfile.mkdtemp(prefix="corral-attack-canary-", dir="/tmp")
    os.chmod(d, 0o777)
    with open(os.path.join(d, "authorized_keys"), "w") as f:
        f.write("ssh-ed25519 AAAA canary\n")
    os.mkdir(os.path.join(d, "sub"))
    before = snapshot(d)
    yield d
    after = snapshot(d)
    shutil.rmtree(d, ignore_errors=True)
    assert after == before, f"the canary directory changed: {sorted(set(after.items()) ^ set(before.items()))}"


@pytest.fixture
def ws():
    """A workspace directory the jail can write (as root, its uid comes from
    the pool)."""
    d = tempfile.mkdtemp(prefix="corral-attack-ws-", dir="/tmp")
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def env_for(home):
    return {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "NO_COLOR": "1",
            "XDG_STATE_HOME": os.path.join(home, "state"), "TMPDIR": "/tmp"}


def agent(cwd, home, turns, *args, timeout=120):
    """`corral run` against the scripted turns (review off: the host side is
    under test, not the review); returns (proc, server)."""
    with ScriptedServer(turns) as srv:
        proc = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--cold",
                               "--review-policy", "off", *args, "attack"],
                              capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env_for(home))
    return proc, srv


@pytest.mark.parametrize("inside", [True, False], ids=["entries-of-output", "output-itself"])
def test_run_writes_nothing_through_links_the_jail_planted(tmp_path, canary, ws, inside):
    """Every destination outside the workspace, written after the jail
    planted links everywhere in it: copy-out, --archive, the trace, the
    transcript, the run's records, and an export of the trace."""
    home = str(tmp_path)
    turns = [tool_call("run_python", code=plant_code(canary, inside)), text("done")]
    dests = ["-o", str(tmp_path / "out"), "--archive", str(tmp_path / "arch" / "run.tar"),
             "--trace", str(tmp_path / "t" / "trace.jsonl"), "--record", str(tmp_path / "rec.jsonl")]
    proc, srv = agent(str(tmp_path), home, turns, "-w", ws, *dests)
    srv.assert_ok()
    assert proc.returncode == 0, proc.stderr
    assert "planted" in json.dumps(srv.requests[1])
    # what was written is where it was asked for, and holds no link
    assert os.path.isfile(tmp_path / "arch" / "run.tar") and not os.path.islink(tmp_path / "arch" / "run.tar")
    with tarfile.open(tmp_path / "arch" / "run.tar") as tar:
        links = {m.name: m.linkname for m in tar.getmembers() if m.issym()}
    assert any(v.startswith(canary) for v in links.values()), links  # stored as links, not followed
    for root, dirs, files in os.walk(tmp_path / "out"):
        for n in dirs + files:
            assert not os.path.islink(os.path.join(root, n))
    assert os.path.getsize(tmp_path / "t" / "trace.jsonl") > 0
    # the same workspace again, with the links still planted: the records go
    # to $XDG_STATE_HOME, never through '.corral' or 'state' in the workspace
    # (output/ itself a link is refused as a workspace: put a directory back)
    if os.path.islink(os.path.join(ws, "output")):
        os.unlink(os.path.join(ws, "output"))
        os.mkdir(os.path.join(ws, "output"))
    proc, srv = agent(ws, home, [text("again")], "-w", ".")
    srv.assert_ok()
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path / "state" / "corral" / "runs")
    # and without -w from that directory: the links there are not corral's
    proc, srv = agent(ws, home, [text("once more")])
    assert proc.returncode == 0, proc.stderr
    # exports into the workspace, onto links the jail planted
    trace = str(tmp_path / "t" / "trace.jsonl")
    for fmt, name in (("--html", "report.html"), ("--ipynb", "nb.ipynb")):
        r = subprocess.run([CORRAL, "trace", "export", fmt, "-o", os.path.join(ws, name), trace],
                           capture_output=True, text=True, timeout=60, env=env_for(home))
        assert r.returncode == 0, r.stderr
        assert not os.path.islink(os.path.join(ws, name)) and os.path.getsize(os.path.join(ws, name)) > 0


@pytest.mark.parametrize("args, says", [
    (["-o", "fresh"], "lies inside the workspace"),
    (["-o", "results"], "leads through the symbolic link 'results'"),
    (["-o", "results/new"], "leads through the symbolic link 'results'"),
    (["-o", "./sub/../results"], "leads through the symbolic link 'results'"),
    (["--archive", "arch/run.tar"], "leads through the symbolic link 'arch'"),
    (["--archive", "x.tar"], "lies inside the workspace"),
    (["--trace", "t/trace.jsonl"], "leads through the symbolic link 't'"),
    (["--record", "rec/x.jsonl"], "leads through the symbolic link 'rec'"),
    (["--record", "log.jsonl"], "lies inside the workspace"),
])
def test_run_refuses_destinations_inside_the_workspace(tmp_path, canary, ws, args, says):
    """`cd project && corral run -w . -o results`: code could make results a
    link to any host directory before the run ends, so a destination in a
    workspace the jail can write is refused before the model is asked
    anything, and links already planted there are never followed."""
    home = str(tmp_path)
    os.mkdir(os.path.join(ws, "sub"))
    for n in NAMES:
        os.symlink(canary + ("/authorized_keys" if "." in n[1:] else ""), os.path.join(ws, n))
    with ScriptedServer([]) as srv:
        proc = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "-w", ".", *args, "x"],
                              capture_output=True, text=True, timeout=60, cwd=ws, env=env_for(home))
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr, proc.stderr
    assert srv.requests == []
    # the same through a writable --bind
    bind = os.path.join(ws, "sub")
    with ScriptedServer([]) as srv:
        proc = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--bind",
                               f"{bind}:/data", "-o", os.path.join(bind, "o"), "x"],
                              capture_output=True, text=True, timeout=60, cwd=str(tmp_path), env=env_for(home))
    assert proc.returncode == 2 and "lies inside a writable bind" in proc.stderr, proc.stderr


def session(env, *args, timeout=60):
    return subprocess.run([CORRAL, "session", *args], capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("workspace", ["given", "temporary"])
def test_session_archive_writes_nothing_through_links(tmp_path, canary, ws, workspace):
    """`session archive` and `stop --archive` after the session's code
    planted links: into the workspace (or through it) refused, elsewhere
    written beside the destination and renamed, never through a link."""
    rundir = tempfile.mkdtemp(prefix="corral-attack-run-")
    os.chmod(rundir, 0o700)
    env = dict(env_for(str(tmp_path)), XDG_RUNTIME_DIR=rundir, CORRAL_SESSION_LINGER="0")
    try:
        r = session(env, "start", "--json", *(["-w", ws] if workspace == "given" else []))
        assert r.returncode == 0, r.stderr
        info = json.loads(r.stdout)
        sid, root = info["id"], info["workspace"]
        r = session(env, "exec", sid, "--json", "-c", plant_code(canary, False))
        assert r.returncode == 0 and "planted" in r.stdout, r.stdout + r.stderr
        for dest, says in ((os.path.join(root, "output", "x.tar"), "leads through the symbolic link 'output'"),
                           (os.path.join(root, "arch", "x.tar"), "leads through the symbolic link 'arch'"),
                           (os.path.join(root, "x.tar"), "lies inside the session's workspace"),
                           (os.path.join(root, "new.tar"), "lies inside the session's workspace")):
            r = session(env, "archive", sid, dest)
            assert r.returncode == 2 and says in r.stderr, (dest, r.stderr)
            r = session(env, "stop", sid, "--archive", dest)
            assert r.returncode == 2 and says in r.stderr, (dest, r.stderr)
        # outside: a link there (made by the user) is replaced, not written through
        os.symlink(os.path.join(canary, "authorized_keys"), tmp_path / "s.tar")
        r = session(env, "archive", sid, str(tmp_path / "s.tar"))
        assert r.returncode == 0, r.stderr
        assert not os.path.islink(tmp_path / "s.tar")
        r = session(env, "stop", sid, "--archive", str(tmp_path / "stop" / "s.tar"))
        assert r.returncode == 0, r.stderr
        assert tarfile.is_tarfile(tmp_path / "stop" / "s.tar")
    finally:
        session(env, "shutdown")
        shutil.rmtree(rundir, ignore_errors=True)


def test_an_archive_cannot_open_the_workspace_to_other_users(tmp_path):
    """A "./" entry of mode 0777 (and a 0666 file, a 0777 directory) would
    let every local user write into the workspace it is extracted to:
    extraction never sets group or other write."""
    import io
    arc = tmp_path / "open.tar"
    with tarfile.open(arc, "w") as tar:
        for name, kind, mode in ((".", tarfile.DIRTYPE, 0o777), ("d", tarfile.DIRTYPE, 0o777),
                                 ("d/f.txt", tarfile.REGTYPE, 0o666), ("x.sh", tarfile.REGTYPE, 0o777)):
            info = tarfile.TarInfo(name)
            info.type, info.mode = kind, mode
            data = b"" if kind == tarfile.DIRTYPE else b"data"
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    dest = tmp_path / "ws"
    r = subprocess.run([CORRAL, "workspace", "extract", str(arc), str(dest)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    modes = {p: os.stat(dest / p).st_mode & 0o7777 for p in (".", "d", "d/f.txt", "x.sh")}
    assert modes == {".": 0o755, "d": 0o755, "d/f.txt": 0o644, "x.sh": 0o755}, modes
