"""corral serve: sandboxes over HTTP (docs/api.md), driven by a real HTTP
client (Python's http.client) against the real server: the gate (tokens,
Host, Origin, sizes), every route and its errors, streamed steps, files,
caps, and a shutdown that leaves nothing."""
import base64
import http.client
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import CORRAL
from test_session import descendants, pid_alive  # noqa: E402 (the same /proc walks)

LIVE = []


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=60):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


class Server:
    """A `corral serve` of its own: its data directory, TMPDIR and port."""

    def __init__(self, tmp_path, *args, tokens=None, socket_path=None):
        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir(exist_ok=True)
        self.data = tmp_path / "data"
        cmd = [CORRAL, "serve", "--data", str(self.data)]
        if socket_path:
            cmd += ["--socket", str(socket_path)]
        else:
            cmd += ["--listen", "127.0.0.1:0"]
        if tokens:
            f = tmp_path / "tokens"
            f.write_text("".join(f"{t} {n}\n" for n, t in tokens.items()))
            f.chmod(0o600)
            cmd += ["--tokens", str(f)]
        env = dict(os.environ, TMPDIR=str(self.tmp))
        self.proc = subprocess.Popen(cmd + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     text=True)
        LIVE.append(self)
        self.url = self.proc.stdout.readline().strip()
        assert self.url, self.proc.stderr.read()
        self.socket_path = socket_path
        if socket_path:
            assert self.url == f"unix:{socket_path}"
        else:
            assert self.url.startswith("http://127.0.0.1:"), self.url
            self.port = int(self.url.split(":")[2].split("/")[0])
        self.token = (self.data / "token").read_text().strip() if not tokens else next(iter(tokens.values()))

    def conn(self, timeout=60):
        if self.socket_path:
            return UnixHTTPConnection(str(self.socket_path), timeout=timeout)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, token=True, headers=None, timeout=60):
        """(status, headers, body bytes); body: dict -> JSON, bytes as they are."""
        h = dict(headers or {})
        if token:
            h["Authorization"] = f"Bearer {self.token if token is True else token}"
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        c = self.conn(timeout)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.headers, data

    def json(self, method, path, body=None, **kw):
        status, _, data = self.request(method, path, body, **kw)
        return status, json.loads(data) if data else None

    def create(self, body=None, **kw):
        status, j = self.json("POST", "/v1/sandboxes", body or {}, **kw)
        assert status == 201, j
        return j["id"]

    def exec(self, sid, code, **kw):
        status, j = self.json("POST", f"/v1/sandboxes/{sid}/exec", {"code": code}, **kw)
        assert status == 200, j
        return j

    def stop(self, sig=signal.SIGTERM, timeout=60):
        kids = descendants(self.proc.pid)
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout)
        LIVE.remove(self)
        deadline = time.time() + 10
        while time.time() < deadline and alive(kids):
            time.sleep(0.05)
        return rc, kids


@pytest.fixture
def serve(tmp_path):
    made = []

    def start(*args, sub=None, **kw):
        d = tmp_path / (sub or f"s{len(made)}")
        d.mkdir(exist_ok=True)
        s = Server(d, *args, **kw)
        made.append(s)
        return s
    yield start
    for s in made:
        if s in LIVE:
            s.stop(signal.SIGKILL)


def alive(pids):
    return {p for p in pids if pid_alive(p)}


def test_a_token_is_made_and_needed(serve):
    s = serve()
    tok = s.data / "token"
    assert oct(tok.stat().st_mode & 0o777) == "0o600"
    assert s.url.endswith(f"/?token={s.token}") and len(s.token) == 64
    for path in ("/healthz", "/readyz"):
        status, j = s.json("GET", path, token=False)
        assert status == 200 and j["status"] in ("ok", "ready")
    status, h, body = s.request("GET", "/v1/sandboxes", token=False)
    assert status == 401 and h["WWW-Authenticate"].startswith("Bearer")
    assert json.loads(body)["error"]["kind"] == "unauthorized"
    assert s.request("GET", "/v1/sandboxes", token="x" * 64)[0] == 401
    assert s.request("GET", "/v1/sandboxes", token=s.token[:-1])[0] == 401
    assert s.request("GET", "/v1/sandboxes", token=s.token + "0")[0] == 401
    assert s.json("GET", "/v1/sandboxes") == (200, {"sandboxes": []})
    assert s.stop()[0] == 0


