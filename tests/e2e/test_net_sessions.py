"""--net allow= in sessions, warm and cold (docs/network.md, "Sessions"): the session's proxy serves it
for the session's life, and `pip install` in one step imports in the next.

The package index is a directory this file writes (a wheel it builds by hand, a PEP 503 simple index)
served by Python's http.server on 127.0.0.2; the session reaches it as index.test (--resolve).  Nothing
is sent to any address outside 127.0.0.0/8."""
import base64
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import zipfile

import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from conftest import CORRAL  # noqa: E402
import trustcheck  # noqa: E402

HOST_ADDR = "127.0.0.2"
PKG = "corraltinypkg"


def wheel_bytes():
    """A pure-Python wheel of PKG 1.0 (PEP 427: the files, METADATA, WHEEL, RECORD with hashes)."""
    files = {
        f"{PKG}/__init__.py": b"ANSWER = 42\n",
        f"{PKG}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {PKG}\nVersion: 1.0\n".encode(),
        f"{PKG}-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: corral-test\nRoot-Is-Purelib: true\n"
                                      b"Tag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{PKG}-1.0.dist-info/RECORD,,")
    files[f"{PKG}-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


@pytest.fixture(scope="module")
def index():
    root = tempfile.mkdtemp(prefix="corral-test-index-")
    whl = f"{PKG}-1.0-py3-none-any.whl"
    data = wheel_bytes()
    os.makedirs(os.path.join(root, "packages"))
    os.makedirs(os.path.join(root, "simple", PKG))
    with open(os.path.join(root, "packages", whl), "wb") as f:
        f.write(data)
    with open(os.path.join(root, "simple", PKG, "index.html"), "w") as f:
        f.write(f'<html><body><a href="/packages/{whl}#sha256={hashlib.sha256(data).hexdigest()}">{whl}</a>'
                "</body></html>\n")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=root, **kw)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer((HOST_ADDR, 0), Quiet)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()
    shutil.rmtree(root, ignore_errors=True)


