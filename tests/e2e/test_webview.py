"""The web view (docs/webview.md) in headless Chromium: Debian's `chromium`
driven by playwright-core from npm (tests/webview/setup.sh, a pinned lock).
This file starts `corral serve --model-url any` and the scripted model
servers (tests/model-server) and runs tests/webview/webview.test.mjs, which
logs in with the token URL, starts a run from the page's form with an
uploaded input, watches its steps appear, has a second browser join midway,
checks the figure (its natural width), the CSV preview's rows and sorting,
hostile text from the model, the data and the task shown verbatim and never
run, the replay scrubber, cancel, the runs list and the sandboxes page.

Skipped only when chromium is not installed (scripts/install-deps.sh test
installs it) or no Node >= 20 is at hand.  Runs as root (Chromium with
--no-sandbox, its own sandbox needing a non-root user) and as an ordinary
user.  CORRAL_WEBVIEW_SHOTS=DIR also writes the screenshots of docs/img/."""
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from test_serve import LIVE, Server
from test_js_client import NODES

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WEBVIEW = os.path.join(HERE, "..", "webview")
CHROMIUM = os.environ.get("CORRAL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

# What the model, the data and the task say: each must show as this very
# text, and none may run (each payload would set window.__pwned).
TASK = 'Summarise <img src=x onerror="window.__pwned=1"> & <script>window.__pwned=1</script>'
CELL = "<script>window.__pwned=2</script>"
STDOUT = "\x1b[31mRED\x1b[0m <iframe src=javascript:window.__pwned=5>"
SHELL = '<img src=x onerror="window.__pwned=4">'
ANSWER_RAW = '<b onmouseover="window.__pwned=3">raw</b> <script>window.__pwned=3</script>'
ANSWER_LINK = "[click](javascript:window.__pwned=3)"
ANSWER = f"**Done.** {ANSWER_RAW}\n\n{ANSWER_LINK}\n\n- see `output/table.csv`"
HOSTILE = [TASK, CELL, STDOUT, SHELL, ANSWER_RAW, ANSWER_LINK, "<b>bold</b>"]

INPUT = f"product,qty\n<b>bold</b>,3\n{CELL},1\nplain,2\n"
CSV_ROWS = [["<b>bold</b>", "3"], [CELL, "1"], ["plain", "2"]]
CODE = ("import pandas as pd\nimport matplotlib.pyplot as plt\n"
        "df = pd.read_csv('input/data.csv')\n"
        "df.to_csv('output/table.csv', index=False)\n"
        f"print({STDOUT!r})\n"
        "plt.bar(range(len(df)), df['qty'])\nplt.savefig('output/figure.png')\n"
        "import time\nprint('LIVE-MARKER', flush=True)\ntime.sleep(4)\n")


# A trace file for the upload: one event of each kind the page draws beyond
# the run's own (the modes, the network, a role), hostile text in each, one
# line that is not an event.
T_PLAN = "1. <script>window.__pwned=6</script> read"
T_MISSING = '<img src=x onerror="window.__pwned=7">'
T_SUMMARY = "\x1b]0;title\x07 <b>summary</b>"
T_DIFF = "output/a.csv: <iframe src=javascript:window.__pwned=8>"
T_HOST = "<svg onload=window.__pwned=9>.example"
T_ROLE = "<u>coder</u>"
TRACE_HOSTILE = [T_PLAN, T_MISSING, T_DIFF, T_HOST, T_ROLE]


def trace_lines():
    ev = [
        {"type": "run_start", "task": "replayed <b>task</b>", "model": "m", "run_id": "r1"},
        {"type": "plan", "reason": "initial", "plan": T_PLAN, "iteration": 1, "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
        {"type": "model_reply", "iteration": 1, "content": None, "tool_calls": [{"id": "c1"}], "usage": {"prompt_tokens": 9, "completion_tokens": 3},
         "cost": 0.0012},
        {"type": "tool_call", "iteration": 1, "id": "c1", "name": "run_shell", "command": "curl x", "role": T_ROLE},
        {"type": "net", "host": T_HOST, "port": 443, "method": "CONNECT", "allowed": False, "reason": "not allowed", "iteration": 1},
        {"type": "net", "host": "pypi.org", "port": 443, "method": "CONNECT", "allowed": True, "bytes_up": 10, "bytes_down": 2048, "ms": 12, "iteration": 1},
        {"type": "tool_result", "iteration": 1, "id": "c1", "name": "run_shell", "ok": True,
         "exec": {"status": "ok", "exit_code": 0, "stdout": "hi\n", "stderr": "", "wall_ms": 5}},
        {"type": "compact", "from": 2, "messages": 4, "est_tokens_before": 3000, "summary": T_SUMMARY, "iteration": 2},
        {"type": "verify", "round": 1, "model": "v", "complete": False, "missing": [T_MISSING], "action": "sent_back", "iteration": 2},
        {"type": "reproduce", "result": "not_reproduced", "steps": 1, "files_compared": 1, "files_reproduced": 0, "differences": [T_DIFF], "wall_ms": 40},
        {"type": "run_end", "status": "answered", "answer": "done", "iterations": 2, "usage": {"prompt_tokens": 9, "completion_tokens": 3, "cost": 0.0345}},
    ]
    lines = [json.dumps({"v": 1, "t_ms": i, **e}) for i, e in enumerate(ev)]
    lines.insert(3, "not json <script>")
    return "\n".join(lines) + "\n"


def scenario():
    # The second turn waits: the second browser joins while the run goes.
    return [tool_call("run_python", code=CODE),
            tool_call("run_shell", command=f"echo '{SHELL}'") | {"delay": 4.0},
            text(ANSWER) | {"delay": 0.5}]


@pytest.fixture
def server(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    s = Server(tmp_path, "--model-url", "any")
    yield s
    if s in LIVE:
        s.stop(signal.SIGKILL)


def test_webview_in_chromium(server, tmp_path):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no chromium at {CHROMIUM} (scripts/install-deps.sh test installs Debian's)")
    if not NODES:
        pytest.skip("no Node >= 20 (tests/mcp/setup.sh found none, nor PATH)")
    setup = subprocess.run([os.path.join(WEBVIEW, "setup.sh")], capture_output=True, text=True, timeout=600)
    if setup.returncode == 77:
        pytest.skip(setup.stderr.strip())
    assert setup.returncode == 0, setup.stderr
    node = NODES[max(NODES)]
    (tmp_path / "data.csv").write_text(INPUT)
    (tmp_path / "trace.jsonl").write_text(trace_lines())
    with open(tmp_path / "big.jsonl", "wb") as f:
        f.truncate((32 << 20) + 1)  # sparse: the page refuses it by its size, unread
    with ScriptedServer(scenario()) as srv, ScriptedServer([text("too late") | {"delay": 30}]) as slow:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/"),
            "LANG": "C.UTF-8",
            "CORRAL_WEBVIEW_MODULES": setup.stdout.strip().splitlines()[-1],
            "CORRAL_CHROMIUM": CHROMIUM,
            "CORRAL_TEST_URL": f"http://127.0.0.1:{server.port}",
            "CORRAL_TEST_TOKEN": server.token,
            "CORRAL_TEST_MODEL": srv.base_url,
            "CORRAL_TEST_MODEL_CANCEL": slow.base_url,
            "CORRAL_TEST_INPUT": str(tmp_path / "data.csv"),
            "CORRAL_TEST_HOSTILE": json.dumps(HOSTILE),
            "CORRAL_TEST_CSV_ROWS": json.dumps(CSV_ROWS),
            "CORRAL_TEST_TRACE": str(tmp_path / "trace.jsonl"),
            "CORRAL_TEST_TRACE_HOSTILE": json.dumps(TRACE_HOSTILE),
            "CORRAL_TEST_BIG_TRACE": str(tmp_path / "big.jsonl"),
        }
        if os.environ.get("CORRAL_WEBVIEW_SHOTS"):
            env["CORRAL_WEBVIEW_SHOTS"] = os.environ["CORRAL_WEBVIEW_SHOTS"]
        r = subprocess.run([node, os.path.join(WEBVIEW, "webview.test.mjs")], env=env, capture_output=True,
                           text=True, timeout=180)
        print(r.stdout)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "not ok" not in r.stdout
        assert r.stdout.count("ok - ") >= 12, r.stdout
        srv.assert_ok()
    # the run as the API has it: the page started it with the form's settings
    status, runs = server.json("GET", "/v1/runs")
    assert status == 200
    by_status = sorted(x["status"] for x in runs["runs"])
    assert by_status == ["answered", "cancelled"], runs
    answered = next(x for x in runs["runs"] if x["status"] == "answered")
    assert answered["task"] == TASK and answered["model"] == "gpt-test"


APPROVE_HOSTILE = '<img src=x onerror="window.__pwned=7">'


def test_webview_approvals(server, tmp_path):
    """Issue 18's Approvals: a run started with approve "always" waits on its
    page; the page shows the code and the review's findings, a denial with
    a reason reaches the model, an edit is what runs, and a late joiner
    sees both questions answered (tests/webview/approve.test.mjs)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no chromium at {CHROMIUM} (scripts/install-deps.sh test installs Debian's)")
    if not NODES:
        pytest.skip("no Node >= 20 (tests/mcp/setup.sh found none, nor PATH)")
    setup = subprocess.run([os.path.join(WEBVIEW, "setup.sh")], capture_output=True, text=True, timeout=600)
    if setup.returncode == 77:
        pytest.skip(setup.stderr.strip())
    assert setup.returncode == 0, setup.stderr
    node = NODES[max(NODES)]
    turns = [tool_call("run_shell", command=f"curl -s http://127.0.0.1:9/ || echo '{APPROVE_HOSTILE}'"),
             tool_call("run_shell", command="echo answer-41")
             | {"expect": {"contains": ["did not approve", "no network here, use the input"]}},
             text("done") | {"expect": {"contains": ["edited-in-the-browser", "The user edited your command"]}}]
    with ScriptedServer(turns) as srv:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/"),
            "LANG": "C.UTF-8",
            "CORRAL_WEBVIEW_MODULES": setup.stdout.strip().splitlines()[-1],
            "CORRAL_CHROMIUM": CHROMIUM,
            "CORRAL_TEST_URL": f"http://127.0.0.1:{server.port}",
            "CORRAL_TEST_TOKEN": server.token,
            "CORRAL_TEST_MODEL": srv.base_url,
            "CORRAL_TEST_HOSTILE": APPROVE_HOSTILE,
        }
        r = subprocess.run([node, os.path.join(WEBVIEW, "approve.test.mjs")], env=env, capture_output=True,
                           text=True, timeout=120)
        print(r.stdout)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "not ok" not in r.stdout and r.stdout.count("ok - ") == 4, r.stdout
    srv.assert_ok()
    status, runs = server.json("GET", "/v1/runs")
    (run,) = runs["runs"]
    assert run["status"] == "answered" and run["approval"]["denied"] == 1 and run["approval"]["edited"] == 1, run
