"""Self-tests of the scripted model server, with http.client as the only client."""

import http.client
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from modelserver import DIALECTS, ScriptedServer, text, tool_call

HERE = os.path.dirname(os.path.abspath(__file__))
USER = [{"role": "user", "content": "compute 1/0"}]


def call(srv, body=None, *, headers=None, method="POST", path="/v1/chat/completions",
         raw=None, conn=None):
    """One request -> (status, headers, body bytes)."""
    c = conn or http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    c.request(method, path, body=data,
              headers={"Content-Type": "application/json", **(headers or {})})
    r = c.getresponse()
    out = r.status, r.headers, r.read()
    if conn is None:
        c.close()
    return out


def sse(data: bytes) -> list[str]:
    """The data payloads of an SSE body, comments skipped."""
    events = []
    for block in data.decode().replace("\r\n", "\n").split("\n\n"):
        lines = [ln[5:].lstrip(" ") for ln in block.split("\n") if ln.startswith("data:")]
        if lines:
            events.append("\n".join(lines))
    return events


def chunks(data: bytes) -> tuple[list[dict], str]:
    ev = sse(data)
    return [json.loads(e) for e in ev if e != "[DONE]"], ev[-1]


def deltas(cs):
    return [c["choices"][0]["delta"] for c in cs if c["choices"]]


# ---------------------------------------------------------------- endpoints

def test_models_endpoint_and_unknown_path():
    with ScriptedServer([], models=["gpt-test", "local"]) as srv:
        st, _, body = call(srv, method="GET", path="/v1/models")
        assert st == 200
        assert body == (b'{"object":"list","data":[{"id":"gpt-test","object":"model",'
                        b'"owned_by":"corral-test"},{"id":"local","object":"model",'
                        b'"owned_by":"corral-test"}]}')
        assert call(srv, method="GET", path="/v1/models/local")[2] == \
            b'{"id":"local","object":"model","owned_by":"corral-test"}'
        st, _, body = call(srv, {}, path="/v1/completions")
        assert st == 404
        assert json.loads(body)["error"]["message"] == \
            "scripted server: no route for POST /v1/completions"
    assert srv.failures == ["unexpected request: POST /v1/completions"]
    with pytest.raises(AssertionError, match="unexpected request: POST /v1/completions"):
        srv.assert_ok()


# ---------------------------------------------------------------- non-streamed

def test_non_stream_text_reply_exact():
    body = {"model": "gpt-test", "messages": USER}
    with ScriptedServer([text("The answer is 42.")]) as srv:
        st, h, data = call(srv, body)
    srv.assert_ok()
    assert (st, h["Content-Type"], int(h["Content-Length"])) == (200, "application/json", len(data))
    n = len(json.dumps(body).encode())
    assert json.loads(data) == {
        "id": "chatcmpl-scripted-0", "object": "chat.completion", "created": 1700000000,
        "model": "gpt-test", "system_fingerprint": "fp_scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "The answer is 42.",
                                             "refusal": None, "annotations": []},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": n // 4, "completion_tokens": 17 // 4,
                  "total_tokens": n // 4 + 17 // 4}}
    assert srv.requests == [body] and srv.outcomes[0]["completed"] is True


