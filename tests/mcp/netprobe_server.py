#!/usr/bin/env python3
"""netprobe_server.py: a tiny stdio MCP server, standard library only, for
tests/mcp/jailed.test.mjs (`corral mcp-jail -- python3 .../netprobe_server.py`).

Newline-delimited JSON-RPC 2.0: initialize, ping, tools/list, tools/call;
notifications are ignored.  Tools:
  connect {port, host?}  a TCP connection to host (default 127.0.0.1):
                         "connected" or "failed: <error>"
  getenv  {name}         the variable's value, or "(unset)"
  pid     {}             its own pid (as the jail numbers it) and its parent's
It exits when stdin closes.  The test only ever asks it for 127.0.0.0/8.
"""
import json
import os
import socket
import sys

TOOLS = [
    {"name": "connect", "description": "try a TCP connection",
     "inputSchema": {"type": "object", "properties": {"port": {"type": "integer"}, "host": {"type": "string"}},
                     "required": ["port"]}},
    {"name": "getenv", "description": "one environment variable",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
    {"name": "pid", "description": "this process's pid and its parent's",
     "inputSchema": {"type": "object", "properties": {}}},
]


def call(name, args):
    if name == "connect":
        try:
            with socket.create_connection((args.get("host", "127.0.0.1"), int(args["port"])), timeout=5):
                return "connected"
        except OSError as e:
            return f"failed: {e}"
    if name == "getenv":
        return os.environ.get(args["name"], "(unset)")
    if name == "pid":
        return f"{os.getpid()} {os.getppid()}"
    raise KeyError(name)


def answer(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "netprobe", "version": "1.0.0"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        try:
            text = call(params.get("name"), params.get("arguments") or {})
        except (KeyError, ValueError, TypeError) as e:
            return {"content": [{"type": "text", "text": f"bad call: {e}"}], "isError": True}
        return {"content": [{"type": "text", "text": text}]}
    raise LookupError(method)


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            reply = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
        else:
            if "id" not in msg:
                continue  # a notification
            try:
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": answer(msg)}
            except LookupError:
                reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no such method"}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
