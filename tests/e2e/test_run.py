"""`corral run` end to end: the real binary, real jails (real pandas), and a
scripted OpenAI-compatible server (tests/model-server) on 127.0.0.1 that
checks what every request carries and answers as the turn says."""
import glob
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from conftest import CORRAL  # noqa: E402

SALES = """Product,Revenue,Date,Region
Widget,120.5,2024-01-01,North
Gadget,80.0,2024-01-02,South
Widget,99.5,2024-01-03,East
Doohickey,300.0,2024-01-03,West
Gizmo,45.25,2024-01-04,North
Thingamajig,12.0,2024-01-05,South
Gadget,60.0,2024-01-06,East
Sprocket,150.0,2024-01-07,West
"""


def base_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "CORRAL_MODEL", "XDG_CONFIG"))}
    env.update(extra)
    return env


class Result:
    def __init__(self, proc, cwd):
        self.rc = proc.returncode
        self.out = proc.stdout.decode(errors="replace")
        self.err = proc.stderr.decode(errors="replace")
        self.cwd = cwd

    @property
    def json(self):
        return json.loads(self.out)

    def traces(self):
        """The run's records are under $XDG_STATE_HOME, which the fixture
        points at <cwd>/state."""
        return glob.glob(os.path.join(self.cwd, "state", "corral", "runs", "*", "trace.jsonl"))

    def events(self):
        (path,) = self.traces()
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]


@pytest.fixture
def run(tmp_path):
    """run(srv_or_url, *args, env=None, timeout=120, warm=False) -> Result; cwd
    is tmp_path.  Cold sessions unless warm: the loop is what these tests are
    about, and a zygote per run would cost a second of both cores each (the
    warm run is tested below and by the CLI's and library's session tests)."""
    def go(srv, *args, env=None, timeout=120, model="gpt-test", warm=False):
        url = srv if isinstance(srv, str) else srv.base_url
        cmd = [CORRAL, "run", "--base-url", url, "--model", model, *([] if warm else ["--cold"]), *args]
        env = dict(env or base_env(NO_COLOR="1"))
        env["XDG_STATE_HOME"] = str(tmp_path / "state")
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=tmp_path, env=env)
        return Result(proc, str(tmp_path))
    return go


@pytest.fixture
def sales(tmp_path):
    p = tmp_path / "sales.csv"
    p.write_text(SALES)
    return str(p)


def test_five_turn_self_correction(run, sales, tmp_path):
    top5 = ("import pandas as pd\n"
            "df = pd.read_csv('input/sales.csv')\n"
            "top = df.groupby('Product')['Revenue'].sum().nlargest(5)\n"
            "top.to_csv('output/top5.csv')\n"
            "print(top.to_string())\n")
    turns = [
        tool_call("run_python", code="df.groupby('product').sum()")
        | {"expect": {"contains": ["sales.csv", "Product,Revenue,Date,Region", "pandas"],
                      "tool_names": ["run_python", "run_shell", "read_file", "write_file",
                                     "list_files", "final_answer"], "stream": True}},
        tool_call("run_python", code="import pandas as pd\ndf = pd.read_csv('data.csv')\n")
        | {"expect": {"contains": ["NameError: name 'df' is not defined"], "last_role": "tool"}},
        tool_call("run_python", code="import pandas as pd\ndf = pd.read_csv('input/sales.csv')\n"
                                     "print(df['product_name'].head())\n")
        | {"expect": {"contains": ["FileNotFoundError"]}},
        tool_call("run_python", code="import pandas as pd\n"
                                     "print(pd.read_csv('input/sales.csv').columns.tolist())\n")
        | {"expect": {"contains": ["KeyError: 'product_name'"]}},
        tool_call("run_python", code=top5)
        | {"expect": {"contains": ["['Product', 'Revenue', 'Date', 'Region']"]}},
        text("The top product by revenue is Doohickey (300.0); see output/top5.csv.")
        | {"expect": {"contains": ["Doohickey", "created output/top5.csv (",
                                   "CSV 5 rows × 2 columns)"]}},
    ]
    out = tmp_path / "results"
    with ScriptedServer(turns) as srv:
        r = run(srv, "-i", sales, "-o", str(out), "--json", "find the top 5 products by revenue")
    srv.assert_ok()
    assert r.rc == 0, r.err
    res = r.json
    assert res["status"] == "answered"
    assert res["iterations"] == 6
    assert "Doohickey" in res["answer"]
    assert res["usage"]["prompt_tokens"] > 0 and res["usage"]["completion_tokens"] > 0
    assert [a["path"] for a in res["artifacts"]] == ["output/top5.csv"]
    art = res["artifacts"][0]
    assert (art["format"], art["rows"], art["columns"]) == ("csv", 5, 2)
    assert art["header"] == ["Product", "Revenue"]
    csv = (out / "top5.csv").read_text().splitlines()
    assert csv[0] == "Product,Revenue"
    assert csv[1] == "Doohickey,300.0"
    assert csv[2].startswith("Widget,220")
    types = [e["type"] for e in r.events()]
    assert types[0] == "run_start" and types[-1] == "run_end"
    assert types.count("tool_result") == 5
    # the temporary workspace is gone
    workspace = r.events()[0]["workspace"]
    assert os.path.basename(workspace).startswith("corral-ws-") and not os.path.exists(workspace)


