"""clients/js (corral-client, docs/clients.md) against a live `corral serve`:
tests/clients/js.test.mjs under `node --test`, with the same scenarios as
test_python_client.py plus the WebSocket and AbortSignal.  This test starts
the servers (one as is, one with --max-per-token 1 for the 429 path) and
hands their URLs and tokens to the test file.

The client needs no package, only a Node >= 20: the one tests/mcp/setup.sh
provides (Node 22, from the npm registry, pinned) and the one on PATH (Debian
12 has 18, this machine may have 20), each that is >= 20 and different; the
WebSocket case needs Node 22's global WebSocket and is skipped under 20.
Skipped only when there is no Node >= 20 at all."""
import os
import signal
import socket
import subprocess

import pytest

from test_serve import LIVE, Server

ROOT = os.environ.get("CORRAL_SOURCE_ROOT") or os.path.join(os.path.dirname(__file__), "..", "..")
MCP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp")
TEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "js.test.mjs")
NO_NODE = 77


def node_version(node):
    try:
        r = subprocess.run([node, "-p", "process.versions.node"], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return tuple(int(x) for x in r.stdout.strip().split(".")) if r.returncode == 0 else None


def nodes():
    """{major version: node} of the Nodes >= 20 at hand."""
    found = {}
    setup = subprocess.run([os.path.join(MCP, "setup.sh")], capture_output=True, text=True, timeout=900)
    cands = [setup.stdout.split("\n")[0]] if setup.returncode == 0 else []
    cands.append("node")
    for n in cands:
        v = node_version(n)
        if v and v[0] >= 20 and v[0] not in found:
            found[v[0]] = n
    return found


NODES = nodes()


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    made = [Server(tmp_path_factory.mktemp("jsclient")),
            Server(tmp_path_factory.mktemp("jscapped"), "--max-per-token", "1")]
    yield made
    for s in made:
        if s in LIVE:
            s.stop(signal.SIGKILL)


@pytest.mark.parametrize("major", sorted(NODES) or [0])
def test_the_js_client(servers, major):
    if not NODES:
        pytest.skip("no Node >= 20 (tests/mcp/setup.sh found none, nor PATH)")
    s, capped = servers
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        down = probe.getsockname()[1]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "LANG": "C.UTF-8",
        "CORRAL_JS_CLIENT": os.path.abspath(os.path.join(ROOT, "clients", "js")),
        "CORRAL_TEST_URL": f"http://127.0.0.1:{s.port}",
        "CORRAL_TEST_TOKEN": s.token,
        "CORRAL_TEST_CAPPED_URL": f"http://127.0.0.1:{capped.port}",
        "CORRAL_TEST_CAPPED_TOKEN": capped.token,
        "CORRAL_TEST_DOWN_URL": f"http://127.0.0.1:{down}",
    }
    r = subprocess.run([NODES[major], "--test", "--test-reporter=spec", TEST], env=env, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"node {major}: node --test exited {r.returncode}:\n{r.stdout}\n{r.stderr}", pytrace=False)
