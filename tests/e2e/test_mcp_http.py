"""MCP's Streamable HTTP transport at /mcp in `corral serve` (docs/mcp.md,
"Streamable HTTP"), driven by a raw HTTP client for the protocol's edges:
sessions and their header, JSON and server-sent-event answers, 202 for
notifications, the statuses of what is refused (400, 401, 403, 404, 405,
503), cancellation, isolation between sessions, DELETE, the idle expiry,
and a shutdown that leaves nothing.  The official clients over the same
transport are tests/mcp/client.test.mjs's (tests/e2e/test_mcp.py)."""
import json
import os
import signal
import time

import pytest

from test_serve import Server, LIVE, alive, raw_request  # noqa: E402 (the same server harness)

LATEST = "2025-11-25"
INIT = {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "corral-raw-http", "version": "0"}}
BOTH = "application/json, text/event-stream"


@pytest.fixture
def serve(tmp_path):
    made = []

    def start(*args, **kw):
        d = tmp_path / f"s{len(made)}"
        d.mkdir()
        s = Server(d, *args, **kw)
        made.append(s)
        return s
    yield start
    for s in made:
        if s in LIVE:
            s.stop(signal.SIGKILL)


def post(s, msg, sid=None, accept=BOTH, headers=None, token=True, timeout=60):
    """(status, headers, body bytes) of a POST /mcp."""
    h = {"Accept": accept, "Content-Type": "application/json"}
    if sid:
        h["Mcp-Session-Id"] = sid
    h.update(headers or {})
    body = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
    return s.request("POST", "/mcp", body, token=token, headers=h, timeout=timeout)


def initialize(s, version=LATEST, **kw):
    status, h, body = post(s, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                               "params": dict(INIT, protocolVersion=version)}, **kw)
    assert status == 200, body
    sid = h["Mcp-Session-Id"]
    assert len(sid) == 64 and all(c in "0123456789abcdef" for c in sid), sid
    status, _, body = post(s, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid,
                           token=kw.get("token", True))
    assert status == 202 and body == b""
    return sid


def sse_events(data):
    """The JSON messages of a text/event-stream body."""
    out = []
    for item in data.decode().split("\n\n"):
        if not item.strip():
            continue
        fields = dict(line.split(": ", 1) for line in item.split("\n"))
        assert fields.get("event") == "message", item
        out.append(json.loads(fields["data"]))
    return out


def call(s, sid, name, args, id=1, accept=BOTH, meta=None, timeout=120):
    """A tools/call: (the response, the notifications before it)."""
    params = {"name": name, "arguments": args}
    if meta:
        params["_meta"] = meta
    status, h, body = post(s, {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}, sid,
                           accept=accept, timeout=timeout)
    assert status == 200, body
    if h["Content-Type"].startswith("text/event-stream"):
        msgs = sse_events(body)
        assert msgs and "method" not in msgs[-1], msgs
        return msgs[-1], msgs[:-1]
    assert h["Content-Type"] == "application/json"
    return json.loads(body), []


def py(s, sid, code, **kw):
    r, _ = call(s, sid, "run_python", {"code": code}, **kw)
    assert "result" in r, r
    return r["result"]


def rpc(s, sid, method, params=None, id=7, **kw):
    msg = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    status, h, body = post(s, msg, sid, **kw)
    return status, json.loads(body) if body else None


