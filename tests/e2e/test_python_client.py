"""clients/python (corral_client, docs/clients.md) against a live `corral
serve` of its own (127.0.0.1, its own --data and TMPDIR): sandboxes, steps
whole and streamed to callbacks, errors, interrupts, background commands,
files one by one and as a tar, pause and resume, kill, the typed errors,
retries on 429, a server that is down, and the example of docs/clients.md."""
import io
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time

import pytest

from test_serve import LIVE, Server

ROOT = os.environ.get("CORRAL_SOURCE_ROOT") or os.path.join(os.path.dirname(__file__), "..", "..")
CLIENT = os.path.join(ROOT, "clients", "python")
sys.path.insert(0, CLIENT)

import corral_client  # noqa: E402
from corral_client import (Conflict, ConnectionFailed, Corral, NotFound, RateLimited,  # noqa: E402
                           Unauthorized)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("pyclient"))
    yield s
    if s in LIVE:
        s.stop(signal.SIGKILL)


@pytest.fixture(scope="module")
def client(server):
    return Corral(base_url=f"http://127.0.0.1:{server.port}", token=server.token)


@pytest.fixture(scope="module")
def sb(client):
    with client.sandboxes.create(metadata={"test": "python-client"}) as s:
        yield s


def test_the_printed_url_and_the_environment(server, monkeypatch):
    c = Corral(base_url=server.url)  # http://127.0.0.1:PORT/?token=T
    assert c.base_url == f"http://127.0.0.1:{server.port}" and server.token not in repr(c)
    assert c.health()["status"] == "ok"
    monkeypatch.setenv("CORRAL_URL", f"http://127.0.0.1:{server.port}")
    monkeypatch.setenv("CORRAL_TOKEN", server.token)
    assert isinstance(Corral().sandboxes.list(), list)


def test_state_is_kept_between_steps(sb):
    assert sb.info["metadata"] == {"test": "python-client"} and sb.info["state"] == "running"
    r = sb.run_code("x = 6 * 7\nprint('set')")
    assert r.ok and r.stdout == "set\n" and r.text is None
    r = sb.run_code("x")
    assert r.ok and r.text == "42" and r.value["type"] == "int"


def test_streamed_callbacks_come_in_order(sb):
    seen = []
    r = sb.run_code("import sys, time\nfor i in range(3):\n    print('out', i, flush=True)\n    time.sleep(0.05)\n"
                    "print('warn', file=sys.stderr, flush=True)\n'done'",
                    on_stdout=lambda s: seen.append(("stdout", s)),
                    on_stderr=lambda s: seen.append(("stderr", s)),
                    on_result=lambda res: seen.append(("result", res.text)),
                    on_event=lambda ev: seen.append(("event", ev["type"])))
    assert r.text == "'done'"
    kinds = [k for k, _ in seen if k != "event"]
    assert kinds[-1] == "result" and "stdout" in kinds and "stderr" in kinds
    assert "".join(s for k, s in seen if k == "stdout") == "out 0\nout 1\nout 2\n"
    assert [e for k, e in seen if k == "event"][-1] == "result"
    assert seen[-1] == ("result", "'done'")


def test_an_error_result(sb):
    r = sb.run_code("def f():\n    return 1 / 0\nf()")
    assert r.status == "error" and not r.ok
    assert r.error.name == "ZeroDivisionError" and "division by zero" in r.error.value
    assert "f()" in r.error.traceback or "return 1 / 0" in r.error.traceback
    r = sb.run_shell("echo hi; exit 3")
    assert r.exit_code == 3 and r.stdout == "hi\n" and r.error.name == "ExitStatus"


def test_a_figure(sb):
    figures = []
    r = sb.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
                    on_figure=figures.append, timeout=30)
    assert r.ok, r.raw
    assert figures and figures[0]["width"] > 0 and figures[0]["bytes"] > 0
    assert r.figures and "host_path" not in r.figures[0]
    r = sb.run_code("import pandas as pd\npd.DataFrame({'a': [1, 2]})")
    assert r.value["type"] == "dataframe" and "<table" in r.html and "a" in r.text


def test_interrupting_a_long_step(sb):
    def on_stdout(s):
        if "started" in s:
            sb.interrupt()
    t0 = time.monotonic()
    r = sb.run_code("import time\nprint('started', flush=True)\ntime.sleep(60)", on_stdout=on_stdout)
    assert r.status == "interrupted" and time.monotonic() - t0 < 30
    assert r.error.name == "KeyboardInterrupt"
    assert sb.run_code("x").text == "42"  # the state is kept
    with pytest.raises(Conflict):
        sb.interrupt()  # no step runs

    # A callback that raises ends the stream and interrupts the silent step.
    class Stop(Exception):
        pass

    def stop(s):
        raise Stop()
    with pytest.raises(Stop):
        sb.run_code("import time\nprint('started', flush=True)\ntime.sleep(60)", on_stdout=stop)
    t0 = time.monotonic()
    assert sb.run_code("x + 1").text == "43" and time.monotonic() - t0 < 20


def test_a_background_command(sb):
    cmd = sb.commands.run("echo begun; sleep 30")
    assert cmd.pid > 0 and cmd.running
    deadline = time.monotonic() + 10
    while "begun" not in cmd.output() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "begun" in cmd.output()
    cmd.kill("TERM")
    assert cmd.wait(timeout=20) != 0
    short = sb.commands.run("exit 5")
    assert short.wait(timeout=20) == 5


