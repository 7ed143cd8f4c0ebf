#!/usr/bin/env python3
"""Scripted OpenAI-compatible chat-completions server for testing `corral run`.

Design
------
A test writes the conversation it expects as a list of *turns*. Each
``POST /v1/chat/completions`` consumes the next turn in order: the server first
checks the request against the turn's ``expect`` block, then answers with the
turn's reply (streamed as SSE if the request asked for ``"stream": true``), a
scripted error, or a dropped connection. Nothing is decided by heuristics; what
the client gets is what the turn says.

Every problem is *recorded*, never raised in a handler thread: failed
expectations, requests after the script ran out, unknown paths, invalid JSON.
The client also sees each problem as an HTTP error, so it fails fast, and
``assert_ok()`` raises one AssertionError listing all of them plus any turn
that was never used.

Provider differences (OpenAI, Ollama, llama.cpp, vLLM) live in one table,
``DIALECTS``, as data: which delta opens a stream, what every delta repeats,
whether tool calls arrive whole or in fragments, the reasoning field's name,
extra top-level fields and the error-body shape. The reply builders read the
table; they do not branch on provider names. Each entry cites its source.

The server binds 127.0.0.1 only. Handler threads are daemons, every wait is
interruptible by the server's stop event, and ``stop()`` shuts down live
connections, so leaving the ``with`` block never blocks on a hanging stream.

Library use::

    from modelserver import ScriptedServer, text, tool_call
    with ScriptedServer([tool_call("python", code="1/0"),
                         text("done") | {"expect": {"contains": ["ZeroDivisionError"]}}],
                        models=["gpt-test"]) as srv:
        run_client(srv.base_url)          # http://127.0.0.1:PORT/v1
    srv.assert_ok()

Script use (serves until SIGTERM/SIGINT, exit 1 if anything was recorded)::

    python3 modelserver.py --scenario s.json [--port N] [--port-file F] [--log F]

See README.md for the scenario format.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import Any, Callable
from urllib.parse import urlsplit

__all__ = ["ScriptedServer", "text", "tool_call", "DIALECTS", "Dialect", "main"]


# --------------------------------------------------------------------------
# Dialects
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Dialect:
    """How one provider shapes chat-completion replies and errors."""
    first_delta: dict | None        # delta of the opening chunk (None: no separate opening chunk)
    every_delta: dict               # merged into every streamed delta
    whole_tool_calls: bool          # one chunk per tool call instead of fragments
    header_arguments: str | None    # "arguments" in a call's first fragment (None: key omitted)
    reasoning_field: str | None     # where reply["reasoning"] goes (None: dropped)
    chunk_extra: dict               # extra top-level fields on every chunk / completion
    choice_extra: dict              # extra fields in choices[0]
    usage_null: bool                # include_usage: earlier chunks carry "usage": null
    final_extra: dict               # extra top-level fields on the last chunk / the completion
    message_extra: dict             # defaults for non-streamed choices[0].message
    call_index_in_message: bool     # non-streamed tool_calls[i] carry "index"
    empty_content: str | None       # message content when the reply has none
    error_types: dict               # HTTP status -> error "type"
    error_type_default: str
    error_body: Callable[[int, str, str, Any], dict]   # (status, message, type, code) -> body


def _nested_error(status, message, etype, code):
    return {"error": {"message": message, "type": etype, "param": None, "code": code}}


DIALECTS: dict[str, Dialect] = {
    # OpenAI. https://platform.openai.com/docs/api-reference/chat-streaming/streaming
    # (chunk object: delta.role only in the first chunk; "choices" empty in the last
    # chunk when stream_options.include_usage is set, and "usage" null on every other
    # chunk) and https://platform.openai.com/docs/guides/function-calling#streaming
    # (delta.tool_calls[i]: the first fragment carries index, id, type, function.name
    # and arguments ""; later fragments carry index and function.arguments only).
    # Error bodies: https://platform.openai.com/docs/guides/error-codes
    # ({"error": {"message", "type", "param", "code"}}).
    "openai": Dialect(
        first_delta={"role": "assistant", "content": "", "refusal": None},
        every_delta={}, whole_tool_calls=False, header_arguments="",
        reasoning_field=None,  # chat completions does not return reasoning text
        chunk_extra={"system_fingerprint": "fp_scripted"}, choice_extra={"logprobs": None},
        usage_null=True, final_extra={},
        message_extra={"refusal": None, "annotations": []}, call_index_in_message=False,
        empty_content=None,
        error_types={401: "invalid_request_error", 429: "requests", 500: "server_error",
                     503: "server_error"},
        error_type_default="invalid_request_error", error_body=_nested_error),

    # Ollama /v1 compatibility layer, github.com/ollama/ollama:
    # openai/openai.go ToChunk(): every delta is Message{Role: "assistant", Content: ...}
    # (role repeated, content never omitted), tool calls come whole from ToToolCalls()
    # with id, index, type "function", function.name/arguments; thinking goes to
    # "reasoning"; system_fingerprint "fp_ollama". middleware/openai.go
    # ChatWriter.writeResponse(): when Done and stream_options.include_usage, the final
    # chunk is re-sent with choices [] and usage, then "data: [DONE]". NewError(): type
    # invalid_request_error (400) / not_found_error (404) / api_error, param and code null.
    # server/routes.go toolCallId(): ids are "call_" + 8 random [a-z0-9].
    "ollama": Dialect(
        first_delta=None, every_delta={"role": "assistant", "content": ""},
        whole_tool_calls=True, header_arguments="", reasoning_field="reasoning",
        chunk_extra={"system_fingerprint": "fp_ollama"}, choice_extra={},
        usage_null=False, final_extra={}, message_extra={}, call_index_in_message=True,
        empty_content="",
        error_types={400: "invalid_request_error", 404: "not_found_error"},
        error_type_default="api_error", error_body=_nested_error),

    # llama.cpp tools/server (llama-server; tool calls need --jinja), github.com/ggml-org/llama.cpp:
    # server-task.cpp server_task_result_cmpl_partial::to_json_oaicompat_chat(): the
    # first chunk is {"role": "assistant", "content": null}; common/chat.cpp
    # common_chat_msg_diff_to_json_oaicompat(): reasoning goes to "reasoning_content",
    # tool-call deltas carry "index" always, "id" and type "function" only with the
    # name, and "arguments" ("" in the header); task_result_state::update_chat_msg()
    # sends id+name once, then argument pieces. to_json_oaicompat_chat_stream(): final
    # chunk has delta {}, then (include_usage) a chunk with choices [] and usage; the
    # non-standard "timings" object is added to the last chunk (and to non-streamed
    # replies). server-common.cpp format_error_response(): {"error": {"code": <status>,
    # "message", "type"}}; ids from random_string() (32 alphanumerics). Older builds
    # ignore tool_choice.
    "llamacpp": Dialect(
        first_delta={"role": "assistant", "content": None}, every_delta={},
        whole_tool_calls=False, header_arguments="", reasoning_field="reasoning_content",
        chunk_extra={"system_fingerprint": "b0000-scripted"}, choice_extra={},
        usage_null=False,
        final_extra={"timings": {"prompt_n": 1, "prompt_ms": 1.0, "prompt_per_token_ms": 1.0,
                                 "prompt_per_second": 1000.0, "predicted_n": 1,
                                 "predicted_ms": 1.0, "predicted_per_token_ms": 1.0,
                                 "predicted_per_second": 1000.0}},
        message_extra={}, call_index_in_message=False, empty_content=None,
        error_types={400: "invalid_request_error", 401: "authentication_error",
                     403: "permission_error", 404: "not_found_error",
                     501: "not_supported_error", 503: "unavailable_error"},
        error_type_default="server_error",
        error_body=lambda status, message, etype, code: {
            "error": {"code": status, "message": message, "type": etype}}),

    # vLLM OpenAI server, github.com/vllm-project/vllm vllm/entrypoints/openai/:
    # serving_chat.py chat_completion_stream_generator(): first chunk
    # DeltaMessage(role=role, content=""), chunks dumped with exclude_unset (no
    # system_fingerprint); tool parsers (e.g. tool_parsers/hermes_tool_parser.py) send
    # DeltaToolCall(index, type="function", id=make_tool_call_id(),
    # function=DeltaFunctionCall(name=...).model_dump(exclude_none=True)) -- a header
    # without "arguments" -- then {index, function: {arguments: piece}};
    # chat_utils.py make_tool_call_id(): "chatcmpl-tool-" + random_uuid().
    # Reasoning parsers fill "reasoning_content". protocol.py ErrorResponse (up to
    # v0.10): {"object": "error", "message", "type", "param", "code": <status>}, with
    # create_error_response(err_type="BadRequestError") as the default type.
    "vllm": Dialect(
        first_delta={"role": "assistant", "content": ""}, every_delta={},
        whole_tool_calls=False, header_arguments=None, reasoning_field="reasoning_content",
        chunk_extra={}, choice_extra={"logprobs": None}, usage_null=False, final_extra={},
        message_extra={"reasoning_content": None, "tool_calls": []},
        call_index_in_message=False, empty_content=None,
        error_types={400: "BadRequestError", 404: "NotFoundError", 500: "InternalServerError"},
        error_type_default="BadRequestError",
        error_body=lambda status, message, etype, code: {
            "object": "error", "message": message, "type": etype, "param": None,
            "code": status}),
}
# Newer vLLM (protocol.py ErrorInfo + ErrorResponse{error: ErrorInfo}) nests the same
# fields under "error", with the HTTP status as an integer "code".
DIALECTS["vllm-nested"] = replace(
    DIALECTS["vllm"],
    error_body=lambda status, message, etype, code: _nested_error(status, message, etype, status))


# --------------------------------------------------------------------------
# Scenario validation and turn builders
# --------------------------------------------------------------------------

TURN_KEYS = {"expect", "status", "headers", "body", "error", "delay", "close", "hang",
             "reply", "stream", "dialect", "note"}
REPLY_KEYS = {"content", "tool_calls", "finish_reason", "usage", "reasoning"}
CALL_KEYS = {"id", "name", "arguments"}
STREAM_KEYS = {"dialect", "chunk_args", "chunk_content", "whole_tool_calls",
               "role_every_chunk", "include_usage", "extra_fields", "no_done", "raw", "crlf",
               "comments", "cut_after", "split_bytes", "interval", "transfer"}


def text(content: str | None, **turn) -> dict:
    """Turn whose reply is plain assistant text; keyword args are more turn keys."""
    return {"reply": {"content": content}, **turn}


def tool_call(name: str, /, **arguments) -> dict:
    """Turn whose reply is one tool call; keyword args are the call's arguments.

    Add turn keys with ``|``: ``tool_call("python", code="1/0") | {"expect": {...}}``.
    """
    return {"reply": {"content": None, "tool_calls": [{"name": name, "arguments": arguments}]}}


# Side calls of corral's modes (header X-Corral-Purpose: docs/modes.md) are not
# turns of the conversation: they take the turns scripted for their purpose
# (ScriptedServer(side={"verify": [...]})), else these answers, and are kept in
# side_requests, not requests.
SIDE_DEFAULTS: dict[str, dict] = {
    "verify": {"reply": {"content": '{"complete": true, "missing": []}'}},
    "compact": {"reply": {"content": "Summary of the earlier steps (scripted)."}},
    "plan": {"reply": {"content": "1. Look at the inputs.\n2. Compute the result.\n3. Answer."}},
    # --mode team: the reviewer approves, the executor summarises.
    "review": {"reply": {"content": '{"verdict": "approve", "reasons": []}'}},
    "summary": {"reply": {"content": "The step ran; summary (scripted)."}},
}


def _validate(turns: list, dialect: str) -> None:
    def unknown(where, got, allowed):
        extra = set(got) - allowed
        if extra:
            raise ValueError(f"{where}: unknown key(s) {sorted(extra)}; allowed: {sorted(allowed)}")

    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}; known: {sorted(DIALECTS)}")
    for i, t in enumerate(turns):
        where = f"turn {i}"
        if not isinstance(t, dict):
            raise ValueError(f"{where}: not an object")
        unknown(where, t, TURN_KEYS)
        expect = t.get("expect") or {}
        unknown(f"{where}.expect", expect, set(EXPECT_CHECKS))
        for k, v in expect.items():
            kind = EXPECT_TYPES.get(k, object)
            if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
                raise ValueError(f"{where}.expect.{k}: expected {kind.__name__}, got {v!r}")
        unknown(f"{where}.stream", t.get("stream") or {}, STREAM_KEYS)
        reply = t.get("reply") or {}
        unknown(f"{where}.reply", reply, REPLY_KEYS)
        for j, c in enumerate(reply.get("tool_calls") or []):
            unknown(f"{where}.reply.tool_calls[{j}]", c, CALL_KEYS)
            if "name" not in c:
                raise ValueError(f"{where}.reply.tool_calls[{j}]: missing name")
        for d in (t.get("dialect"), (t.get("stream") or {}).get("dialect")):
            if d is not None and d not in DIALECTS:
                raise ValueError(f"{where}: unknown dialect {d!r}; known: {sorted(DIALECTS)}")


# --------------------------------------------------------------------------
# Expectations: each check returns a list of failure messages
# --------------------------------------------------------------------------

def _messages(body: dict) -> list:
    m = body.get("messages")
    return [x for x in m if isinstance(x, dict)] if isinstance(m, list) else []


@dataclass
class _Request:
    body: dict
    raw: str
    headers: Any    # http.client.HTTPMessage: case-insensitive .get()

    @property
    def messages(self) -> list:
        return _messages(self.body)


def _text_of(message: dict) -> str:
    c = message.get("content")
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c if isinstance(c, str) else ""


def _short(v: Any, n: int = 160) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return s if len(s) <= n else s[:n] + "..."


def _check_contains(want, r):
    hay = (json.dumps(r.messages, ensure_ascii=False), "\n".join(map(_text_of, r.messages)))
    last = r.messages[-1] if r.messages else None
    return [f"contains: {s!r} not in messages (last message: {_short(last)})"
            for s in want if not any(s in h for h in hay)]


def _check_not_contains(want, r):
    # The raw form, and the forms json.dumps would give it inside a JSON string.
    forms = lambda s: {s, json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1]}
    return [f"not_contains: {s!r} found in the request body"
            for s in want if any(f in r.raw for f in forms(s))]


def _check_tool_results(want, r):
    msgs, made, groups, out = r.messages, {}, {}, []
    for i, m in enumerate(msgs):
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                if isinstance(c, dict):
                    made.setdefault(c.get("id"), i)
    for cid in want:
        if cid in made:
            groups.setdefault(made[cid], []).append(cid)
        else:
            out.append(f"tool_results: no assistant message made tool call {cid!r}")
    for a, ids in groups.items():
        run, j = [], a + 1
        while j < len(msgs) and msgs[j].get("role") == "tool":
            run.append(msgs[j].get("tool_call_id"))
            j += 1
        if [x for x in run if x in ids] != ids:
            out.append(f"tool_results: after messages[{a}] (assistant) expected tool messages "
                       f"for {ids}, found tool_call_ids {run}")
    return out


def _bool_field(found, want, what):
    return [] if isinstance(found, bool) and found == want else [
        f"{what}: expected {want!r}, found {found!r}"]


def _include_usage(body):
    so = body.get("stream_options")
    return so.get("include_usage", False) if isinstance(so, dict) else False


def _roles(r):
    return [m.get("role") for m in r.messages]


def _tool_names(r):
    tools = r.body.get("tools")
    return [t.get("function", {}).get("name") for t in tools if isinstance(t, dict)] \
        if isinstance(tools, list) else []


def _check_tools(want, r):
    tools = r.body.get("tools")
    ok = (isinstance(tools, list) and len(tools) > 0) if want else tools is None
    return [] if ok else [f"tools: expected {'a non-empty' if want else 'no'} tools array, "
                          f"found {_short(tools)}"]


def _check_count(want, r, cmp, what):
    n = len(r.messages)
    return [] if cmp(n, want) else [f"{what}: expected {want}, found {n} messages "
                                    f"(roles {_roles(r)})"]


EXPECT_CHECKS: dict[str, Callable[[Any, _Request], list[str]]] = {
    "contains": _check_contains,
    "not_contains": _check_not_contains,
    "last_role": lambda want, r: [] if (_roles(r) or [None])[-1] == want else [
        f"last_role: expected {want!r}, found {(_roles(r) or [None])[-1]!r} (roles {_roles(r)})"],
    "roles": lambda want, r: [] if _roles(r) == list(want) else [
        f"roles: expected {list(want)}, found {_roles(r)}"],
    "min_messages": lambda want, r: _check_count(want, r, int.__ge__, "min_messages"),
    "max_messages": lambda want, r: _check_count(want, r, int.__le__, "max_messages"),
    "tools": _check_tools,
    "tool_names": lambda want, r: [f"tool_names: {n!r} not offered (offered {_tool_names(r)})"
                                   for n in want if n not in _tool_names(r)],
    "stream": lambda want, r: _bool_field(r.body.get("stream", False), want, "stream"),
    "model": lambda want, r: [] if r.body.get("model") == want else [
        f"model: expected {want!r}, found {r.body.get('model')!r}"],
    "tool_results": _check_tool_results,
    "header": lambda want, r: [f"header {k}: expected {v!r}, found {r.headers.get(k)!r}"
                               for k, v in want.items() if r.headers.get(k) != v],
    "header_absent": lambda want, r: [f"header_absent: {k} is present"
                                      for k in want if r.headers.get(k) is not None],
    "stream_options_include_usage": lambda want, r: _bool_field(
        _include_usage(r.body), want, "stream_options_include_usage"),
}

EXPECT_TYPES = {k: list for k in ("contains", "not_contains", "roles", "tool_names",
                                  "tool_results", "header_absent")}
EXPECT_TYPES.update({k: bool for k in ("tools", "stream", "stream_options_include_usage")})
EXPECT_TYPES.update(min_messages=int, max_messages=int, last_role=str, model=str, header=dict)


# --------------------------------------------------------------------------
# Reply builders (pure functions of turn, dialect and request)
# --------------------------------------------------------------------------

_DEFAULT = object()


@dataclass
class _Reply:
    content: str | None
    calls: list          # [(id, name, arguments string)]
    finish_reason: str
    usage: dict | None
    reasoning: str | None


def _reply(turn: dict, index: int, raw_len: int) -> _Reply:
    r = turn.get("reply") or {}
    calls = []
    for i, c in enumerate(r.get("tool_calls") or []):
        args = c.get("arguments", {})
        calls.append((c.get("id") or f"call_{index}_{i}", c["name"],
                      args if isinstance(args, str) else json.dumps(args)))
    content, reasoning = r.get("content"), r.get("reasoning")
    usage = r.get("usage", _DEFAULT)
    if usage is _DEFAULT:
        produced = (content or "") + (reasoning or "") + "".join(a for _, _, a in calls)
        usage = {"prompt_tokens": raw_len // 4, "completion_tokens": len(produced) // 4}
    if usage is not None:
        usage = {**usage}
        usage.setdefault("total_tokens",
                         usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
    finish = r.get("finish_reason") or ("tool_calls" if calls else "stop")
    return _Reply(content, calls, finish, usage, reasoning)


def _pieces(s: str, n: int) -> list[str]:
    n = max(1, int(n))
    return [s[i:i + n] for i in range(0, len(s), n)]


def completion(d: Dialect, rep: _Reply, model: str, cid: str, created: int) -> dict:
    """A non-streamed chat.completion object."""
    msg: dict = {"role": "assistant",
                 "content": rep.content if rep.content is not None else d.empty_content}
    if rep.reasoning is not None and d.reasoning_field:
        msg[d.reasoning_field] = rep.reasoning
    if rep.calls:
        msg["tool_calls"] = [{"id": i, **({"index": k} if d.call_index_in_message else {}),
                              "type": "function", "function": {"name": n, "arguments": a}}
                             for k, (i, n, a) in enumerate(rep.calls)]
    msg.update({k: v for k, v in d.message_extra.items() if k not in msg})
    out = {"id": cid, "object": "chat.completion", "created": created, "model": model,
           **d.chunk_extra,
           "choices": [{"index": 0, "message": msg, **d.choice_extra,
                        "finish_reason": rep.finish_reason}]}
    if rep.usage is not None:
        out["usage"] = rep.usage
    return {**out, **d.final_extra}


def stream_chunks(d: Dialect, rep: _Reply, opts: dict, model: str, cid: str, created: int,
                  include_usage: bool) -> list[dict]:
    """The chat.completion.chunk objects of a streamed reply, in order."""
    whole = opts.get("whole_tool_calls", d.whole_tool_calls)
    role = {"role": "assistant"} if opts.get("role_every_chunk") else {}
    extra = opts.get("extra_fields") or {}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        c = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
             **d.chunk_extra,
             "choices": [{"index": 0, "delta": {**d.every_delta, **role, **delta, **extra},
                          **d.choice_extra, "finish_reason": finish}]}
        if include_usage and d.usage_null:
            c["usage"] = None
        return c

    out = [chunk(dict(d.first_delta))] if d.first_delta is not None else []
    if rep.reasoning and d.reasoning_field:
        out += [chunk({d.reasoning_field: p})
                for p in _pieces(rep.reasoning, opts.get("chunk_content", 16))]
    if rep.content:
        out += [chunk({"content": p}) for p in _pieces(rep.content, opts.get("chunk_content", 16))]
    for k, (cid_, name, args) in enumerate(rep.calls):
        if whole:
            out.append(chunk({"tool_calls": [{"id": cid_, "index": k, "type": "function",
                                              "function": {"name": name, "arguments": args}}]}))
            continue
        fn = {"name": name} if d.header_arguments is None else {"name": name,
                                                               "arguments": d.header_arguments}
        out.append(chunk({"tool_calls": [{"index": k, "id": cid_, "type": "function",
                                          "function": fn}]}))
        out += [chunk({"tool_calls": [{"index": k, "function": {"arguments": p}}]})
                for p in _pieces(args, opts.get("chunk_args", 8))]
    out.append(chunk({}, rep.finish_reason))
    if include_usage and rep.usage is not None:
        out.append({**{k: v for k, v in out[-1].items() if k not in ("choices", "usage")},
                    "choices": [], "usage": rep.usage})
    out[-1].update(d.final_extra)
    return out


def _error_body(d: Dialect, status: int, error: Any) -> dict:
    e = {"message": error} if isinstance(error, str) else dict(error or {})
    message = e.get("message", f"scripted error {status}")
    etype = e.get("type", d.error_types.get(status, d.error_type_default))
    return d.error_body(status, message, etype, e.get("code"))


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------

class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def server_bind(self):
        # HTTPServer.server_bind() calls socket.getfqdn(), which can stall on DNS.
        TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "corral-scripted-model/1"
    timeout = 60  # idle keep-alive connections; stop() shuts them down anyway

    @property
    def srv(self) -> "ScriptedServer":
        return self.server.scripted

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.srv._lock:
            self.srv._conns.add(self.connection)

    def finish(self):
        with self.srv._lock:
            self.srv._conns.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, fmt, *args):
        if self.srv.verbose:
            sys.stderr.write("modelserver: " + (fmt % args) + "\n")

    # ---- plumbing

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, status: int, body: str | bytes, extra: dict | None = None,
              content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else body
        headers = {"Content-Type": content_type, "Content-Length": str(len(data))}
        self._send_headers(status, headers, extra)
        self.wfile.write(data)

    def _send_headers(self, status: int, headers: dict, extra: dict | None) -> None:
        lower = {k.lower(): k for k in headers}
        for k, v in (extra or {}).items():
            headers.pop(lower.get(k.lower(), k), None)
            headers[k] = str(v)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()

    def _drop(self, how: Any) -> None:
        """Close the connection without (the rest of) a response; "reset" sends RST."""
        self.close_connection = True
        try:
            if how == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.connection.close()
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if ok:
            self.srv.http_log.append((self.command, self.path))
        return ok

    def _unexpected(self) -> None:
        if self.command in ("POST", "PUT", "PATCH"):
            self._read_body()
        self.srv._fail(f"unexpected request: {self.command} {self.path}")
        msg = f"scripted server: no route for {self.command} {self.path}"
        self._send(404, _dumps(_error_body(self.srv.dialect, 404, msg)))

    # ---- routes

    def do_GET(self):
        path = urlsplit(self.path).path
        models = [{"id": m, "object": "model", "owned_by": "corral-test"} for m in self.srv.models]
        if path == "/v1/models":
            return self._send(200, _dumps({"object": "list", "data": models}))
        if not path.startswith("/v1/models/"):
            return self._unexpected()
        name = path[len("/v1/models/"):]
        found = [m for m in models if m["id"] == name]
        if found:
            return self._send(200, _dumps(found[0]))
        self._send(404, _dumps(_error_body(self.srv.dialect, 404, f"model {name!r} not found")))

    def do_POST(self):
        if urlsplit(self.path).path != "/v1/chat/completions":
            return self._unexpected()
        srv = self.srv
        raw = self._read_body()
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("not a JSON object")
        except ValueError as e:
            body, err = None, f"invalid JSON body ({e}): {_short(raw.decode(errors='replace'))}"
        purpose = self.headers.get("X-Corral-Purpose")
        if purpose is not None and body is not None:
            return self._side_call(purpose, body, raw)
        with srv._lock:
            n = len(srv.requests)
            srv.requests.append(body)
            srv.request_headers.append(self.headers)
            srv.raw_requests.append(raw)
            index = srv._next if body is not None and srv._next < len(srv.turns) else None
            if index is not None:
                srv._next += 1
        if body is None:
            srv._fail(f"request {n}: {err}")
            return self._send(400, _dumps(_error_body(srv.dialect, 400,
                                                      f"scripted server: {err}")))
        if index is None:
            srv._fail(f"request {n}: no turn left (last message: {_short(_messages(body)[-1:])})")
            return self._send(500, _dumps(
                {"error": {"message": f"scripted server: no turn left for request {n}"}}))
        turn = srv.turns[index]
        d = DIALECTS[turn.get("dialect") or (turn.get("stream") or {}).get("dialect")
                     or srv.dialect_name]
        req = _Request(body, raw.decode(errors="replace"), self.headers)
        problems = [p for key, want in (turn.get("expect") or {}).items()
                    for p in EXPECT_CHECKS[key](want, req)]
        outcome = {"request": n, "turn": index, "status": None, "stream": False,
                   "completed": False}
        srv.outcomes.append(outcome)
        if problems:
            for p in problems:
                srv._fail(f"turn {index} (request {n}): {p}")
            outcome["status"] = 400
            self._send(400, _dumps(_error_body(
                d, 400, "scripted server: expectation failed: " + "; ".join(problems))))
            outcome["completed"] = True
            return
        self._answer(turn, index, n, d, body, len(raw), outcome)

    def _side_call(self, purpose, body, raw):
        """A mode's side call (header X-Corral-Purpose): the next turn scripted
        for that purpose, else the default answer of SIDE_DEFAULTS."""
        srv = self.srv
        with srv._lock:
            n = len(srv.side_requests)
            srv.side_requests.append({"purpose": purpose, "body": body})
            queue = srv.side.get(purpose) or []
            used = srv._side_next.get(purpose, 0)
            turn = queue[used] if used < len(queue) else SIDE_DEFAULTS.get(purpose)
            if used < len(queue):
                srv._side_next[purpose] = used + 1
        if turn is None:
            srv._fail(f"side request {n}: no turn for purpose {purpose!r}")
            return self._send(500, _dumps({"error": {"message": f"scripted server: no {purpose} turn"}}))
        d = DIALECTS[turn.get("dialect") or srv.dialect_name]
        req = _Request(body, raw.decode(errors="replace"), self.headers)
        problems = [p for key, want in (turn.get("expect") or {}).items()
                    for p in EXPECT_CHECKS[key](want, req)]
        outcome = {"request": n, "purpose": purpose, "turn": used, "status": None, "stream": False,
                   "completed": False}
        srv.side_outcomes.append(outcome)
        if problems:
            for p in problems:
                srv._fail(f"{purpose} turn {used} (side request {n}): {p}")
            outcome["status"] = 400
            return self._send(400, _dumps(_error_body(
                d, 400, "scripted server: expectation failed: " + "; ".join(problems))))
        self._answer(turn, used, n, d, body, len(raw), outcome)

    do_PUT = do_PATCH = do_DELETE = _unexpected

    # ---- answers

    def _answer(self, turn, index, n, d, body, raw_len, outcome):
        srv = self.srv
        if turn.get("delay") and srv._stop.wait(turn["delay"]):
            return self._drop(True)
        if turn.get("close"):
            return self._drop(turn["close"])
        status, extra = turn.get("status", 200), turn.get("headers") or {}
        outcome["status"] = status
        try:
            if "body" in turn:
                b = turn["body"]
                self._send(status, b if isinstance(b, str) else _dumps(b), extra)
            elif "error" in turn or status >= 400:
                self._send(status, _dumps(_error_body(d, status, turn.get("error"))), extra)
            else:
                rep = _reply(turn, index, raw_len)
                model = body.get("model") if isinstance(body.get("model"), str) \
                    else (srv.models or ["gpt-test"])[0]
                cid = f"chatcmpl-scripted-{n}"
                if body.get("stream") is True:
                    outcome["stream"] = True
                    opts = turn.get("stream") or {}
                    inc = opts.get("include_usage")
                    chunks = stream_chunks(d, rep, opts, model, cid, srv.created,
                                           _include_usage(body) if inc is None else inc)
                    return self._stream(status, extra, chunks, opts, outcome,
                                        turn.get("hang"))
                self._send(status, _dumps(completion(d, rep, model, cid, srv.created)), extra)
            outcome["completed"] = True
        except OSError:
            self.close_connection = True

    def _stream(self, status, extra, chunks, opts, outcome, hang):
        srv, nl = self.srv, "\r\n" if opts.get("crlf") else "\n"
        chunked = opts.get("transfer", "chunked") == "chunked"
        if opts.get("raw") is not None:
            events = [(p.encode(), True) for p in opts["raw"]]
        else:
            data = [_dumps(c) for c in chunks] + ([] if opts.get("no_done") else ["[DONE]"])
            events = []
            for e in data:
                if opts.get("comments"):
                    events.append((f": keep-alive{nl}{nl}".encode(), False))
                events.append((f"data: {e}{nl}{nl}".encode(), True))
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                   **({"Transfer-Encoding": "chunked"} if chunked else {"Connection": "close"})}
        if not chunked:
            self.close_connection = True
        split, interval = opts.get("split_bytes"), opts.get("interval", 0)
        try:
            self._send_headers(status, headers, extra)
            sent = 0
            for data, is_event in events:
                for p in ([data[i:i + split] for i in range(0, len(data), split)]
                          if split else [data]):
                    self.wfile.write(b"%x\r\n%b\r\n" % (len(p), p) if chunked else p)
                    if interval and srv._stop.wait(interval):
                        return self._drop(True)
                sent += is_event
                if is_event and sent == 1 and hang and srv._stop.wait(hang):
                    return self._drop(True)
                if opts.get("cut_after") and sent >= opts["cut_after"]:
                    return self._drop(True)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
            outcome["completed"] = True
        except OSError:
            self.close_connection = True


# --------------------------------------------------------------------------
# The server object
# --------------------------------------------------------------------------

class ScriptedServer:
    """A scripted chat-completions server on 127.0.0.1 (see module docstring).

    Attributes (readable while running and after stop):
      base_url         "http://127.0.0.1:PORT/v1"
      port             the bound port
      requests         chat-completion request bodies (dict; None if not valid JSON), in order
      request_headers  their headers (http.client.HTTPMessage, case-insensitive .get())
      raw_requests     their raw bodies (bytes)
      outcomes         per answered request: {"request", "turn", "status", "stream", "completed"}
      failures         recorded problems (strings)
      http_log         every (method, path) received
    """

    def __init__(self, turns: list, models: list | tuple = ("gpt-test",), *,
                 dialect: str = "openai", port: int = 0, created: int = 1700000000,
                 verbose: bool = False, side: dict | None = None):
        turns = [dict(t) for t in turns]
        _validate(turns, dialect)
        self.side = {k: [dict(t) for t in v] for k, v in (side or {}).items()}
        for v in self.side.values():
            _validate(v, dialect)
        self.side_requests: list = []     # {"purpose", "body"} of each side call, in order
        self.side_outcomes: list = []
        self._side_next: dict = {}
        self.turns, self.models, self.dialect_name = turns, list(models or []), dialect
        self.dialect = DIALECTS[dialect]
        self.created, self.verbose, self._port = created, verbose, port
        self.requests: list = []
        self.request_headers: list = []
        self.raw_requests: list = []
        self.outcomes: list = []
        self.failures: list = []
        self.http_log: list = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conns: set = set()
        self._next = 0
        self._httpd = None

    def _fail(self, msg: str) -> None:
        with self._lock:
            self.failures.append(msg)

    # ---- lifecycle

    def start(self) -> "ScriptedServer":
        self._httpd = _HTTPServer(("127.0.0.1", self._port), _Handler)
        self._httpd.scripted = self
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         name="modelserver", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stop.set()
        self._httpd.shutdown()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ---- results

    @property
    def turns_used(self) -> int:
        return self._next

    def problems(self) -> list[str]:
        """Recorded failures plus one line per turn that was never used."""
        with self._lock:
            out = list(self.failures)
        return out + [f"turn {i} was never used ({_short(t.get('note') or t)})"
                      for i, t in enumerate(self.turns) if i >= self._next] + [
                f"{p} turn {i} was never used ({_short(t.get('note') or t)})"
                for p, q in self.side.items() for i, t in enumerate(q)
                if i >= self._side_next.get(p, 0)]

    def assert_ok(self) -> None:
        p = self.problems()
        if p:
            raise AssertionError(f"scripted model server: {len(p)} problem(s):\n  "
                                 + "\n  ".join(p))

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> bool:
        """Wait until n chat-completion requests have arrived; False on timeout."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return len(self.requests) >= n