def test_a_session_json_and_sse(serve):
    """initialize, the tools, Python's state kept, a figure as an image, a
    failing step as isError; tools/call answered as events or JSON as the
    Accept header allows."""
    s = serve()
    status, h, body = post(s, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
    assert status == 200 and h["Content-Type"] == "application/json", body
    init = json.loads(body)
    assert init["id"] == 0 and init["result"]["protocolVersion"] == LATEST
    assert init["result"]["capabilities"]["tools"] is not None and init["result"]["serverInfo"]["name"] == "corral"
    sid = h["Mcp-Session-Id"]
    assert post(s, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)[0] == 202
    status, r = rpc(s, sid, "tools/list", {}, headers={"MCP-Protocol-Version": LATEST})
    assert status == 200 and sorted(t["name"] for t in r["result"]["tools"]) == [
        "list_files", "read_file", "reset_session", "run_python", "run_shell", "write_file"]
    assert rpc(s, sid, "ping", id="str-id")[1] == {"jsonrpc": "2.0", "id": "str-id", "result": {}}

    # SSE (the client accepts both): the response as an event, then the end.
    r, notes = call(s, sid, "run_python", {"code": "x = 6"}, id=1)
    assert r["id"] == 1 and not r["result"].get("isError") and notes == []
    # JSON only.
    r, _ = call(s, sid, "run_python", {"code": "x * 7"}, id=2, accept="application/json")
    assert r["id"] == 2 and r["result"]["structuredContent"]["value"] == "42"
    fig = py(s, sid, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])")
    images = [c for c in fig["content"] if c["type"] == "image"]
    assert len(images) == 1 and images[0]["mimeType"] == "image/png" and fig["structuredContent"]["figures"] == 1
    bad = py(s, sid, "1/0")
    assert bad["isError"] is True and bad["structuredContent"]["error"]["name"] == "ZeroDivisionError"
    # The caller's errors stay JSON-RPC errors, answered at once as JSON.
    status, r = rpc(s, sid, "tools/call", {"name": "no_such_tool", "arguments": {}})
    assert status == 200 and r["error"]["code"] == -32602
    status, r = rpc(s, sid, "no/such/method", {})
    assert status == 200 and r["error"]["code"] == -32601
    # A response (to a request the server never sent) is accepted too.
    assert post(s, {"jsonrpc": "2.0", "id": 99, "result": {}}, sid)[0] == 202


def test_the_protocol_edges(serve, tmp_path):
    a, b = "tok-a-0123456789abcdef", "tok-b-0123456789abcdef"
    s = serve(tokens={"a": a, "b": b})
    sid = initialize(s)
    ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
    # No session header: 400 with a JSON-RPC error for the request's id;
    # server/discover (a 2026-07-28 client's probe) "method not found".
    status, _, body = post(s, ping)
    assert status == 400 and json.loads(body)["id"] == 5 and json.loads(body)["error"]["code"] == -32600
    status, _, body = post(s, {"jsonrpc": "2.0", "id": "server-discover-probe-1", "method": "server/discover",
                               "params": {}}, headers={"MCP-Protocol-Version": "2026-07-28"})
    assert status == 400 and json.loads(body)["error"]["code"] == -32601
    assert post(s, {"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 400
    # An unknown session, or another token's: 404 (-32001).
    status, _, body = post(s, ping, "0" * 64)
    assert status == 404 and json.loads(body)["error"]["code"] == -32001 and json.loads(body)["id"] == 5
    assert post(s, ping, sid, token=b)[0] == 404
    assert post(s, ping, sid)[0] == 200
    # Malformed JSON: 400, -32700, id null; a batch or a non-message: -32600.
    status, _, body = post(s, b'{"jsonrpc": "2.0", "id": 1, "method": ', sid)
    j = json.loads(body)
    assert status == 400 and j["error"]["code"] == -32700 and j["id"] is None
    assert post(s, b"", sid)[0] == 400
    status, _, body = post(s, [ping], sid)
    assert status == 400 and json.loads(body)["error"]["code"] == -32600
    status, _, body = post(s, {"id": 1, "method": "ping"}, sid)
    assert status == 400 and json.loads(body)["error"]["code"] == -32600
    # MCP-Protocol-Version: a revision served passes, another is 400.
    assert post(s, ping, sid, headers={"MCP-Protocol-Version": "2025-06-18"})[0] == 200
    assert post(s, ping, sid, headers={"MCP-Protocol-Version": "1999-01-01"})[0] == 400
    # Tokens: none or a wrong one is 401, whatever the session.
    assert post(s, ping, sid, token=False)[0] == 401
    assert post(s, ping, sid, token="not-a-token-0123456789")[0] == 401
    # Origin: another site's page is refused (DNS rebinding); the server's own is not.
    assert post(s, ping, sid, headers={"Origin": "http://evil.example"})[0] == 403
    assert post(s, ping, sid, headers={"Origin": f"http://127.0.0.1:{s.port}"})[0] == 200
    assert post(s, ping, sid, headers={"Host": "evil.example"})[0] == 403
    # No stream of the server's own.
    status, h, _ = s.request("GET", "/mcp", headers={"Mcp-Session-Id": sid, "Accept": "text/event-stream"})
    assert status == 405 and h["Allow"] == "POST, DELETE"
    # DELETE: another token's is not found; then the session is gone.
    assert s.request("DELETE", "/mcp")[0] == 400
    assert s.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid}, token=b)[0] == 404
    assert s.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid})[0] == 200
    assert post(s, ping, sid)[0] == 404
    assert s.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid})[0] == 404
    # A body over the server's cap: refused from its length, before it is read.
    line, _ = raw_request(s, f"POST /mcp HTTP/1.1\r\nExpect: 100-continue\r\nMcp-Session-Id: {sid}\r\n"
                             f"Content-Length: {2 << 20}\r\n", b" " * (2 << 20))
    assert line.startswith("HTTP/1.1 413"), line


