"""`corral run`'s agent calling the tools of MCP servers its config file
lists (docs/mcp.md, "MCP tools for corral run"): a stdio server jailed
(tests/mcp/notes_server.py, standard library only), against the scripted
model server, which checks what the model is offered and what it reads
back."""
import json
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from conftest import CORRAL  # noqa: E402

MCP_DIR = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp"))
SERVER = os.path.join(MCP_DIR, "notes_server.py")


def base_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "CORRAL_MODEL", "XDG_CONFIG"))}
    env.update(extra)
    return env


def processes_with(mark):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if mark.encode() in f.read():
                        found.append(pid)
            except OSError:
                pass
    return found


@pytest.fixture
def notes(tmp_path):
    """A notes directory the server may read, a canary it may not, and a
    config file naming the server."""
    data = tmp_path / "notes"
    data.mkdir()
    (data / "notes.json").write_text(json.dumps({"answer": "42"}))
    canary = tmp_path / "canary" / "secret.txt"
    canary.parent.mkdir()
    canary.write_text("host canary: must stay on the host\n")
    for p in (tmp_path, data, canary.parent):
        os.chmod(p, 0o755)
    for p in (data / "notes.json", canary):
        os.chmod(p, 0o644)
    return data, canary


def write_config(tmp_path, servers):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"mcp": servers}))
    return str(cfg)


def notes_server(data, mark, **more):
    entry = {"type": "local", "command": ["python3", SERVER, mark],
             "environment": {"NOTES_DIR": str(data), "NOTES_TOKEN": "{env:MY_NOTES_TOKEN}"},
             "jail": {"allowRead": [MCP_DIR, str(data)]}}
    entry.update(more)
    return entry


def corral_run(tmp_path, srv, config, *args, env=None, timeout=120):
    env = env or base_env(NO_COLOR="1", MY_NOTES_TOKEN="token-for-notes",
                          OPENAI_API_KEY="sk-host-secret-never-in-a-jail", HOST_ONLY_SECRET="hush")
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    cmd = [CORRAL, "run", "--base-url", srv.base_url, "--model", "gpt-test", "--cold", "--config", config,
           "--json", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp_path, env=env)


def trace_events(tmp_path):
    import glob
    (path,) = glob.glob(str(tmp_path / "state" / "corral" / "runs" / "*" / "trace.jsonl"))
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_the_agent_calls_a_jailed_mcp_servers_tools(tmp_path, notes):
    data, canary = notes
    mark = f"corral-mcp-notes-{os.getpid()}-{time.monotonic_ns()}"
    config = write_config(tmp_path, {"notes": notes_server(data, mark)})
    builtin = ["run_python", "run_shell", "read_file", "write_file", "list_files", "final_answer"]
    mcp_tools = ["notes_lookup", "notes_read_path", "notes_environment", "notes_fail", "notes_fetch", "notes_sleep"]
    turns = [
        tool_call("notes_lookup", key="answer")
        | {"expect": {"tool_names": builtin + mcp_tools, "contains": ["the MCP server 'notes'"]}},
        tool_call("notes_read_path", path=str(canary))
        | {"expect": {"contains": ["42 (from notes)"], "last_role": "tool"}},
        tool_call("notes_environment")
        | {"expect": {"contains": ["error: FileNotFoundError"], "not_contains": ["host canary"]}},
        tool_call("notes_fail")
        | {"expect": {"contains": ["NOTES_TOKEN"], "not_contains": ["HOST_ONLY_SECRET", "OPENAI_API_KEY"]}},
        text("The answer is 42.") | {"expect": {"contains": ["error: this tool always fails"]}},
    ]
    with ScriptedServer(turns) as srv:
        r = corral_run(tmp_path, srv, config, "what is the answer?")
    srv.assert_ok()
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["status"] == "answered" and "42" in res["answer"]
    events = trace_events(tmp_path)
    start = events[0]
    assert start["type"] == "run_start"
    assert start["tools_extra"] == [{"server": "notes", "jailed": True, "tools": mcp_tools}]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(e["name"], e["ok"]) for e in results] == [
        ("notes_lookup", True), ("notes_read_path", False), ("notes_environment", True), ("notes_fail", False)]
    assert results[0]["content"] == "42 (from notes)"
    calls = [e for e in events if e["type"] == "tool_call"]
    assert calls[1]["arguments"] == {"path": str(canary)}
    # The server's value of NOTES_TOKEN came from the config's {env:...};
    # neither it nor the API key is written in the trace.
    assert "token-for-notes" not in json.dumps(events)
    assert "sk-host-secret" not in json.dumps(events)
    # The server and its jail are gone with the run.
    assert processes_with(mark) == []


