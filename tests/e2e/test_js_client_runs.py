"""clients/js's runs half (docs/clients.md) against a live `corral serve
--model-url any` and scripted model servers (tests/model-server), one per
scenario of tests/clients/js-runs.test.mjs, run under `node --test` with
each Node >= 20 that test_js_client.py finds: a run followed to its end, a
follower that leaves and resumes, an AbortSignal, cancel, the example, a stream cut by the network (tests/e2e/cutproxy.py) and resumed, a
follower dropped as slow back with Last-Event-ID, artifacts and the
archive, the API key kept out of everything, a bad request."""
import os
import signal
import subprocess
import sys

import pytest

from cutproxy import CutProxy, DroppingServer
from test_serve import LIVE, Server
from test_js_client import NODES

ROOT = os.environ.get("CORRAL_SOURCE_ROOT") or os.path.join(os.path.dirname(__file__), "..", "..")
TEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "js-runs.test.mjs")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

KEY = "sk-jsclient-corral-secret-9f8e7d6c5b4a3210"
CODE = ("print(open('input/sales.csv').read().strip())\n"
        "import os\nos.makedirs('output', exist_ok=True)\n"
        "open('output/report.txt', 'w').write('widget 3\\n')\n")


def scenario(delay=0.0):
    return [tool_call("run_python", code=CODE) | {"delay": delay},
            text("Done: widget sold 3.") | {"delay": delay}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OPENAI_API_KEY", raising=False)
        mp.delenv("OPENAI_BASE_URL", raising=False)
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("jsruns-config")))
        s = Server(tmp_path_factory.mktemp("jsruns"), "--model-url", "any")
    yield s
    if s in LIVE:
        s.stop(signal.SIGKILL)


@pytest.mark.parametrize("major", sorted(NODES) or [0])
def test_the_js_client_runs(server, major):
    if not NODES:
        pytest.skip("no Node >= 20 (tests/mcp/setup.sh found none, nor PATH)")
    with ScriptedServer(scenario()) as follow, ScriptedServer(scenario(delay=0.7)) as resume, \
            ScriptedServer([text("too late") | {"delay": 30}]) as cancel, ScriptedServer(scenario()) as example, \
            ScriptedServer(scenario(delay=0.3)) as cut, \
            ScriptedServer([tool_call("run_shell", command="echo from-the-model"),
                            text("ok") | {"expect": {"contains": ["from-the-client"]}}]) as approve:
        proxy = CutProxy(server.port, cuts=2, after=900)
        fake = DroppingServer()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/"),
            "LANG": "C.UTF-8",
            "CORRAL_JS_CLIENT": os.path.abspath(os.path.join(ROOT, "clients", "js")),
            "CORRAL_TEST_URL": f"http://127.0.0.1:{server.port}",
            "CORRAL_TEST_TOKEN": server.token,
            "CORRAL_TEST_KEY": KEY,
            "CORRAL_TEST_MODEL_FOLLOW": follow.base_url,
            "CORRAL_TEST_MODEL_RESUME": resume.base_url,
            "CORRAL_TEST_MODEL_CANCEL": cancel.base_url,
            "CORRAL_TEST_MODEL_EXAMPLE": example.base_url,
            "CORRAL_TEST_MODEL_CUT": cut.base_url,
            "CORRAL_TEST_MODEL_APPROVE": approve.base_url,
            "CORRAL_TEST_CUT_URL": f"http://127.0.0.1:{proxy.port}",
            "CORRAL_TEST_DROP_URL": f"http://127.0.0.1:{fake.port}",
        }
        # Node 20's WebSocket (undici's) is behind a flag; 22 has it global.
        flags = ["--experimental-websocket"] if major < 22 else []
        env["CORRAL_TEST_NEED_WEBSOCKET"] = "1"
        r = subprocess.run([NODES[major], *flags, "--test", "--test-reporter=spec", "--test-concurrency=1", TEST],
                           env=env, capture_output=True, text=True, timeout=300)
        proxy.close()
        fake.close()
        if r.returncode != 0:
            pytest.fail(f"node {major}: node --test exited {r.returncode}:\n{r.stdout}\n{r.stderr}", pytrace=False)
        follow.assert_ok()
        resume.assert_ok()
        example.assert_ok()
        cut.assert_ok()
        approve.assert_ok()
        assert proxy.cut == 2  # the stream was cut twice, and resumed
        assert fake.seen == [None, "2"]  # dropped, and back with Last-Event-ID
        # the key given to the client went to the model
        assert follow.request_headers[0]["authorization"] == f"Bearer {KEY}"