def test_sessions_are_isolated_and_deleted(serve):
    """Each session its own interpreter and workspace; DELETE removes both
    (its temporary workspace leaves the server's TMPDIR)."""
    s = serve()
    one = initialize(s)
    two = initialize(s)
    assert one != two
    assert py(s, one, "secret = 41; secret + 1")["structuredContent"]["value"] == "42"
    r = py(s, two, "secret")
    assert r["isError"] and "NameError" in r["structuredContent"]["error"]["name"]
    w, _ = call(s, one, "write_file", {"path": "mine.txt", "content": "one's"})
    assert not w["result"].get("isError"), w
    r, _ = call(s, two, "read_file", {"path": "mine.txt"})
    assert r["result"]["isError"] is True
    holders = [d for d in s.tmp.iterdir() if (d / "mine.txt").exists()]
    assert len(holders) == 1, list(s.tmp.iterdir())
    assert s.request("DELETE", "/mcp", headers={"Mcp-Session-Id": one})[0] == 200
    deadline = time.time() + 10
    while time.time() < deadline and holders[0].exists():
        time.sleep(0.05)
    assert not holders[0].exists(), "the deleted session's workspace is still there"
    assert py(s, two, "1 + 1")["structuredContent"]["value"] == "2"


def test_cancel_stops_the_call(serve):
    """A tools/call with a progress token streams progress; a
    notifications/cancelled (on another connection) stops the step, its
    stream ends without an answer, and the next call runs at once with the
    session's state."""
    s = serve()
    sid = initialize(s)
    py(s, sid, "kept = 1234")
    c = s.conn(timeout=60)
    c.request("POST", "/mcp", body=json.dumps({
        "jsonrpc": "2.0", "id": 11, "method": "tools/call",
        "params": {"name": "run_python", "arguments": {"code": "import time; time.sleep(60)"},
                   "_meta": {"progressToken": "tok-11"}}}),
        headers={"Authorization": f"Bearer {s.token}", "Accept": BOTH, "Mcp-Session-Id": sid})
    resp = c.getresponse()
    assert resp.status == 200 and resp.headers["Content-Type"] == "text/event-stream"
    buf = b""
    while b"\n\n" not in buf:
        chunk = resp.read1(65536)
        assert chunk, "the stream ended before a progress event"
        buf += chunk
    first = sse_events(buf.split(b"\n\n", 1)[0] + b"\n\n")[0]
    assert first["method"] == "notifications/progress" and first["params"]["progressToken"] == "tok-11"
    t0 = time.monotonic()
    status, _, _ = post(s, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": 11, "reason": "test"}}, sid)
    assert status == 202
    rest = buf.split(b"\n\n", 1)[1] + resp.read()
    assert time.monotonic() - t0 < 5, "the cancelled call's stream did not end"
    assert all("method" in m for m in sse_events(rest)), "a cancelled request was answered"
    c.close()
    t1 = time.monotonic()
    r = py(s, sid, "kept + 1")
    assert r["structuredContent"]["value"] == "1235", r
    assert time.monotonic() - t1 < 5, "the cancelled step went on running"


def test_the_session_cap_and_the_idle_expiry(serve):
    s = serve("--max-mcp-sessions", "2", "--mcp-idle-timeout", "2")
    one = initialize(s)
    two = initialize(s)
    status, h, body = post(s, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
    assert status == 503 and h["Retry-After"] and json.loads(body)["error"]["code"] == -32000, body
    assert s.request("DELETE", "/mcp", headers={"Mcp-Session-Id": one})[0] == 200
    three = initialize(s)
    # A call keeps its session alive past the idle time; meanwhile the
    # unused one ends.
    r = py(s, three, "import time; time.sleep(3); 3")
    assert r["structuredContent"]["value"] == "3"
    assert post(s, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, two)[0] == 404, "the idle session lives on"
    # Then the other, unused in its turn (watched without touching it).
    deadline = time.time() + 10
    while time.time() < deadline and "corral_mcp_sessions 0" not in s.request("GET", "/metrics")[2].decode():
        time.sleep(0.2)
    assert post(s, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, three)[0] == 404, "the idle session lives on"
    # Their room is free again.
    initialize(s)
    initialize(s)


def test_the_per_token_session_cap(serve):
    """One token cannot take every MCP session: past its own cap its next
    initialize is 429 (with Retry-After, saying what to do) while another
    token still gets one; an ended session gives the token its room back."""
    a, b = "a" * 20, "b" * 20
    s = serve("--max-mcp-sessions-per-token", "2", tokens={"a": a, "b": b})
    first = initialize(s, token=a)
    initialize(s, token=a)
    status, h, body = post(s, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}, token=a)
    e = json.loads(body)["error"]
    assert status == 429 and h["Retry-After"] and e["code"] == -32000, body
    assert "this token holds its most MCP sessions (2)" in e["message"] and "DELETE /mcp" in e["message"], e
    initialize(s, token=b)
    initialize(s, token=b)
    assert s.request("DELETE", "/mcp", token=a, headers={"Mcp-Session-Id": first})[0] == 200
    initialize(s, token=a)
    metrics = s.request("GET", "/metrics")[2].decode()
    assert "corral_mcp_sessions 4" in metrics, metrics
    assert 'reason="mcp_sessions_per_token"' in metrics, metrics


def test_shutdown_ends_every_session(serve):
    """SIGTERM with a call running: the server exits soon, no process of
    its own is left, and the sessions' temporary workspaces are gone."""
    s = serve()
    sid = initialize(s)
    w, _ = call(s, sid, "write_file", {"path": "here.txt", "content": "x"})
    assert not w["result"].get("isError"), w
    c = s.conn(timeout=60)
    c.request("POST", "/mcp", body=json.dumps({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "run_python", "arguments": {"code": "import time; time.sleep(60)"}}}),
        headers={"Authorization": f"Bearer {s.token}", "Accept": BOTH, "Mcp-Session-Id": sid})
    time.sleep(1)
    t0 = time.monotonic()
    rc, kids = s.stop(signal.SIGTERM)
    assert rc == 0 and time.monotonic() - t0 < 20, (rc, time.monotonic() - t0)
    assert not alive(kids - {s.proc.pid}), f"left running: {alive(kids)}"
    left = [d for d in s.tmp.iterdir() if (d / "here.txt").exists()]
    assert not left, left
    c.close()
