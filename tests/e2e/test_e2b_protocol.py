"""E2B's protocol in corral serve (docs/e2b.md), at the wire: what E2B's own
SDK does not exercise in tests/e2b/ (it never sends a wrong key, a custom
template or a malformed envelope): the gate's answers, refusals of what
corral does not do, IPython's syntax, multipart uploads of several files,
command time limits, and a sandbox's E2B timeout."""
import http.client
import json
import os
import secrets
import struct
import time

import pytest

from test_serve import Server, serve  # noqa: F401 (the fixture)

KEY = "e2b_" + "1" * 40
OTHER = "e2b_" + "2" * 40


def e2b_server(serve):  # noqa: F811
    return serve(tokens={"a": KEY, "b": OTHER})


def call(s, method, path, body=None, headers=None, timeout=60):
    """(status, headers, body bytes) of one request; body: dict -> JSON."""
    h = dict(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=timeout)
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, r.headers, data


def create(s, key=KEY, **body):
    status, _, data = call(s, "POST", "/v2/sandboxes", {"templateID": "code-interpreter-v1", **body},
                           {"X-API-KEY": key})
    assert status == 201, data
    return json.loads(data)


def inside(made, port=49999):
    return {"E2b-Sandbox-Id": made["sandboxID"], "E2b-Sandbox-Port": str(port),
            "X-Access-Token": made["envdAccessToken"]}


def execute(s, made, code, **body):
    status, _, data = call(s, "POST", "/execute", {"code": code, **body}, inside(made))
    assert status == 200, data
    return [json.loads(line) for line in data.decode().splitlines() if line]


def envelopes(data):
    out = []
    while data:
        flags, n = struct.unpack(">BI", data[:5])
        out.append((flags, json.loads(data[5:5 + n])))
        data = data[5 + n:]
    return out


def test_the_gate(serve):  # noqa: F811
    s = e2b_server(serve)
    for key, why in ((None, b"API key is needed"), ("e2b_" + "9" * 40, b"not one of this server")):
        status, _, data = call(s, "POST", "/v2/sandboxes", {}, {"X-API-KEY": key} if key else {})
        assert status == 401 and json.loads(data)["code"] == 401 and why in data, data
    made = create(s)
    assert made["envdVersion"] and made["envdAccessToken"] == made["trafficAccessToken"]
    assert len(made["envdAccessToken"]) == 64
    # In the sandbox: its own token, not the API key, and not another's.
    h = inside(made)
    for token in (None, KEY, secrets.token_hex(32)):
        hh = dict(h)
        del hh["X-Access-Token"]
        if token:
            hh["X-Access-Token"] = token
        status, _, data = call(s, "POST", "/execute", {"code": "1"}, hh)
        assert status == 401, (token, data)
    # /contexts carries only the traffic token.
    hh = {k: v for k, v in h.items() if k != "X-Access-Token"}
    hh["E2B-Traffic-Access-Token"] = made["trafficAccessToken"]
    assert call(s, "GET", "/contexts", None, hh)[0] == 200
    # Another token's key sees none of it; an unknown sandbox is gone (502).
    sid = made["sandboxID"]
    assert call(s, "GET", f"/sandboxes/{sid}", None, {"X-API-KEY": OTHER})[0] == 404
    assert call(s, "DELETE", f"/sandboxes/{sid}", None, {"X-API-KEY": OTHER})[0] == 404
    assert [x["sandboxID"] for x in json.loads(call(s, "GET", "/v2/sandboxes", None, {"X-API-KEY": OTHER})[2])] == []
    assert [x["sandboxID"] for x in json.loads(call(s, "GET", "/v2/sandboxes", None, {"X-API-KEY": KEY})[2])] == [sid]
    h2 = dict(h, **{"E2b-Sandbox-Id": "0" * len(sid)})
    assert call(s, "POST", "/execute", {"code": "1"}, h2)[0] == 502
    # The native API does not take an E2B sandbox's access token as a token.
    assert call(s, "GET", "/v1/sandboxes", None, {"Authorization": f"Bearer {made['envdAccessToken']}"})[0] == 401
    assert call(s, "DELETE", f"/sandboxes/{sid}", None, {"X-API-KEY": KEY})[0] == 204
    assert call(s, "POST", "/execute", {"code": "1"}, h)[0] == 502


