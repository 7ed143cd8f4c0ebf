"""Nothing is left behind: processes, cgroups, mounts, temp dirs."""
import glob
import os
import subprocess
import time


def corral_cgroups():
    """Jail cgroups whose supervisor is gone: leftovers (live ones belong to
    corral processes still running, possibly other tests').  Only those
    beneath this process's own cgroups, where the corral it starts makes
    them, and made by this user: make test's other lane runs root jails (and
    SIGKILLs session hosts, on purpose, whose pools' cgroups stay until a
    sweep) while the ordinary user's pass runs, in the same cgroups here."""
    own = own_cgroup_dirs()
    return [c for c in all_corral_cgroups() if not os.path.exists(f"/proc/{c.rsplit('-', 2)[1]}")
            and os.path.dirname(c) in own and _owned_by_me(c)]


def own_cgroup_dirs():
    """This process's cgroup directory in each mounted hierarchy."""
    mounts = {}  # "" for v2, else a v1 hierarchy's controllers (or name=...)
    for line in open("/proc/self/mountinfo"):
        pre, post = line.split(" - ", 1)
        fstype, _, opts = post.split()[:3]
        if fstype == "cgroup2":
            mounts[""] = pre.split()[4]
        elif fstype == "cgroup":
            ctrls = sorted(o for o in opts.split(",") if o not in ("rw", "ro") and "=" not in o or
                           o.startswith("name="))
            mounts[",".join(ctrls)] = pre.split()[4]
    dirs = set()
    for line in open("/proc/self/cgroup"):
        _, ctrls, path = line.rstrip("\n").split(":", 2)
        mount = mounts.get(",".join(sorted(ctrls.split(","))) if ctrls else "")
        if mount:
            dirs.add(os.path.normpath(mount + path))
    return dirs


def all_corral_cgroups():
    found = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        if root.count("/") > 8:
            dirs[:] = []
            continue
        found += [os.path.join(root, d) for d in dirs if d.startswith(f"corral-")]
    return sorted(found)


# The names corral gives the temporary files and directories it makes
# (src/workspace, src/cli, src/lib/fontcache.c); the tests' own temporary
# directories, which other suites make in /tmp meanwhile, are not among them.
CORRAL_TEMP_PREFIXES = ("corral-ws-", "corral-stage-", "corral-approve-", ".build-", ".corral-")


def test_no_leftovers_after_runs(corral, tmp_path):
    before_cg = corral_cgroups()
    before_tmp = sorted(os.listdir("/tmp"))
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir))
    marker = f"corral-leftover-{os.getpid()}"
    for args in (["-c", "print(1)"],
                 ["--timeout", "0.5", "--", "bash", "-c", f"(exec -a {marker} sleep 30) & exec -a {marker} sleep 30"],
                 ["-c", f"import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.execvp('sleep', ['{marker}', '30'])\n"],
                 ["--", "no-such-program"]):
        corral("exec", *args, env=env)
    assert _wait_for(lambda: not _running(marker), 2.0)
    assert corral_cgroups() == before_cg
    # corral makes no host temp dirs for a jail: none in its $TMPDIR, and
    # none left in /tmp (which other suites use meanwhile: make test runs two
    # lanes, so only names corral gives, made by this user and held by no
    # live process, count; a temporary workspace is held, flock, by the
    # corral that made it while it runs, as corral's own sweep tells).
    assert os.listdir(tmpdir) == []
    new = set(os.listdir("/tmp")) - set(before_tmp)
    assert not [n for n in new if n.startswith(CORRAL_TEMP_PREFIXES) and _owned_by_me(os.path.join("/tmp", n))
                and not _held(os.path.join("/tmp", n))], new
    assert not any("corral" in line and "oldroot" in line for line in open("/proc/self/mountinfo"))


def _held(path):
    """Whether a live process holds path's flock (a corral that is running)."""
    import fcntl
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _owned_by_me(path):
    try:
        return os.lstat(path).st_uid == os.geteuid()
    except FileNotFoundError:
        return False


def _wait_for(pred, seconds=5.0):
    end = time.time() + seconds
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def _running(marker):
    """A process whose argv[0] is marker (not corral's own command line,
    which mentions it too)."""
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return any(line.startswith(marker) for line in ps.splitlines())


