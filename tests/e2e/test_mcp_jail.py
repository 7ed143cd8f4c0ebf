"""`corral mcp-jail`: third-party stdio MCP servers inside a jail.

The servers from npm (@modelcontextprotocol/server-filesystem and
server-everything) and a Python one (tests/mcp/netprobe_server.py), driven
by the v1 SDK client (tests/mcp/jailed.test.mjs under `node --test`); the
usage errors and the stream's limits here, without Node; and the library's
mcp_jail_run() from several threads over socketpairs (mcp-jail-threads.c).

tests/mcp/setup.sh provides Node and the packages (from the npm registry);
the Node test is skipped only when neither Node nor npm can be had."""
import os
import subprocess

import pytest

from conftest import CORRAL

MCP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp")
NO_NODE = 77  # setup.sh's exit status when no Node or npm can be had
# tests/e2e/mcp-jail-threads.c, built beside corral (not under ThreadSanitizer:
# a clone() child of a TSan process runs its interceptors, whose locks another
# thread may hold; see test_serve.py)
THREADS = os.environ.get("CORRAL_MCP_JAIL_THREADS") or os.path.join(
    os.path.dirname(os.path.abspath(CORRAL)), "tests", "mcp-jail-threads")


def test_third_party_servers_in_the_jail():
    setup = subprocess.run([os.path.join(MCP, "setup.sh")], capture_output=True, text=True, timeout=900)
    if setup.returncode == NO_NODE:
        pytest.skip(setup.stderr.strip())
    assert setup.returncode == 0, setup.stderr
    node, modules = setup.stdout.split("\n")[:2]
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("CORRAL_", "XDG_")) or k.endswith("SAN_OPTIONS")}
    env.update({
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "LANG": "C.UTF-8",
        "CORRAL": os.path.abspath(CORRAL),
        "CORRAL_MCP_MODULES": modules,
    })
    r = subprocess.run([node, "--test", "--test-reporter=spec", "--test-concurrency=1",
                        os.path.join(MCP, "jailed.test.mjs")],
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"node --test exited {r.returncode}:\n{r.stdout}\n{r.stderr}", pytrace=False)


@pytest.mark.parametrize("args, message", [
    ([], "no server to run"),
    (["--"], "no server to run"),
    (["--net", "allow=", "--", "true"], "--net"),
    (["--net", "down", "--", "true"], "expected none, host or allow="),
    (["--allow-read", "/nonexistent-corral-path", "--", "true"], "--allow-read: cannot use '/nonexistent-corral-path'"),
    (["--allow-write", "no/such/dir", "--", "true"], "--allow-write: cannot use 'no/such/dir'"),
    (["--allow-read", "/tmp", "--", "true"], "managed by corral"),
    (["--env", "CORRAL_MCP_JAIL_UNSET", "--", "true"], "'CORRAL_MCP_JAIL_UNSET' is not set in corral's environment"),
    (["--env", "1BAD=x", "--", "true"], "--env"),
    (["--bind", "/usr", "--", "true"], "unknown option"),
    (["-m", "1G", "--address-space", "512M", "--", "true"], "address-space allowance must be at least"),
])
def test_usage_errors(corral, args, message):
    r = corral("mcp-jail", *args)
    assert r.rc == 2, (r.rc, r.err)
    assert message in r.err.decode(), r.err
    assert r.out == b""


def test_stdin_and_stdout_are_the_servers_and_uncapped(corral):
    # 3 MB through: no output cap on the stream unless asked for
    r = corral("mcp-jail", "--", "python3", "-c", "import sys; sys.stdout.write(sys.stdin.read() * 3)",
               input=b"x" * 1_000_000)
    assert r.rc == 0, r.err
    assert r.out == b"x" * 3_000_000
    r = corral("mcp-jail", "--output-limit", "1K", "--", "python3", "-c", "print('y' * 5000)")
    assert r.out == b"y" * 1024, len(r.out)


def test_no_wall_clock_limit_unless_asked(corral):
    # exec's default limit is 30 s; a server has none.  Asked for, it applies.
    r = corral("mcp-jail", "-t", "0.5", "--", "sleep", "5", timeout=30)
    assert r.rc == 124, (r.rc, r.err)
    r = corral("mcp-jail", "--", "python3", "-c", "import sys; sys.stdin.read(); print('eof')", input=b"")
    assert r.rc == 0 and r.out == b"eof\n", r.err


def test_exit_status_and_exec_failure(corral, tmp_path):
    assert corral("mcp-jail", "--", "sh", "-c", "exit 7").rc == 7
    r = corral("mcp-jail", "--", str(tmp_path / "server"))
    assert r.rc == 127, r.err
    assert b"--allow-read" in r.err, r.err
    r = corral("mcp-jail", "--", "no-such-mcp-server")
    assert r.rc == 127 and b"looked up on the jail's PATH" in r.err, r.err


def test_help_names_the_options(corral):
    r = corral("mcp-jail", "--help")
    assert r.rc == 0
    for opt in (b"--allow-read", b"--allow-write", b"--env", b"--net", b"--memory", b"--address-space"):
        assert opt in r.out, opt


def test_the_library_from_threads_over_socketpairs():
    """mcp_jail_run() as an MCP client calls it: 8 servers at once, each on a
    thread over a socketpair, and one cancelled; twice, the second round
    leaving no file descriptor behind."""
    if not os.access(THREADS, os.X_OK):
        pytest.skip(f"no {THREADS}")
    r = subprocess.run([THREADS, "8"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout, r.stderr)


def test_an_allow_list_through_the_proxy(corral, tmp_path):
    """--net allow=: the server reaches the named host (a test server on
    127.0.0.2, named with --resolve) through corral's proxy, and nothing else."""
    import http.server
    import threading
    web = http.server.ThreadingHTTPServer(("127.0.0.2", 0), http.server.SimpleHTTPRequestHandler)
    (tmp_path / "hello.txt").write_text("hello through the proxy")
    web.RequestHandlerClass = type("H", (http.server.SimpleHTTPRequestHandler,), {
        "__init__": lambda self, *a, **k: http.server.SimpleHTTPRequestHandler.__init__(
            self, *a, directory=str(tmp_path), **k),
        "log_message": lambda self, *a: None})
    port = web.server_address[1]
    threading.Thread(target=web.serve_forever, daemon=True).start()
    code = ("import urllib.request, urllib.error\n"
            "for url in ['http://files.test:%d/hello.txt', 'http://other.test:%d/hello.txt']:\n"
            "    try:\n"
            "        print(urllib.request.urlopen(url, timeout=10).read().decode())\n"
            "    except urllib.error.HTTPError as e:\n"
            "        print('refused', e.code, e.headers.get('X-Corral-Reason'))\n") % (port, port)
    try:
        r = corral("mcp-jail", "--net", f"allow=files.test:{port}", "--resolve", "files.test:127.0.0.2",
                   "--", "python3", "-c", code)
    finally:
        web.shutdown()
    assert r.rc == 0, r.err
    out = r.out.decode()
    assert "hello through the proxy" in out
    assert "refused 403" in out and "allow-list" in out