# --------------------------------------------------------------------------
# Script mode
# --------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", required=True,
                    help='JSON file: {"models": [...], "turns": [...]}')
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: ephemeral)")
    ap.add_argument("--port-file", help="write the bound port here once listening")
    ap.add_argument("--log", help="on exit, write requests, headers and problems here as JSON")
    ap.add_argument("--verbose", action="store_true", help="log each HTTP request to stderr")
    args = ap.parse_args(argv)
    try:
        with open(args.scenario, encoding="utf-8") as f:
            sc = json.load(f)
        unknown = set(sc) - {"models", "turns", "dialect", "note", "side"}
        if unknown:
            raise ValueError(f"unknown top-level key(s) {sorted(unknown)}")
        srv = ScriptedServer(sc.get("turns", []), sc.get("models", ["gpt-test"]),
                             dialect=sc.get("dialect", "openai"), port=args.port,
                             verbose=args.verbose, side=sc.get("side"))
    except (OSError, ValueError) as e:
        print(f"modelserver: {args.scenario}: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with srv:
        print(srv.base_url, flush=True)
        if args.port_file:
            tmp = f"{args.port_file}.tmp{os.getpid()}"
            with open(tmp, "w") as f:
                f.write(f"{srv.port}\n")
            os.replace(tmp, args.port_file)
        while not stop.wait(0.2):
            pass
    problems = srv.problems()
    if args.log:
        with open(args.log, "w", encoding="utf-8") as f:
            json.dump({"requests": srv.requests,
                       "headers": [list(h.items()) for h in srv.request_headers],
                       "outcomes": srv.outcomes, "problems": problems}, f, indent=1)
    for p in problems:
        print(f"modelserver: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