class Sessions:
    """Sessions of one kind (warm or cold) in a session host of a runtime dir; close() stops them, and
    the host too when the dir is this object's own."""

    def __init__(self, kind, rundir=None):
        self.kind = kind
        self.own = rundir is None
        self.rundir = rundir or tempfile.mkdtemp(prefix="corral-test-run-")
        os.chmod(self.rundir, 0o700)
        linger = "0" if self.own else "60"
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.rundir, CORRAL_SESSION_LINGER=linger)
        self.started = []

    def corral(self, *args, timeout=90):
        return subprocess.run([CORRAL, "session", *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env)

    def start(self, *opts):
        r = self.corral("start", "--json", "--warm" if self.kind == "warm" else "--cold", *opts)
        assert r.returncode == 0, r.stderr
        sid = json.loads(r.stdout)["id"]
        self.started.append(sid)
        return sid

    def step(self, sid, code, timeout=90):
        r = self.corral("exec", sid, "--json", "-c", code, timeout=timeout)
        assert r.stdout, f"no JSON (rc={r.returncode}, stderr={r.stderr!r})"
        return json.loads(r.stdout)

    def close(self):
        for sid in self.started:
            self.corral("stop", sid)
        if self.own:
            self.corral("shutdown")
            shutil.rmtree(self.rundir, ignore_errors=True)


@pytest.fixture(scope="module")
def rundir():
    """One session host for the module's sessions (its zygote kept between tests)."""
    d = tempfile.mkdtemp(prefix="corral-test-run-")
    yield d
    subprocess.run([CORRAL, "session", "shutdown"], capture_output=True, timeout=90,
                   env=dict(os.environ, XDG_RUNTIME_DIR=d))
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(params=["warm", "cold"])
def sessions(request, rundir):
    s = Sessions(request.param, rundir)
    yield s
    s.close()


def index_opts(port, *more_allowed):
    return ["--net", ",".join([f"allow=index.test:{port}", *more_allowed]), "--resolve", f"index.test:{HOST_ADDR}",
            "-e", f"PIP_INDEX_URL=http://index.test:{port}/simple/", "-e", "PIP_RETRIES=0", "-e", "PIP_TIMEOUT=10"]


# A connection's record comes when the proxy's thread has seen it close, which races with the end of the
# step that closed it (it is then in the next step's result, docs/network.md): a step whose own record a
# test reads ends with this.
SETTLE = "\nimport time\ntime.sleep(0.3)\n"

PIP = "import subprocess\n" \
      "r = subprocess.run(['python3', '-m', 'pip', 'install', '--no-deps', '--trusted-host', 'index.test', {pkg!r}],\n" \
      "                   capture_output=True, text=True)\n" \
      "print('rc', r.returncode)\nprint(r.stdout[-2000:])\nprint(r.stderr[-2000:])\n"


def test_pip_install_then_import_in_the_next_step(sessions, index):
    sid = sessions.start(*index_opts(index))
    # Not there before: the import fails, and the user site exists already (made before the first step).
    r = sessions.step(sid, f"import os, site, sys\nprint(site.USER_SITE in sys.path, os.path.isdir(site.USER_SITE))\n"
                           f"try:\n    import {PKG}\nexcept ImportError:\n    print('missing')")
    assert r["stdout"] == "True True\nmissing\n", r
    r = sessions.step(sid, PIP.format(pkg=PKG))
    assert r["status"] == "ok" and r["stdout"].startswith("rc 0\n"), r
    assert f"Successfully installed {PKG}-1.0" in r["stdout"], r
    r = sessions.step(sid, f"import {PKG}\nprint({PKG}.ANSWER, {PKG}.__file__)")
    assert r["status"] == "ok", r
    assert r["stdout"] == f"42 /tmp/.local/lib/python3.11/site-packages/{PKG}/__init__.py\n", r


def test_denied_host_is_refused_with_a_reason(sessions, index):
    sid = sessions.start(*index_opts(index))
    r = sessions.step(sid, f"""
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://elsewhere.test:{index}/simple/", timeout=10)
except urllib.error.HTTPError as e:
    print(e.code, e.headers["X-Corral-Reason"])
    print(e.read().decode(), end="")
print(urllib.request.urlopen("http://index.test:{index}/simple/{PKG}/", timeout=10).status)
""")
    assert r["status"] == "ok", r
    assert r["stdout"] == ("403 the host is not in the jail's allow-list\n"
                           "corral proxy: the host is not in the jail's allow-list\n200\n"), r
    # pip says it too, in the output the model reads (for an index page pip says only "from versions:
    # none" without -v: a file's URL shows the refusal).
    r = sessions.step(sid, PIP.format(pkg=f"http://elsewhere.test:{index}/packages/{PKG}-1.0-py3-none-any.whl"))
    assert r["stdout"].startswith("rc 1\n") and "403 Client Error: Forbidden" in r["stdout"], r


def test_byte_limit_is_the_sessions(sessions, index):
    """--net-bytes counts over the session's life, across steps."""
    sid = sessions.start(*index_opts(index), "--net-bytes", "3K")
    fetch = (f"import urllib.request\n"
             f"try:\n    print(len(urllib.request.urlopen('http://index.test:{index}/packages/"
             f"{PKG}-1.0-py3-none-any.whl', timeout=10).read()))\n"
             f"except Exception as e:\n    print('cut', type(e).__name__)\n")
    outs = [sessions.step(sid, fetch)["stdout"] for _ in range(4)]
    assert outs[0].strip().isdigit(), outs  # the wheel is about 1 KB: the first fits
    assert outs[-1].startswith("cut "), outs


def test_no_allow_list_no_proxy(sessions):
    sid = sessions.start()
    r = sessions.step(sid, "import os, socket\nprint(os.environ.get('HTTP_PROXY'))\n"
                           "try:\n    socket.create_connection(('127.0.0.1', 3128), timeout=2)\n    print('open')\n"
                           "except OSError:\n    print('refused')")
    assert r["stdout"] == "None\nrefused\n", r


def test_run_steps_pip_install_and_trace(tmp_path, index, rundir):
    """corral run: run_python's session takes the allow-list; pip in one step, the import in the next; the
    model reads which connection was refused and why; the trace has a net event per connection."""
    refused = f"network: GET elsewhere.test:{index} was refused by corral's proxy: the host is not in the jail's " \
              "allow-list"
    turns = [tool_call("run_python", code=PIP.format(pkg=PKG)),
             tool_call("run_python", code=f"import {PKG}, urllib.request\nprint('answer', {PKG}.ANSWER)\n"
                                          f"try:\n    urllib.request.urlopen('http://elsewhere.test:{index}/')\n"
                                          f"except Exception:\n    pass\n" + SETTLE)
             | {"expect": {"contains": [f"Successfully installed {PKG}-1.0"]}},
             text("done") | {"expect": {"contains": ["answer 42", refused]}}]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CORRAL_MODEL", "XDG_CONFIG"))}
    env["NO_COLOR"] = "1"
    # run_python's session in this module's session host (the allow-list crosses its wire), not in one
    # another test run may hold in the user's runtime directory
    env.update(XDG_RUNTIME_DIR=rundir, CORRAL_SESSION_LINGER="60")
    trace = tmp_path / "trace.jsonl"
    with ScriptedServer(turns) as srv:
        r = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "gpt-test", "--json",
                            # the standard review rejects subprocess, so pip from Python (docs/network.md)
                            "--review-policy", "off",
                            "--trace", str(trace), *index_opts(index), "install and use it"],
                           capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env)
    srv.assert_ok()
    assert r.returncode == 0, r.stderr
    system = srv.requests[0]["messages"][0]["content"]
    assert f"The network reaches only these hosts, through a proxy" in system and f"index.test:{index}" in system
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    net = [e for e in events if e["type"] == "net"]
    assert any(e["host"] == "index.test" and e["allowed"] and e["bytes_down"] > 0 and e["iteration"] == 1
               for e in net), net
    [bad] = [e for e in net if not e["allowed"]]
    assert bad["host"] == "elsewhere.test" and bad["reason"] == "the host is not in the jail's allow-list"
    assert bad["iteration"] == 2
    results = [e for e in events if e["type"] == "tool_result"]
    assert [c["host"] for c in results[1]["exec"]["network"]] == ["elsewhere.test"]