def test_what_corral_does_not_do_is_refused(serve):  # noqa: F811
    s = e2b_server(serve)
    k = {"X-API-KEY": KEY}
    for body, field in (({"templateID": "my-custom"}, b"not served here"),
                        ({"allow_internet_access": True}, b"no network"),
                        ({"network": {"allowOut": ["example.com"]}}, b"network"),
                        ({"autoPause": True}, b"does not pause"),
                        ({"timeout": 0}, b"timeout"),
                        ({"envVars": {"A=B": "x"}}, b"envVars")):
        status, _, data = call(s, "POST", "/v2/sandboxes", body, k)
        assert status == 400 and field in data, (body, data)
    made = create(s, allow_internet_access=False)
    h = inside(made, 49983)
    status, _, data = call(s, "POST", "/execute", {"code": "1", "language": "r"}, inside(made))
    assert status == 400 and b"python and bash" in data
    status, _, data = call(s, "GET", "/files?path=/etc/passwd", None, h)
    assert status == 400 and b"outside the sandbox's files" in data, data
    status, _, data = call(s, "POST", "/process.Process/SendInput", {"process": {"pid": 5}},
                           dict(h, **{"Connect-Protocol-Version": "1"}))
    assert status == 501 and json.loads(data)["code"] == "unimplemented", data
    status, _, data = call(s, "POST", "/filesystem.Filesystem/WatchDir", {"path": "/home/user"}, h)
    assert status == 501 and json.loads(data)["code"] == "unimplemented"
    status, _, data = call(s, "POST", "/filesystem.Filesystem/Stat", {"path": "/home/user/none"}, h)
    assert status == 404 and json.loads(data)["code"] == "not_found"
    status, _, data = call(s, "POST", "/process.Process/Start", b"\x00\x00\x00\x00\x09{\"x\":1}",
                           dict(h, **{"Content-Type": "application/connect+json"}))
    assert status == 400 and b"one uncompressed envelope" in data, data
    status, _, data = call(s, "POST", "/sandboxes/" + made["sandboxID"] + "/pause", {}, {"X-API-KEY": KEY})
    assert status == 501, data


def test_ipython_syntax(serve):  # noqa: F811
    s = e2b_server(serve)
    made = create(s)
    ev = execute(s, made, "!echo from the shell\nx = 2\n%matplotlib inline\nx * 21")
    assert [e["text"] for e in ev if e["type"] == "stdout"] == ["from the shell\n"], ev
    assert [e["text"] for e in ev if e["type"] == "result"] == ["42"], ev
    assert ev[0] == {"type": "number_of_executions", "execution_count": 1} and ev[-1]["type"] == "end_of_execution"
    ev = execute(s, made, "%timeit x")
    err = [e for e in ev if e["type"] == "error"]
    assert err and err[0]["name"] == "UsageError" and "%timeit" in err[0]["value"], ev
    ev = execute(s, made, "%%bash\necho a; echo b >&2")
    assert [(e["type"], e["text"]) for e in ev if e["type"] in ("stdout", "stderr")] in \
        ([("stdout", "a\n"), ("stderr", "b\n")], [("stderr", "b\n"), ("stdout", "a\n")]), ev
    ev = execute(s, made, "'text'")
    assert [e["text"] for e in ev if e["type"] == "result"] == ["text"], "one pair of quotes less, as IPython's"
    stamps = [e["timestamp"] for e in execute(s, made, "print(1)") if e["type"] == "stdout"]
    assert stamps and stamps[0].endswith("Z"), "E2B's Python SDK reads a timestamp on every output event"


def test_files_as_multipart_and_the_file_system(serve):  # noqa: F811
    s = e2b_server(serve)
    made = create(s)
    h = inside(made, 49983)
    boundary = "corral" + secrets.token_hex(8)
    parts = []
    for name, content in (("/home/user/a.txt", b"A" * 70000), ("sub/b.bin", bytes(range(256)) * 3)):
        parts.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                     f"Content-Type: application/octet-stream\r\n\r\n".encode() + content + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    status, _, data = call(s, "POST", "/files?path=/home/user", body,
                           dict(h, **{"Content-Type": f"multipart/form-data; boundary={boundary}"}))
    assert status == 200, data
    assert json.loads(data) == [{"name": "a.txt", "type": "file", "path": "/home/user/a.txt"},
                                {"name": "b.bin", "type": "file", "path": "/home/user/sub/b.bin"}]
    assert call(s, "GET", "/files?path=a.txt", None, h)[2] == b"A" * 70000
    assert call(s, "GET", "/files?path=/home/user/sub/b.bin", None, h)[2] == bytes(range(256)) * 3
    ev = execute(s, made, "open('/home/user/sub/b.bin', 'rb').read() == bytes(range(256)) * 3")
    assert [e["text"] for e in ev if e["type"] == "result"] == ["True"]
    # A link out of the workspace is not followed.
    execute(s, made, "import os; os.symlink('/etc/passwd', '/home/user/out')")
    status, _, data = call(s, "GET", "/files?path=out", None, h)
    assert status in (400, 404) and b"root:" not in data, data
    rpc = dict(h, **{"Connect-Protocol-Version": "1"})
    status, _, data = call(s, "POST", "/filesystem.Filesystem/ListDir", {"path": "/home/user", "depth": 1}, rpc)
    entries = {e["name"]: e for e in json.loads(data)["entries"]}
    assert status == 200 and entries["a.txt"]["type"] == "FILE_TYPE_FILE" and entries["a.txt"]["size"] == "70000"
    assert entries["sub"]["type"] == "FILE_TYPE_DIRECTORY" and entries["out"]["type"] == "FILE_TYPE_SYMLINK"
    assert entries["out"]["symlinkTarget"] == "/etc/passwd" and ".corral" not in entries
    assert entries["a.txt"]["permissions"] == "-rw-r--r--" and entries["a.txt"]["modifiedTime"].endswith("Z")
    status, _, data = call(s, "POST", "/filesystem.Filesystem/Move",
                           {"source": "/home/user/a.txt", "destination": "/home/user/sub/c.txt"}, rpc)
    assert status == 200 and json.loads(data)["entry"]["path"] == "/home/user/sub/c.txt", data
    assert call(s, "POST", "/filesystem.Filesystem/MakeDir", {"path": "/home/user/sub"}, rpc)[0] == 409
    assert call(s, "POST", "/filesystem.Filesystem/Remove", {"path": "/home/user/sub"}, rpc)[0] == 200
    assert call(s, "POST", "/filesystem.Filesystem/Stat", {"path": "/home/user/sub"}, rpc)[0] == 404


