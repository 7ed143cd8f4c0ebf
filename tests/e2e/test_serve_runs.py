"""corral serve: agent runs over HTTP (docs/api.md, "Runs"), against the
scripted model server on 127.0.0.1: start, follow over server-sent events
(two clients, one joining midway; resume with Last-Event-ID), cancel,
artifacts and the archive, the API key kept out of every answer, event,
record and jail, the list after a restart, another token's runs, and a
short wrk load test."""
import base64
import http.client
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from test_serve import LIVE, Server  # noqa: E402,F401

KEY = "sk-test-corral-secret-0123456789abcdef"
HEADER_KEY = "sk-header-corral-secret-fedcba9876543210"

# The model's code: whether the key is anywhere in its environment, as a
# word redaction cannot hide, and the environment itself as an artifact.
# (the code names a part both keys share, not a key: the trace keeps the
# code, and only the run's own key is redacted there)
ENV_CODE = ("import os\n"
            "leak = any('corral-' + 'secret' in k + '=' + v for k, v in os.environ.items())\n"
            "print('ENV-LEAK' if leak else 'ENV-CLEAN')\n"
            "open('output/env.txt', 'w').write(repr(dict(os.environ)))\n"
            "print(open('input/sales.csv').read().strip())\n")


@pytest.fixture
def serve(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no config file of the user's
    made = []

    def start(*args, sub="s", model_urls=("any",), **kw):
        d = tmp_path / sub
        d.mkdir(exist_ok=True)
        # The scripted model servers' ports are not known in advance:
        # "any" lets a run name its own (test_model_urls_a_run_may_name
        # checks the default, which refuses them).
        urls = [a for u in model_urls for a in ("--model-url", u)]
        s = Server(d, *urls, *args, **kw)
        made.append(s)
        return s
    yield start
    for s in made:
        if s in LIVE:
            s.stop(signal.SIGKILL)


def start_run(s, srv, body=None, headers=None, **kw):
    b = {"task": "print the environment", "model": {"base_url": srv.base_url, "model": "gpt-test"}}
    b.update(body or {})
    status, j = s.json("POST", "/v1/runs", b, headers=headers, **kw)
    assert status == 201, j
    assert j["status"] == "running"
    return j["id"]


def wait_end(s, rid, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, j = s.json("GET", f"/v1/runs/{rid}")
        assert status == 200, j
        if j["status"] != "running":
            return j
        time.sleep(0.05)
    raise AssertionError(f"run {rid} still going")


def sse(s, rid, headers=None, path_extra="", on_event=None, timeout=60):
    """[(id, event, data)] of GET .../events, to the end of the stream."""
    h = {"Authorization": f"Bearer {s.token}", "Accept": "text/event-stream"}
    h.update(headers or {})
    c = s.conn(timeout)
    c.request("GET", f"/v1/runs/{rid}/events{path_extra}", headers=h)
    r = c.getresponse()
    assert r.status == 200, r.read()
    assert r.headers["Content-Type"].startswith("text/event-stream")
    out, cur = [], {}
    while True:
        line = r.readline()
        if not line:
            break
        line = line.decode().rstrip("\n")
        if line == "":
            if cur:
                ev = (int(cur["id"]) if "id" in cur else None, cur.get("event"), json.loads(cur["data"]))
                out.append(ev)
                if on_event:
                    on_event(ev)
                cur = {}
            continue
        k, _, v = line.partition(": ")
        cur[k] = v
    c.close()
    return out


def scenario(delay=0.0):
    return [tool_call("run_python", code=ENV_CODE) | {"delay": delay},
            text("Done: the environment is clean.") | {"delay": 2 * delay}]


def test_run_followed_by_two_clients(serve, tmp_path, monkeypatch):
    with ScriptedServer(scenario(delay=1.0)) as srv:
        # the server's own endpoint: its key goes there
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        s = serve()
        csv = base64.b64encode(b"product,sales\nwidget,3\n").decode()
        rid = start_run(s, srv, {"inputs": [{"path": "sales.csv", "content_base64": csv}]})
        first, second, ws_first, ws_second = [], [], [], []
        joined = threading.Event()

        def follow_first():
            def seen(ev):
                joined.set()  # run_start arrived: the second client joins midway
            first.extend(sse(s, rid, on_event=seen))
        # each over SSE and over a WebSocket (GET .../events upgraded)
        t = threading.Thread(target=follow_first)
        t.start()
        tw = threading.Thread(target=lambda: ws_first.append(ws_events(s, rid)))
        tw.start()
        assert joined.wait(30)
        time.sleep(1.2)  # the first model turn is over: the second client joins midway
        assert s.json("GET", f"/v1/runs/{rid}")[1]["status"] == "running"
        tw2 = threading.Thread(target=lambda: ws_second.append(ws_events(s, rid)))
        tw2.start()
        second.extend(sse(s, rid))
        for x in (t, tw, tw2):
            x.join(60)
        srv.assert_ok()
        # the key went to the model, from the server's environment
        assert srv.request_headers[0]["authorization"] == f"Bearer {KEY}"
    assert first == second, "both clients see the same events"
    # over a WebSocket: the same, each closed with 1000 after run_end
    assert ws_first[0] == (first, 1000) and ws_second[0] == (first, 1000)
    ids = [e[0] for e in first]
    assert ids == list(range(1, len(ids) + 1))
    types = [e[1] for e in first]
    assert types[0] == "run_start" and types[-1] == "run_end"
    assert "tool_result" in types and "model_reply" in types
    assert all(e[2]["type"] == e[1] for e in first)
    end = first[-1][2]
    assert end["status"] == "answered"
    tr = next(e[2] for e in first if e[1] == "tool_result")
    assert "ENV-CLEAN" in tr["content"] and "widget,3" in tr["content"]

    j = wait_end(s, rid)
    assert j["status"] == "answered" and j["answer"].startswith("Done")
    assert "trace" not in j and "output_dir" not in j and "workspace" not in j

    # the trace file is the events, line for line
    trace = s.data / "runs" / rid / "trace.jsonl"
    lines = [json.loads(x) for x in trace.read_text().splitlines() if x.strip()]
    assert [x["type"] for x in lines] == types
    # the host's paths stay with the host
    assert "workspace" in lines[0] and "workspace" not in first[0][2] and "trace" not in first[0][2]
    assert "output_dir" not in end
    # nor does a notice name them (the archive's path, under the data directory)
    data = os.path.realpath(s.data)
    assert any("archived to" in e[2].get("message", "") for e in first if e[1] == "notice"), first
    assert data in trace.read_text()
    for blob in (json.dumps(first), json.dumps(ws_first), json.dumps(sse(s, rid))):
        assert data not in blob

    # resume: after N, every later event exactly once
    rest = sse(s, rid, headers={"Last-Event-ID": "3"})
    assert rest == first[3:]
    assert sse(s, rid, path_extra="?after=2") == first[2:]
    assert s.request("GET", f"/v1/runs/{rid}/events", headers={"Last-Event-ID": "x"})[0] == 400
    assert ws_events(s, rid, "?after=3")[0] == first[3:]
    assert ws_events(s, rid, headers={"Last-Event-ID": "2"})[0] == first[2:]
    import websocket
    with pytest.raises(websocket.WebSocketBadStatusException) as e:
        websocket.create_connection(f"ws://127.0.0.1:{s.port}/v1/runs/{rid}/events?after=x",
                                    header=[f"Authorization: Bearer {s.token}"], timeout=30)
    assert e.value.status_code == 400

    # artifacts: the list, one file, the tar; traversal refused
    status, j = s.json("GET", f"/v1/runs/{rid}/artifacts")
    assert status == 200 and any(f["path"].endswith("env.txt") for f in j["artifacts"]), j
    status, _, env = s.request("GET", f"/v1/runs/{rid}/artifacts/env.txt")
    assert status == 200 and b"PATH" in env
    for bad in ("../trace.jsonl", "..%2ftrace.jsonl", "/etc/passwd", "a/../../serve.json"):
        status, _, body = s.request("GET", f"/v1/runs/{rid}/artifacts/{bad}")
        assert status in (400, 403, 404), (bad, status, body)
        assert b"run_start" not in body and b"owner" not in body
    status, h, tar = s.request("GET", f"/v1/runs/{rid}/archive")
    assert status == 200 and h["Content-Type"] == "application/x-tar"
    names = tarfile.open(fileobj=io.BytesIO(tar)).getnames()
    assert any(n.endswith("output/env.txt") for n in names), names

    # the key: in no answer, event, record or jail
    every = [json.dumps(first).encode(), json.dumps(ws_first).encode(), env, tar,
             json.dumps(s.json("GET", "/v1/runs")[1]).encode()]
    for root, _, files in os.walk(s.data):
        for f in files:
            every.append(open(os.path.join(root, f), "rb").read())
    for blob in every:
        assert KEY.encode() not in blob

    status, metrics, _ = None, s.request("GET", "/metrics")[2].decode(), None
    assert 'corral_runs{status="answered"} 1' in metrics
    assert "corral_model_request_seconds_count 2" in metrics
    assert 'corral_model_tokens_total{kind="prompt"}' in metrics


def test_header_key_restart_and_owners(serve, tmp_path):
    tokens = {"alice": "a" * 32, "bob": "b" * 32}
    s = serve(tokens=tokens)
    # a base_url of the caller's own, no key given: the server's is not sent there
    with ScriptedServer(scenario()) as other:
        j = wait_end(s, start_run(s, other))
        other.assert_ok()
        assert j["status"] == "answered", j
        for h in other.request_headers:
            assert KEY not in str(h.get("authorization")), h
    with ScriptedServer(scenario()) as srv:
        rid = start_run(s, srv, headers={"X-Model-Api-Key": HEADER_KEY})
        j = wait_end(s, rid)
        srv.assert_ok()
        assert srv.request_headers[0]["authorization"] == f"Bearer {HEADER_KEY}"
    assert j["status"] == "answered", j
    events = sse(s, rid)
    tr = next(e[2] for e in events if e[1] == "tool_result")
    assert "ENV-CLEAN" in tr["content"]
    for root, _, files in os.walk(s.data):
        for f in files:
            assert HEADER_KEY.encode() not in open(os.path.join(root, f), "rb").read()
    assert HEADER_KEY.encode() not in json.dumps(events).encode()

    # another token: not its run
    bob = tokens["bob"]
    assert s.json("GET", "/v1/runs", token=bob) == (200, {"runs": []})
    for method, path in (("GET", ""), ("GET", "/events"), ("POST", "/cancel"), ("GET", "/artifacts"),
                         ("GET", "/archive")):
        assert s.request(method, f"/v1/runs/{rid}{path}", token=bob)[0] == 403
    assert s.request("GET", "/v1/runs/20990101-000000-abcdef")[0] == 404
    assert s.request("GET", "/v1/runs/..%2f..%2fetc")[0] == 404

    # restart on the same data: listed from the records, events replayed
    s.stop()
    s2 = serve(tokens=tokens)
    status, j = s2.json("GET", "/v1/runs")
    assert status == 200 and [r["id"] for r in j["runs"]][0] == rid and len(j["runs"]) == 2
    assert j["runs"][0]["status"] == "answered" and j["runs"][0]["answer"].startswith("Done")
    assert sse(s2, rid) == events
    assert s2.request("GET", f"/v1/runs/{rid}", token=bob)[0] == 403


def test_cancel_and_interrupted(serve):
    s = serve("--max-runs", "1")
    turns = [text("never") | {"delay": 30}]
    with ScriptedServer(turns) as srv:
        rid = start_run(s, srv)
        srv.wait_for_requests(1, 30)
        # the cap: one run at a time here
        status, h, body = s.request("POST", "/v1/runs", {"task": "x", "model": {"base_url": srv.base_url,
                                                                               "model": "gpt-test"}})
        assert status == 503 and h["Retry-After"], body
        status, j = s.json("POST", f"/v1/runs/{rid}/cancel")
        assert status == 202, j
        j = wait_end(s, rid, timeout=20)
        assert j["status"] == "cancelled"
        events = sse(s, rid)
        assert events[-1][1] == "run_end" and events[-1][2]["status"] == "cancelled"
        assert s.json("POST", f"/v1/runs/{rid}/cancel")[0] == 409
        srv.stop()

    # a run going when its server is killed is listed as interrupted
    with ScriptedServer([text("never") | {"delay": 30}]) as srv:
        rid2 = start_run(s, srv)
        srv.wait_for_requests(1, 30)
        s.stop(signal.SIGKILL)
        srv.stop()
    s2 = serve()
    runs = {r["id"]: r["status"] for r in s2.json("GET", "/v1/runs")[1]["runs"]}
    assert runs == {rid: "cancelled", rid2: "interrupted"}
    events = sse(s2, rid2)
    assert events[0][1] == "run_start" and events[-1][1] != "run_end"


def test_a_going_runs_files(serve):
    """A going run's output/ is served as its steps write it (the web view's
    figures before the end), beneath the directory, never through a link;
    its archive waits for the end."""
    s = serve()
    code = ("import os\nopen('output/early.txt', 'w').write('so far')\n"
            "os.symlink('/etc/passwd', 'output/link')\nos.symlink('..', 'output/up')\n")
    turns = [tool_call("run_python", code=code), text("never") | {"delay": 30}]
    with ScriptedServer(turns) as srv:
        rid = start_run(s, srv)
        srv.wait_for_requests(2, 30)  # the step has run: its files are there
        status, j = s.json("GET", f"/v1/runs/{rid}/artifacts")
        assert status == 200, j
        assert {f["path"] for f in j["artifacts"]} >= {"early.txt", "link", "up"}, j
        status, _, body = s.request("GET", f"/v1/runs/{rid}/artifacts/early.txt")
        assert status == 200 and body == b"so far"
        for bad in ("link", "up/trace.jsonl", "../input/sales.csv", "..%2f..%2fetc/passwd"):
            status, _, body = s.request("GET", f"/v1/runs/{rid}/artifacts/{bad}")
            assert status in (400, 403, 404), (bad, status, body)
            assert b"root:" not in body
        status, j = s.json("GET", f"/v1/runs/{rid}/archive")
        assert status == 409 and "once it ends" in j["error"]["message"], j
        assert s.json("POST", f"/v1/runs/{rid}/cancel")[0] == 202
        assert wait_end(s, rid, timeout=20)["status"] == "cancelled"
        srv.stop()
    status, _, body = s.request("GET", f"/v1/runs/{rid}/artifacts/early.txt")
    assert status == 200 and body == b"so far"


def test_a_going_runs_output_swapped_for_a_link(serve):
    """The jail swaps output/ itself for a link to the host's /etc while the
    run goes: the server never lists or serves through it (output/ is opened
    beneath the workspace without following a link, so there is no moment
    between a check and an open for a swap to slip into either)."""
    s = serve()
    code = "import os\nos.rename('output', 'was-output')\nos.symlink('/etc', 'output')\nprint('swapped')\n"
    turns = [tool_call("run_python", code=code), text("never") | {"delay": 30}]
    with ScriptedServer(turns) as srv:
        rid = start_run(s, srv)
        srv.wait_for_requests(2, 30)
        for path in ("", "/passwd", "/hostname"):
            status, _, body = s.request("GET", f"/v1/runs/{rid}/artifacts{path}")
            assert status == 404, (path, status, body)
            assert b"root:" not in body
        assert s.json("POST", f"/v1/runs/{rid}/cancel")[0] == 202
        assert wait_end(s, rid, timeout=20)["status"] == "cancelled"
        srv.stop()
    status, _, body = s.request("GET", f"/v1/runs/{rid}/artifacts/passwd")
    assert status in (404, 410) and b"root:" not in body, (status, body)


def test_bad_requests(serve):
    s = serve()
    cases = [
        ({}, "task"),
        ({"task": "x", "model": {"model": "replay:/etc/passwd"}}, "model"),
        ({"task": "x", "model": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}, "bogus": 1}, "body"),
        ({"task": "x", "model": {"model": "m", "base_url": "http://127.0.0.1:9/v1"},
          "inputs": [{"path": "../x", "content_base64": "eA=="}]}, None),
        ({"task": "x", "model": {"model": "m", "base_url": "http://127.0.0.1:9/v1"},
          "limits": {"memory": "1T"}}, "limits"),
        ({"task": "x", "model": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}, "review": "lax"}, "review"),
    ]
    for body, field in cases:
        status, j = s.json("POST", "/v1/runs", body)
        assert status == 400, (body, j)
        assert j["error"]["kind"] == "usage"
        if field:
            assert j["error"].get("field") == field, (body, j)
    # a bad request with a key: the key in no part of the answer
    status, h, data = s.request("POST", "/v1/runs", {"task": "x", "model": {"base_url": "http://127.0.0.1:9/v1",
                                                                           "model": "m"}, "review": "lax"},
                                headers={"X-Model-Api-Key": HEADER_KEY})
    assert status == 400 and HEADER_KEY not in data.decode() + str(h.items())
    assert s.json("GET", "/v1/runs") == (200, {"runs": []})
    assert s.request("PUT", "/v1/runs")[0] == 405
    assert s.request("GET", "/v1/runs", token=False)[0] == 401