def test_streamed_arguments_in_many_chunks(run):
    code = "print(sum(range(101)))  # " + "x" * 300
    turns = [tool_call("run_python", code=code) | {"stream": {"chunk_args": 3}},
             text("5050") | {"expect": {"contains": ["5050"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "add the numbers")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert r.out.strip() == "5050"
    # the arguments really came in pieces
    assert srv.outcomes[0]["stream"]


def test_two_parallel_tool_calls_answered_in_order(run):
    turns = [
        {"reply": {"content": None, "tool_calls": [
            {"id": "call_a", "name": "run_python", "arguments": {"code": "print('first')"}},
            {"id": "call_b", "name": "run_shell", "arguments": {"command": "echo second"}}]}},
        text("both ran") | {"expect": {"tool_results": ["call_a", "call_b"],
                                       "contains": ["first", "second"]}},
    ]
    with ScriptedServer(turns) as srv:
        r = run(srv, "run two things")
    srv.assert_ok()
    assert r.rc == 0, r.err
    tool_msgs = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_a", "call_b"]
    assert "first" in tool_msgs[0]["content"] and "second" in tool_msgs[1]["content"]


@pytest.mark.parametrize("dialect", ["ollama", "llamacpp", "vllm"])
def test_provider_dialects(run, dialect):
    turns = [tool_call("run_python", code="print(6*7)"),
             text("42") | {"expect": {"contains": ["42"]}}]
    with ScriptedServer(turns, dialect=dialect) as srv:
        r = run(srv, "--provider", dialect, "compute 6*7")
    srv.assert_ok()
    assert r.rc == 0, r.err + r.out
    assert r.out.strip() == "42"
    if dialect in ("ollama", "llamacpp"):
        assert "tool_choice" not in srv.requests[0]


def test_ollama_whole_tool_calls_role_every_chunk(run):
    turns = [tool_call("run_python", code="print('hi')")
             | {"stream": {"whole_tool_calls": True, "role_every_chunk": True}},
             text("done") | {"expect": {"contains": ["hi"]}}]
    with ScriptedServer(turns, dialect="ollama") as srv:
        r = run(srv, "--provider", "ollama", "say hi")
    srv.assert_ok()
    assert r.rc == 0, r.err


def test_text_protocol_model(run):
    turns = [text("Let me look.\n```python\nprint(2**10)\n```\n") | {"expect": {"tools": False}},
             text("The answer is 1024.") | {"expect": {"contains": ["1024"], "tools": False,
                                                        "last_role": "user"}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--no-tools", "compute 2**10")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert r.out.strip() == "The answer is 1024."
    # the live view shows the code once: in the model's text, not again in the step
    assert r.err.count("print(2**10)") == 1 and "step 1 · run_python" in r.err


def test_falls_back_to_text_protocol_when_tools_rejected(run):
    turns = [{"status": 400, "body": json.dumps(
                 {"error": {"message": "registry.ollama.ai/library/tiny does not support tools"}}),
              "expect": {"tools": True}},
             text("```bash\necho fallback-ok\n```") | {"expect": {"tools": False}},
             text("done") | {"expect": {"contains": ["fallback-ok"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--json", "do it")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert r.json["protocol"] == "text"


def test_unknown_tool_and_malformed_arguments(run):
    turns = [
        {"reply": {"content": None, "tool_calls": [{"name": "frobnicate", "arguments": {}}]}},
        {"reply": {"content": None, "tool_calls": [{"name": "run_python", "arguments": "{code: nope"}]},
         "expect": {"contains": ["no tool named 'frobnicate'", "run_python"]}},
        {"reply": {"content": None, "tool_calls": [{"name": "run_python", "arguments": {"src": "1"}}]},
         "expect": {"contains": ["not valid JSON"]}},
        text("") | {"expect": {"contains": ["needs the argument \\\"code\\\""]}},
        text("ok") | {"expect": {"contains": ["reply was empty"]}},
    ]
    with ScriptedServer(turns) as srv:
        r = run(srv, "be difficult")
    srv.assert_ok()
    assert r.rc == 0, r.err
    # the invalid arguments were sent back as valid JSON
    sent = srv.requests[2]["messages"]
    args = [tc["function"]["arguments"] for m in sent for tc in m.get("tool_calls") or []]
    for a in args:
        json.loads(a)


def test_429_then_success_honours_retry_after(run):
    turns = [{"status": 429, "headers": {"Retry-After": "1"},
              "body": json.dumps({"error": {"message": "Rate limit reached"}})},
             text("fine")]
    with ScriptedServer(turns) as srv:
        t0 = time.monotonic()
        r = run(srv, "--json", "hello")
        elapsed = time.monotonic() - t0
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert elapsed >= 1.0
    assert r.json["usage"]["retries"] == 1
    assert any(e["type"] == "model_retry" for e in r.events())


def test_401_is_a_clear_model_error(run):
    turns = [{"status": 401, "body": json.dumps({"error": {
        "message": "Incorrect API key provided: sk-wrong***", "code": "invalid_api_key"}})}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "hello", env=base_env(OPENAI_API_KEY="sk-wrong-key-123456", NO_COLOR="1"))
    srv.assert_ok()
    assert r.rc == 3
    assert "rejected the API key" in r.err and "OPENAI_API_KEY" in r.err
    assert not os.path.exists(r.events()[0]["workspace"])
    assert "sk-wrong-key-123456" not in r.err + r.out
    assert srv.request_headers[0].get("Authorization") == "Bearer sk-wrong-key-123456"


def test_404_lists_the_models(run):
    turns = [{"status": 404, "body": json.dumps({"error": {"message": "model 'nope' not found"}})}]
    with ScriptedServer(turns, models=["qwen2.5-coder:7b", "llama3.1:8b"]) as srv:
        r = run(srv, "hello", model="nope")
    srv.assert_ok()
    assert r.rc == 3
    assert "qwen2.5-coder:7b, llama3.1:8b" in r.err


def test_endpoint_down(run):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    t0 = time.monotonic()
    r = run(f"http://127.0.0.1:{port}/v1", "hello")
    assert r.rc == 3
    assert "cannot reach the model" in r.err and str(port) in r.err and "is the server running?" in r.err
    assert "check the base URL (--base-url)" in r.err, r.err
    assert time.monotonic() - t0 < 5  # never reached: no minute of backoff


def test_endpoint_going_down_mid_run_is_retried(run):
    turns = [tool_call("run_python", code="print(1)")]
    srv = ScriptedServer(turns).start()
    url = srv.base_url
    import threading

    def stop_after_first():
        srv.wait_for_requests(1, timeout=30)
        time.sleep(0.3)
        srv.stop()
    threading.Thread(target=stop_after_first, daemon=True).start()
    r = run(url, "--retries", "2", "--json", "hello")
    assert r.rc == 3
    assert r.json["usage"]["retries"] == 2
    assert "gave up after 3 attempts" in r.err


def test_max_iterations_reached(run):
    turns = [tool_call("run_python", code=f"print({i})") for i in range(2)] + [
        tool_call("run_python", code="print(2)") | {"expect": {"contains": ["This is your last turn"],
                                                               "last_role": "user"}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--max-iterations", "3", "--json", "loop forever")
    srv.assert_ok()
    assert r.rc == 1
    assert r.json["status"] == "gave_up"
    assert "--max-iterations" in r.json["reason"]
    assert r.json["iterations"] == 3
    # the trace keeps the library's words and the field; the CLI adds the flag
    end = [e for e in r.events() if e["type"] == "run_end"][0]
    assert "maximum number of iterations" in end["reason"] and "--" not in end["reason"], end
    assert end["field"] == "max_iterations"
    assert "the maximum number of iterations (--max-iterations)" in r.err, r.err


def test_timeout_in_jail_then_recovery(run):
    turns = [tool_call("run_python", code="while True:\n    pass\n"),
             tool_call("run_python", code="print('recovered')")
             | {"expect": {"contains": ["timeout: the 1 s wall-clock limit"]}},
             text("ok") | {"expect": {"contains": ["recovered"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--timeout", "1", "spin")
    srv.assert_ok()
    assert r.rc == 0, r.err


def test_repeated_failing_code_is_pointed_out(run):
    bad = "import nosuchmodule"
    turns = [tool_call("run_python", code=bad), tool_call("run_python", code=bad),
             text("giving up") | {"expect": {"contains": ["exactly the code of step 1"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "try")
    srv.assert_ok()
    assert r.rc == 0


def _processes_with(mark):
    """Live processes whose environment or command line holds mark (the
    jail's program gets it with -e; other tests' jails running at the same
    time do not)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for what in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    if mark.encode() in f.read():
                        found.append(pid)
                        break
            except OSError:
                pass
    return found


@pytest.mark.parametrize("kind", ["warm", "cold"])
def test_ctrl_c_mid_run_stops_everything(tmp_path, sales, kind):
    out = tmp_path / "res"
    # A child too, with the mark in its command line: a warm interpreter is
    # forked, so its own /proc environ is the zygote's.  (The review would
    # reject the subprocess: it is off here.)
    code = ("open('output/partial.txt', 'w').write('partial')\n"
            "import os, subprocess\n"
            "subprocess.Popen(['python3', '-c', 'import time; time.sleep(60)', os.environ['MARK']])\n"
            "import time\ntime.sleep(60)\n")
    turns = [tool_call("run_python", code=code)]
    with ScriptedServer(turns) as srv:
        mark = f"corral-test-{os.getpid()}-{time.monotonic_ns()}"
        proc = subprocess.Popen([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "-i", sales,
                                 *(["--cold"] if kind == "cold" else []), "--review-policy", "off",
                                 "-e", f"MARK={mark}", "-o", str(out), "--json", "sleep"], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env())
        deadline = time.monotonic() + 30
        # wait until the code runs (its file exists in the workspace)
        while time.monotonic() < deadline:
            if glob.glob("/tmp/corral-ws-*/output/partial.txt") or \
                    glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"), "corral-ws-*/output/partial.txt")):
                break
            time.sleep(0.05)
        time.sleep(0.2)
        assert _processes_with(mark), "the jail's program should be running now"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stderr
    res = json.loads(stdout)
    assert res["status"] == "cancelled"
    assert (out / "partial.txt").read_text() == "partial"
    events = [json.loads(x) for x in open(res["trace"] if os.path.isabs(res["trace"])
                                          else tmp_path / res["trace"])]
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "cancelled"
    assert not os.path.exists(events[0]["workspace"])
    assert _processes_with(mark) == []


def test_ctrl_c_while_waiting_for_the_model(tmp_path):
    turns = [text("late") | {"delay": 30}]
    with ScriptedServer(turns) as srv:
        proc = subprocess.Popen([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "wait"],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=base_env())
        while not srv.requests and proc.poll() is None:
            time.sleep(0.05)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
        assert time.monotonic() - t0 < 5
    assert proc.returncode == 130


def test_hostile_workspace_entries(run, tmp_path):
    ws = tmp_path / "ws"
    (ws / "output").mkdir(parents=True)
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("host secret\n")
    os.symlink("/etc/shadow", ws / "output" / "shadow")
    os.link(outside, ws / "output" / "hard.txt")
    os.mkfifo(ws / "output" / "fifo")
    (ws / "output" / "fine.txt").write_text("fine\n")
    turns = [
        {"reply": {"content": None, "tool_calls": [
            {"id": "a", "name": "read_file", "arguments": {"path": "output/shadow"}},
            {"id": "b", "name": "read_file", "arguments": {"path": "output/hard.txt"}},
            {"id": "c", "name": "read_file", "arguments": {"path": "output/fifo"}},
            {"id": "d", "name": "read_file", "arguments": {"path": "../outside-secret.txt"}},
            {"id": "e", "name": "read_file", "arguments": {"path": "output/fine.txt"}}]}},
        text("done") | {"expect": {"not_contains": ["host secret", "root:"],
                                   "contains": ["fine"]}},
    ]
    out = tmp_path / "copied"
    with ScriptedServer(turns) as srv:
        r = run(srv, "-w", str(ws), "-o", str(out), "read things", timeout=60)
    srv.assert_ok()
    assert r.rc == 0, r.err
    tool_msgs = {m["tool_call_id"]: m["content"] for m in srv.requests[1]["messages"] if m["role"] == "tool"}
    for k in "abcd":
        assert tool_msgs[k].startswith("error:"), tool_msgs[k]
    assert tool_msgs["e"] == "fine\n"
    assert sorted(os.listdir(out)) == ["fine.txt"]
    assert outside.read_text() == "host secret\n"
    end = r.events()[-1]
    assert sorted(x["path"] for x in end["not_copied"]) == ["output/fifo", "output/hard.txt", "output/shadow"]
    assert "not copied to" in r.err and "output/fifo" in r.err


def test_api_key_and_env_values_never_written(run, tmp_path):
    key = "sk-test-SECRET-abcdef123456"
    val = "hunter2-very-secret-value"
    code = ("import os\n"
            "print(sorted(os.environ))\n"
            "print('key' if 'sk-test-SECRET' in repr(dict(os.environ)) else 'no key')\n"
            "print(os.environ['DB_PASSWORD'])\n"
            "open('output/env.txt','w').write(repr(dict(os.environ)))\n")
    turns = [tool_call("run_python", code=code)
             | {"expect": {"header": {"Authorization": f"Bearer {key}"}}},
             text(f"done") | {"expect": {"contains": ["no key", "[REDACTED]"], "not_contains": [key, val]}}]
    out = tmp_path / "out"
    rec = tmp_path / "transcript.jsonl"
    with ScriptedServer(turns) as srv:
        r = run(srv, "-e", f"DB_PASSWORD={val}", "-o", str(out), "--record", str(rec), "--json", "env",
                env=base_env(OPENAI_API_KEY=key))
    srv.assert_ok()
    assert r.rc == 0, r.err
    written = []
    for root, _, files in os.walk(tmp_path):
        for f in files:
            p = os.path.join(root, f)
            if os.path.isfile(p) and not os.path.islink(p):
                written.append(p)
    assert any(p.endswith("trace.jsonl") for p in written)
    for p in written:
        data = open(p, "rb").read()
        assert key.encode() not in data, p
    # -e values are redacted from the trace and the transcript (the jail itself may see them)
    for p in r.traces() + [str(rec)]:
        assert val.encode() not in open(p, "rb").read(), p
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    assert key not in r.out + r.err


def test_record_then_replay_offline(run, tmp_path):
    rec = tmp_path / "t.jsonl"
    turns = [tool_call("run_python", code="print(7*6)"), text("forty-two: 42")]
    with ScriptedServer(turns) as srv:
        r1 = run(srv, "--record", str(rec), "multiply")
    srv.assert_ok()
    assert r1.rc == 0, r1.err
    lines = rec.read_text().splitlines()
    # what it ran on, then 2 exchanges and the completion check's (docs/modes.md)
    assert len(lines) == 4 and json.loads(lines[0])["run"]["inputs"] == []
    assert json.loads(lines[3])["purpose"] == "verify"
    rec.write_text(json.dumps({"comment": "recorded by the test"}) + "\n" + rec.read_text())
    trace2 = tmp_path / "replay-trace.jsonl"
    r2 = run("http://127.0.0.1:9/v1", "--json", "--trace", str(trace2), "multiply", model=f"replay:{rec}")
    assert r2.rc == 0, r2.err
    assert r2.json["answer"] == "forty-two: 42"
    assert r2.json["iterations"] == 2
    # the code ran again, for real
    events = [json.loads(line) for line in trace2.read_text().splitlines()]
    out = [e for e in events if e["type"] == "tool_result"][0]["exec"]["stdout"]
    assert out == "42\n"
    assert r2.json["replay"]["inputs"] == "same" and r2.json["replay"]["diverged"] is None


def test_replay_on_other_data_never_passes_off_the_recorded_answer(run, tmp_path):
    """A transcript records the inputs it ran on (sizes, SHA-256); replayed
    on other data (the README's `replay:` example on one's own sales.csv), the
    code runs on the new data but the recorded answer is marked as recorded,
    on stdout, in the live view, in the trace and in --json."""
    data = tmp_path / "sales.csv"
    data.write_text("product,revenue\nWhatsit,100\nWidget-07,5\n")
    rec = tmp_path / "t.jsonl"
    code = "import pandas as pd\nprint(pd.read_csv('input/sales.csv').sort_values('revenue').iloc[-1, 0])"
    turns = [tool_call("run_python", code=code), text("The top product is Whatsit.")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--record", str(rec), "-i", str(data), "-q", "top product")
    assert r.rc == 0 and r.out == "The top product is Whatsit.\n", (r.out, r.err)
    run_line = json.loads(rec.read_text().splitlines()[0])["run"]
    assert run_line["inputs"][0]["dest"] == "input/sales.csv"
    assert run_line["inputs"][0]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    replay = lambda *a: run("http://127.0.0.1:9/v1", "-i", str(data), *a, "top product", model=f"replay:{rec}")
    # the same data: the answer as recorded, nothing said
    r = replay("-q")
    assert r.rc == 0 and r.out == "The top product is Whatsit.\n", (r.out, r.err)
    # other data of the same size: the code's output differs, the answer is marked
    data.write_text("product,revenue\nWhatsit,005\nWidget-07,5\n".replace("005", "1  "))
    data.write_text("product,revenue\nWhatsit,1\nWidget-07,500\n")
    r = replay("--json")
    assert r.rc == 0, r.err
    rep = r.json["replay"]
    assert rep["inputs"] == "different" and rep["answer_recorded_on_other_data"] is True, rep
    assert rep["diverged"]["turn"] == 2 and "Widget-07" in rep["diverged"]["now"], rep
    r = replay("-q")
    first, rest = r.out.split("\n", 1)
    assert first.startswith("[corral: the answer is the one recorded in") and "not computed from this run's data" in first
    assert rest == "The top product is Whatsit.\n"
    assert "note: the answer is the one recorded" in r.err
    r = replay()
    assert "replay     input/sales.csv: other contents (SHA-256 differs)" in r.err or \
           "replay     input/sales.csv: " in r.err, r.err
    # a hand-written transcript that does not say what it ran on: marked too
    lines = [ln for ln in rec.read_text().splitlines() if not ln.startswith('{"run"')]
    rec.write_text("\n".join(json.dumps({"reply": json.loads(ln)["reply"]}) for ln in lines) + "\n")
    r = replay("--json")
    assert r.json["replay"]["inputs"] == "unknown" and r.json["replay"]["answer_recorded_on_other_data"] is True


@pytest.mark.parametrize("content,msg", [
    ("", "holds no replies"),
    ('{"reply": {"message": {"role": "assistant", "content": "a"}}}\n{oops\n', "line 2"),
    ('{"reply": {}}\n', "expected {\"reply\""),
])
def test_bad_transcripts(run, tmp_path, content, msg):
    t = tmp_path / "bad.jsonl"
    t.write_text(content)
    r = run("http://127.0.0.1:9/v1", "x", model=f"replay:{t}")
    assert r.rc == 2, r.err
    assert msg in r.err and str(t) in r.err


def test_replay_runs_out_of_replies(run, tmp_path):
    t = tmp_path / "short.jsonl"
    t.write_text(json.dumps({"reply": {"message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}]}}}) + "\n")
    r = run("http://127.0.0.1:9/v1", "x", model=f"replay:{t}")
    assert r.rc == 3
    assert "has no reply left (it holds 1)" in r.err


@pytest.mark.parametrize("args,msg", [
    ([], "no task given"),
    (["--max-iterations", "0", "x"], "--max-iterations"),
    (["-i", "/nonexistent/file.csv", "x"], "/nonexistent/file.csv"),
    (["--provider", "nosuch", "x"], "unknown provider 'nosuch'"),
    (["--bogus", "x"], "unknown option"),
    (["   "], "the task is empty"),
])
def test_usage_errors(run, args, msg):
    r = run("http://127.0.0.1:9/v1", *args)
    assert r.rc == 2, r.err
    assert msg in r.err
    assert r.traces() == []  # nothing was written


def test_trace_file_is_private_and_complete(run):
    turns = [tool_call("list_files"), text("nothing here")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "look")
    srv.assert_ok()
    assert r.rc == 0
    (path,) = r.traces()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    types = [e["type"] for e in r.events()]
    assert types == ["run_start", "model_request", "model_reply", "tool_call", "tool_result",
                     "model_request", "model_reply", "verify", "run_end"]


def test_non_streamed_replies(run):
    turns = [tool_call("run_shell", command="echo non-streamed") | {"expect": {"stream": False}},
             text("ok") | {"expect": {"stream": False, "contains": ["non-streamed"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--no-stream", "go")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert not srv.outcomes[0]["stream"]


@pytest.mark.parametrize("dialect", ["ollama", "llamacpp"])
def test_reasoning_fields_are_kept_out_of_the_answer(run, dialect):
    turns = [{"reply": {"content": "The answer is 4.", "reasoning": "2+2 is 4, obviously"}}]
    with ScriptedServer(turns, dialect=dialect) as srv:
        r = run(srv, "--provider", dialect, "2+2?")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert r.out.strip() == "The answer is 4."
    reply = [e for e in r.events() if e["type"] == "model_reply"][0]
    assert reply["reasoning"] == "2+2 is 4, obviously"


def test_request_timeout_then_gives_up(run):
    turns = [text("slow") | {"delay": 5}, text("slow") | {"delay": 5}]
    with ScriptedServer(turns) as srv:
        t0 = time.monotonic()
        r = run(srv, "--request-timeout", "0.5", "--retries", "1", "hello")
        elapsed = time.monotonic() - t0
    assert r.rc == 3
    assert "did not answer within 0.5 s" in r.err and "gave up after 2 attempts" in r.err
    assert "the request timeout (--request-timeout)" in r.err, r.err
    assert elapsed < 10


def test_context_length_error_trims_and_retries(run):
    big = "print('x' * 3000)"
    turns = [tool_call("run_python", code=big),
             tool_call("run_python", code="print(1)"),
             tool_call("run_python", code="print(2)"),
             tool_call("run_python", code="print(3)"),
             tool_call("run_python", code="print(4)"),
             {"status": 400, "body": json.dumps({"error": {
                 "message": "This model's maximum context length is 8192 tokens.",
                 "code": "context_length_exceeded"}})},
             text("short now") | {"expect": {"contains": ["[older output, shortened to save context]"]}}]
    with ScriptedServer(turns) as srv:
        # shortening, the fallback of compaction (test_modes.py)
        r = run(srv, "--json", "--no-compact", "--context-tokens", "4096", "long")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert any(e["type"] == "notice" and "context" in e["message"] for e in r.events())


def test_context_trimming_keeps_requests_small(run):
    turns = [tool_call("run_python", code=f"print('{i}' * 6000)") for i in range(6)] + [text("done")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--no-compact", "--context-tokens", "4096", "--max-iterations", "10", "--output-limit", "64K",
                "long")
    srv.assert_ok()
    assert r.rc == 0, r.err
    # old observations were shortened; the newest kept
    last = json.dumps(srv.requests[-1]["messages"])
    assert "[older output, shortened to save context]" in last
    assert len(srv.raw_requests[-1]) < 8 * 4096


def test_long_output_is_cut_in_the_middle(run):
    turns = [tool_call("run_python", code="for i in range(20000): print('line', i)"),
             text("ok") | {"expect": {"contains": ["line 0\\n", "line 19999", "cut here"],
                                      "not_contains": ["line 10000\\n"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "print a lot")
    srv.assert_ok()
    assert r.rc == 0, r.err


def test_write_file_then_run_it(run, tmp_path):
    turns = [tool_call("write_file", path="output/hello.py", content="print('hello from a file')\n"),
             tool_call("run_shell", command="python3 output/hello.py")
             | {"expect": {"contains": ["wrote 27 bytes to output/hello.py"]}},
             tool_call("write_file", path="input/x.csv", content="no")
             | {"expect": {"contains": ["hello from a file"]}},
             text("ok") | {"expect": {"contains": ["read-only"]}}]
    out = tmp_path / "o"
    with ScriptedServer(turns) as srv:
        r = run(srv, "-o", str(out), "write")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert (out / "hello.py").read_text() == "print('hello from a file')\n"


def test_token_budget(run):
    turns = [tool_call("run_python", code="print(1)") | {"reply": {
        "content": None, "tool_calls": [{"name": "run_python", "arguments": {"code": "print(1)"}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 200}}},
        tool_call("run_python", code="print(2)")]
    with ScriptedServer(turns[:1]) as srv:
        r = run(srv, "--token-budget", "1000", "--json", "spend")
    srv.assert_ok()
    assert r.rc == 1
    assert "--token-budget" in r.json["reason"] and r.json["usage"]["prompt_tokens"] == 900


def test_wall_budget(run):
    turns = [tool_call("run_python", code="import time; time.sleep(30)")]
    with ScriptedServer(turns) as srv:
        t0 = time.monotonic()
        r = run(srv, "--wall-budget", "2", "--json", "sleep")
        elapsed = time.monotonic() - t0
    srv.assert_ok()
    assert r.rc == 1, r.err
    assert "--wall-budget" in r.json["reason"]
    assert elapsed < 10


@pytest.mark.parametrize("cut,says", [({"cut_after": 3}, "partial file"),
                                      ({"cut_after": 3, "transfer": "close"}, "ended early")])
def test_stream_cut_off_is_retried(run, cut, says):
    turns = [tool_call("run_python", code="print('x' * 50)") | {"stream": cut},
             tool_call("run_python", code="print('again')"),
             text("ok") | {"expect": {"contains": ["again"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--json", "go")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert r.json["usage"]["retries"] == 1
    retry = [e for e in r.events() if e["type"] == "model_retry"]
    assert retry and says in retry[0]["reason"]


def test_inputs_are_staged_read_only(run, tmp_path, sales):
    d = tmp_path / "data"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "a.txt").write_text("alpha\n")
    os.symlink("/etc/passwd", d / "link")
    code = ("import os\n"
            "print(sorted(os.listdir('input')), sorted(os.listdir('input/d')))\n"
            "print(open('input/d/sub/a.txt').read().strip(), open('input/s.csv').readline().strip())\n"
            "try:\n    open('input/new.txt', 'w')\nexcept OSError as e:\n    print('write refused:', e.errno)\n"
            "try:\n    open('input/s.csv', 'a')\nexcept OSError as e:\n    print('append refused')\n")
    turns = [tool_call("run_python", code=code)
             | {"expect": {"contains": ["input/d/sub/a.txt", "input/s.csv (", "Product,Revenue"]}},
             text("ok") | {"expect": {"contains": ["['d', 's.csv'] ['sub']", "alpha Product,Revenue",
                                                   "write refused: 30", "append refused"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "-i", f"{d}:d", "-i", f"{sales}:s.csv", "look")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert (d / "sub" / "a.txt").read_text() == "alpha\n"
    staged = [e for e in r.events() if e["type"] == "run_start"][0]["inputs"]
    assert {s["dest"] for s in staged} == {"input/d", "input/s.csv"}
    assert any(k["path"].endswith("link") for s in staged for k in s.get("skipped", []))


def test_quiet_prints_only_the_answer(run):
    turns = [tool_call("run_python", code="print('noise')"), text("the answer")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "-q", "go")
    srv.assert_ok()
    assert r.rc == 0
    assert r.out == "the answer\n"
    # nothing but notes (as an ordinary user here: the rlimit fallback)
    assert all(line.startswith("corral run: note: ") for line in r.err.splitlines()), r.err


def test_live_view_shows_steps_on_stderr(run):
    turns = [tool_call("run_python", code="print('visible output')"), text("done")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "go")
    srv.assert_ok()
    assert r.out == "done\n"
    assert "step 1 · run_python" in r.err and "visible output" in r.err and "answered" in r.err
    assert "\x1b[" not in r.err  # NO_COLOR (and not a terminal)


@pytest.mark.parametrize("no_color", [False, True])
def test_live_view_colours_on_a_terminal(tmp_path, no_color):
    import pty
    import select
    turns = [tool_call("run_python", code="import os\nprint('hi')  # comment"), text("done")]
    env = base_env(TERM="xterm")
    if no_color:
        env["NO_COLOR"] = "1"
    else:
        env.pop("NO_COLOR", None)
    master, slave = pty.openpty()
    with ScriptedServer(turns) as srv:
        proc = subprocess.Popen([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "go"], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=slave, env=env)
        os.close(slave)
        seen = b""
        while True:
            ready, _, _ = select.select([master], [], [], 30)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        proc.wait(timeout=30)
        os.close(master)
    assert proc.returncode == 0
    text_seen = seen.decode(errors="replace")
    assert "import" in text_seen and "step 1" in text_seen
    if no_color:
        assert "\x1b[3" not in text_seen and "\x1b[1" not in text_seen
    else:
        assert "\x1b[" in text_seen
        # the keyword is highlighted: an escape right before "import"
        assert "m import" not in text_seen and "\x1b[" in text_seen.split("import")[0][-12:]


def test_error_inside_a_stream(run):
    turns = [{"reply": {"content": "x"},
              "stream": {"raw": ['data: {"error": {"message": "the model is overloaded"}}\n\n']}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "go")
    srv.assert_ok()
    assert r.rc == 3
    assert "the model is overloaded" in r.err


@pytest.mark.parametrize("dialect", ["openai", "vllm", "llamacpp", "ollama"])
def test_refusal_message_in_each_dialect(run, dialect):
    turns = [{"status": 400, "error": "temperature must be at most 2"}]
    with ScriptedServer(turns, dialect=dialect) as srv:
        r = run(srv, "go")
    srv.assert_ok()
    assert r.rc == 3
    assert "refused the request (HTTP 400: temperature must be at most 2)" in r.err


def test_artifacts_kept_beside_the_trace_by_default(run, tmp_path):
    """With neither -o nor -w the output stays with the run's records, in
    $XDG_STATE_HOME, not in the directory the run started from."""
    turns = [tool_call("run_python", code="open('output/r.txt', 'w').write('result')"), text("done")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--json", "go")
    srv.assert_ok()
    assert r.rc == 0, r.err
    out = r.json["output_dir"]
    assert out == os.path.join(str(tmp_path), "state", "corral", "runs", r.json["run_id"], "output")
    assert open(os.path.join(out, "r.txt")).read() == "result"
    assert os.path.dirname(r.json["trace"]) == os.path.dirname(out)
    assert not os.path.exists(tmp_path / ".corral")
    assert stat.S_IMODE(os.stat(os.path.dirname(out)).st_mode) == 0o700


def test_limits_fallback_is_said_once(run):
    probe = subprocess.run([CORRAL, "exec", "--json", "--", "true"], capture_output=True, timeout=60)
    backend = json.loads(probe.stdout)["limits_backend"]
    turns = [tool_call("run_python", code="print(1)"), tool_call("run_python", code="print(2)"), text("ok")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "go")
    srv.assert_ok()
    assert r.rc == 0, r.err
    notes = [e for e in r.events() if e["type"] == "notice" and "rlimit" in e["message"]]
    assert len(notes) == (1 if backend == "rlimit" else 0), (backend, notes)


def test_input_limit(run, tmp_path):
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 5000)
    r = run("http://127.0.0.1:9/v1", "-i", str(big), "--input-limit", "4K", "x")
    assert r.rc == 2
    assert "goes past the input budget" in r.err and "big.txt" in r.err
    assert r.traces() == []


def test_read_file_is_capped(run, tmp_path):
    ws = tmp_path / "ws"
    (ws / "output").mkdir(parents=True)
    (ws / "output" / "big.txt").write_text("a" * 70000 + "TAIL")
    turns = [tool_call("read_file", path="output/big.txt"),
             text("ok") | {"expect": {"contains": ["only the first 65536 bytes of 'output/big.txt'"],
                                      "not_contains": ["TAIL"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "-w", str(ws), "read")
    srv.assert_ok()
    assert r.rc == 0, r.err


@pytest.mark.parametrize("out, says", [
    ("/dev/null/out", "'null' is a character device, not a directory"),
    ("afile", "'afile' is a regular file, not a directory"),
    ("afile/sub", "'afile' is a regular file, not a directory"),
])
def test_output_that_cannot_be_made_is_refused_before_the_run(run, tmp_path, out, says):
    """A destination is checked before the first model request: no turn
    is spent on a run whose output could not be kept."""
    (tmp_path / "afile").write_text("mine")
    with ScriptedServer([]) as srv:
        r = run(srv, "-o", out, "--json", "go")
    assert r.rc == 2, r.err
    assert "the output directory" in r.err and "(--out)" in r.err and says in r.err, r.err
    assert srv.requests == []
    assert (tmp_path / "afile").read_text() == "mine"


def test_output_that_cannot_be_copied_stays_with_the_records(run, tmp_path):
    """The output directory vanishes during the run: the output is kept with
    the run's records, the answer is printed and the run keeps its status."""
    out = tmp_path / "out"
    out.mkdir()
    # The last reply waits a second, while the directory is removed.
    turns = [tool_call("run_python", code="open('output/a.txt', 'w').write('a')"), text("done") | {"delay": 1}]
    with ScriptedServer(turns) as srv:
        import threading

        def remove_out():
            srv.wait_for_requests(2, timeout=60)
            shutil.rmtree(out)
        t = threading.Thread(target=remove_out, daemon=True)
        t.start()
        r = run(srv, "-o", str(out), "-q", "go")
        t.join()
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert r.out == "done\n"
    kept = glob.glob(str(tmp_path / "state" / "corral" / "runs" / "*" / "output" / "a.txt"))
    assert len(kept) == 1 and open(kept[0]).read() == "a"
    assert f"cannot copy the output to '{out}'" in r.err and "kept in" in r.err and os.path.dirname(kept[0]) in r.err
    assert not out.exists()


def test_trace_that_cannot_be_written(run):
    with ScriptedServer([]) as srv:
        r = run(srv, "--trace", "/dev/null/t.jsonl", "go")
    assert r.rc == 2
    assert "the trace '/dev/null/t.jsonl' cannot be made" in r.err and "(--trace)" in r.err, r.err
    assert srv.requests == []  # nothing ran


def test_oversized_reply_is_refused_not_retried(run):
    turns = [text("x" * (17 << 20))]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--no-stream", "go", timeout=120)
    assert r.rc == 3
    assert "larger than 16 MiB" in r.err
    assert len(srv.requests) == 1


def test_oversized_transcript(run, tmp_path):
    t = tmp_path / "huge.jsonl"
    with open(t, "wb") as f:
        f.truncate((16 << 20) + 1)
    r = run("http://127.0.0.1:9/v1", "x", model=f"replay:{t}")
    assert r.rc == 2
    assert "larger than 16 MiB" in r.err


# ---- the run's session: warm (forked from a zygote started with the run) or --cold ----

WARM_PROBE = ("import os, sys\n"
              "ro = []\n"
              "for p in ('input/sales.csv', 'input/x'):\n"
              "    try:\n"
              "        open(p, 'a').close(); ro.append(False)\n"
              "    except OSError as e:\n"
              "        ro.append(e.errno)\n"
              "print('pandas' in sys.modules, open('input/sales.csv').readline().strip(), ro)\n")


@pytest.mark.parametrize("kind", ["warm", "cold"])
def test_run_session_is_warm_unless_cold(run, sales, tmp_path, kind):
    """The default session is forked from the zygote (pandas already in
    sys.modules), with the staged inputs bound read-only as for a cold one."""
    pandas = "True" if kind == "warm" else "False"
    turns = [tool_call("run_python", code=WARM_PROBE),
             text("done") | {"expect": {"contains": [f"{pandas} Product,Revenue,Date,Region [30, 30]"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "-i", sales, "--json", "probe", warm=kind == "warm")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert not [e for e in r.events() if e["type"] == "notice" and "no warm session" in e["message"]]
    assert open(sales).read() == SALES  # EROFS above: the host file untouched


@pytest.mark.parametrize("where", ["session-host", "own"])
def test_run_falls_back_to_a_cold_session_when_no_zygote_starts(run, sales, tmp_path, where):
    """A zygote that cannot start: in the session host (a host of this
    test's own, started with the bad zygote) or the run's own."""
    turns = [tool_call("run_python", code="import sys\nprint('pandas' in sys.modules)"),
             text("done") | {"expect": {"contains": ["False"]}}]
    rundir = tmp_path / "run"
    rundir.mkdir(mode=0o700)
    env = base_env(NO_COLOR="1", CORRAL_ZYGOTE=str(tmp_path / "no-such-zygote"), XDG_RUNTIME_DIR=str(rundir),
                   CORRAL_SESSION_LINGER="0")
    opts = ["--no-session-host"] if where == "own" else []
    with ScriptedServer(turns) as srv:
        r = run(srv, "-i", sales, "--json", *opts, "probe", env=env, warm=True)
    subprocess.run([CORRAL, "session", "shutdown"], env=env, capture_output=True, timeout=60)
    srv.assert_ok()
    assert r.rc == 0, r.err
    notices = [e["message"] for e in r.events() if e["type"] == "notice"]
    assert any(n.startswith("no warm session (") and n.endswith("): a cold one instead") and "no-such-zygote" in n
               for n in notices), notices


def test_runs_are_listed_and_found_again_by_id(run, tmp_path):
    """`corral runs` lists the recorded runs newest first; `trace show` and
    `trace export` take a run's ID or `last`; the summary says both."""
    env = base_env(NO_COLOR="1", XDG_STATE_HOME=str(tmp_path / "state"))
    runs = lambda *a: subprocess.run([CORRAL, "runs", *a], capture_output=True, text=True, env=env, timeout=60)
    r = runs()
    assert r.returncode == 0 and "no runs recorded" in r.stdout, r.stdout
    ids = []
    for task in ("first task", "second task\nwith a second line"):
        turns = [tool_call("run_python", code="open('output/r.txt', 'w').write('x')"), text(f"done: {task}")]
        with ScriptedServer(turns) as srv:
            r = run(srv, task)
        assert r.rc == 0, r.err
        rid = [line.split()[1] for line in r.err.splitlines() if line.strip().startswith("run ")]
        assert len(rid) == 1, r.err
        ids.append(rid[0])
        assert f"trace      {tmp_path}/state/corral/runs/{rid[0]}/trace.jsonl" in r.err, r.err
        time.sleep(1.1)  # IDs are stamped to the second
    r = runs("--json")
    listed = json.loads(r.stdout)
    assert [x["run_id"] for x in listed] == ids[::-1]
    assert listed[0]["task"].startswith("second task") and listed[0]["status"] == "answered"
    assert listed[0]["artifacts"] == ["output/r.txt"] and listed[0]["cwd"] == str(tmp_path)
    r = runs()
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["ID", "STARTED", "(UTC)"] and len(lines) == 3
    assert lines[1].startswith(ids[1]) and "second task with a second line" in lines[1]
    assert len(runs("-n", "1").stdout.splitlines()) == 2
    assert runs("-n", "0").returncode == 2
    show = lambda arg: subprocess.run([CORRAL, "trace", "show", "--quiet", arg], capture_output=True, text=True,
                                      env=env, timeout=60)
    assert "done: second task" in show("last").stdout
    assert "done: first task" in show(ids[0]).stdout
    r = show("20000101-000000-abcdef")
    assert r.returncode == 1 and "cannot open the trace" in r.stderr
    r = subprocess.run([CORRAL, "trace", "export", "--html", "-o", str(tmp_path / "last.html"), "last"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and "second task" in (tmp_path / "last.html").read_text()
    shutil.rmtree(tmp_path / "state")
    r = show("last")
    assert r.returncode == 1 and "no run with a trace" in r.stderr, r.stderr


def test_huge_tasks(run, tmp_path):
    """A task is sent with every turn: over 64 KiB it is refused with a hint
    (from stdin too, without reading it all), a long one is shortened in the
    header, and one that fills the model's context alone is warned about."""
    with ScriptedServer([]) as srv:
        r = run(srv, "x" * (70 << 10))
        assert r.rc == 2 and "more than the 64 KiB a task may be" in r.err and "(--input)" in r.err, r.err
        proc = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "-"],
                              input=b"y" * (26 << 20), capture_output=True, timeout=60, cwd=tmp_path,
                              env=base_env(XDG_STATE_HOME=str(tmp_path / "state")))
        assert proc.returncode == 2 and b"the task on standard input is over the 64 KiB" in proc.stderr, proc.stderr
        assert len(proc.stderr) < 1000
    assert srv.requests == []
    task = ("line of the task\n" * 2000)[: 30 << 10]
    with ScriptedServer([text("ok")]) as srv:
        r = run(srv, "--context-tokens", "4000", task)
    assert r.rc == 0, r.err
    assert r.err.count("line of the task") <= 6 and "bytes in all)" in r.err, r.err[:2000]
    notes = [e["message"] for e in r.events() if e["type"] == "notice"]
    assert any("the system prompt and the task alone take about" in n for n in notes), notes
    assert [e["field"] for e in r.events() if e["type"] == "notice" and "alone take" in e["message"]] == \
        ["context_tokens"]
    assert "the model's context size (--context-tokens)" in r.err  # the live view names the flag
    start = [e for e in r.events() if e["type"] == "run_start"][0]
    assert start["task"] == task  # the trace keeps it whole


def test_times_are_rounded_to_hundredths_of_a_ms(run):
    """No 17-digit floats: every time in --json and in the trace is rounded
    to 0.01 ms, as `corral exec --json` rounds."""
    turns = [tool_call("run_python", code="print(1)"), text("ok")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--json", "go")
    assert r.rc == 0, r.err

    def floats(x, path=""):
        if isinstance(x, float):
            yield path, x
        elif isinstance(x, dict):
            for k, v in x.items():
                yield from floats(v, f"{path}.{k}")
        elif isinstance(x, list):
            for i, v in enumerate(x):
                yield from floats(v, f"{path}[{i}]")
    seen = list(floats(r.json)) + [f for e in r.events() for f in floats(e, e["type"])]
    assert any(p.endswith("wall_ms") for p, _ in seen)
    for path, v in seen:
        assert round(v, 2) == v, (path, v)
    assert "000000" not in r.out
