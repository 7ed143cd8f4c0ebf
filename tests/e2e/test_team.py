"""--mode team (docs/modes.md, "Team") end to end: the real binary and jails,
a scripted model server on 127.0.0.1.  The writer's turns are the script's
turns; the reviewer's and the executor's calls are side calls (header
X-Corral-Purpose: review, summary) answered from the script's `side`
turns."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from test_run import SALES, base_env, run  # noqa: E402,F401  (run: a fixture)
from test_serve_runs import serve, start_run, wait_end  # noqa: E402,F401  (serve: a fixture)

WRONG = ("import pandas as pd\n"
         "df = pd.read_csv('input/sales.csv')\n"
         "print(df.groupby('Product')['Date'].count().to_string())\n")
RIGHT = ("import pandas as pd\n"
         "df = pd.read_csv('input/sales.csv')\n"
         "print(df.groupby('Product')['Revenue'].sum().to_string())\n")
REASON = "the task asks for revenue: sum the Revenue column, not a count of dates"
LONG = "for i in range(400):\n    print('row', i, 'x' * 20)\nprint('total 4242')\n"


def verdict(v, *reasons, **turn):
    return text(json.dumps({"verdict": v, "reasons": list(reasons)}), **turn)


@pytest.fixture
def sales(tmp_path):
    p = tmp_path / "sales.csv"
    p.write_text(SALES)
    return str(p)


@pytest.mark.parametrize("protocol", ["tools", "text"])
def test_reviewer_rejects_and_the_writer_gets_the_reasons(run, sales, tmp_path, protocol):
    """The reviewer rejects the first step (it did not run); its reasons are
    the observation the writer's next request carries; the fixed step is
    approved and runs; --json counts each role's calls and tokens; the
    trace says which role did what.  The run is recorded and replayed
    (tools protocol): every role's calls come back from the transcript."""
    if protocol == "tools":
        step1, step2 = tool_call("run_python", code=WRONG), tool_call("run_python", code=RIGHT)
        extra, last_role = [], "tool"
    else:
        step1, step2 = text(f"```python\n{WRONG}```"), text(f"```python\n{RIGHT}```")
        extra, last_role = ["--no-tools"], "user"
    turns = [step1 | {"expect": {"contains": ["You are the writer in a team of three"]}},
             step2 | {"expect": {"contains": ["the reviewer rejected this code", REASON],
                                 "last_role": last_role}},
             text("Doohickey leads with 300.0.") | {"expect": {"contains": ["Doohickey"]}}]
    side = {"review": [
        verdict("reject", REASON) | {"expect": {"contains": ["Task:\nrevenue per product", "['Date'].count()",
                                                            "Static review:"], "tools": False}},
        verdict("approve") | {"expect": {"contains": ["['Revenue'].sum()"]}},
    ]}
    rec = tmp_path / "team.jsonl"
    with ScriptedServer(turns, side=side) as srv:
        r = run(srv, "-i", sales, "--json", "--no-verify", "--mode", "team", "--record", str(rec), *extra,
                "revenue per product")
    srv.assert_ok()
    assert r.rc == 0, r.err
    res = r.json
    assert res["status"] == "answered" and res["mode"] == "team"
    roles = res["team"]["roles"]
    assert roles["writer"]["usage"]["requests"] == 3
    assert roles["reviewer"]["usage"]["requests"] == 2
    assert roles["reviewer"]["rejected"] == 1 and roles["reviewer"]["approved"] == 1
    assert roles["executor"]["runs"] == 1 and roles["executor"]["summaries"] == 0
    for role in roles.values():
        assert role["model"] == "gpt-test"
    assert roles["writer"]["usage"]["prompt_tokens"] > 0 and roles["reviewer"]["usage"]["prompt_tokens"] > 0
    # The writer's turns alone: the run's usage is every role's.
    assert res["usage"]["prompt_tokens"] == sum(x["usage"]["prompt_tokens"] for x in roles.values())
    events = r.events()
    start = next(e for e in events if e["type"] == "run_start")
    assert start["mode"] == "team" and start["team"]["reviewer"] == "gpt-test"
    reviews = [e for e in events if e["type"] == "review"]
    assert [e["role"] for e in reviews] == ["reviewer", "reviewer"]
    assert [e["llm"]["verdict"] for e in reviews] == ["reject", "allow"]
    assert reviews[0]["verdict"] == "reject" and REASON in reviews[0]["llm"]["reasons"]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [e["role"] for e in results] == ["executor", "executor"]
    assert "exec" not in results[0] and "Doohickey" in results[1]["exec"]["stdout"]
    assert {e["role"] for e in events if e["type"] in ("model_request", "model_reply", "tool_call")} == {"writer"}
    end = next(e for e in events if e["type"] == "run_end")
    assert end["team"]["roles"]["reviewer"]["rejected"] == 1
    if protocol != "tools":
        return
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    assert [x.get("purpose") for x in lines if "reply" in x] == [None, "review", None, "review", None]
    r = run("http://127.0.0.1:9/v1", "--json", "--mode", "team", "revenue per product", model=f"replay:{rec}")
    assert r.rc == 0, r.err
    assert r.json["answer"] == "Doohickey leads with 300.0."
    again = r.json["team"]["roles"]
    assert again["reviewer"]["rejected"] == 1 and again["reviewer"]["approved"] == 1
    assert again["writer"]["usage"]["requests"] == 3 and again["executor"]["runs"] == 1