def test_non_stream_tool_calls_ids_arguments_usage():
    turns = [tool_call("python", code="print(1)"),
             {"reply": {"content": "running", "finish_reason": "length",
                        "usage": {"prompt_tokens": 5, "completion_tokens": 7},
                        "tool_calls": [{"id": "x1", "name": "a", "arguments": '{"broken'},
                                       {"name": "b", "arguments": {}}]}},
             {"reply": {"content": "no usage", "usage": None}}]
    with ScriptedServer(turns) as srv:
        r = [json.loads(call(srv, {"messages": USER})[2]) for _ in turns]
    srv.assert_ok()
    m = r[0]["choices"][0]
    assert m["finish_reason"] == "tool_calls" and m["message"]["content"] is None
    assert m["message"]["tool_calls"] == [{"id": "call_0_0", "type": "function", "function": {
        "name": "python", "arguments": '{"code": "print(1)"}'}}]
    assert r[0]["model"] == "gpt-test"  # request named no model: the first listed one
    m = r[1]["choices"][0]
    assert m["finish_reason"] == "length"
    assert [(c["id"], c["function"]["arguments"]) for c in m["message"]["tool_calls"]] == \
        [("x1", '{"broken'), ("call_1_1", "{}")]
    assert r[1]["usage"] == {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
    assert "usage" not in r[2]


# ---------------------------------------------------------------- streamed

def test_stream_openai_tool_call_fragments_and_usage():
    code = "import math\nprint(math.factorial(20))\n" * 3
    body = {"model": "gpt-test", "messages": USER, "stream": True,
            "stream_options": {"include_usage": True}}
    with ScriptedServer([tool_call("python", code=code) | {"reply": {
            "content": None, "usage": {"prompt_tokens": 11, "completion_tokens": 22},
            "tool_calls": [{"name": "python", "arguments": {"code": code}},
                           {"id": "call_B", "name": "shell", "arguments": {"cmd": "ls"}}]}}
                         ]) as srv:
        st, h, data = call(srv, body)
    srv.assert_ok()
    assert (st, h["Content-Type"], h["Transfer-Encoding"]) == (200, "text/event-stream", "chunked")
    cs, last = chunks(data)
    assert last == "[DONE]"
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == "chatcmpl-scripted-0"
               for c in cs)
    assert [c["usage"] for c in cs[:-1]] == [None] * (len(cs) - 1)  # OpenAI: null until the end
    assert cs[-1]["choices"] == [] and cs[-1]["usage"] == {
        "prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33}
    ds = deltas(cs)
    assert ds[0] == {"role": "assistant", "content": "", "refusal": None}
    assert all("role" not in d for d in ds[1:])
    assert cs[-2]["choices"][0]["finish_reason"] == "tool_calls" and ds[-1] == {}
    frags = [tc for d in ds for tc in d.get("tool_calls", [])]
    first = [f for f in frags if f["index"] == 0]
    args = json.dumps({"code": code})
    assert len(first) == 1 + -(-len(args) // 8)  # header + 8-character pieces
    assert first[0] == {"index": 0, "id": "call_0_0", "type": "function",
                        "function": {"name": "python", "arguments": ""}}
    assert all(set(f) == {"index", "function"} and set(f["function"]) == {"arguments"}
               for f in first[1:])
    assert "".join(f["function"]["arguments"] for f in first) == args
    second = [f for f in frags if f["index"] == 1]
    assert second[0]["id"] == "call_B" and all("id" not in f for f in second[1:])
    assert "".join(f["function"]["arguments"] for f in second) == '{"cmd": "ls"}'
    assert [c["choices"][0]["finish_reason"] for c in cs[:-2]] == [None] * (len(cs) - 2)


def test_stream_text_chunking_without_usage():
    turn = text("Hello, streaming world!") | {"stream": {"chunk_content": 5}}
    with ScriptedServer([turn]) as srv:
        cs, last = chunks(call(srv, {"messages": USER, "stream": True})[2])
    srv.assert_ok()
    assert last == "[DONE]"
    assert [d.get("content") for d in deltas(cs)] == \
        ["", "Hello", ", str", "eamin", "g wor", "ld!", None]
    assert all("usage" not in c for c in cs) and all(c["choices"] for c in cs)
    assert cs[-1]["choices"][0]["finish_reason"] == "stop"


def test_stream_events_are_flushed_one_by_one_and_connection_reused():
    with ScriptedServer([text("abc") | {"hang": 0.5}, text("again")]) as srv:
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        t0 = time.monotonic()
        c.request("POST", "/v1/chat/completions",
                  body=json.dumps({"messages": USER, "stream": True}))
        r = c.getresponse()
        first = r.readline()
        assert time.monotonic() - t0 < 0.4, "first event did not arrive before the stall"
        assert json.loads(first[6:])["choices"][0]["delta"]["role"] == "assistant"
        rest = r.read()
        assert time.monotonic() - t0 >= 0.5
        assert sse(rest)[-1] == "[DONE]"
        # keep-alive: a second request on the same connection
        st, _, data = call(srv, {"messages": USER}, conn=c)
        c.close()
    srv.assert_ok()
    assert json.loads(data)["choices"][0]["message"]["content"] == "again"


def test_ollama_whole_tool_calls_and_role_in_every_chunk():
    args = {"code": "print('x' * 40)"}
    turn = tool_call("python", **args) | {"dialect": "ollama"}
    turn["reply"]["reasoning"] = "let me think"
    with ScriptedServer([turn, dict(turn)]) as srv:
        cs, last = chunks(call(srv, {"messages": USER, "stream": True})[2])
        cs2, _ = chunks(call(srv, {"messages": USER, "stream": True,
                                   "stream_options": {"include_usage": True}})[2])
    srv.assert_ok()
    ds = deltas(cs)
    assert all(d["role"] == "assistant" and "content" in d for d in ds)
    assert ds[0] == {"role": "assistant", "content": "", "reasoning": "let me think"}
    calls = [d["tool_calls"] for d in ds if "tool_calls" in d]
    assert calls == [[{"id": "call_0_0", "index": 0, "type": "function",
                       "function": {"name": "python", "arguments": json.dumps(args)}}]]
    assert all(c["system_fingerprint"] == "fp_ollama" for c in cs)
    assert cs[-1]["choices"][0]["finish_reason"] == "tool_calls" and last == "[DONE]"
    assert all("usage" not in c for c in cs)
    assert cs2[-1]["choices"] == [] and cs2[-1]["usage"]["total_tokens"] > 0


def test_stream_options_role_every_chunk_extra_fields_whole_calls():
    opts = {"role_every_chunk": True, "extra_fields": {"reasoning": "r"},
            "whole_tool_calls": True, "include_usage": True}
    with ScriptedServer([tool_call("f", a=1) | {"stream": opts}]) as srv:
        cs, _ = chunks(call(srv, {"messages": USER, "stream": True})[2])
    srv.assert_ok()
    ds = deltas(cs)
    assert all(d["role"] == "assistant" and d["reasoning"] == "r" for d in ds)
    assert [d["tool_calls"] for d in ds if "tool_calls" in d] == [[{
        "id": "call_0_0", "index": 0, "type": "function",
        "function": {"name": "f", "arguments": '{"a": 1}'}}]]
    assert cs[-1]["choices"] == [] and "usage" in cs[-1]  # forced although not requested


def test_llamacpp_and_vllm_stream_shapes():
    turn = tool_call("f", a="0123456789") | {"stream": {"chunk_args": 4}}
    turn["reply"]["reasoning"] = "hmm"
    with ScriptedServer([turn, turn], dialect="llamacpp") as srv:
        body = {"messages": USER, "stream": True, "stream_options": {"include_usage": True}}
        llama, _ = chunks(call(srv, body)[2])
        srv.turns[1] = turn | {"dialect": "vllm"}
        vllm, _ = chunks(call(srv, body)[2])
    srv.assert_ok()
    ld, vd = deltas(llama), deltas(vllm)
    assert ld[0] == {"role": "assistant", "content": None} and ld[1] == {"reasoning_content": "hmm"}
    assert ld[2]["tool_calls"][0]["function"] == {"name": "f", "arguments": ""}
    assert "timings" in llama[-1] and all("timings" not in c for c in llama[:-1])
    assert llama[-1]["choices"] == []
    assert vd[0] == {"role": "assistant", "content": ""} and vd[1] == {"reasoning_content": "hmm"}
    assert vd[2]["tool_calls"][0] == {"index": 0, "id": "call_1_0", "type": "function",
                                      "function": {"name": "f"}}
    assert all("system_fingerprint" not in c for c in vllm)
    assert "".join(d["tool_calls"][0]["function"].get("arguments", "")
                   for d in vd if "tool_calls" in d) == '{"a": "0123456789"}'


@pytest.mark.parametrize("dialect,expected", [
    ("openai", {"error": {"message": "bad", "type": "invalid_request_error", "param": None,
                          "code": None}}),
    ("ollama", {"error": {"message": "bad", "type": "invalid_request_error", "param": None,
                          "code": None}}),
    ("llamacpp", {"error": {"code": 400, "message": "bad", "type": "invalid_request_error"}}),
    ("vllm", {"object": "error", "message": "bad", "type": "BadRequestError", "param": None,
              "code": 400}),
    ("vllm-nested", {"error": {"message": "bad", "type": "BadRequestError", "param": None,
                               "code": 400}}),
])
def test_dialect_error_bodies(dialect, expected):
    with ScriptedServer([{"status": 400, "error": "bad", "dialect": dialect}]) as srv:
        st, _, data = call(srv, {"messages": USER})
    srv.assert_ok()
    assert (st, json.loads(data)) == (400, expected)


# ---------------------------------------------------------------- expectations

FULL = {"model": "gpt-test", "stream": True, "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {"name": "python", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "You are corral."},
            {"role": "user", "content": "compute 1/0"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "python",
                                                              "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "python",
                                                              "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ZeroDivisionError: division"},
            {"role": "tool", "tool_call_id": "c2", "content": "ok"}]}
ALL_EXPECT = {"contains": ["ZeroDivisionError", "You are corral."], "not_contains": ["sk-secret"],
              "last_role": "tool", "roles": ["system", "user", "assistant", "tool", "tool"],
              "min_messages": 5, "max_messages": 5, "tools": True, "tool_names": ["python"],
              "stream": True, "model": "gpt-test", "tool_results": ["c1", "c2"],
              "header": {"authorization": "Bearer sk-test"}, "header_absent": ["X-Debug"],
              "stream_options_include_usage": True}


def test_all_expectations_pass():
    with ScriptedServer([text("ok") | {"expect": ALL_EXPECT}]) as srv:
        st, _, data = call(srv, FULL, headers={"Authorization": "Bearer sk-test"})
    assert st == 200 and sse(data)[-1] == "[DONE]"
    srv.assert_ok()
    assert srv.request_headers[0]["AUTHORIZATION"] == "Bearer sk-test"


@pytest.mark.parametrize("expect,change,found", [
    ({"contains": ["NameError"]}, {}, "contains: 'NameError' not in messages"),
    ({"not_contains": ["sk-secret"]},
     {"messages": USER + [{"role": "user", "content": "sk-secret"}]},
     "not_contains: 'sk-secret' found"),
    ({"not_contains": ['say "hi"']}, {"messages": [{"role": "user", "content": 'say "hi"'}]},
     "not_contains: 'say \"hi\"' found"),
    ({"last_role": "user"}, {}, "last_role: expected 'user', found 'tool'"),
    ({"roles": ["user"]}, {}, "roles: expected ['user'], found ['system', 'user'"),
    ({"min_messages": 6}, {}, "min_messages: expected 6, found 5 messages"),
    ({"max_messages": 2}, {}, "max_messages: expected 2, found 5 messages"),
    ({"tools": False}, {}, "tools: expected no tools array"),
    ({"tools": True}, {"tools": []}, "tools: expected a non-empty tools array, found []"),
    ({"tool_names": ["shell"]}, {}, "tool_names: 'shell' not offered (offered ['python'])"),
    ({"stream": False}, {}, "stream: expected False, found True"),
    ({"model": "other"}, {}, "model: expected 'other', found 'gpt-test'"),
    ({"tool_results": ["c2", "c1"]}, {}, "expected tool messages for ['c2', 'c1'], found "
                                         "tool_call_ids ['c1', 'c2']"),
    ({"tool_results": ["c9"]}, {}, "no assistant message made tool call 'c9'"),
    ({"header": {"Authorization": "Bearer sk-test"}}, {}, "header Authorization: expected "
                                                          "'Bearer sk-test', found None"),
    ({"header_absent": ["Content-Type"]}, {}, "header_absent: Content-Type is present"),
    ({"stream_options_include_usage": False}, {}, "stream_options_include_usage: expected False"),
])
def test_expectation_failure_answers_400_and_is_recorded(expect, change, found):
    with ScriptedServer([text("never sent") | {"expect": expect}]) as srv:
        st, _, data = call(srv, FULL | change)
    assert st == 400
    msg = json.loads(data)["error"]["message"]
    assert msg.startswith("scripted server: expectation failed: ") and found in msg
    assert len(srv.failures) == 1 and srv.failures[0].startswith("turn 0 (request 0): ")
    assert found in srv.failures[0]
    with pytest.raises(AssertionError, match="1 problem"):
        srv.assert_ok()


def test_exhausted_and_unused_turns():
    with ScriptedServer([text("one")]) as srv:
        call(srv, {"messages": USER})
        st, _, data = call(srv, {"messages": USER})
    assert st == 500
    assert data == b'{"error":{"message":"scripted server: no turn left for request 1"}}'
    with pytest.raises(AssertionError, match="request 1: no turn left"):
        srv.assert_ok()
    with ScriptedServer([text("one"), text("two", note="the second answer")]) as srv:
        call(srv, {"messages": USER})
    assert srv.problems() == ["turn 1 was never used (the second answer)"]


def test_invalid_json_and_chunked_request_body():
    with ScriptedServer([text("ok")]) as srv:
        st, _, data = call(srv, raw=b"{not json")
        assert st == 400 and "invalid JSON body" in json.loads(data)["error"]["message"]
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        c.request("POST", "/v1/chat/completions", encode_chunked=True,
                  body=iter([b'{"messages": ', json.dumps(USER).encode(), b"}"]),
                  headers={"Transfer-Encoding": "chunked"})
        r = c.getresponse()
        assert r.status == 200 and b'"ok"' in r.read()
        c.close()
    assert srv.requests == [None, {"messages": USER}]
    assert srv.problems() == ["request 0: invalid JSON body (Expecting property name enclosed "
                              "in double quotes: line 1 column 2 (char 1)): {not json"]


def test_validation_rejects_typos():
    for bad, what in [({"expct": {}}, "unknown key"), ({"expect": {"contain": []}}, "unknown key"),
                      ({"expect": {"contains": "x"}}, "expected list"),
                      ({"stream": {"chunk_arg": 3}}, "unknown key"),
                      ({"dialect": "gpt"}, "unknown dialect"),
                      ({"reply": {"tool_calls": [{"arguments": {}}]}}, "missing name")]:
        with pytest.raises(ValueError, match=what):
            ScriptedServer([bad])


# ---------------------------------------------------------------- errors and transport

def test_status_429_retry_after_and_raw_body():
    err = '{"error":{"message":"Incorrect API key provided","type":"invalid_request_error",' \
          '"code":"invalid_api_key"}}'
    with ScriptedServer([{"status": 429, "headers": {"Retry-After": "1"},
                          "error": {"message": "Rate limit reached",
                                    "code": "rate_limit_exceeded"}},
                         {"status": 401, "body": err}]) as srv:
        st, h, data = call(srv, {"messages": USER})
        assert (st, h["Retry-After"]) == (429, "1")
        assert json.loads(data) == {"error": {"message": "Rate limit reached", "type": "requests",
                                              "param": None, "code": "rate_limit_exceeded"}}
        assert call(srv, {"messages": USER})[::2] == (401, err.encode())
    srv.assert_ok()


def test_close_and_reset_drop_the_connection():
    with ScriptedServer([{"close": True}, {"close": "reset"}, text("after")]) as srv:
        for _ in range(2):
            with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
                call(srv, {"messages": USER})
        assert call(srv, {"messages": USER})[0] == 200
    srv.assert_ok()
    assert [o["completed"] for o in srv.outcomes] == [False, False, True]


def test_raw_crlf_comments_no_done_and_cut():
    raw = ["data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n", "\n", "data: [DO", "NE]\n\n"]
    turns = [{"stream": {"raw": raw}},
             text("hi") | {"stream": {"crlf": True, "comments": True, "no_done": True}},
             text("0123456789" * 4) | {"stream": {"cut_after": 2, "chunk_content": 4}}]
    body = {"messages": USER, "stream": True}
    with ScriptedServer(turns) as srv:
        assert call(srv, body)[2] == "".join(raw).encode()
        data = call(srv, body)[2]
        assert data.startswith(b": keep-alive\r\n\r\ndata: {") and b"\n\n" not in \
            data.replace(b"\r\n", b"")
        assert sse(data)[-1] != "[DONE]" and json.loads(sse(data)[-1])["choices"][0][
            "finish_reason"] == "stop"
        with pytest.raises(http.client.IncompleteRead):
            call(srv, body)
    srv.assert_ok()
    assert [o["completed"] for o in srv.outcomes] == [True, True, False]


def test_split_bytes_and_close_delimited_stream():
    words = "héllo wörld, ünïcode"
    turns = [text(words) | {"stream": {"split_bytes": 3, "interval": 0.001}},
             text(words) | {"stream": {"transfer": "close"}}]
    body = {"messages": USER, "stream": True}
    with ScriptedServer(turns) as srv:
        a = call(srv, body)
        b = call(srv, body)
    srv.assert_ok()
    assert a[1]["Transfer-Encoding"] == "chunked"
    assert (b[1]["Transfer-Encoding"], b[1]["Connection"]) == (None, "close")
    for _, _, data in (a, b):
        cs, last = chunks(data)
        assert last == "[DONE]" and "".join(d.get("content", "") for d in deltas(cs)) == words


def test_delay_and_exit_while_a_stream_hangs():
    with ScriptedServer([text("slow") | {"delay": 0.3}]) as srv:
        t0 = time.monotonic()
        call(srv, {"messages": USER})
        assert time.monotonic() - t0 >= 0.3
    srv = ScriptedServer([text("stuck") | {"hang": 30}]).start()
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    c.request("POST", "/v1/chat/completions", body=json.dumps({"messages": USER, "stream": True}))
    r = c.getresponse()
    assert r.readline().startswith(b"data: ")
    t0 = time.monotonic()
    srv.stop()
    assert time.monotonic() - t0 < 2
    with pytest.raises((http.client.IncompleteRead, ConnectionError)):
        r.read()
    c.close()


def test_builders():
    assert text("hi") == {"reply": {"content": "hi"}}
    assert text("hi", status=200) == {"reply": {"content": "hi"}, "status": 200}
    assert tool_call("python", code="1/0", name="n") == {"reply": {"content": None, "tool_calls": [
        {"name": "python", "arguments": {"code": "1/0", "name": "n"}}]}}
    assert set(DIALECTS) >= {"openai", "ollama", "llamacpp", "vllm"}


# ---------------------------------------------------------------- script mode

def run_script(tmp_path, scenario, requests):
    (tmp_path / "s.json").write_text(json.dumps(scenario))
    port_file, log = tmp_path / "port", tmp_path / "log.json"
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "modelserver.py"),
                          "--scenario", str(tmp_path / "s.json"), "--port-file", str(port_file),
                          "--log", str(log)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(500):
            if port_file.exists() or p.poll() is not None:
                break
            time.sleep(0.01)
        port = int(port_file.read_text())
        url = p.stdout.readline().strip()
        assert url == f"http://127.0.0.1:{port}/v1"
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        replies = []
        for body in requests:
            c.request("POST", "/v1/chat/completions", body=json.dumps(body))
            r = c.getresponse()
            replies.append((r.status, json.loads(r.read())))
        c.close()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=5)
    finally:
        p.kill()
    return p.returncode, err, replies, json.loads(log.read_text())


def test_script_mode_ok(tmp_path):
    rc, err, replies, log = run_script(
        tmp_path, {"models": ["m"], "turns": [text("hello", expect={"last_role": "user"})]},
        [{"model": "m", "messages": USER}])
    assert (rc, err) == (0, "")
    assert replies[0][0] == 200 and replies[0][1]["choices"][0]["message"]["content"] == "hello"
    assert log["requests"] == [{"model": "m", "messages": USER}] and log["problems"] == []


def test_script_mode_reports_problems(tmp_path):
    rc, err, replies, log = run_script(
        tmp_path, {"turns": [text("a", expect={"contains": ["NameError"]}), text("b")]},
        [{"messages": USER}])
    assert rc == 1 and replies[0][0] == 400
    assert err.splitlines() == [
        "modelserver: turn 0 (request 0): contains: 'NameError' not in messages "
        "(last message: {\"role\": \"user\", \"content\": \"compute 1/0\"})",
        "modelserver: turn 1 was never used ({\"reply\": {\"content\": \"b\"}})"]
    assert log["problems"] == [e[len("modelserver: "):] for e in err.splitlines()]
