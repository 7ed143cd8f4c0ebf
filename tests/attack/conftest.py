"""Fixtures for the attack suite: hostile programs run through `corral exec`,
each checked from the host side.

A session-wide preflight runs before any attack and proves, from the host,
that a jail really has its own pid and network namespaces.  If it does not,
the session stops: a fork bomb or kill(-1) that reached the host would take
the test machine with it.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corral_attack import CORRAL, IS_ROOT, SESSION, JailProc, preflight_problems  # noqa: E402
from corral_attack import run_jail as _run_jail  # noqa: E402

# corral exec starts its jails directly here, whatever session host another
# test (or make test's other lane) left on this user's default runtime
# directory; test_via_pool.py runs the attacks through a pool of its own.
os.environ.setdefault("CORRAL_EXEC_POOL", "0")

@pytest.fixture(scope="session", autouse=True)
def preflight():
    """Prove isolation before any attack runs; stop the session otherwise."""
    if not (os.path.isfile(CORRAL) and os.access(CORRAL, os.X_OK)):
        pytest.exit(f"attack suite: no corral binary at {CORRAL} (set CORRAL)", returncode=1)
    problems, run = [], None
    for net in ("none", "down"):
        p, r = preflight_problems(_run_jail, net)
        problems += p
        run = run or r
    if problems:
        pytest.exit("attack suite preflight FAILED, no attack was run:\n  " + "\n  ".join(problems), returncode=1)
    SESSION["backend"] = run["limits_backend"]
    return {"backend": run["limits_backend"]}


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    tr.section("corral attack suite")
    tr.write_line(f"corral: {CORRAL}")
    tr.write_line(f"running as uid {os.geteuid()} ({'root' if IS_ROOT else 'ordinary user'}); "
                  f"limits backend: {SESSION['backend'] or 'unknown (the preflight did not pass)'}")
    for note in SESSION["notes"]:
        tr.write_line(f"note: {note}")


# ---- fixtures ----

@pytest.fixture(scope="session")
def corral_path():
    return CORRAL


@pytest.fixture
def run_jail():
    """run_jail(args, code=..., timeout=2, lang="python", argv=(), env=None,
    pass_fds=()) -> JailRun: the parsed JSON, with .elapsed (host seconds),
    .rc, .host_stderr and .maxrss_kb."""
    return _run_jail


@pytest.fixture
def start_jail():
    """start_jail(...) -> JailProc running in the background; killed at teardown."""
    procs = []

    def start(*a, **kw):
        p = JailProc(*a, **kw)
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.kill()


def _shared_tmpdir(prefix, mode):
    # Not pytest's tmp_path: that is 0700 under root, and as root the jail
    # runs as a pooled uid that must be able to reach what is bound in.
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    os.chmod(d, mode)
    return d


@pytest.fixture
def host_dir():
    """A fresh host directory the jail may use as -w (mode 0777), removed afterwards."""
    d = _shared_tmpdir("corral-attack-ws-", 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def host_file():
    """host_file(content, mode=0o644) -> path of a new file in host /tmp with a
    random name; removed afterwards."""
    made = []

    def make(content, mode=0o644):
        fd, path = tempfile.mkstemp(prefix="corral-attack-secret-", dir="/tmp")
        os.write(fd, content.encode() if isinstance(content, str) else content)
        os.close(fd)
        os.chmod(path, mode)
        made.append(path)
        return path

    yield make
    for p in made:
        try:
            os.unlink(p)
        except OSError:
            pass


@pytest.fixture
def host_process():
    """host_process(argv, env=None, user=None) -> Popen of a host process,
    killed at teardown.  user (root only) runs it under another uid."""
    procs = []

    def start(argv, env=None, uid=None):
        def drop():
            if uid is not None:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
        p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, preexec_fn=drop if uid is not None else None)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


@pytest.fixture(scope="session")
def compile_c():
    """compile_c(name, source) -> host path of a binary built with the host's
    gcc, in a directory the jail's uid can read; bind it with --ro-bind."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no C compiler on the host to build the test program")
    d = _shared_tmpdir("corral-attack-bin-", 0o755)

    def build(name, source):
        src = os.path.join(d, name + ".c")
        exe = os.path.join(d, name)
        with open(src, "w") as f:
            f.write(source)
        r = subprocess.run([gcc, "-O1", "-o", exe, src], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot build {name}.c with {gcc}: {r.stderr.strip()[:300]}")
        os.chmod(exe, 0o755)
        return exe

    yield build
    shutil.rmtree(d, ignore_errors=True)


class Listener:
    """A TCP server on host 127.0.0.1 that counts every connection."""

    def __init__(self, family=socket.AF_INET, kind=socket.SOCK_STREAM, address=("127.0.0.1", 0)):
        self.sock = socket.socket(family, kind)
        self.sock.bind(address)
        self.kind = kind
        if kind == socket.SOCK_STREAM:
            self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.address = self.sock.getsockname()
        self.hits = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._serve, daemon=True)
        self._t.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                if self.kind == socket.SOCK_STREAM:
                    conn, peer = self.sock.accept()
                    self.hits.append(peer)
                    conn.close()
                else:
                    data, peer = self.sock.recvfrom(4096)
                    self.hits.append((peer, data))
            except (socket.timeout, BlockingIOError):
                continue
            except OSError:
                return

    def close(self):
        self._stop.set()
        self._t.join(2)
        self.sock.close()


@pytest.fixture
def listener():
    """listener(family, kind, address) -> Listener; .hits lists what reached it."""
    made = []

    def make(*a, **kw):
        lst = Listener(*a, **kw)
        made.append(lst)
        return lst

    yield make
    for lst in made:
        lst.close()