def test_wrk_list_runs(serve, tmp_path):
    wrk = shutil.which("wrk")
    if wrk is None:
        pytest.skip("wrk is not installed (apt-get install wrk)")
    s = serve("--max-rate", "100000")
    r = subprocess.run([wrk, "-t2", "-c8", "-d3s", "-H", f"Authorization: Bearer {s.token}",
                        f"http://127.0.0.1:{s.port}/v1/runs"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Non-2xx" not in r.stdout, r.stdout
    rps = float(next(x for x in r.stdout.splitlines() if x.startswith("Requests/sec:")).split()[1])
    print(f"wrk GET /v1/runs: {rps:.0f} req/s")
    assert rps > 100


def test_a_slow_client_is_dropped_never_the_run(serve):
    """A follower that reads nothing: the run goes on at its own pace; the
    client, once it reads, finds `event: dropped` naming the last event it
    has, and resumes from there with Last-Event-ID to run_end.  The same
    over a WebSocket: every event to the last it has, a "dropped" message,
    a close (1008)."""
    import socket
    import websocket
    s = serve()
    # a 7 MB answer: in model_reply and run_end, more than a stalled
    # socket's buffers and the follower's 1 MiB take
    turns = [text("z" * 7_000_000) | {"stream": {"chunk_content": 1 << 20}}]
    with ScriptedServer(turns) as srv:
        rid = start_run(s, srv)
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(("127.0.0.1", s.port))
        slow.sendall(f"GET /v1/runs/{rid}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     f"Authorization: Bearer {s.token}\r\n\r\n".encode())
        # and one over a WebSocket
        slow_ws = websocket.WebSocket(sockopt=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)])
        slow_ws.connect(f"ws://127.0.0.1:{s.port}/v1/runs/{rid}/events",
                        header=[f"Authorization: Bearer {s.token}"], timeout=60)
        t0 = time.time()
        j = wait_end(s, rid, timeout=120)
        took = time.time() - t0
        srv.assert_ok()
    assert j["status"] == "answered", j
    # the run did not wait for the client (its 5 s of grace would show)
    fast = sse(s, rid)
    assert fast[-1][1] == "run_end"
    time.sleep(6)  # past the grace: the slow client is dropped
    slow.settimeout(30)
    got = b""
    while True:
        b = slow.recv(1 << 20)
        got += b
        if not b or got.endswith(b"\r\n0\r\n\r\n"):  # the last chunk: the connection stays open
            break
    slow.close()
    assert b"event: dropped" in got, got[-500:]
    last = int(got.split(b"event: dropped\ndata: ")[1].split(b"\n")[0].decode().split('"last_event_id":')[1]
               .split(",")[0])
    assert 0 < last < len(fast)
    rest = sse(s, rid, headers={"Last-Event-ID": str(last)})
    assert rest == fast[last:]
    got = []
    while True:
        op, frame = slow_ws.recv_data(control_frame=True)
        if op == websocket.ABNF.OPCODE_CLOSE:
            code = int.from_bytes(frame[:2], "big")
            break
        got.append(json.loads(frame))
    slow_ws.close()
    assert code == 1008 and got[-1]["type"] == "dropped", (code, got[-1:])
    ws_last = got[-1]["data"]["last_event_id"]
    assert 0 < ws_last < len(fast) and [(m["id"], m["type"]) for m in got[:-1]] == \
        [(e[0], e[1]) for e in fast[:ws_last]]
    print(f"run with a stalled follower: {took:.1f} s; dropped after event {last} of {len(fast)}")


def test_inputs_from_a_sandbox(serve):
    """{"sandbox", "path"}: a file of the token's own sandbox, staged at
    input/PATH; a symlink out, another token's sandbox, a missing file are
    refused."""
    tokens = {"alice": "a" * 32, "bob": "b" * 32}
    s = serve(tokens=tokens)
    sid = s.create()
    assert s.request("PUT", f"/v1/sandboxes/{sid}/files/data/x.csv", b"k,v\nsandboxed,7\n")[0] == 201
    s.exec(sid, "import os; os.symlink('/etc/shadow', '/workspace/link.csv')")
    code = "print(open('input/data/x.csv').read())\n"
    with ScriptedServer([tool_call("run_python", code=code), text("ok")]) as srv:
        model = {"base_url": srv.base_url, "model": "gpt-test"}
        for bad, who in (({"sandbox": sid, "path": "link.csv"}, True), ({"sandbox": sid, "path": "nope.csv"}, True),
                         ({"sandbox": sid, "path": "../x"}, True), ({"sandbox": sid, "path": "data/x.csv"}, tokens["bob"]),
                         ({"sandbox": "0" * 12, "path": "data/x.csv"}, True)):
            status, j = s.json("POST", "/v1/runs", {"task": "t", "model": model, "inputs": [bad]}, token=who)
            assert status in (400, 404) and j["error"]["field"] == "inputs", (bad, j)
        # an uploaded input's path: checked, the message naming the input,
        # never a file of the server's
        for path in ("../up.csv", "/etc/x", "a/../../b", "", "."):
            status, j = s.json("POST", "/v1/runs", {"task": "t", "model": model, "inputs": [
                {"path": path, "content_base64": "eA=="}]})
            assert status == 400 and j["error"]["field"] == "inputs", (path, j)
            assert "inputs[0].path" in j["error"]["message"] and str(s.data) not in j["error"]["message"], j
            assert "/tmp" not in j["error"]["message"], j
        rid = start_run(s, srv, {"inputs": [{"sandbox": sid, "path": "data/x.csv"}]})
        j = wait_end(s, rid)
        srv.assert_ok()
    assert j["status"] == "answered", j
    tr = next(e[2] for e in sse(s, rid) if e[1] == "tool_result")
    assert "sandboxed,7" in tr["content"], tr
    assert not [p for p in os.listdir(s.data) if p.startswith("corral-ws")
                for q in os.listdir(s.data / p) if q.startswith("run-staging")]


def test_model_urls_a_run_may_name(serve, monkeypatch):
    """A caller's base_url is the server's own endpoint, or one it was
    started to allow: else a token could make the server post anywhere it
    reaches."""
    with ScriptedServer(scenario()) as own, ScriptedServer(scenario()) as allowed:
        monkeypatch.setenv("OPENAI_BASE_URL", own.base_url)
        s = serve(model_urls=(allowed.base_url + "/",))
        for url in ("http://127.0.0.1:9/v1", "http://169.254.169.254/latest", own.base_url + "/../x"):
            status, j = s.json("POST", "/v1/runs", {"task": "x", "model": {"base_url": url, "model": "m"}})
            assert status == 400 and j["error"]["field"] == "model", j
            assert "not an endpoint this server may call" in j["error"]["message"], j
        for srv in (own, allowed):
            j = wait_end(s, start_run(s, srv))
            assert j["status"] == "answered", j
            srv.assert_ok()
        # the server's key goes to its own endpoint only
        assert own.request_headers[0]["authorization"] == f"Bearer {KEY}"
        assert KEY not in str(allowed.request_headers[0].get("authorization"))


def ws_events(s, rid, query="", on_event=None, headers=None):
    """[(id, type, data)] of .../events over a WebSocket, to its close;
    and the close frame's code."""
    import websocket  # python3-websocket: a client written by others
    h = [f"Authorization: Bearer {s.token}"] + [f"{k}: {v}" for k, v in (headers or {}).items()]
    ws = websocket.create_connection(f"ws://127.0.0.1:{s.port}/v1/runs/{rid}/events{query}", header=h, timeout=60)
    out = []
    while True:
        op, frame = ws.recv_data(control_frame=True)
        if op == websocket.ABNF.OPCODE_CLOSE:
            code = int.from_bytes(frame[:2], "big")
            break
        if op != websocket.ABNF.OPCODE_TEXT:
            continue
        m = json.loads(frame)
        ev = (m.get("id"), m["type"], m["data"])
        out.append(ev)
        if on_event:
            on_event(ev)
    ws.close()
    return out, code


def test_a_token_has_its_own_cap(serve):
    """--max-runs-per-token: a token at its cap is answered 429 with
    Retry-After, and another token still starts runs."""
    tokens = {"alice": "a" * 32, "bob": "b" * 32}
    s = serve("--max-runs", "3", "--max-runs-per-token", "1", tokens=tokens)
    with ScriptedServer([text("never") | {"delay": 30}, text("never") | {"delay": 30}]) as srv:
        rid = start_run(s, srv)
        body = {"task": "x", "model": {"base_url": srv.base_url, "model": "gpt-test"}}
        status, h, data = s.request("POST", "/v1/runs", body)
        j = json.loads(data)
        assert status == 429 and h["Retry-After"], j
        assert j["error"]["kind"] == "limit" and "this token" in j["error"]["message"], j
        bob = start_run(s, srv, token=tokens["bob"])
        srv.wait_for_requests(2, 30)
        assert s.json("POST", f"/v1/runs/{rid}/cancel")[0] == 202
        assert s.json("POST", f"/v1/runs/{bob}/cancel", token=tokens["bob"])[0] == 202
        wait_end(s, rid, timeout=20)
        srv.stop()
    assert 'corral_rejected_requests_total{reason="runs_per_token"} 1' in s.request("GET", "/metrics")[2].decode()


def test_the_list_in_pages_and_the_retention(serve):
    """GET /v1/runs?limit=&after=: newest first, "next" while more follow;
    --run-retention N keeps the newest N finished runs (removed as runs end
    and at start), --run-retention-age removes older ones at start."""
    s = serve("--run-retention", "3")
    with ScriptedServer([text(f"answer {i}") for i in range(5)]) as srv:
        made = []
        for _ in range(5):
            made.append(start_run(s, srv))
            wait_end(s, made[-1])
        srv.assert_ok()
    newest = made[::-1]
    status, j = s.json("GET", "/v1/runs")
    assert status == 200 and [r["id"] for r in j["runs"]] == newest[:3] and "next" not in j, j
    assert sorted(os.listdir(s.data / "runs")) == sorted(newest[:3])
    status, p1 = s.json("GET", "/v1/runs?limit=2")
    assert [r["id"] for r in p1["runs"]] == newest[:2] and p1["next"] == newest[1], p1
    status, p2 = s.json("GET", f"/v1/runs?limit=2&after={p1['next']}")
    assert [r["id"] for r in p2["runs"]] == newest[2:3] and "next" not in p2, p2
    # a cursor whose run has gone: the runs older than it
    assert [r["id"] for r in s.json("GET", f"/v1/runs?after={newest[0]}")[1]["runs"]] == newest[1:3]
    assert [r["id"] for r in s.json("GET", f"/v1/runs?after={newest[3]}")[1]["runs"]] == []
    for bad in ("limit=0", "limit=1001", "limit=x", "after=../x"):
        status, j = s.json("GET", f"/v1/runs?{bad}")
        assert status == 400 and j["error"]["kind"] == "usage", (bad, j)
    s.stop()
    s2 = serve("--run-retention", "1")
    assert [r["id"] for r in s2.json("GET", "/v1/runs")[1]["runs"]] == newest[:1]
    assert os.listdir(s2.data / "runs") == newest[:1]
    s2.stop()
    time.sleep(1.2)
    s3 = serve("--run-retention-age", "1s")
    assert s3.json("GET", "/v1/runs") == (200, {"runs": []})
    assert os.listdir(s3.data / "runs") == []


def test_runs_at_the_servers_stop(serve):
    """SIGTERM: a run that ends within --run-grace ends as it would (its
    follower sees its run_end); one that does not is cancelled, its record
    saying so, and a restarted server lists both."""
    s = serve("--run-grace", "2")
    with ScriptedServer([text("quick") | {"delay": 0.8}]) as quick, \
            ScriptedServer([text("never") | {"delay": 30}]) as slow:
        a = start_run(s, quick)
        b = start_run(s, slow)
        quick.wait_for_requests(1, 30)
        slow.wait_for_requests(1, 30)
        seen = []
        t = threading.Thread(target=lambda: seen.extend(sse(s, a)))
        t.start()
        time.sleep(0.2)
        t0 = time.time()
        rc, _ = s.stop()
        took = time.time() - t0
        t.join(30)
        slow.stop()
    assert rc == 0
    assert 1.5 < took < 15, took  # the grace, not more
    assert seen and seen[-1][1] == "run_end" and seen[-1][2]["status"] == "answered"
    s2 = serve()
    runs = {r["id"]: r for r in s2.json("GET", "/v1/runs")[1]["runs"]}
    assert runs[a]["status"] == "answered" and runs[a]["answer"] == "quick", runs[a]
    assert runs[b]["status"] == "cancelled" and runs[b]["reason"] == "cancelled: server stopping", runs[b]


def test_run_tdd_mode_in_the_body(serve):
    """"mode": "tdd" in a run's body: the tests run in the jail after the
    code step and the result carries tdd; a bad mode is 400 with its field."""
    s = serve()
    test = "from solution import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    turns = [tool_call("write_file", path="tests/test_solution.py", content=test),
             tool_call("write_file", path="solution.py", content="def add(a, b):\n    return a + b\n"),
             tool_call("run_python", code="from solution import add\nprint(add(2, 3))")
             | {"expect": {"contains": ["all 1 passed"]}},
             tool_call("final_answer", answer="5") | {"expect": {"contains": ["give your final answer"]}}]
    with ScriptedServer(turns) as srv:
        rid = start_run(s, srv, {"task": "add, test first", "mode": "tdd", "verify": False})
        j = wait_end(s, rid)
    srv.assert_ok()
    assert j["status"] == "answered" and j["tdd"]["passed"] is True and j["tdd"]["checks"] == 2, j
    for body, field in [({"mode": "pair"}, "mode"), ({"mode": 3}, "mode"),
                        ({"tdd_test_changes": "yes"}, "tdd_test_changes")]:
        b = {"task": "x", "model": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}, **body}
        status, e = s.json("POST", "/v1/runs", b)
        assert status == 400 and e["error"].get("field") == field, (body, e)


