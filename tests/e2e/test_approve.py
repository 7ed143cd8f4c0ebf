"""Human approval (--approve, docs/modes.md): the terminal through a
pseudo-terminal, the engine's API through the server, and a replay, against
the scripted model server on 127.0.0.1.  Steps are run_shell commands: a
jail of its own each, quick."""
import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from test_run import base_env, run  # noqa: E402,F401  (run: a fixture)

CORRAL = os.environ.get("CORRAL", "build/corral")
PROMPT = b"[a]pprove / [d]eny / [e]dit"


class Tty:
    """corral run with a pseudo-terminal on stdin and stderr (the view and
    the question), stdout a pipe (the --json result)."""

    def __init__(self, tmp_path, srv, *args, env=None):
        self.master, slave = pty.openpty()
        cmd = [CORRAL, "run", "--base-url", srv.base_url, "--model", "gpt-test", "--cold", "--json",
               "--no-verify", *args]
        env = dict(env or base_env(NO_COLOR="1"))
        env["XDG_STATE_HOME"] = str(tmp_path / "state")
        self.tmp_path = tmp_path
        self.proc = subprocess.Popen(cmd, stdin=slave, stdout=subprocess.PIPE, stderr=slave, cwd=tmp_path,
                                     env=env, close_fds=True)
        os.close(slave)
        self.screen = b""

    def expect(self, what, timeout=30):
        """Read the terminal until what appears after what was seen so far."""
        start = len(self.screen)
        deadline = time.monotonic() + timeout
        while what not in self.screen[start:]:
            left = deadline - time.monotonic()
            assert left > 0, f"no {what!r} on the terminal; it shows:\n{self.screen.decode(errors='replace')}"
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    chunk = b""
                assert chunk, f"the terminal closed before {what!r}:\n{self.screen.decode(errors='replace')}"
                self.screen += chunk
        return self.screen[start:]

    def type(self, line):
        os.write(self.master, line.encode() + b"\n")

    def finish(self, timeout=60):
        out, _ = self.proc.communicate(timeout=timeout)
        # Drain what is left on the terminal.
        while select.select([self.master], [], [], 0.1)[0]:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.screen += chunk
        os.close(self.master)
        return self.proc.returncode, json.loads(out)

    def events(self):
        import glob
        (path,) = glob.glob(str(self.tmp_path / "state" / "corral" / "runs" / "*" / "trace.jsonl"))
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]


def test_terminal_approve(tmp_path):
    """Approved: the command runs and its output reaches the model; the
    code and the question were on the terminal; both events traced."""
    turns = [tool_call("run_shell", command="echo approved-and-ran > output/a.txt; cat output/a.txt"),
             text("done") | {"expect": {"contains": ["approved-and-ran"], "last_role": "tool"}}]
    with ScriptedServer(turns) as srv:
        t = Tty(tmp_path, srv, "--approve", "always", "-o", str(tmp_path / "out"), "write a")
        shown = t.expect(PROMPT)
        assert b"echo approved-and-ran" in shown and b"review: allow" in shown
        t.type("a")
        rc, res = t.finish()
    srv.assert_ok()
    assert rc == 0 and res["status"] == "answered"
    assert (tmp_path / "out" / "a.txt").read_text() == "approved-and-ran\n"
    assert res["approval"] == {"mode": "always", "requests": 1, "approved": 1, "denied": 0, "edited": 0,
                               "timed_out": 0}
    ev = t.events()
    req = [e for e in ev if e["type"] == "approval_request"]
    ans = [e for e in ev if e["type"] == "approval"]
    assert len(req) == 1 and req[0]["n"] == 1 and req[0]["lang"] == "bash"
    assert req[0]["review"]["verdict"] == "allow" and "approved-and-ran" in req[0]["code"]
    assert ans[0]["decision"] == "approve" and ans[0]["who"] == "terminal" and ans[0]["wait_ms"] >= 0
    # The request comes after the review and before the step's result.
    types = [e["type"] for e in ev]
    assert types.index("review") < types.index("approval_request") < types.index("approval") < \
        types.index("tool_result")
    assert next(e for e in ev if e["type"] == "run_start")["approve"]["mode"] == "always"