def test_a_command_past_its_time_limit_is_killed(serve):  # noqa: F811
    s = e2b_server(serve)
    made = create(s)
    h = dict(inside(made, 49983), **{"Content-Type": "application/connect+json", "Connect-Timeout-Ms": "700"})
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "echo started; sleep 30"]}}).encode()
    t0 = time.monotonic()
    status, hdr, data = call(s, "POST", "/process.Process/Start", b"\0" + struct.pack(">I", len(msg)) + msg, h)
    assert status == 200 and hdr["Content-Type"] == "application/connect+json"
    frames = envelopes(data)
    assert time.monotonic() - t0 < 10
    assert frames[0][1]["event"]["start"]["pid"] > 1
    assert any(f[1].get("event", {}).get("data", {}).get("stdout") == "c3RhcnRlZAo=" for f in frames), frames
    assert frames[-1] == (2, {"error": {"code": "deadline_exceeded",
                                        "message": "the command ran past its time limit and was killed"}}), frames
    ev = execute(s, made, "import subprocess\nsubprocess.run(['pgrep', '-x', 'sleep']).returncode")
    assert [e["text"] for e in ev if e["type"] == "result"] == ["1"], "the command's sleep ran on"


def test_the_e2b_timeout_ends_the_sandbox(serve):  # noqa: F811
    s = e2b_server(serve)
    made = create(s, timeout=1)
    kept = create(s, timeout=60)
    t0 = time.monotonic()
    while call(s, "GET", f"/sandboxes/{made['sandboxID']}", None, {"X-API-KEY": KEY})[0] == 200 and \
            time.monotonic() - t0 < 10:
        time.sleep(0.2)
    assert 0.8 < time.monotonic() - t0 < 5
    assert call(s, "POST", "/execute", {"code": "1"}, inside(made))[0] == 502
    # setTimeout lengthens a sandbox's life.
    sid = kept["sandboxID"]
    assert call(s, "POST", f"/sandboxes/{sid}/timeout", {"timeout": 3600}, {"X-API-KEY": KEY})[0] == 204
    info = json.loads(call(s, "GET", f"/sandboxes/{sid}", None, {"X-API-KEY": KEY})[2])
    started = time.strptime(info["startedAt"][:19], "%Y-%m-%dT%H:%M:%S")
    ends = time.strptime(info["endAt"][:19], "%Y-%m-%dT%H:%M:%S")
    assert 3500 < time.mktime(ends) - time.mktime(started) < 3700, info
    assert info["state"] == "running" and info["templateID"] == "code-interpreter-v1"


def test_contexts_in_their_directories(serve):  # noqa: F811
    s = e2b_server(serve)
    made = create(s)
    h = inside(made)
    execute(s, made, "import os; os.makedirs(\"/home/user/it's $(here)\")")
    for language in ("python", "bash"):
        status, _, data = call(s, "POST", "/contexts", {"language": language, "cwd": "/home/user/it's $(here)"}, h)
        assert status == 200, data
        ctx = json.loads(data)
        code = "import os; os.getcwd()" if language == "python" else "pwd"
        ev = execute(s, made, code, context_id=ctx["id"])
        shown = [e["text"] for e in ev if e["type"] in ("result", "stdout")]
        assert shown == ["/home/user/it's $(here)" + ("\n" if language == "bash" else "")] or \
            shown == ["/workspace/it's $(here)"], (language, ev)
    status, _, data = call(s, "POST", "/contexts", {"cwd": "/nowhere"}, h)
    assert status == 400 and b"FileNotFoundError" in data, data
    assert call(s, "POST", "/execute", {"code": "1", "context_id": "no-such"}, h)[0] == 404
    # Only what ran is counted: the default context's second execution.
    assert execute(s, made, "1")[0] == {"type": "number_of_executions", "execution_count": 2}