def test_serve_sandboxes(tmp_path, index):
    """corral serve --net allow=: a sandbox's session has the proxy; a request asks for none or some of the
    server's hosts, never another."""
    sys.path.insert(0, os.path.dirname(__file__))
    from test_serve import Server  # noqa: E402
    s = Server(tmp_path, "--net", f"allow=index.test:{index},other.test", "--resolve", f"index.test:{HOST_ADDR}",
               "--net-bytes", "1M")
    try:
        status, made = s.json("POST", "/v1/sandboxes", {})
        assert status == 201 and made["limits"]["net"] == f"allow=index.test:{index},other.test", made
        assert "resolve" not in made["limits"], "the operator's address map reached the caller"
        fetch = f"import urllib.request\nst = urllib.request.urlopen('http://index.test:{index}/simple/{PKG}/').status"
        r = s.exec(made["id"], fetch + SETTLE + "st")
        assert r["value"]["text"] == "200", r
        [c] = r["network"]
        assert c["host"] == "index.test" and c["allowed"] and c["address"] == HOST_ADDR
        # some of the server's hosts: index.test is not among them
        sid = s.create({"limits": {"net": "allow=OTHER.test", "net_bytes": "64K"}})
        r = s.exec(sid, f"import urllib.request, urllib.error\ntry:\n    {fetch.splitlines()[1]}\n"
                        "except urllib.error.HTTPError as e:\n    print(e.code, e.headers['X-Corral-Reason'])\n"
                        # the system trust store, as in every allow-list jail (trustcheck.py)
                        "import hashlib\nprint(hashlib.sha256(open('/etc/ssl/certs/ca-certificates.crt', 'rb')"
                        ".read()).hexdigest())")
        with open(trustcheck.HOST_BUNDLE, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        assert r["stdout"] == f"403 the host is not in the jail's allow-list\n{digest}\n", r
        sid = s.create({"limits": {"net": "none"}})
        r = s.exec(sid, "import os\nprint(os.environ.get('HTTP_PROXY'), "
                        "os.path.exists('/etc/ssl/certs/ca-certificates.crt'))")
        assert r["stdout"] == "None False\n" and "network" not in r, r
        for limits, says in (({"net": "allow=evil.test"}, "'evil.test' is not on this server's allow-list"),
                             ({"net": "host"}, "limits.net may be none or down, \"allow\" or"),
                             ({"net_bytes": "2M"}, "limits.net_bytes may be at most"),
                             ({"resolve": ["evil.test:127.0.0.1"]}, "resolve")):
            status, j = s.json("POST", "/v1/sandboxes", {"limits": limits})
            assert status == 400 and says in j["error"]["message"], (limits, j)
    finally:
        s.stop()


def test_serve_without_allow_list_refuses_it(tmp_path):
    sys.path.insert(0, os.path.dirname(__file__))
    from test_serve import Server  # noqa: E402
    s = Server(tmp_path)
    try:
        status, j = s.json("POST", "/v1/sandboxes", {"limits": {"net": "allow=a.test"}})
        assert status == 400 and "started without a network allow-list" in j["error"]["message"], j
    finally:
        s.stop()


def test_the_proxy_ends_with_its_session(index):
    """A session's proxy (its threads and descriptors in the session host) is gone when the session
    stops, while the host and another session go on."""
    s = Sessions("warm")
    # Without the pool of jails for corral exec: one made meanwhile would count too.
    s.env["CORRAL_EXEC_POOL"] = "0"
    try:
        keep = s.start()
        host = json.loads(s.corral("start", "--json", "--warm").stdout)
        s.started.append(host["id"])
        pid = host["pid"]

        def counts():
            return len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))

        def warm_pool_full():
            # A warm session made for the zygote's pool (two by default) holds descriptors of the host's
            # too: count once the pool is full again after a start or a stop.
            deadline = time.time() + 30
            while json.loads(s.corral("status", "--json").stdout)["pool"] < 2 and time.time() < deadline:
                time.sleep(0.05)

        s.corral("stop", host["id"])
        warm_pool_full()
        before = counts()
        sid = s.start(*index_opts(index))
        r = s.step(sid, f"import urllib.request\nurllib.request.urlopen('http://index.test:{index}/').status")
        assert r["value"]["text"] == "200", r
        assert counts() != before  # the proxy's acceptor at least
        s.corral("stop", sid)
        warm_pool_full()
        deadline = time.time() + 10
        while counts() != before and time.time() < deadline:
            time.sleep(0.1)
        assert counts() == before
        assert s.step(keep, "1 + 1")["value"]["text"] == "2"
    finally:
        s.close()


def test_system_trust_store_without_a_credential(sessions, tmp_path):
    """A warm session's bundle (copied by its init) and a cold one's (the plan's bind) are the host's,
    and verification is real (docs/network.md, "Trust")."""
    server, port, cert = trustcheck.tls_server(str(tmp_path))
    try:
        sid = sessions.start(*trustcheck.opts(port))
        r = sessions.step(sid, trustcheck.script(port, cert))
    finally:
        server.shutdown()
    assert r["status"] == "ok", r
    assert r["stdout"] == trustcheck.expected(), r