def test_the_login_url_sets_a_strict_cookie(serve):
    s = serve()
    status, h, _ = s.request("GET", f"/?token={s.token}", token=False)
    assert status == 303 and h["Location"] == "/"
    cookie = h["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and cookie.startswith(f"corral_token={s.token}")
    status, j = s.json("GET", "/v1/sandboxes", token=False, headers={"Cookie": f"corral_token={s.token}"})
    assert status == 200 and j == {"sandboxes": []}
    assert s.request("GET", "/?token=" + "a" * 64, token=False)[0] == 401
    assert s.request("GET", "/", token=False, headers={"Cookie": "corral_token=" + "b" * 64})[0] == 401


def test_host_and_origin_are_checked(serve):
    s = serve("--allow-host", "proxy.example")
    here = f"127.0.0.1:{s.port}"
    # DNS rebinding: a page of evil.example whose name now resolves to us.
    status, j = s.json("GET", "/v1/sandboxes", headers={"Host": "evil.example"})
    assert status == 403 and j["error"]["kind"] == "forbidden", j
    assert s.request("GET", "/healthz", token=False, headers={"Host": "evil.example:80"})[0] == 403
    for ok in (f"localhost:{s.port}", here, "proxy.example", "PROXY.example:443"):
        assert s.request("GET", "/v1/sandboxes", headers={"Host": ok})[0] == 200, ok
    # A cross-site request from a browser page carries its Origin.
    for bad in ("http://evil.example", "null", f"http://{here}.evil.example", f"ftp://{here}"):
        status, j = s.json("POST", "/v1/sandboxes", {}, headers={"Origin": bad})
        assert status == 403 and "Origin" in j["error"]["message"], (bad, j)
    assert s.json("GET", "/v1/sandboxes", headers={"Origin": f"http://{here}"})[0] == 200
    status, j = s.json("GET", "/metrics", headers={"Origin": "http://evil.example"})
    assert status == 403


def test_tokens_file(serve, tmp_path):
    f = tmp_path / "open-tokens"
    f.write_text("a" * 32 + "\n")
    f.chmod(0o644)
    r = subprocess.run([CORRAL, "serve", "--listen", "127.0.0.1:0", "--tokens", str(f)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "chmod 600" in r.stderr and "--tokens" in r.stderr, r.stderr
    f.chmod(0o600)
    f.write_text("short\n")
    r = subprocess.run([CORRAL, "serve", "--listen", "127.0.0.1:0", "--tokens", str(f)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "line 1" in r.stderr, r.stderr
    r = subprocess.run([CORRAL, "serve", "--listen", "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "needs a tokens file" in r.stderr, r.stderr

    alice, bob = "A" * 40, "B" * 40
    s = serve(tokens={"alice": alice, "bob": bob})
    a = s.create(token=alice)
    assert [x["id"] for x in s.json("GET", "/v1/sandboxes", token=alice)[1]["sandboxes"]] == [a]
    assert s.json("GET", "/v1/sandboxes", token=bob)[1] == {"sandboxes": []}
    for method, path, body in (("GET", "", None), ("POST", "/exec", {"code": "1"}), ("GET", "/files", None),
                               ("PUT", "/files/x", b"x"), ("POST", "/interrupt", None), ("DELETE", "", None)):
        status, j = s.json(method, f"/v1/sandboxes/{a}{path}", body, token=bob)
        assert status == 403 and j["error"]["kind"] == "forbidden", (method, path, j)
    assert s.exec(a, "6 * 7", token=alice)["value"]["text"] == "42"
    assert s.stop()[0] == 0


def test_a_sandbox_from_create_to_delete(serve):
    s = serve()
    status, made = s.json("POST", "/v1/sandboxes", {"limits": {"memory": "256M", "pids": 64, "timeout": 5},
                                                     "metadata": {"owner": "test"}, "idle_timeout": 120})
    assert status == 201, made
    sid = made["id"]
    assert made["metadata"] == {"owner": "test"} and made["warm"] is True and made["steps"] == 0
    assert made["limits"]["memory"] == 256 << 20 and made["limits"]["pids"] == 64 and made["limits"]["timeout"] == 5
    assert "workspace" not in made and "workspace" not in made["limits"], "a host path reached the caller"
    assert 110 < made["expires_in_s"] <= 120
    r = s.exec(sid, "import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})\nprint('rows', len(df))\ndf.x.sum()")
    assert r["status"] == "ok" and r["stdout"] == "rows 3\n" and r["value"]["text"] == "6", r
    r = s.exec(sid, "df.x.max()")
    assert r["value"]["text"] == "3", "the state did not persist"
    r = s.exec(sid, "1/0")
    assert r["status"] == "error" and r["error"]["name"] == "ZeroDivisionError" and r["exit_code"] == 1
    r = s.exec(sid, "import time; time.sleep(30)")
    assert r["status"] == "timeout", r
    status, info = s.json("GET", f"/v1/sandboxes/{sid}")
    assert status == 200 and info["steps"] == 4 and info["busy"] is False
    # what the steps cost, and the last ones, newest first
    assert [x["status"] for x in info["recent"]] == ["timeout", "error", "ok", "ok"], info["recent"]
    assert [x["step"] for x in info["recent"]] == [4, 3, 2, 1] and info["recent"][1]["exit_code"] == 1
    assert info["recent"][0]["wall_ms"] >= 4000 and all(x["started_at"].endswith("Z") for x in info["recent"])
    assert info["usage"]["memory_peak_bytes"] == max(x["memory_peak_bytes"] for x in info["recent"]) > 1 << 20
    assert abs(info["usage"]["cpu_ms"] - sum(x["cpu_ms"] for x in info["recent"])) < 1, info
    assert s.json("GET", "/v1/sandboxes")[1]["sandboxes"][0]["recent"] == info["recent"]
    assert s.json("DELETE", f"/v1/sandboxes/{sid}") == (200, {"deleted": sid})
    status, j = s.json("GET", f"/v1/sandboxes/{sid}")
    assert status == 404 and j["error"]["kind"] == "not_found"
    assert s.json("GET", "/v1/sandboxes")[1] == {"sandboxes": []}


def test_idle_and_lifetime_end_a_sandbox(serve):
    """The server ends a sandbox at its idle timeout or lifetime on its own
    (no request needed), and nothing of it is left running."""
    s = serve()
    idle = s.create({"idle_timeout": 1})
    short = s.create({"lifetime": 2, "warm": False})
    kept = s.create()
    kids = descendants(s.proc.pid)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10 and (s.json("GET", f"/v1/sandboxes/{idle}")[0] != 404 or
                                          s.json("GET", f"/v1/sandboxes/{short}")[0] != 404):
        time.sleep(0.2)
    assert s.json("GET", f"/v1/sandboxes/{idle}")[0] == 404
    assert s.json("GET", f"/v1/sandboxes/{short}")[0] == 404
    assert 1 <= time.monotonic() - t0 < 6
    assert [b["id"] for b in s.json("GET", "/v1/sandboxes")[1]["sandboxes"]] == [kept]
    assert s.exec(kept, "1")["status"] == "ok"
    left = alive(kids) - set(descendants(s.proc.pid))
    assert not left, f"processes of ended sandboxes still run: {left}"


def test_bad_requests_are_told_why(serve):
    s = serve()
    sid = s.create()
    cases = [
        ("POST", "/v1/sandboxes", b"{not json", 400, "not JSON"),
        ("POST", "/v1/sandboxes", {"limit": {}}, 400, "'limit' is not a field"),
        ("POST", "/v1/sandboxes", {"limits": {"memory": "100G"}}, 400, "at most"),
        ("POST", "/v1/sandboxes", {"limits": {"pids": 100000}}, 400, "limits.pids may be at most"),
        ("POST", "/v1/sandboxes", {"limits": {"net": "host"}}, 400, "none or down"),
        ("POST", "/v1/sandboxes", {"limits": {"workspace": "/etc"}}, 400, "not a limit a sandbox may set"),
        ("POST", "/v1/sandboxes", {"limits": {"rootfs": "/"}}, 400, "not a limit a sandbox may set"),
        ("POST", "/v1/sandboxes", {"lifetime": -1}, 400, "lifetime must be"),
        ("POST", "/v1/sandboxes", {"metadata": {"x": "y" * 5000}}, 400, "4 KiB"),
        ("POST", "/v1/sandboxes", [], 400, "JSON object"),
        ("PATCH", "/v1/sandboxes", {}, 405, "GET and POST"),
        ("GET", "/v2/things", None, 404, "no such route"),
        ("GET", "/v1/sandboxes/XYZ", None, 404, "12 lowercase hex"),
        ("GET", "/v1/sandboxes/000000000000", None, 404, "no sandbox"),
        ("POST", f"/v1/sandboxes/{sid}/exec", {"code": 1}, 400, "code must be a string"),
        ("POST", f"/v1/sandboxes/{sid}/exec", {"code": "1", "language": "ruby"}, 400, "language"),
        ("POST", f"/v1/sandboxes/{sid}/exec", {"code": "1", "timeout": "soon"}, 400, "timeout"),
        ("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": "1"}, 400, "'cmd' is not a field"),
        ("POST", f"/v1/sandboxes/{sid}/interrupt", None, 409, "no step is running"),
        ("POST", f"/v1/sandboxes/{sid}/reboot", None, 405, "not a route"),
    ]
    for method, path, body, want, words in cases:
        status, j = s.json(method, path, body)
        assert status == want and words in j["error"]["message"], (method, path, body, status, j)
    # A request that was refused left nothing half made.
    assert [x["id"] for x in s.json("GET", "/v1/sandboxes")[1]["sandboxes"]] == [sid]


def raw_request(s, head, body=b"", chunks=None):
    """(status line, the rest) of a request sent by hand: with Expect:
    100-continue the body goes only after a 100; chunks: sent chunked."""
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    sock.sendall(head.encode() + f"Host: 127.0.0.1\r\nAuthorization: Bearer {s.token}\r\n\r\n".encode())
    got = b""
    try:
        if chunks is not None:
            for c in chunks:
                sock.sendall(b"%x\r\n%s\r\n" % (len(c), c))
            sock.sendall(b"0\r\n\r\n")
        while b"\r\n\r\n" not in got:
            part = sock.recv(65536)
            if not part:
                break
            got += part
        if got.startswith(b"HTTP/1.1 100") and body:
            sock.sendall(body)
            got = got.split(b"\r\n\r\n", 1)[1]
            while b"\r\n\r\n" not in got:
                part = sock.recv(65536)
                if not part:
                    break
                got += part
    except (BrokenPipeError, ConnectionResetError):
        pass
    sock.close()
    return got.split(b"\r\n", 1)[0].decode(), got


def test_sizes_and_caps(serve):
    s = serve("--max-per-token", "2", "--max-steps-per-token", "1", "--max-sandboxes", "2")
    line, got = raw_request(s, "POST /v1/sandboxes HTTP/1.1\r\nExpect: 100-continue\r\n"
                               f"Content-Length: {2 << 20}\r\n", b"{" + b" " * ((2 << 20) - 2) + b"}")
    assert line.startswith("HTTP/1.1 413 ") and b"more than" in got, got
    a = s.create({"limits": {"disk": "1M"}})
    line, got = raw_request(s, f"PUT /v1/sandboxes/{a}/files/big.bin HTTP/1.1\r\nExpect: 100-continue\r\n"
                               f"Content-Length: {2 << 20}\r\n", b"x" * (2 << 20))
    assert line.startswith("HTTP/1.1 413"), got
    # Without a length the cap is found mid-way: the rest is read and
    # dropped and the answer is 413, for a file and for a JSON body; far
    # past the cap (16 MiB more) the connection is cut.  Nothing is kept.
    line, got = raw_request(s, f"PUT /v1/sandboxes/{a}/files/big.bin HTTP/1.1\r\n"
                               "Transfer-Encoding: chunked\r\n", chunks=[b"y" * 65536] * 32)
    assert line.startswith("HTTP/1.1 413"), got
    line, got = raw_request(s, "POST /v1/sandboxes HTTP/1.1\r\nTransfer-Encoding: chunked\r\n",
                            chunks=[b"{"] + [b" " * 65536] * 32 + [b"}"])
    assert line.startswith("HTTP/1.1 413") and b"larger than the 1048576 bytes" in got, got
    line, got = raw_request(s, f"PUT /v1/sandboxes/{a}/files/big.bin HTTP/1.1\r\n"
                               "Transfer-Encoding: chunked\r\n", chunks=[b"y" * (1 << 20)] * 24)
    assert not line.startswith("HTTP/1.1 2"), got
    status, j = s.json("GET", f"/v1/sandboxes/{a}/files")
    assert not [f for f in j["files"] if "big" in f["path"]], f"a refused upload left a file: {j}"
    s.create()
    status, h, body = s.request("POST", "/v1/sandboxes", {})
    assert status in (429, 503) and h["Retry-After"] == "1", body
    # One step at a time for this token: a second one while the first runs.
    c = s.conn()
    c.request("POST", f"/v1/sandboxes/{a}/exec", body=json.dumps({"code": "import time; time.sleep(3)"}),
              headers={"Authorization": f"Bearer {s.token}", "Accept": "application/x-ndjson"})
    r = c.getresponse()
    time.sleep(0.5)
    status, h, body = s.request("POST", f"/v1/sandboxes/{a}/exec", {"code": "1"})
    assert status == 429 and h["Retry-After"] == "1" and b"most steps" in body, body
    r.read()
    c.close()
    metrics = s.request("GET", "/metrics")[2].decode()
    assert 'corral_rejected_requests_total{reason="too_large"} 5' in metrics, metrics
    assert 'corral_rejected_requests_total{reason="steps"} 1' in metrics


def test_the_server_wide_cap_answers_503(serve):
    s = serve("--max-sandboxes", "1", tokens={"a": "a" * 20, "b": "b" * 20})
    s.create(token="a" * 20)
    status, h, body = s.request("POST", "/v1/sandboxes", {}, token="b" * 20)
    assert status == 503 and h["Retry-After"] == "1" and b"most sandboxes" in body, body


@pytest.mark.skipif(os.geteuid() != 0, reason="as root: an ordinary user's zygote has one uid for all")
def test_past_32_warm_sandboxes_503_then_cold(serve):
    """A process holds 32 warm sessions at once: the 33rd asked for warm is
    the server's capacity (503 with Retry-After), a default one is cold,
    and a deleted one frees its slot."""
    s = serve("--max-sandboxes", "40", "--max-per-token", "40")
    ids = [s.create({"warm": True}) for _ in range(32)]
    assert all(s.json("GET", f"/v1/sandboxes/{i}")[1]["warm"] for i in ids)
    status, h, body = s.request("POST", "/v1/sandboxes", {"warm": True})
    assert status == 503 and h["Retry-After"] and b"32 per process" in body, (status, body)
    cold = s.create()
    assert s.json("GET", f"/v1/sandboxes/{cold}")[1]["warm"] is False
    assert s.request("DELETE", f"/v1/sandboxes/{ids[0]}")[0] == 200
    again = s.create({"warm": True})
    assert s.exec(again, "1 + 1")["value"]["text"] == "2"


def read_events(resp, sse):
    """The events of a streamed step, with when each arrived."""
    out, buf = [], b""
    while True:
        chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
        if not chunk:
            break
        buf += chunk
        sep = b"\n\n" if sse else b"\n"
        while sep in buf:
            item, buf = buf.split(sep, 1)
            if sse:
                lines = dict(line.split(": ", 1) for line in item.decode().split("\n"))
                ev = json.loads(lines["data"])
                assert ev["type"] == lines["event"]
            else:
                ev = json.loads(item)
            out.append((time.monotonic(), ev))
    return out


@pytest.mark.parametrize("accept", ["application/x-ndjson", "text/event-stream"])
def test_a_step_streams_its_output(serve, accept):
    s = serve()
    sid = s.create()
    c = s.conn()
    t0 = time.monotonic()
    code = ("import sys, time\nfor i in range(4):\n    print('out', i, flush=True)\n    time.sleep(0.3)\n"
            "print('err', file=sys.stderr, flush=True)\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\n"
            "plt.show()\n'done'")
    c.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps({"code": code}),
              headers={"Authorization": f"Bearer {s.token}", "Accept": accept})
    r = c.getresponse()
    assert r.status == 200 and r.headers["Content-Type"] == accept
    events = read_events(r, accept == "text/event-stream")
    c.close()
    kinds = [e["type"] for _, e in events]
    assert kinds[-1] == "result" and "figure" in kinds and "stderr" in kinds, kinds
    out = "".join(e["data"] for _, e in events if e["type"] == "stdout")
    assert out == "out 0\nout 1\nout 2\nout 3\n"
    first = next(t for t, e in events if e["type"] == "stdout")
    last = events[-1][0]
    assert first - t0 < 0.9 and last - first > 0.8, "the output was not streamed as it came"
    result = events[-1][1]["result"]
    assert result["status"] == "ok" and result["value"]["text"] == "'done'"
    fig = next(e["figure"] for _, e in events if e["type"] == "figure")
    assert fig["path"].endswith(".png") and "host_path" not in fig
    # The figure is a file of the sandbox.
    status, h, png = s.request("GET", f"/v1/sandboxes/{sid}/files/{fig['path'].removeprefix('/workspace/')}")
    assert status == 200 and png.startswith(b"\x89PNG")


def test_an_interrupt_keeps_the_state(serve):
    s = serve()
    sid = s.create()
    s.exec(sid, "kept = 7")
    c = s.conn()
    c.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps({"code": "import time\nwhile True: time.sleep(0.1)"}),
              headers={"Authorization": f"Bearer {s.token}", "Accept": "application/x-ndjson"})
    r = c.getresponse()
    time.sleep(0.5)
    status, j = s.json("POST", f"/v1/sandboxes/{sid}/interrupt")
    assert status == 202, j
    events = read_events(r, False)
    c.close()
    result = events[-1][1]["result"]
    assert result["status"] == "interrupted" and result["state_lost"] is False, result
    assert s.exec(sid, "kept")["value"]["text"] == "7"


def test_a_client_gone_mid_stream_cancels_its_step(serve):
    s = serve()
    sid = s.create()
    sock = socket.create_connection(("127.0.0.1", s.port))
    body = json.dumps({"code": "import time\nwhile True:\n    print('x', flush=True); time.sleep(0.05)",
                       "timeout": 600}).encode()
    sock.sendall(b"POST /v1/sandboxes/%s/exec HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                 b"Accept: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s"
                 % (sid.encode(), s.token.encode(), len(body), body))
    assert b"200 OK" in sock.recv(4096)
    sock.close()
    t0 = time.monotonic()
    while s.json("GET", f"/v1/sandboxes/{sid}")[1]["busy"] and time.monotonic() - t0 < 20:
        time.sleep(0.1)
    assert time.monotonic() - t0 < 20, "the step of a client that hung up ran on"
    assert s.exec(sid, "2 + 2")["value"]["text"] == "4"


def test_files(serve):
    s = serve()
    sid = s.create()
    base = f"/v1/sandboxes/{sid}/files"
    status, _, body = s.request("PUT", f"{base}/data/in/sales.csv", b"a,b\n1,2\n")
    assert status == 201 and json.loads(body) == {"path": "data/in/sales.csv", "size": 8}
    r = s.exec(sid, "import pandas as pd\nd = pd.read_csv('/workspace/data/in/sales.csv')\n"
                    "d.to_csv('/workspace/out.csv', index=False)\nint(d.b.sum())")
    assert r["value"]["text"] == "2", r
    status, _, body = s.request("GET", f"{base}/out.csv")
    assert status == 200 and body == b"a,b\n1,2\n"
    status, j = s.json("GET", f"{base}?path=data")
    assert status == 200 and [e["path"] for e in j["files"]] == ["data/in", "data/in/sales.csv"], j
    # input/ is an ordinary directory in a sandbox.
    assert s.request("PUT", f"{base}/input/x.txt", b"x")[0] == 201
    # Out of the tree, by name or by what the jail planted.
    s.exec(sid, "import os\nos.symlink('/etc/passwd', '/workspace/leak')\nos.symlink('/etc', '/workspace/etcdir')\n"
                "os.mkfifo('/workspace/fifo')")
    for method, path, body in (("GET", "leak", None), ("PUT", "leak", b"x"), ("GET", "etcdir/passwd", None),
                               ("PUT", "etcdir/x", b"x"), ("GET", "../x", None), ("GET", "fifo", None),
                               ("PUT", "a/../../x", b"x")):
        status, _, body = s.request(method, f"{base}/{path}", body)
        assert status == 400 and b"root:" not in body, (method, path, status, body)
    assert s.request("GET", f"{base}/missing.txt")[0] == 404
    assert s.request("DELETE", f"{base}/leak")[0] == 200
    assert os.path.exists("/etc/passwd"), "the link's target went"
    assert s.request("DELETE", f"{base}/data")[0] == 200
    assert s.request("GET", f"{base}/data/in/sales.csv")[0] == 404
    assert s.request("DELETE", f"{base}/")[0] in (400, 405)


@pytest.mark.skipif(os.environ.get("CORRAL_UNDER_TSAN") == "1",
                    reason="a clone() child of a ThreadSanitizer process runs TSan's interceptors, whose locks "
                           "another thread may hold at clone time; the ASan build runs this test")
def test_jails_start_while_threads_come_and_go(serve):
    """A jail's child is a copy of a threaded server: it must take no lock
    another thread may hold at clone time (glibc's setresuid/setgroups did:
    about one start in ten hung until the 30 s start timeout).  Cold
    sandboxes spawn a jail each while /healthz makes and ends a connection
    thread after another."""
    import threading
    s = serve("--max-per-token", "32", "--max-sandboxes", "32")
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            try:
                s.request("GET", "/healthz", token=False, timeout=5)
            except OSError:
                pass
    threads = [threading.Thread(target=churn) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(16):
            t0 = time.monotonic()
            status, j = s.json("POST", "/v1/sandboxes", {"warm": False, "idle_timeout": 60})
            took = time.monotonic() - t0
            assert status == 201 and "corral_notice" not in j["metadata"], j
            assert took < 10, f"sandbox {i} took {took:.1f} s to start"
            assert s.json("DELETE", f"/v1/sandboxes/{j['id']}")[0] == 200
    finally:
        stop.set()
        for t in threads:
            t.join()


def test_metrics(serve):
    s = serve()
    sid = s.create()
    s.exec(sid, "1")
    s.exec(sid, "1/0")
    s.request("GET", "/v1/sandboxes", token=False)
    status, h, body = s.request("GET", "/metrics")
    text = body.decode()
    assert status == 200 and h["Content-Type"].startswith("text/plain; version=0.0.4")
    for line in ('corral_sandboxes 1', 'corral_executions_total{status="ok"} 1',
                 'corral_executions_total{status="error"} 1', 'corral_rejected_requests_total{reason="no_token"} 1',
                 'corral_execution_seconds_count{language="python"} 2',
                 'corral_sandbox_start_seconds_count{kind="warm"} 1'):
        assert line in text.splitlines(), (line, text)
    assert s.request("GET", "/metrics", token=False)[0] == 401


def test_a_unix_socket(serve, tmp_path):
    d = tmp_path / "sock"
    d.mkdir(mode=0o700)
    path = d / "corral.sock"
    s = serve(socket_path=path)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    sid = s.create(headers={"Host": "anything"})
    assert s.exec(sid, "3 * 3")["value"]["text"] == "9"
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o755)
    r = subprocess.run([CORRAL, "serve", "--socket", str(open_dir / "s.sock")], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and "0700" in r.stderr, r.stderr
    assert s.stop()[0] == 0
    assert not path.exists()


def test_a_graceful_stop_leaves_nothing(serve):
    s = serve("--grace", "1")
    a, b = s.create(), s.create({"warm": False})
    s.request("PUT", f"/v1/sandboxes/{a}/files/keep.txt", b"x")
    c = s.conn()
    c.request("POST", f"/v1/sandboxes/{b}/exec", body=json.dumps({"code": "import time; time.sleep(60)", "timeout": 90}),
              headers={"Authorization": f"Bearer {s.token}", "Accept": "application/x-ndjson"})
    r = c.getresponse()
    time.sleep(0.5)
    t0 = time.monotonic()
    rc, kids = s.stop()
    assert rc == 0 and time.monotonic() - t0 < 15
    assert kids and not alive(kids), f"left running: {alive(kids)}"
    events = read_events(r, False)
    assert events[-1][1]["type"] in ("result", "error")
    assert os.listdir(s.tmp) == [], os.listdir(s.tmp)


def test_after_sigkill_the_next_server_sweeps(serve, tmp_path):
    s = serve(sub="one")
    sid = s.create()
    s.request("PUT", f"/v1/sandboxes/{sid}/files/x.txt", b"x")
    assert os.listdir(s.tmp), "no temporary workspace to sweep"
    rc, kids = s.stop(signal.SIGKILL)
    deadline = time.time() + 10
    while alive(kids) and time.time() < deadline:
        time.sleep(0.1)
    assert not alive(kids), f"left running after SIGKILL: {alive(kids)}"
    t = serve(sub="one")
    assert t.tmp == s.tmp and os.listdir(t.tmp) == [], os.listdir(t.tmp)
    assert t.stop()[0] == 0


def ws_connect(s, sid, token=True, **kw):
    import websocket  # python3-websocket: a client written by others
    h = [f"Authorization: Bearer {s.token if token is True else token}"] if token else []
    return websocket.create_connection(f"ws://127.0.0.1:{s.port}/v1/sandboxes/{sid}/ws", header=h, timeout=60,
                                       **kw)


def ws_until_end(ws, step_id):
    """The events of step_id up to its result or error."""
    out = []
    while True:
        raw = ws.recv()
        assert raw, f"the connection closed before step {step_id} ended (events so far: {out})"
        ev = json.loads(raw)
        out.append(ev)
        if ev.get("id") == step_id and ev["type"] in ("result", "error"):
            return out


def test_a_websocket_runs_streams_and_interrupts(serve):
    import websocket
    s = serve(tokens={"a": "a" * 20, "b": "b" * 20})
    s.token = "a" * 20
    sid = s.create()
    ws = ws_connect(s, sid)
    ws.send(json.dumps({"type": "exec", "id": "one", "code": "import time\nfor i in range(3):\n"
                        "    print(i, flush=True); time.sleep(0.2)\nx = 5\nx * 2"}))
    t0 = time.monotonic()
    first = json.loads(ws.recv())
    assert first["type"] == "stdout" and first["id"] == "one" and first["data"].startswith("0"), first
    assert time.monotonic() - t0 < 0.5, "the output was not streamed as it came"
    events = [first] + ws_until_end(ws, "one")
    assert "".join(e["data"] for e in events if e["type"] == "stdout") == "0\n1\n2\n"
    assert events[-1]["result"]["value"]["text"] == "10"
    # An interrupt on the same connection; the state is kept.
    ws.send(json.dumps({"type": "exec", "id": "two", "code": "import time\nwhile True: time.sleep(0.1)"}))
    time.sleep(0.5)
    ws.send(json.dumps({"type": "interrupt"}))
    end = ws_until_end(ws, "two")[-1]
    assert end["result"]["status"] == "interrupted", end
    ws.send(json.dumps({"type": "exec", "id": "three", "code": "x"}))
    assert ws_until_end(ws, "three")[-1]["result"]["value"]["text"] == "5"
    # Bad messages are answered, the connection goes on.
    for bad, words in ((b"not json", "JSON object"), (json.dumps({"type": "reboot"}), "type must be"),
                       (json.dumps({"type": "exec", "id": "x" * 65, "code": "1"}), "at most 64"),
                       (json.dumps({"type": "exec", "id": "four", "code": 5}), "code must be a string")):
        ws.send(bad if isinstance(bad, str) else bad.decode())
        ev = json.loads(ws.recv())
        assert ev["type"] == "error" and words in ev["error"]["message"], ev
    ws.close()
    # The gate is the same as for the other routes.
    for token, headers, status in ((None, {}, 401), ("b" * 20, {}, 403),
                                   ("a" * 20, {"Origin": "http://evil.example"}, 403)):
        with pytest.raises(websocket.WebSocketBadStatusException) as e:
            websocket.create_connection(f"ws://127.0.0.1:{s.port}/v1/sandboxes/{sid}/ws", timeout=30,
                                        header=[f"Authorization: Bearer {token}"] if token else [],
                                        origin=headers.get("Origin"))
        assert e.value.status_code == status, (token, headers, e.value.status_code)
    # Not an upgrade: told so.
    status, j = s.json("GET", f"/v1/sandboxes/{sid}/ws")
    assert status == 400 and "WebSocket" in j["error"]["message"]


def test_a_websocket_gone_interrupts_and_a_stop_closes_it(serve):
    s = serve("--grace", "1")
    sid = s.create()
    ws = ws_connect(s, sid)
    ws.send(json.dumps({"type": "exec", "id": "loop", "code": "import time\nwhile True: time.sleep(0.1)"}))
    time.sleep(0.5)
    assert s.json("GET", f"/v1/sandboxes/{sid}")[1]["busy"] is True
    ws.sock.shutdown(socket.SHUT_RDWR)
    ws.sock.close()
    t0 = time.monotonic()
    while s.json("GET", f"/v1/sandboxes/{sid}")[1]["busy"] and time.monotonic() - t0 < 15:
        time.sleep(0.1)
    assert time.monotonic() - t0 < 15, "the step of a WebSocket that went away ran on"
    # A stop: the running step is cancelled after the grace, its result
    # sent, then the connection closed with 1001.
    ws = ws_connect(s, sid)
    ws.send(json.dumps({"type": "exec", "id": "long", "code": "import time; time.sleep(60)", "timeout": 90}))
    time.sleep(0.3)
    s.proc.send_signal(signal.SIGTERM)
    end = ws_until_end(ws, "long")[-1]
    assert end["type"] in ("result", "error"), end
    # The close frame: status 1001 (going away).
    import websocket
    op, frame = ws.recv_data(control_frame=True)
    assert op == websocket.ABNF.OPCODE_CLOSE and int.from_bytes(frame[:2], "big") == 1001, (op, frame)
    assert s.proc.wait(30) == 0
    LIVE.remove(s)


def make_tar(files):
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in files.items():
            if isinstance(data, tuple):  # ("symlink", target)
                info = tarfile.TarInfo(name)
                info.type = tarfile.SYMTYPE
                info.linkname = data[1]
                t.addfile(info)
                continue
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_many_files_as_one_tar(serve):
    import io
    import tarfile
    s = serve()
    sid = s.create()
    base = f"/v1/sandboxes/{sid}/files"
    files = {f"batch/part-{i:03}.csv": f"i,sq\n{i},{i * i}\n".encode() for i in range(300)}
    status, _, body = s.request("PUT", base, make_tar(files), headers={"Content-Type": "application/x-tar"})
    assert status == 201, body
    assert json.loads(body)["files"] == 300
    r = s.exec(sid, "import glob, pandas as pd\n"
                    "int(sum(pd.read_csv(f).sq.sum() for f in glob.glob('/workspace/batch/*.csv')))")
    assert r["value"]["text"] == str(sum(i * i for i in range(300))), r
    s.exec(sid, "open('/workspace/made.txt', 'w').write('by the sandbox')")
    status, h, body = s.request("GET", f"{base}?format=tar")
    assert status == 200 and h["Content-Type"] == "application/x-tar"
    with tarfile.open(fileobj=io.BytesIO(body)) as t:
        names = set(t.getnames())
        assert "made.txt" in names and "batch/part-299.csv" in names, sorted(names)[:10]
        assert t.extractfile("made.txt").read() == b"by the sandbox"
    # Refused as a whole, nothing left: out of the tree, a link out, an existing entry, not a tar.
    for bad, words in ((make_tar({"../escape.txt": b"x"}), b".."),
                       (make_tar({"ok/a.txt": b"a", "ok/link": ("symlink", "/etc/passwd")}), b"link"),
                       (make_tar({"batch/again.csv": b"x"}), b"batch"),
                       (b"not a tar at all" * 100, b"")):
        status, _, body = s.request("PUT", base, bad, headers={"Content-Type": "application/x-tar"})
        assert status == 400 and words in body, (status, body)
    status, j = s.json("GET", f"{base}?depth=1")
    assert sorted(e["path"] for e in j["files"] if not e["path"].startswith(("input", "output", ".corral"))) == \
        ["batch", "made.txt"], j
    status, _, body = s.request("PUT", base, b"x")
    assert status == 400 and b"tar" in body


def test_pause_and_resume(serve):
    s = serve("--max-per-token", "2")
    sid = s.create({"metadata": {"kept": True}})
    s.request("PUT", f"/v1/sandboxes/{sid}/files/notes.txt", b"before the pause")
    s.exec(sid, "x = 42\nopen('/workspace/out.txt', 'w').write('made')")
    status, d = s.json("POST", f"/v1/sandboxes/{sid}/pause")
    assert status == 200 and d["state"] == "paused" and "paused_at" in d, d
    assert d["metadata"] == {"kept": True}
    for method, path in (("POST", "/exec"), ("GET", "/files"), ("GET", "/files/notes.txt"), ("POST", "/interrupt"),
                         ("PUT", "/files/x.txt"), ("POST", "/pause")):
        status, j = s.json(method, f"/v1/sandboxes/{sid}{path}", {"code": "1"} if path == "/exec" else None)
        assert status == 409 and j["error"]["kind"] == "busy", (method, path, j)
    listed = s.json("GET", "/v1/sandboxes")[1]["sandboxes"]
    assert [(x["id"], x["state"]) for x in listed] == [(sid, "paused")]
    # A new sandbox from the paused one's files (which stays paused).
    twin = s.create({"from": sid})
    r = s.exec(twin, "open('/workspace/notes.txt').read()")
    assert r["value"]["text"] == "'before the pause'", r
    status, j = s.json("POST", "/v1/sandboxes", {"from": twin})
    assert status == 400 and "no paused sandbox" in j["error"]["message"], j
    assert s.json("DELETE", f"/v1/sandboxes/{twin}")[0] == 200
    # A paused sandbox still counts for its token.
    s.create()
    assert s.request("POST", "/v1/sandboxes", {})[0] == 429
    status, d = s.json("POST", f"/v1/sandboxes/{sid}/resume")
    assert status == 200 and d["state"] == "running", d
    r = s.exec(sid, "open('/workspace/notes.txt').read() + ' / ' + open('/workspace/out.txt').read()")
    assert r["value"]["text"] == "'before the pause / made'", r
    r = s.exec(sid, "x")
    assert r["status"] == "error" and r["error"]["name"] == "NameError", "variables do not survive a pause"
    assert s.json("POST", f"/v1/sandboxes/{sid}/resume")[0] == 409
    # Deleting a paused sandbox removes its archive.
    s.json("POST", f"/v1/sandboxes/{sid}/pause")
    work = [d for d in os.listdir(s.data) if d.startswith("corral-ws-")]
    assert len(work) == 1 and any(f.startswith("paused-") for f in os.listdir(s.data / work[0]))
    assert s.json("DELETE", f"/v1/sandboxes/{sid}")[0] == 200
    assert not any(f.startswith("paused-") for f in os.listdir(s.data / work[0]))
    assert s.json("GET", f"/v1/sandboxes/{sid}")[0] == 404
    assert s.stop()[0] == 0
    assert [d for d in os.listdir(s.data) if d.startswith("corral-ws-")] == [], "the work directory was left"


def test_a_token_is_rate_limited(serve):
    s = serve("--max-rate", "20")
    codes = [s.request("GET", "/v1/sandboxes")[0] for _ in range(60)]
    assert codes[:40].count(200) >= 39 and 429 in codes, codes
    status, h, body = s.request("GET", "/v1/sandboxes")
    time.sleep(1.1)
    assert s.request("GET", "/v1/sandboxes")[0] == 200, "the bucket did not refill"
    assert s.request("GET", "/healthz", token=False)[0] == 200
    metrics = s.request("GET", "/metrics")[2].decode()
    assert 'corral_rejected_requests_total{reason="rate"}' in metrics


def test_the_openapi_file_matches_the_routes(serve):
    """Every operation the OpenAPI file names is a route of the server (it
    answers something else than 'no such route' or 'not a route'), every
    route of docs/api.md's table is in the file, and the file is served."""
    import re
    s = serve()
    status, spec = s.json("GET", "/v1/openapi.json", token=False)
    assert status == 200 and spec["openapi"].startswith("3.1")
    sid = s.create()
    ops = {(m.upper(), p) for p, item in spec["paths"].items() for m in item if m != "parameters"}
    for method, path in sorted(ops):
        url = path.replace("{id}", sid).replace("{path}", "some/file.txt").replace("{pid}", "4242")
        headers = {}
        if path.endswith("/ws"):
            headers = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                       "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
            c = s.conn()
            c.request("GET", url, headers=dict(headers, Authorization=f"Bearer {s.token}"))
            assert c.getresponse().status == 101, url
            c.close()
            continue
        body = {"code": "1"} if path.endswith("/exec") else None
        if method == "PUT":
            body = make_tar({"t.txt": b"t"}) if path.endswith("/files") else b"data"
            headers["Content-Type"] = "application/x-tar" if path.endswith("/files") else "application/octet-stream"
        status, _, data = s.request(method, url, body, headers=headers)
        assert status != 405 and b"no such route" not in data, (method, path, status, data)
        if path.endswith("/pause"):
            s.request("POST", f"/v1/sandboxes/{sid}/resume")
        if method == "DELETE" and path == "/v1/sandboxes/{id}":
            sid = s.create()
    doc = open(os.path.join(os.environ.get("CORRAL_SOURCE_ROOT") or os.path.join(os.path.dirname(__file__), "..", ".."),
                            "docs", "api.md")).read()
    documented = set()
    for m in re.finditer(r"^\| `(GET|POST|PUT|DELETE) ([^`?]+)[^`]*` \|", doc, re.M):
        documented.add((m.group(1), m.group(2)))
    assert documented, "no route table in docs/api.md"
    assert documented <= ops, f"in docs/api.md, not in the OpenAPI file: {sorted(documented - ops)}"
    assert ops <= documented, f"in the OpenAPI file, not in docs/api.md: {sorted(ops - documented)}"


def test_shell_steps_and_a_background_server(serve):
    """bash runs in the sandbox beside its Python: output streamed, its exit
    status the step's; a background command keeps running between steps,
    and Python in the sandbox calls the server it started on loopback."""
    s = serve()
    sid = s.create()
    status, r = s.json("POST", f"/v1/sandboxes/{sid}/exec",
                       {"language": "bash", "code": "echo hi; echo oops >&2; cd /workspace && touch made.txt; exit 3"})
    assert status == 200 and r["status"] == "error" and r["exit_code"] == 3, r
    assert r["stdout"] == "hi\n" and r["stderr"] == "oops\n" and r["error"]["name"] == "ExitStatus"
    r = s.exec(sid, "import os; os.path.exists('/workspace/made.txt')")
    assert r["value"]["text"] == "True", "bash and Python do not share the sandbox's files"
    status, r = s.json("POST", f"/v1/sandboxes/{sid}/exec", {"language": "bash", "code": "true"})
    assert r["status"] == "ok" and r["exit_code"] == 0
    # Interrupted like a Python step, its whole process group.
    c = s.conn()
    c.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps({"language": "bash", "code": "sleep 100 & sleep 100"}),
              headers={"Authorization": f"Bearer {s.token}", "Accept": "application/x-ndjson"})
    resp = c.getresponse()
    time.sleep(0.5)
    assert s.json("POST", f"/v1/sandboxes/{sid}/interrupt")[0] == 202
    t0 = time.monotonic()
    end = read_events(resp, False)[-1][1]["result"]
    assert end["status"] == "interrupted" and time.monotonic() - t0 < 5, end
    r = s.exec(sid, "import subprocess\nsubprocess.run(['pgrep', '-x', 'sleep'], capture_output=True).returncode")
    assert r["value"]["text"] == "1", "the interrupted command's children ran on"
    # A server in the background, called from Python on the sandbox's loopback.
    status, r = s.json("POST", f"/v1/sandboxes/{sid}/exec",
                       {"language": "bash", "background": True,
                        "code": "cd /workspace && exec python3 -m http.server 8765 --bind 127.0.0.1"})
    assert status == 200 and r["status"] == "ok", r
    started = r["value"]["json"]
    assert started["log"].startswith("/workspace/.corral/commands/"), started
    r = s.exec(sid, "import time, urllib.request\n"
                    "for i in range(100):\n"
                    "    try:\n"
                    "        body = urllib.request.urlopen('http://127.0.0.1:8765/made.txt').status\n"
                    "        break\n"
                    "    except OSError:\n"
                    "        time.sleep(0.1)\n"
                    "body")
    assert r["value"]["text"] == "200", r
    log = s.request("GET", f"/v1/sandboxes/{sid}/files/{started['log'].removeprefix('/workspace/')}")[2]
    assert b"GET /made.txt" in log, log
    pid = started["pid"]
    status, c = s.json("GET", f"/v1/sandboxes/{sid}/commands/{pid}")
    assert status == 200 and c["running"] is True and c["exit_code"] is None and c["log_bytes"] > 0, c
    status, j = s.json("POST", f"/v1/sandboxes/{sid}/commands/{pid}/signal", {"signal": "SEGV"})
    assert status == 400 and j["error"]["field"] == "signal"
    status, j = s.json("POST", f"/v1/sandboxes/{sid}/commands/{pid}/signal", {"signal": "TERM"})
    assert status == 200 and j == {"signalled": pid, "signal": "TERM"}, j
    t0 = time.monotonic()
    while s.json("GET", f"/v1/sandboxes/{sid}/commands/{pid}")[1]["running"] and time.monotonic() - t0 < 10:
        time.sleep(0.1)
    status, c = s.json("GET", f"/v1/sandboxes/{sid}/commands/{pid}")
    assert c["running"] is False and c["exit_code"] == 143, c
    exit_path = started["exit"].removeprefix("/workspace/")
    assert s.request("GET", f"/v1/sandboxes/{sid}/files/{exit_path}")[2].strip() == b"143"
    assert s.json("POST", f"/v1/sandboxes/{sid}/commands/{pid}/signal", {})[0] == 404
    assert s.json("GET", f"/v1/sandboxes/{sid}/commands/99999")[0] == 404
    # Only what the sandbox started as a background command: never -1 (every process).
    for pid in (1, 0, -1):
        assert s.json("POST", f"/v1/sandboxes/{sid}/commands/{pid}/signal", {})[0] in (404, 405)
    r = s.exec(sid, "import os; os.getpid() > 0")
    assert r["value"]["text"] == "True" and r["state_lost"] is False
    status, j = s.json("POST", f"/v1/sandboxes/{sid}/exec", {"code": "1", "background": True})
    assert status == 400 and "only for bash" in j["error"]["message"]
    # Variables for one step.
    r = s.json("POST", f"/v1/sandboxes/{sid}/exec", {"language": "bash", "code": "echo $GREETING",
                                                      "env": {"GREETING": "hey"}})[1]
    assert r["stdout"] == "hey\n", r
    r = s.json("POST", f"/v1/sandboxes/{sid}/exec", {"code": "import os; os.environ['GREETING']",
                                                      "env": {"GREETING": "py"}})[1]
    assert r["value"]["text"] == "'py'", r
    assert s.exec(sid, "os.environ.get('GREETING')")["value"] is None, "a step's variable outlived it"
    for bad in ("", "x" * 65, "a/b", 5):
        status, j = s.json("POST", f"/v1/sandboxes/{sid}/exec", {"code": "1", "context": bad})
        assert status == 400 and j["error"]["field"] == "context", (bad, j)
    for bad in ({"A=B": "x"}, {"A": 1}, [], {f"V{i}": "x" for i in range(65)}):
        status, j = s.json("POST", f"/v1/sandboxes/{sid}/exec", {"code": "1", "env": bad})
        assert status == 400 and j["error"]["field"] == "env", (bad, j)


def in_context(s, sid, name, code, **kw):
    status, r = s.json("POST", f"/v1/sandboxes/{sid}/exec", {"code": code, "context": name, **kw})
    assert status == 200, r
    return r


@pytest.mark.parametrize("warm", [True, False])
def test_contexts_are_processes_of_their_own(serve, warm):
    """A named context is a Python process of its own in the sandbox's jail:
    its own variables, forked from the sandbox's interpreter on first use
    (so with its modules as they are then), with the sandbox's files and
    loopback; one that dies or will not stop loses only itself."""
    s = serve()
    sid = s.create({"warm": warm})
    first = s.exec(sid, "import os, sys; shared = 'default'; sys.marker = 1; os.getpid()")["value"]["text"]
    # A thread of the sandbox's that writes while the context is forked
    # (the driver's locks are busy then) does not hang the new process.
    s.exec(sid, "import threading, time\n"
                "def chatter():\n"
                "    for i in range(3000):\n"
                "        print('.', end='', flush=True); time.sleep(0.0005)\n"
                "threading.Thread(target=chatter, daemon=True).start()")
    r = in_context(s, sid, "a", "import os, sys\nshared = 'a'\nprint('from a')\n(os.getpid(), hasattr(sys, 'marker'))")
    pid_a, marked = r["value"]["text"].strip("()").split(", ")
    assert pid_a != first and marked == "True", r
    assert r["stdout"] == "from a\n" and r["state_lost"] is False and r["restarted"] is False, r
    r = in_context(s, sid, "b", "shared")
    assert r["status"] == "error" and r["error"]["name"] == "NameError", r
    assert in_context(s, sid, "a", "shared")["value"]["text"] == "'a'"
    assert s.exec(sid, "shared")["value"]["text"] == "'default'"
    # The sandbox's files and loopback: a server in a thread of context a
    # runs on between steps and is called from the default context.
    r = in_context(s, sid, "a", "import http.server, threading\n"
                               "open('/workspace/from-a.txt', 'w').write('a was here')\n"
                               "srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), "
                               "lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory='/workspace'))\n"
                               "threading.Thread(target=srv.serve_forever, daemon=True).start()\n"
                               "srv.server_address[1]")
    port = r["value"]["text"]
    r = s.exec(sid, f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/from-a.txt').read()")
    assert r["value"]["text"] == "b'a was here'", r
    # Errors, figures and interrupts as in the sandbox's own namespace.
    r = in_context(s, sid, "a", "1/0")
    assert r["error"]["name"] == "ZeroDivisionError" and "1/0" in r["error"]["traceback"], r
    r = in_context(s, sid, "a", "import matplotlib.pyplot as plt; plt.plot([1, 2, 3])", figure_png=True)
    assert len(r["figures"]) == 1 and base64.b64decode(r["figures"][0]["png"])[:4] == b"\x89PNG", r
    c = s.conn()
    c.request("POST", f"/v1/sandboxes/{sid}/exec",
              body=json.dumps({"code": "import time\nwhile True: time.sleep(0.05)", "context": "a"}),
              headers={"Authorization": f"Bearer {s.token}", "Accept": "application/x-ndjson"})
    resp = c.getresponse()
    time.sleep(0.5)
    assert s.json("POST", f"/v1/sandboxes/{sid}/interrupt")[0] == 202
    end = read_events(resp, False)[-1][1]["result"]
    c.close()
    assert end["status"] == "interrupted" and end["state_lost"] is False, end
    assert in_context(s, sid, "a", "shared")["value"]["text"] == "'a'"
    # One that ignores the interrupt is killed alone, halfway through the
    # grace period: the interpreter and the other contexts are kept.
    r = in_context(s, sid, "stuck", "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nx = 1\n"
                                   "while True: time.sleep(0.05)", timeout=1)
    assert r["status"] == "timeout" and r["state_lost"] is True and r["exit_code"] == 124, r
    assert "context 'stuck'" in r["reason"] and "did not stop after the interrupt" in r["reason"], r
    r = in_context(s, sid, "stuck", "x")
    assert r["error"]["name"] == "NameError" and r["restarted"] is True, r
    assert in_context(s, sid, "stuck", "1")["restarted"] is False
    # One that ends itself, or is killed, is told apart.
    r = in_context(s, sid, "a", "import os; os._exit(3)")
    assert r["status"] == "error" and r["state_lost"] is True and r["exit_code"] == 3, r
    assert r["error"]["name"] == "ContextLost" and "exited with status 3" in r["reason"], r
    r = in_context(s, sid, "b", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert r["exit_code"] == 137 and "killed by SIGKILL" in r["reason"], r
    r = s.exec(sid, "(shared, os.getpid())")
    assert r["value"]["text"] == f"('default', {first})" and r["restarted"] is False, r
    r = in_context(s, sid, "a", "shared")
    assert r["error"]["name"] == "NameError" and r["restarted"] is True, r
    # At most 32 at once.
    for i in range(40):
        r = in_context(s, sid, f"n{i}", "1")
        if r["status"] != "ok":
            break
    assert r["error"]["name"] == "ContextLimit" and "at most 32 contexts" in r["error"]["value"], r
    assert i == 32 - 2, i  # a and stuck are live (b was killed)
