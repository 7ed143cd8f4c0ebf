"""clients/python's runs half (corral_client.Runs, docs/clients.md) against a
live `corral serve --model-url any` of its own and the scripted model server
(tests/model-server) on 127.0.0.1: a run with an input file followed to its end
(every event once, in order), a follower that leaves midway and resumes after
the last id it saw, cancel, artifacts and the archive, the API key given to
the client kept out of every event, answer, error and repr, a bad request, and
the runs example of docs/clients.md."""
import io
import os
import re
import signal
import subprocess
import sys
import tarfile

import pytest

from cutproxy import CutProxy, DroppingServer
from test_serve import LIVE, Server

ROOT = os.environ.get("CORRAL_SOURCE_ROOT") or os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))

from corral_client import BadRequest, Conflict, Corral  # noqa: E402
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

KEY = "sk-client-corral-secret-0a1b2c3d4e5f6789"
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
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("pyruns-config")))
        s = Server(tmp_path_factory.mktemp("pyruns"), "--model-url", "any")
    yield s
    if s in LIVE:
        s.stop(signal.SIGKILL)


@pytest.fixture(scope="module")
def client(server):
    return Corral(base_url=f"http://127.0.0.1:{server.port}", token=server.token)


def no_key(*things):
    for t in things:
        assert KEY not in repr(t) and KEY not in str(t)


def test_a_run_followed_to_its_end(client):
    with ScriptedServer(scenario()) as srv:
        run = client.runs.create("sum the sales", model="gpt-test", base_url=srv.base_url, api_key=KEY,
                                 inputs={"sales.csv": "product,sales\nwidget,3\n"}, max_iterations=4)
        assert run.status == "running" and run.id
        no_key(run, run.info, client)
        events, out = [], []
        done = run.wait(on_event=events.append, on_stdout=out.append, timeout=60)
        srv.assert_ok()
        assert srv.request_headers[0]["authorization"] == f"Bearer {KEY}"  # the key went to the model
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "run_start" and events[-1]["type"] == "run_end"
    assert done.status == "answered" and done.answer == "Done: widget sold 3."
    assert "widget,3" in "".join(out)
    assert done.usage and done.info["artifacts"]
    # the same events again, read as a generator from the start
    assert list(run.events()) == events
    no_key(events, done.info, done)
    assert [r.id for r in client.runs.list()][0] == run.id
    assert client.runs.get(run.id).answer == done.answer
    # artifacts and the archive
    arts = run.artifacts()
    assert any(a["path"].endswith("report.txt") for a in arts), arts
    assert run.artifact("report.txt") == b"widget 3\n"
    with tarfile.open(fileobj=io.BytesIO(run.archive())) as tar:
        names = tar.getnames()
        assert any(re.search(r"(^|/)output/report\.txt$", n) for n in names), names
        member = next(n for n in names if n.endswith("output/report.txt"))
        assert tar.extractfile(member).read() == b"widget 3\n"


def test_a_follower_leaves_midway_and_resumes(client):
    with ScriptedServer(scenario(delay=0.7)) as srv:
        run = client.runs.create("sum the sales", model="gpt-test", base_url=srv.base_url, api_key=KEY,
                                 inputs={"sales.csv": b"product,sales\nwidget,3\n"})
        first = []
        for ev in run.events():
            first.append(ev)
            if ev["type"] == "model_request":  # the run goes on without a follower
                break
        assert run.refresh().status == "running"
        rest = list(run.events(after=first[-1]["id"]))
        srv.assert_ok()
    ids = [e["id"] for e in first + rest]
    assert ids == list(range(1, len(ids) + 1)) and rest[-1]["type"] == "run_end"
    assert [e["id"] for e in run.events(after=2)] == ids[2:]


def test_cancel(client):
    with ScriptedServer([text("too late") | {"delay": 30}]) as srv:
        run = client.runs.create("wait", model="gpt-test", base_url=srv.base_url)
        assert run.cancel().id == run.id
        done = run.wait(timeout=30)
        assert done.status == "cancelled"
        with pytest.raises(Conflict):
            run.cancel()


def test_the_list_page_by_page(client):
    every = [r.id for r in client.runs.list()]  # the runs of the tests above, newest first
    assert len(every) >= 3
    assert [r.id for r in client.runs.list(limit=2)] == every[:2]
    assert [r.id for r in client.runs.list(limit=1, after=every[0])] == every[1:2]
    assert [r.id for r in client.runs.list(after=every[1])] == every[2:]