def test_run_modes_in_the_body(serve):
    """The modes of docs/modes.md as fields of a run: the check sends the
    first answer back, the plan rides with the task, and the result carries
    both; bad values are 400 with their field."""
    s = serve()
    side = {"verify": [text(json.dumps({"complete": False, "missing": ["the unit"]})),
                       text(json.dumps({"complete": True, "missing": []}))],
            "plan": [text("1. Multiply.")]}
    turns = [text("42") | {"expect": {"contains": ["1. Multiply."]}},
             text("42 apples") | {"expect": {"contains": ["the unit"]}}]
    with ScriptedServer(turns, side=side) as srv:
        rid = start_run(s, srv, {"task": "six times seven apples", "plan": True, "verify_rounds": 1,
                                 "compact": False, "reproduce": True})
        j = wait_end(s, rid)
    srv.assert_ok()
    assert j["status"] == "answered" and j["answer"] == "42 apples", j
    assert j["verification"]["sent_back"] == 1 and j["planning"]["plans"] == 1
    # no code ran: the 42 of the answer is a number no step computed
    assert j["reproduction"]["result"] == "not_reproduced" and j["reproduction"]["unsupported_numbers"] == ["42"]
    for body, field in [({"verify": "yes"}, "verify"), ({"verify_rounds": 21}, "verify_rounds"),
                        ({"verifier_model": "replay:/etc/passwd"}, "verifier_model"),
                        ({"replan_every": -1}, "replan_every"), ({"compact": 1}, "compact"),
                        ({"reproduce": "no"}, "reproduce")]:
        b = {"task": "x", "model": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}, **body}
        status, e = s.json("POST", "/v1/runs", b)
        assert status == 400 and e["error"].get("field") == field, (body, e)