def test_a_tool_call_over_its_time_limit_is_cancelled_and_the_run_goes_on(tmp_path, notes):
    data, _ = notes
    mark = f"corral-mcp-slow-{os.getpid()}-{time.monotonic_ns()}"
    config = write_config(tmp_path, {"notes": notes_server(data, mark, callTimeout=2500)})
    turns = [
        tool_call("notes_sleep", seconds=4),
        tool_call("notes_lookup", key="answer")
        | {"expect": {"contains": ["error: the MCP server 'notes' did not answer within 2.5 s"]}},
        text("42") | {"expect": {"contains": ["42 (from notes)"]}},
    ]
    t0 = time.monotonic()
    with ScriptedServer(turns) as srv:
        r = corral_run(tmp_path, srv, config, "slow")
    srv.assert_ok()
    assert r.returncode == 0, r.stderr
    # corral gave up on the sleep after 2.5 s; the lookup then waited for
    # the rest of it in the server (which runs one call at a time).
    assert time.monotonic() - t0 < 40
    assert processes_with(mark) == []


@pytest.mark.parametrize("entry,message", [
    ({"type": "local", "command": ["python3"], "jial": {}}, 'mcp.bad has no key "jial" (did you mean "jail"?)'),
    ({"type": "local", "command": "python3 server.py"}, '"command" must be the server\'s command line as an array'),
    ({"type": "stdio", "command": ["x"]}, '"type" must be "local" (a command) or "remote" (a URL)'),
    ({"type": "remote", "url": "ftp://x"}, "a remote server needs \"url\""),
    ({"type": "local", "command": ["x"], "jail": {"net": "everything"}}, 'jail.net must be "none", "host" or "allow=HOST[:PORT],..."'),
    ({"type": "local", "command": ["x"], "environment": {"T": "{env:CORRAL_TEST_UNSET_VAR}"}},
     "names the environment variable 'CORRAL_TEST_UNSET_VAR', which is not set"),
    ({"type": "local", "command": ["no-such-mcp-server-program"]}, "the MCP server 'bad' could not start"),
    ({"type": "local", "command": ["x"], "jail": {"net": "allow=a.test", "secrets": ["a.test=X-Key:CORRAL_TEST_UNSET_VAR"]}},
     "mcp.bad.jail.secrets: the environment variable 'CORRAL_TEST_UNSET_VAR' is not set"),
])
def test_config_mistakes_are_usage_errors(tmp_path, entry, message):
    config = write_config(tmp_path, {"bad": entry})
    with ScriptedServer([]) as srv:
        r = corral_run(tmp_path, srv, config, "task", timeout=60)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    # --no-mcp: the section is not even started
    with ScriptedServer([text("done")]) as srv:
        r = corral_run(tmp_path, srv, config, "--no-mcp", "task", timeout=60)
    assert r.returncode == 0, r.stderr


def test_a_server_that_dies_is_an_observation_not_a_crash(tmp_path, notes):
    data, _ = notes
    mark = f"corral-mcp-dies-{os.getpid()}-{time.monotonic_ns()}"
    config = write_config(tmp_path, {"notes": notes_server(data, mark)})
    turns = [
        tool_call("notes_read_path", path="/proc/self/status"),
        # the server kills itself through a shell it cannot run: use the
        # sleep tool with a bad value instead, which raises in the server
        tool_call("notes_sleep", seconds="not a number") | {"expect": {"contains": ["Name:"]}},
        text("done") | {"expect": {"contains": ["error: the MCP server 'notes' is gone"]}},
    ]
    with ScriptedServer(turns) as srv:
        r = corral_run(tmp_path, srv, config, "die")
    srv.assert_ok()
    assert r.returncode == 0, r.stderr
    results = [e for e in trace_events(tmp_path) if e["type"] == "tool_result"]
    assert results[1]["ok"] is False and "ValueError" in results[1]["content"]
    assert processes_with(mark) == []