def test_executor_summarises_long_output(run, tmp_path):
    """Long output (over 2000 bytes) is summarised by the executor's model
    (--executor-model), and the writer reads the summary with the output's
    head and tail; short output goes as it is, with no call.  The live
    view says which role did what, and each role's tokens.  The roles'
    own models write to the run's transcript, and a replay plays them back
    without them.  With the static review off the reviewer still sees every
    step."""
    summary = "The loop printed 400 rows; the last line says total 4242."
    turns = [tool_call("run_python", code=LONG),
             tool_call("run_python", code="print(6 * 7)")
             | {"expect": {"contains": ["The executor's summary:", summary, "total 4242",
                                        "The output's beginning and end"]}},
             text("4242 and 42") | {"expect": {"contains": ["42"]}}]
    side = {"summary": [text(summary) | {"expect": {"contains": ["What running it gave (", "print('total 4242')"],
                                                    "model": "exec-1"}}],
            "review": [verdict("approve") | {"expect": {"model": "judge-1"}},
                       verdict("approve") | {"expect": {"model": "judge-1"}}]}
    rec = tmp_path / "team.jsonl"
    with ScriptedServer(turns, side=side) as srv:
        r = run(srv, "--no-verify", "--mode", "team", "--reviewer-model", "judge-1", "--executor-model", "exec-1",
                "--record", str(rec), "--review-policy", "off", "print rows")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert [x["purpose"] for x in srv.side_requests] == ["review", "summary", "review"]
    events = next(iter([json.loads(x) for x in open(p)] for p in r.traces()))
    s = [e for e in events if e["type"] == "team_summary"]
    assert len(s) == 1 and s[0]["role"] == "executor" and s[0]["model"] == "exec-1" and s[0]["bytes"] > 2000
    end = next(e for e in events if e["type"] == "run_end")
    roles = end["team"]["roles"]
    assert roles["executor"]["runs"] == 2 and roles["executor"]["summaries"] == 1
    assert roles["executor"]["usage"]["requests"] == 1 and roles["executor"]["model"] == "exec-1"
    assert roles["reviewer"]["model"] == "judge-1" and roles["reviewer"]["approved"] == 2
    # The live view (stderr): the reviewer's verdicts, the executor's summary, the roles' tokens.
    assert "reviewer" in r.err and "approved: the step runs" in r.err
    assert "summarised" in r.err and summary in r.err
    assert "judge-1 ·" in r.err and "exec-1 ·" in r.err
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    assert [(x.get("purpose"), x["request"]["model"]) for x in lines if "reply" in x] == [
        (None, "gpt-test"), ("review", "judge-1"), ("summary", "exec-1"), (None, "gpt-test"), ("review", "judge-1"),
        (None, "gpt-test")]
    r = run("http://127.0.0.1:9/v1", "--json", "--mode", "team", "print rows", model=f"replay:{rec}")
    assert r.rc == 0, r.err
    assert r.json["answer"] == "4242 and 42"
    roles = r.json["team"]["roles"]
    assert roles["executor"]["summaries"] == 1 and roles["reviewer"]["approved"] == 2