def test_files(sb):
    assert sb.files.write("notes/a.txt", "hello\n")["size"] == 6
    sb.files.write("notes/b.bin", bytes(range(256)))
    assert sb.files.read("notes/a.txt") == b"hello\n"
    assert sb.files.read("notes/a.txt", text=True) == "hello\n"
    assert sb.files.read("notes/b.bin") == bytes(range(256))
    assert sb.run_code("open('notes/a.txt').read()").text == "'hello\\n'"
    names = {f["path"]: f for f in sb.files.list("notes")}
    assert names["notes/a.txt"]["size"] == 6 and names["notes/a.txt"]["type"] == "file", names
    sb.files.remove("notes/a.txt")
    with pytest.raises(NotFound):
        sb.files.read("notes/a.txt")
    sb.files.remove("notes")
    assert not sb.files.exists("notes")


def test_a_tar_round_trip(sb, tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in (("batch/one.txt", b"one\n"), ("batch/deep/two.txt", b"two\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    put = sb.files.upload_tar(buf.getvalue())
    assert put["files"] == 2, put
    assert sb.run_shell("cat batch/deep/two.txt").stdout == "two\n"
    out = tarfile.open(fileobj=io.BytesIO(sb.files.download_tar()))
    got = {m.name.lstrip("./"): out.extractfile(m).read() for m in out.getmembers() if m.isfile()}
    assert got["batch/one.txt"] == b"one\n" and got["batch/deep/two.txt"] == b"two\n"
    d = tmp_path / "up"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "f.txt").write_text("from a dir\n")
    sb.files.upload_dir(str(d), name="fromdir")
    assert sb.files.read("fromdir/sub/f.txt") == b"from a dir\n"
    assert sb.files.download_tar(str(tmp_path / "ws.tar")) == str(tmp_path / "ws.tar")


def test_pause_resume_and_kill(client):
    sb = client.sandboxes.create()
    sb.files.write("kept.txt", "kept")
    sb.run_code("y = 1")
    assert sb.pause()["state"] == "paused"
    with pytest.raises(Conflict) as e:
        sb.run_code("1")
    assert e.value.status == 409 and e.value.message
    assert sb.resume()["state"] == "running"
    assert sb.files.read("kept.txt") == b"kept"
    assert sb.run_code("'y' in dir()").text == "False"  # files come back, variables do not
    assert sb.id in [s.id for s in client.sandboxes.list()]
    assert sb.kill() == {"deleted": sb.id}
    with pytest.raises(NotFound) as e:
        sb.run_code("1")
    assert e.value.status == 404 and e.value.kind == "not_found"
    with pytest.raises(NotFound):
        client.sandboxes.get(sb.id)


def test_a_wrong_token(server):
    wrong = "w" * 40 + "rongtoken"
    c = Corral(base_url=f"http://127.0.0.1:{server.port}", token=wrong)
    with pytest.raises(Unauthorized) as e:
        c.sandboxes.create()
    assert e.value.status == 401 and e.value.kind == "unauthorized"
    assert wrong not in str(e.value) and wrong not in repr(e.value) and wrong not in repr(c)
    c = Corral(base_url=f"http://127.0.0.1:{server.port}/?token={wrong}")
    with pytest.raises(Unauthorized) as e:
        c.sandboxes.list()
    assert wrong not in str(e.value) and wrong not in c.base_url


def test_a_server_that_is_down():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    c = Corral(base_url=f"http://127.0.0.1:{port}", token="t" * 32, timeout=5)
    with pytest.raises(ConnectionFailed) as e:
        c.sandboxes.list()
    assert f"127.0.0.1:{port}" in str(e.value) and "t" * 32 not in str(e.value)


def test_429_is_retried_then_raised(tmp_path):
    s = Server(tmp_path, "--max-per-token", "1")
    try:
        c = Corral(base_url=f"http://127.0.0.1:{s.port}", token=s.token, max_retries=2, max_retry_wait=0.2)
        first = c.sandboxes.create()
        t0 = time.monotonic()
        with pytest.raises(RateLimited) as e:
            c.sandboxes.create()
        assert e.value.status == 429 and e.value.retry_after is not None and e.value.message
        assert time.monotonic() - t0 >= 0.3  # two waits, each cut to max_retry_wait
        # a retry that succeeds: the cap frees while the client waits
        c2 = Corral(base_url=f"http://127.0.0.1:{s.port}", token=s.token, max_retries=5, max_retry_wait=0.5)
        threading.Timer(0.3, first.kill).start()
        c2.sandboxes.create().kill()
    finally:
        s.stop(signal.SIGKILL)


def test_the_example(server):
    env = dict(os.environ, CORRAL_URL=f"http://127.0.0.1:{server.port}", CORRAL_TOKEN=server.token,
               PYTHONPATH=CLIENT)
    r = subprocess.run([sys.executable, os.path.join(CLIENT, "examples", "quickstart.py")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "tick 0\ntick 1\ntick 2\nresult: 42\n" in r.stdout and "result: 42" in r.stdout
    assert "error: ZeroDivisionError" in r.stdout and "gone:" in r.stdout
    assert "'data/out.csv'" in r.stdout or "data/out.csv" in r.stdout
    assert corral_client.__version__


def test_pip_installs_it_offline(tmp_path):
    """pip install of the package with no index (the offline form docs/clients.md gives)."""
    import importlib.util
    import shutil
    if importlib.util.find_spec("pip") is None or importlib.util.find_spec("wheel") is None:
        pytest.skip("no pip or wheel for this Python")
    src = tmp_path / "src"
    shutil.copytree(CLIENT, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation",
                        "--target", str(target), str(src)], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path, env=dict(os.environ, HOME=str(tmp_path), PIP_NO_CACHE_DIR="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-c", "import corral_client; print(corral_client.__file__)"],
                       env=dict(os.environ, PYTHONPATH=str(target)), capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith(str(target)), r.stderr