def test_a_remote_server_over_streamable_http(tmp_path):
    """A `remote` server: corral serve's own /mcp (Streamable HTTP), its
    token from the environment through {env:...}; run_python's state kept
    between two calls of the agent."""
    data = tmp_path / "serve-data"
    env = dict(os.environ, TMPDIR=str(tmp_path))
    serve = subprocess.Popen([CORRAL, "serve", "--data", str(data), "--listen", "127.0.0.1:0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = serve.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), serve.stderr.read()
        url = url.split("/?")[0]  # it prints http://HOST:PORT/?token=...
        token = (data / "token").read_text().strip()
        config = write_config(tmp_path, {"sandbox": {
            "type": "remote", "url": url + "/mcp",
            "headers": {"Authorization": "Bearer {env:SANDBOX_TOKEN}"}}})
        turns = [
            tool_call("sandbox_run_python", code="x = 6 * 7\nx")
            | {"expect": {"tool_names": ["run_python", "sandbox_run_python", "sandbox_read_file"]}},
            tool_call("sandbox_run_python", code="print(x + 1)") | {"expect": {"contains": ["42"]}},
            text("43") | {"expect": {"contains": ["43"], "not_contains": [token]}},
        ]
        with ScriptedServer(turns) as srv:
            r = corral_run(tmp_path, srv, config, "remote",
                           env=base_env(NO_COLOR="1", SANDBOX_TOKEN=token))
        srv.assert_ok()
        assert r.returncode == 0, r.stderr
        events = trace_events(tmp_path)
        assert events[0]["tools_extra"][0]["server"] == "sandbox"
        assert events[0]["tools_extra"][0]["jailed"] is False
        assert token not in json.dumps(events)
        # A wrong token: the server refuses, and the run says which server.
        config = write_config(tmp_path, {"sandbox": {
            "type": "remote", "url": url + "/mcp", "headers": {"Authorization": "Bearer wrong"}}})
        with ScriptedServer([]) as srv:
            r = corral_run(tmp_path, srv, config, "remote")
        assert r.returncode == 2 and "the MCP server 'sandbox' could not start" in r.stderr, r.stderr
        assert "HTTP 401" in r.stderr
    finally:
        serve.terminate()
        serve.wait(30)


def test_a_remote_server_that_ended_the_session(tmp_path):
    """A remote server that forgets the session between two calls (here
    corral serve ending an idle MCP session; a restarted server does the
    same) answers 404: the client starts a new session with a new
    initialize and sends the call again, once, and the model is told that
    the server's state from earlier calls is gone."""
    data = tmp_path / "serve-data"
    env = dict(os.environ, TMPDIR=str(tmp_path))
    serve = subprocess.Popen([CORRAL, "serve", "--data", str(data), "--listen", "127.0.0.1:0",
                              "--mcp-idle-timeout", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = serve.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), serve.stderr.read()
        url = url.split("/?")[0]
        token = (data / "token").read_text().strip()
        config = write_config(tmp_path, {"sandbox": {
            "type": "remote", "url": url + "/mcp", "headers": {"Authorization": f"Bearer {token}"}}})
        turns = [
            tool_call("sandbox_run_python", code="x = 6 * 7\nx"),
            # the model thinks for longer than the server keeps an idle session
            tool_call("sandbox_run_python", code="print(7 * 6)") | {"expect": {"contains": ["42"]}, "delay": 3},
            text("42") | {"expect": {"contains": ["42", "had ended its session", "is gone"]}},
        ]
        with ScriptedServer(turns) as srv:
            r = corral_run(tmp_path, srv, config, "remote")
        srv.assert_ok()
        assert r.returncode == 0, r.stderr
        results = [e for e in trace_events(tmp_path) if e["type"] == "tool_result"]
        assert [e["ok"] for e in results] == [True, True], results
    finally:
        serve.terminate()
        serve.wait(30)


def test_the_agent_calls_a_third_party_node_server(tmp_path):
    """@modelcontextprotocol/server-everything from npm (tests/mcp/setup.sh),
    a Node server, jailed from the config file with its node_modules tree
    readable: its tool names (with '-') made function names, its results
    read back by the model."""
    mcp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp")
    setup = subprocess.run([os.path.join(mcp, "setup.sh")], capture_output=True, text=True, timeout=900)
    if setup.returncode == 77:
        pytest.skip(setup.stderr.strip())
    assert setup.returncode == 0, setup.stderr
    node, modules = (os.path.realpath(p) for p in setup.stdout.split("\n")[:2])
    tree = os.path.join(modules, "node_modules")
    server = os.path.join(tree, "@modelcontextprotocol", "server-everything", "dist", "index.js")
    config = write_config(tmp_path, {"everything": {
        "type": "local", "command": [node, server], "jail": {"allowRead": [tree]}}})
    turns = [
        tool_call("everything_get-sum", a=2, b=40)
        | {"expect": {"tool_names": ["everything_echo", "everything_get-sum"]}},
        tool_call("everything_echo", message="through the jail") | {"expect": {"contains": ["42"]}},
        text("42") | {"expect": {"contains": ["through the jail"]}},
    ]
    with ScriptedServer(turns) as srv:
        r = corral_run(tmp_path, srv, config, "add")
    srv.assert_ok()
    assert r.returncode == 0, r.stderr
    results = [e for e in trace_events(tmp_path) if e["type"] == "tool_result"]
    assert [(e["name"], e["ok"]) for e in results] == [("everything_get-sum", True), ("everything_echo", True)]


def test_a_server_with_an_allow_list(tmp_path, notes):
    """jail.net "allow=...": the server reaches the named host through
    corral's proxy (mapped onto 127.0.0.2 with jail.resolve, as the tests
    may reach only loopback) and nothing else; the refusal's reason comes
    back to the model."""
    import http.server
    import threading

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"hello from the allowed host"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    web = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Hello)
    port = web.server_address[1]
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        data, _ = notes
        mark = f"corral-mcp-net-{os.getpid()}-{time.monotonic_ns()}"
        entry = notes_server(data, mark)
        entry["jail"].update({"net": f"allow=files.test:{port}", "resolve": ["files.test:127.0.0.2"]})
        config = write_config(tmp_path, {"notes": entry})
        turns = [
            tool_call("notes_fetch", url=f"http://files.test:{port}/"),
            tool_call("notes_fetch", url=f"http://other.test:{port}/")
            | {"expect": {"contains": ["hello from the allowed host"]}},
            tool_call("notes_fetch", url=f"http://127.0.0.2:{port}/")
            | {"expect": {"contains": ["error: HTTP 403", "allow-list"]}},
            text("done") | {"expect": {"contains": ["error: HTTP 403"]}},
        ]
        with ScriptedServer(turns) as srv:
            r = corral_run(tmp_path, srv, config, "fetch")
        srv.assert_ok()
        assert r.returncode == 0, r.stderr
        ok = [e["ok"] for e in trace_events(tmp_path) if e["type"] == "tool_result"]
        assert ok == [True, False, False]
        assert processes_with(mark) == []
    finally:
        web.shutdown()


def test_a_server_with_a_brokered_credential(tmp_path, notes):
    """jail.secrets: the proxy adds the header for the server's requests; the
    host echoes it back, and neither the model, the trace nor the output
    sees the value (docs/network.md, "Brokered credentials")."""
    import http.server
    import threading
    token = f"key-{os.getpid()}-{time.monotonic_ns()}"
    seen = []

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("X-Api-Key"))
            body = f"you sent key={self.headers.get('X-Api-Key')}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    web = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Echo)
    port = web.server_address[1]
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        data, _ = notes
        mark = f"corral-mcp-secret-{os.getpid()}-{time.monotonic_ns()}"
        entry = notes_server(data, mark)
        entry["jail"].update({"net": f"allow=files.test:{port}", "resolve": ["files.test:127.0.0.2"],
                              "secrets": ["files.test=X-Api-Key:CORRAL_TEST_API_KEY"]})
        config = write_config(tmp_path, {"notes": entry})
        turns = [
            tool_call("notes_fetch", url=f"http://files.test:{port}/"),
            text("done") | {"expect": {"contains": ["you sent key=" + "*" * len(token)],
                                       "not_contains": [token]}},
        ]
        env = base_env(NO_COLOR="1", MY_NOTES_TOKEN="token-for-notes", CORRAL_TEST_API_KEY=token)
        with ScriptedServer(turns) as srv:
            r = corral_run(tmp_path, srv, config, "fetch", env=env)
        srv.assert_ok()
        assert r.returncode == 0, r.stderr
        assert seen == [token]
        assert token not in r.stdout and token not in r.stderr
        events = trace_events(tmp_path)
        assert token not in json.dumps(events)
        assert [e["ok"] for e in events if e["type"] == "tool_result"] == [True]
    finally:
        web.shutdown()