def test_mode_errors(run):
    """Bad --mode values and an executor model without the team are usage
    errors (exit 2) that say what to do; nothing is asked of a model."""
    r = run("http://127.0.0.1:9/v1", "--mode", "crew", "x")
    assert r.rc == 2 and "--mode: expected plain, tdd or team, not 'crew'" in r.err
    r = run("http://127.0.0.1:9/v1", "--executor-model", "m", "x")
    assert r.rc == 2 and "--executor-model" in r.err and "team" in r.err


def test_team_run_over_http(serve):
    """POST /v1/runs with "mode": "team": the reviewer rejects the first step,
    the result carries "mode" and each role's counts; a bad mode is 400 with
    its field."""
    s = serve()
    turns = [tool_call("run_python", code="print(6 * 7)"),
             tool_call("run_python", code="print(7 * 6)") | {"expect": {"contains": ["multiply in the other order"]}},
             text("42")]
    with ScriptedServer(turns, side={"review": [verdict("reject", "multiply in the other order")]}) as srv:
        rid = start_run(s, srv, {"task": "six times seven", "mode": "team", "verify": False})
        j = wait_end(s, rid)
    srv.assert_ok()
    assert j["status"] == "answered" and j["mode"] == "team", j
    roles = j["team"]["roles"]
    assert roles["reviewer"]["rejected"] == 1 and roles["reviewer"]["approved"] == 1
    assert roles["writer"]["usage"]["requests"] == 3 and roles["executor"]["runs"] == 1
    for body, field in [({"mode": "crew"}, "mode"), ({"mode": 3}, "mode"),
                        ({"reviewer_model": 3}, "reviewer_model"),
                        ({"reviewer_model": "replay:/etc/passwd"}, "reviewer_model"),
                        ({"mode": "team", "executor_model": "replay:/etc/passwd"}, "executor_model"),
                        ({"executor_model": "exec-1"}, "executor_model"),  # not a team
                        ({"llm_review": "yes"}, "llm_review")]:
        b = {"task": "x", "model": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}, **body}
        status, e = s.json("POST", "/v1/runs", b)
        assert status == 400 and e["error"].get("field") == field, (body, e)


def test_team_roles_models_over_http(serve):
    """reviewer_model and executor_model in POST /v1/runs: each role asks its
    own model (the scripted server checks the model of every side call) and
    the result names them."""
    s = serve()
    summary = "The loop printed 400 rows; the last is total 4242."
    turns = [tool_call("run_python", code=LONG),
             text("4242") | {"expect": {"contains": [summary]}}]
    side = {"summary": [text(summary) | {"expect": {"model": "exec-1"}}],
            "review": [verdict("approve") | {"expect": {"model": "judge-1"}}]}
    with ScriptedServer(turns, side=side) as srv:
        rid = start_run(s, srv, {"task": "print rows", "mode": "team", "verify": False,
                                 "reviewer_model": "judge-1", "executor_model": "exec-1"})
        j = wait_end(s, rid)
    srv.assert_ok()
    assert j["status"] == "answered" and j["answer"] == "4242", j
    roles = j["team"]["roles"]
    assert roles["reviewer"]["model"] == "judge-1" and roles["executor"]["model"] == "exec-1"
    assert roles["executor"]["summaries"] == 1
    assert [x["purpose"] for x in srv.side_requests] == ["review", "summary"]


def test_llm_reviewer_model_over_http(serve):
    """reviewer_model outside the team: the LLM reviewer (implied, as
    --reviewer-model implies --llm-review) asks that model about a step the
    static review only warns about, and its rejection reaches the writer."""
    s = serve()
    warned = "import urllib.request\nprint('imported')\n"  # PY-NET-002: a warning under standard
    turns = [tool_call("run_python", code=warned),
             verdict("reject", "there is no network here") | {"expect": {"contains": ["PY-NET-002"],
                                                                         "model": "judge-2", "tools": False}},
             text("done") | {"expect": {"contains": ["rejected by the reviewer model", "there is no network here"],
                                        "model": "gpt-test"}}]
    with ScriptedServer(turns, models=["gpt-test", "judge-2"]) as srv:
        rid = start_run(s, srv, {"task": "fetch it", "verify": False, "reviewer_model": "judge-2"})
        j = wait_end(s, rid)
    srv.assert_ok()
    assert j["status"] == "answered" and j["answer"] == "done", j
    assert len(srv.requests) == 3
