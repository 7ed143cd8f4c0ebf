#!/usr/bin/env python3
"""notes_server.py: a small stdio MCP server (standard library only) that
tests/e2e/test_run_mcp.py configures for `corral run`'s agent, jailed.

Tools:
  lookup {key}      the value of key in $NOTES_DIR/notes.json
  read_path {path}  the text of any path (what the jail lets it see)
  environment {}    the names of the variables it was given
  fail {}           a tool's failure (isError)
  fetch {url}       GET a URL (the proxy's variables are honoured)
  sleep {seconds}   sleeps (a call given up on is cancelled)

Newline-delimited JSON-RPC on stdin/stdout; notes on stderr."""
import json
import os
import sys
import time

TOOLS = [
    {"name": "lookup", "description": "Look a note up by its key.",
     "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}},
    {"name": "read_path", "description": "Read a file.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "environment", "description": "The names of the environment variables.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "fetch", "description": "GET a URL (through the jail's proxy, if any).",
     "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}},
    {"name": "sleep", "description": "Sleep.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
]


def text(t, error=False):
    return {"content": [{"type": "text", "text": t}], "isError": error}


def call(name, args):
    if name == "lookup":
        with open(os.path.join(os.environ["NOTES_DIR"], "notes.json")) as f:
            notes = json.load(f)
        key = args.get("key", "")
        return text(f"{notes[key]} (from notes)") if key in notes else text(f"no note {key}", True)
    if name == "read_path":
        try:
            with open(args["path"]) as f:
                return text(f.read())
        except OSError as e:
            return text(f"{type(e).__name__}: {e}", True)
    if name == "environment":
        return text(" ".join(sorted(os.environ)))
    if name == "fail":
        return text("this tool always fails", True)
    if name == "fetch":
        import urllib.error
        import urllib.request
        try:
            with urllib.request.urlopen(args["url"], timeout=10) as r:
                return text(r.read().decode(errors="replace"))
        except urllib.error.HTTPError as e:
            return text(f"HTTP {e.code}: {e.headers.get('X-Corral-Reason', '')}", True)
        except OSError as e:
            return text(f"{type(e).__name__}: {e}", True)
    if name == "sleep":
        time.sleep(float(args.get("seconds", 1)))
        return text("slept")
    return None


def main():
    print("notes server ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue
        method, params = msg["method"], msg.get("params") or {}
        if method == "initialize":
            result = {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "notes", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = call(params.get("name"), params.get("arguments") or {})
            if result is None:
                out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "unknown tool"}}
                print(json.dumps(out), flush=True)
                continue
        elif method == "ping":
            result = {}
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                              "error": {"code": -32601, "message": "Method not found"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)


if __name__ == "__main__":
    main()