def test_terminal_deny_with_reason(tmp_path):
    """Denied with a reason: nothing runs, and the model's next request
    carries the reason as the step's observation."""
    turns = [tool_call("run_shell", command="touch output/should-not-exist"),
             text("ok, not touching it")
             | {"expect": {"contains": ["did not approve", "keep output empty please"], "last_role": "tool"}}]
    with ScriptedServer(turns) as srv:
        t = Tty(tmp_path, srv, "--approve", "always", "-o", str(tmp_path / "out"), "touch it")
        t.expect(PROMPT)
        t.type("d")
        t.expect(b"reason")
        t.type("keep output empty please")
        rc, res = t.finish()
    srv.assert_ok()
    assert rc == 0
    assert not (tmp_path / "out" / "should-not-exist").exists()
    assert res["approval"]["denied"] == 1
    ans = [e for e in t.events() if e["type"] == "approval"][0]
    assert ans["decision"] == "deny" and ans["reason"] == "keep output empty please"
    result = [e for e in t.events() if e["type"] == "tool_result"][0]
    assert result["ok"] is False and "exec" not in result
    # corral trace show says who answered what.
    import glob
    (path,) = glob.glob(str(tmp_path / "state" / "corral" / "runs" / "*" / "trace.jsonl"))
    shown = subprocess.run([CORRAL, "trace", "show", "--no-color", path], capture_output=True, text=True,
                           timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert "1: denied: nothing ran by terminal after" in shown.stdout, shown.stdout
    assert "keep output empty please" in shown.stdout


def test_terminal_edit_runs_the_edited_code(tmp_path):
    """Edited through $EDITOR: the edit is reviewed and what runs; the model
    is told, and the trace says it was an edit."""
    turns = [tool_call("run_shell", command="echo answer-41"),
             text("42 it is")
             | {"expect": {"contains": ["answer-42", "The user edited your command"], "last_role": "tool"}}]
    env = base_env(NO_COLOR="1", EDITOR="sed -i s/41/42/")
    env.pop("VISUAL", None)
    with ScriptedServer(turns) as srv:
        t = Tty(tmp_path, srv, "--approve", "always", "the answer", env=env)
        t.expect(PROMPT)
        t.type("e")
        rc, res = t.finish()
    srv.assert_ok()
    assert rc == 0 and res["approval"]["edited"] == 1
    ev = t.events()
    ans = [e for e in ev if e["type"] == "approval"][0]
    assert ans["decision"] == "edit" and ans["code"].strip() == "echo answer-42"
    # Reviewed twice: the model's code, then the edit.
    assert len([e for e in ev if e["type"] == "review"]) == 2
    result = [e for e in ev if e["type"] == "tool_result"][0]
    assert result["exec"]["stdout"] == "answer-42\n"


def test_risky_asks_only_when_the_review_warned(tmp_path):
    """--approve risky: a clean step runs unasked, one with a warning
    (curl: SH-NET-004 under the standard policy) is asked about; a
    timeout with no answer denies it (the safe default)."""
    turns = [tool_call("run_shell", command="echo clean-step"),
             tool_call("run_shell", command="curl -s http://127.0.0.1:9/ || echo no-network")
             | {"expect": {"contains": ["clean-step"]}},
             text("done") | {"expect": {"contains": ["no one answered within the approval timeout"]}}]
    with ScriptedServer(turns) as srv:
        t = Tty(tmp_path, srv, "--approve", "risky", "--approve-timeout", "1", "go")
        shown = t.expect(PROMPT)
        assert b"SH-NET-004" in shown and b"review: warn" in shown
        rc, res = t.finish()
    srv.assert_ok()
    assert rc == 0
    assert res["approval"] == {"mode": "risky", "requests": 1, "approved": 0, "denied": 1, "edited": 0,
                               "timed_out": 1}
    ans = [e for e in t.events() if e["type"] == "approval"][0]
    assert ans["who"] == "timeout" and ans["decision"] == "deny"


def test_approve_without_a_terminal_is_a_usage_error(run):
    """Nobody could answer: refused before the model is asked anything."""
    with ScriptedServer([]) as srv:
        r = run(srv, "--approve", "always", "task")
    assert r.rc == 2
    assert "--approve always asks on the terminal" in r.err and "corral serve" in r.err
    assert srv.requests == []


@pytest.mark.parametrize("args, msg", [
    (["--approve", "sometimes"], "--approve: expected never, risky or always, not 'sometimes'"),
    (["--approve-default", "maybe"], "--approve-default: expected deny or approve"),
    (["--approve-timeout", "0"], "--approve-timeout"),
])
def test_bad_approve_options(run, args, msg):
    r = run("http://127.0.0.1:9/v1", *args, "task")
    assert r.rc == 2 and msg in r.err, r.err


def test_replay_has_no_human(run, tmp_path):
    """A replay asks no one (docs/modes.md): the question is traced and
    answered at once with approve by "replay", without a terminal."""
    rec = tmp_path / "t.jsonl"
    turns = [tool_call("run_shell", command="echo replayed-step"), text("done")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--record", str(rec), "--no-verify", "--json", "task")
    assert r.rc == 0, r.err
    r = run("http://127.0.0.1:9/v1", "--json", "--approve", "always", "task", model=f"replay:{rec}")
    assert r.rc == 0, r.err
    assert r.json["approval"]["approved"] == 1
    ev = [json.loads(x) for x in open(sorted(r.traces(), key=os.path.getmtime)[-1])]
    ans = [e for e in ev if e["type"] == "approval"]
    assert ans and ans[0]["who"] == "replay"
    assert [e for e in ev if e["type"] == "tool_result"][0]["exec"]["stdout"] == "replayed-step\n"


# ---- the server: the question in the event stream, answered over HTTP ----

from test_serve_runs import serve, start_run, sse, wait_end  # noqa: E402,F401,F811  (serve: a fixture)


def pending(s, rid, timeout=30):
    """The run's pending question, waited for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, j = s.json("GET", f"/v1/runs/{rid}/approvals")
        assert status == 200, j
        if j["pending"]:
            return j["pending"]
        time.sleep(0.05)
    raise AssertionError("no approval asked")


def test_server_deny_then_edit(serve):
    """Over HTTP: the question is in the event stream; a denial's reason
    reaches the model; an edit is what runs; answering twice is 409, an
    unknown question 404, a bad decision 400, another token 403."""
    tokens = {"alice": "a" * 32, "bob": "b" * 32}
    s = serve(tokens=tokens)
    s.token = tokens["alice"]
    turns = [tool_call("run_shell", command="echo first > output/first.txt"),
             tool_call("run_shell", command="echo answer-41")
             | {"expect": {"contains": ["did not approve", "not in output please"]}},
             text("done") | {"expect": {"contains": ["answer-42", "The user edited your command"]}}]
    with ScriptedServer(turns) as srv:
        rid = start_run(s, srv, {"task": "go", "approve": "always", "verify": False})
        q = pending(s, rid)
        assert q["n"] == 1 and q["lang"] == "bash" and "echo first" in q["code"]
        assert q["review"]["verdict"] == "allow" and q["default"] == "deny"
        assert s.request("POST", f"/v1/runs/{rid}/approvals/1", {"decision": "deny"},
                         token=tokens["bob"])[0] == 403
        st, j = s.json("POST", f"/v1/runs/{rid}/approvals/1", {"decision": "maybe"})
        assert st == 400 and "approve, deny, edit" in j["error"]["message"], j
        st, j = s.json("POST", f"/v1/runs/{rid}/approvals/7", {"decision": "approve"})
        assert st == 404, j
        st, j = s.json("POST", f"/v1/runs/{rid}/approvals/1",
                       {"decision": "deny", "reason": "not in output please"})
        assert st == 200 and j == {"n": 1, "status": "answered"}, j
        st, j = s.json("POST", f"/v1/runs/{rid}/approvals/1", {"decision": "approve"})
        assert st == 409, j
        q = pending(s, rid)
        assert q["n"] == 2
        st, j = s.json("POST", f"/v1/runs/{rid}/approvals/2", {"decision": "edit"})
        assert st == 400 and "code" in j["error"]["message"], j
        st, j = s.json("POST", f"/v1/runs/{rid}/approvals/2",
                       {"decision": "edit", "code": "echo answer-42"})
        assert st == 200, j
        end = wait_end(s, rid)
    srv.assert_ok()
    assert end["status"] == "answered", end
    assert end["approval"] == {"mode": "always", "requests": 2, "approved": 0, "denied": 1, "edited": 1,
                               "timed_out": 0}
    events = [e for _, e, _ in sse(s, rid)]
    data = {e: d for _, e, d in sse(s, rid) if e in ("approval_request", "approval")}
    assert events.count("approval_request") == 2 and events.count("approval") == 2
    assert data["approval"]["who"] == "api" and data["approval"]["decision"] == "edit"
    # The run is over: nothing to answer.
    st, j = s.json("POST", f"/v1/runs/{rid}/approvals/2", {"decision": "approve"})
    assert st == 409, j
    assert s.json("GET", f"/v1/runs/{rid}/approvals")[1] == {"pending": None}


def test_server_bad_approve_field(serve):
    s = serve()
    st, j = s.json("POST", "/v1/runs", {"task": "go", "approve": "sometimes"})
    assert st == 400 and j["error"]["field"] == "approve", j
    st, j = s.json("POST", "/v1/runs", {"task": "go", "approve": "always", "approve_timeout": 0})
    assert st == 400 and j["error"]["field"] == "approve_timeout", j


def test_text_protocol_deny(tmp_path):
    """The text protocol's code blocks wait at the same gate: denied, the
    model's next user turn carries the reason."""
    turns = [text("```bash\ntouch output/nope\n```"),
             text("understood") | {"expect": {"contains": ["did not approve", "read only please"],
                                              "last_role": "user"}}]
    with ScriptedServer(turns) as srv:
        t = Tty(tmp_path, srv, "--approve", "always", "--no-tools", "-o", str(tmp_path / "out"), "go")
        t.expect(PROMPT)
        t.type("n")
        t.expect(b"reason")
        t.type("read only please")
        rc, res = t.finish()
    srv.assert_ok()
    assert rc == 0 and res["protocol"] == "text" and res["approval"]["denied"] == 1
    assert not (tmp_path / "out" / "nope").exists()


def test_text_protocol_edit_is_what_the_run_records(tmp_path):
    """A text-protocol block edited at the gate: the edit runs, and the run's
    steps (what --reproduce runs again) hold the edit, so the reproduction
    makes the same file rather than the model's unedited one."""
    turns = [text("```bash\necho answer-41 > output/a.txt\n```"),
             text("42 it is") | {"expect": {"contains": ["The user edited your", "answer-42"],
                                            "last_role": "user"}}]
    env = base_env(NO_COLOR="1", EDITOR="sed -i s/41/42/")
    env.pop("VISUAL", None)
    with ScriptedServer(turns) as srv:
        t = Tty(tmp_path, srv, "--approve", "always", "--no-tools", "--reproduce", "-o", str(tmp_path / "out"),
                "the answer", env=env)
        t.expect(PROMPT)
        t.type("e")
        rc, res = t.finish()
    srv.assert_ok()
    assert rc == 0 and res["protocol"] == "text" and res["approval"]["edited"] == 1, res
    assert (tmp_path / "out" / "a.txt").read_text() == "answer-42\n"
    assert res["reproduction"]["result"] == "reproduced", res["reproduction"]