def test_a_bad_request(client):
    with pytest.raises(BadRequest) as e:
        client.runs.create("x", model="gpt-test", base_url="http://127.0.0.1:9/v1", api_key=KEY, max_iterations=-1)
    assert e.value.field == "max_iterations" and e.value.status == 400
    no_key(e.value, e.value.message, e.value.args)
    with pytest.raises(BadRequest) as e:
        client.runs.create("x", model="gpt-test", base_url="http://127.0.0.1:9/v1", api_key=KEY, review="lax")
    assert e.value.field == "review"
    no_key(e.value)


def test_the_runs_example(server):
    with ScriptedServer(scenario()) as srv:
        env = dict(os.environ, CORRAL_URL=f"http://127.0.0.1:{server.port}", CORRAL_TOKEN=server.token,
                   PYTHONPATH=os.path.join(ROOT, "clients", "python"), MODEL="gpt-test",
                   MODEL_BASE_URL=srv.base_url, MODEL_API_KEY=KEY)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "clients", "python", "examples", "runs.py")],
                           env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        srv.assert_ok()
    assert "[1] run_start" in r.stdout and "] run_end" in r.stdout and "widget,3" in r.stdout
    assert "status: answered\nanswer: Done: widget sold 3.\n" in r.stdout
    assert "widget 3\n" in r.stdout and "archive:" in r.stdout and KEY not in r.stdout + r.stderr


def test_a_stream_cut_by_the_network_is_resumed(server):
    proxy = CutProxy(server.port, cuts=2, after=900)
    try:
        c = Corral(base_url=f"http://127.0.0.1:{proxy.port}", token=server.token)
        with ScriptedServer(scenario(delay=0.3)) as srv:
            run = c.runs.create("sum the sales", model="gpt-test", base_url=srv.base_url,
                                inputs={"sales.csv": "product,sales\nwidget,3\n"})
            events = list(run.events())
            srv.assert_ok()
        assert proxy.cut == 2
        ids = [e["id"] for e in events]
        assert ids == list(range(1, len(ids) + 1)) and events[-1]["type"] == "run_end"
        assert events == list(client_of(server).runs.get(run.id).events())
    finally:
        proxy.close()


def client_of(server):
    return Corral(base_url=f"http://127.0.0.1:{server.port}", token=server.token)


def test_an_input_from_a_sandbox(client):
    code = "print(open('input/data/sales.csv').read().strip())\n"
    with ScriptedServer([tool_call("run_python", code=code), text("read it")]) as srv, \
            client.sandboxes.create() as sb:
        sb.files.write("data/sales.csv", "product,sales\nwidget,3\n")
        run = client.runs.create("read it", model="gpt-test", base_url=srv.base_url,
                                 inputs={"data/sales.csv": {"sandbox": sb, "path": "data/sales.csv"}})
        out = []
        assert run.wait(on_stdout=out.append, timeout=60).status == "answered"
        srv.assert_ok()
    assert "widget,3" in "".join(out)


def test_a_dropped_follower_comes_back_with_last_event_id():
    fake = DroppingServer()
    try:
        run = Corral(base_url=f"http://127.0.0.1:{fake.port}", token="t").runs.get("r1")
        assert [(e["id"], e["type"]) for e in run.events()] == [
            (1, "run_start"), (2, "model_request"), (3, "model_reply"), (4, "run_end")]
        assert fake.seen == [None, "2"]
    finally:
        fake.close()


def test_approval_answered_by_the_client(client):
    """Human approval through the client (docs/modes.md): the pending
    question, a denial with a reason the model reads, a second answer is
    Conflict."""
    import time
    turns = [tool_call("run_shell", command="echo should-not-run"),
             text("ok") | {"expect": {"contains": ["did not approve", "not now"]}}]
    with ScriptedServer(turns) as srv:
        run = client.runs.create("ask first", model="gpt-test", base_url=srv.base_url, approve="always")
        q = None
        for _ in range(600):
            q = run.pending_approval()
            if q:
                break
            time.sleep(0.05)
        assert q and q["n"] == 1 and q["code"] == "echo should-not-run", q
        assert run.answer_approval(1, "deny", reason="not now") == {"n": 1, "status": "answered"}
        with pytest.raises(Conflict):
            run.answer_approval(1, "approve")
        done = run.wait(timeout=60)
    srv.assert_ok()
    assert done.status == "answered" and done.info["approval"]["denied"] == 1