def test_sigint_stops_the_jail_and_cleans_up():
    from conftest import CORRAL
    marker = f"corral-sigint-{os.getpid()}"
    p = subprocess.Popen([CORRAL, "exec", "--", "bash", "-c", f"exec -a {marker} sleep 30"],
                         stderr=subprocess.PIPE)
    assert _wait_for(lambda: _running(marker))
    p.send_signal(2)
    assert p.wait(timeout=10) == 130
    err = p.stderr.read()
    assert b"interrupted by SIGINT (Ctrl-C); the jail was stopped" in err, err
    assert not _running(marker)
    # Its own cgroups, by name (corral-PID-N): make test's other lane makes and leaves others meanwhile (its
    # tests SIGKILL session hosts, whose pools' cgroups stay until a sweep), which a before/after comparison
    # took for this one's once.
    assert [c for c in corral_cgroups() if os.path.basename(c).startswith(f"corral-{p.pid}-")] == []


def test_second_sigint_exits_at_once():
    from conftest import CORRAL
    marker = f"corral-sigint2-{os.getpid()}"
    p = subprocess.Popen([CORRAL, "exec", "--", "bash", "-c", f"exec -a {marker} sleep 30"],
                         stderr=subprocess.PIPE)
    assert _wait_for(lambda: _running(marker))
    os.kill(p.pid, 2)
    os.kill(p.pid, 2)
    assert p.wait(timeout=10) == 130
    err = p.stderr.read()
    assert b"interrupted" in err  # the first (cancel) or the second (exit now)
    assert _wait_for(lambda: not _running(marker)), "jail survived a double Ctrl-C"


def test_killed_supervisor_takes_the_jail_along(corral):
    from conftest import CORRAL
    marker = f"corral-sigkill-{os.getpid()}"
    p = subprocess.Popen([CORRAL, "exec", "--", "bash", "-c", f"(setsid bash -c 'exec -a {marker} sleep 30' &); exec -a {marker} sleep 30"])
    assert _wait_for(lambda: _running(marker))
    p.kill()
    p.wait(timeout=10)
    assert _wait_for(lambda: not _running(marker)), "jail survived its supervisor"
    # The next run sweeps the cgroups the killed supervisor could not remove.
    corral("exec", "--", "true")
    assert not [c for c in all_corral_cgroups() if f"corral-{p.pid}-" in c]


def test_temporary_workspaces_left_by_a_killed_corral_are_swept(tmp_path):
    """A temporary workspace is held (flock) by the corral that made it; one
    that nobody holds was left by a corral killed with SIGKILL and is removed
    by the next run or session start.  One still held, another user's, or a
    link is left alone."""
    import fcntl
    import json
    import shutil
    import signal
    import sys
    import tempfile
    from conftest import CORRAL
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
    from modelserver import ScriptedServer, text

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir), XDG_STATE_HOME=str(tmp_path / "state"))
    stale = tmpdir / "corral-ws-stale1"
    (stale / "output" / "deep").mkdir(parents=True)
    (stale / "output" / "deep" / "f").write_text("x")
    os.chmod(stale / "output", 0)  # a jail can leave it unreadable
    held = tmpdir / "corral-ws-held01"
    held.mkdir()
    hold = os.open(held, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(hold, fcntl.LOCK_EX)
    other = tmpdir / "corral-run-old001"  # an older corral's name: never ours to sweep
    other.mkdir()
    os.symlink(str(tmp_path), tmpdir / "corral-ws-link01")
    try:
        with ScriptedServer([text("ok")]) as srv:
            r = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "-q", "go"],
                               capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 0, r.stderr
        assert sorted(os.listdir(tmpdir)) == ["corral-run-old001", "corral-ws-held01", "corral-ws-link01"]
    finally:
        os.close(hold)

    # a session host killed with SIGKILL leaves its temporary workspace; the
    # next session start sweeps it
    rundir = tempfile.mkdtemp(prefix="corral-test-run-")
    os.chmod(rundir, 0o700)
    senv = dict(env, XDG_RUNTIME_DIR=rundir, CORRAL_SESSION_LINGER="0")
    try:
        r = subprocess.run([CORRAL, "session", "start", "--cold", "--json"], capture_output=True, text=True,
                           timeout=60, env=senv)
        assert r.returncode == 0, r.stderr
        first = json.loads(r.stdout)
        host = json.loads(subprocess.run([CORRAL, "session", "status", "--json"], capture_output=True, text=True,
                                         timeout=60, env=senv).stdout)
        os.kill(host["pid"], signal.SIGKILL)
        assert _wait_for(lambda: not os.path.exists(f"/proc/{host['pid']}"), 10)
        assert os.path.isdir(first["workspace"])
        r = subprocess.run([CORRAL, "session", "start", "--cold", "--json"], capture_output=True, text=True,
                           timeout=60, env=senv)
        assert r.returncode == 0, r.stderr
        assert not os.path.exists(first["workspace"])
        assert os.path.isdir(json.loads(r.stdout)["workspace"])
    finally:
        subprocess.run([CORRAL, "session", "shutdown"], capture_output=True, timeout=60, env=senv)
        shutil.rmtree(rundir, ignore_errors=True)
