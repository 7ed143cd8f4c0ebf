"""The agent's modes (docs/modes.md) end to end: the real binary and jails, a
scripted model server on 127.0.0.1.  A mode's side calls carry the header
X-Corral-Purpose; the server answers them from its `side` turns (or a
default) and keeps them apart from the conversation's requests."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from test_run import SALES, base_env, run  # noqa: E402,F401  (run: a fixture)


def verdict(complete, missing=(), **turn):
    return text(json.dumps({"complete": complete, "missing": list(missing)}), **turn)


@pytest.fixture
def sales(tmp_path):
    p = tmp_path / "sales.csv"
    p.write_text(SALES)
    return str(p)


TOTAL = ("import pandas as pd\n"
         "df = pd.read_csv('input/sales.csv')\n"
         "t = df.groupby('Product')['Revenue'].sum()\n"
         "print(t.to_string())\n")
CHART = ("import matplotlib.pyplot as plt\n"
         "t.plot.bar(); plt.savefig('output/revenue.png')\n"
         "t.to_csv('output/revenue.csv')\n")


@pytest.mark.parametrize("protocol", ["tools", "text"])
def test_incomplete_answer_is_sent_back_then_completes(run, sales, protocol):
    """The first answer leaves out the chart the task asks for: the check says
    so, what is missing is the next user turn, the model makes it, and the
    second check passes."""
    if protocol == "tools":
        step1, step2 = tool_call("run_python", code=TOTAL), tool_call("run_python", code=CHART)
        answer1 = tool_call("final_answer", answer="Doohickey leads with 300.0.")
        answer2 = tool_call("final_answer", answer="Doohickey leads; chart in output/revenue.png.")
        extra = []
    else:
        step1 = text(f"```python\n{TOTAL}```")
        step2 = text(f"```python\n{CHART}```")
        answer1 = text("Doohickey leads with 300.0.")
        answer2 = text("Doohickey leads; chart in output/revenue.png.")
        extra = ["--no-tools"]
    turns = [step1, answer1,
             step2 | {"expect": {"contains": ["not complete yet", "a bar chart of revenue per product"],
                                 "last_role": "user"}},
             answer2]
    side = {"verify": [
        verdict(False, ["a bar chart of revenue per product in output/"])
        | {"expect": {"contains": ["Task:\nrevenue per product and a bar chart",
                                   "Final answer:\nDoohickey leads with 300.0.",
                                   "Files in output/:\n(none)", "Last outputs of the agent's steps:"],
                      "tools": False}},
        verdict(True) | {"expect": {"contains": ["output/revenue.png (", "PNG ", "output/revenue.csv ("]}},
    ]}
    with ScriptedServer(turns, side=side) as srv:
        r = run(srv, "-i", sales, "--json", *extra, "revenue per product and a bar chart")
    assert r.rc == 0, r.err
    srv.assert_ok()
    assert r.rc == 0, r.err
    res = r.json
    assert res["status"] == "answered"
    assert "revenue.png" in res["answer"]
    v = res["verification"]
    assert v["complete"] is True and v["checks"] == 2 and v["sent_back"] == 1
    assert [x["action"] for x in v["verdicts"]] == ["sent_back", "accepted"]
    assert v["verdicts"][0]["missing"] == ["a bar chart of revenue per product in output/"]
    assert v["usage"]["requests"] == 2
    # Every verdict traced, and the run_start says the check is on.
    events = r.events()
    assert [e["complete"] for e in events if e["type"] == "verify"] == [False, True]
    start = next(e for e in events if e["type"] == "run_start")
    assert start["verify"]["rounds"] == 2
    end = next(e for e in events if e["type"] == "run_end")
    assert end["verification"]["sent_back"] == 1


def test_rounds_bound_the_send_backs(run, tmp_path):
    """--verify-rounds 1: sent back once; the second incomplete verdict is
    recorded and the answer stands (said, not hidden)."""
    turns = [text("42"), text("still 42")]
    side = {"verify": [verdict(False, ["show the working"]), verdict(False, ["show the working"])]}
    with ScriptedServer(turns, side=side) as srv:
        r = run(srv, "--json", "--no-stream", "--verify-rounds", "1", "what is six times seven")
    srv.assert_ok()
    assert r.rc == 0, r.err
    v = r.json["verification"]
    assert r.json["answer"] == "still 42"
    assert v["complete"] is False and v["checks"] == 2 and v["sent_back"] == 1
    assert v["verdicts"][1]["action"] == "accepted_incomplete"


def test_no_verify_and_a_bad_verdict(run):
    """--no-verify makes no side call; a verdict that is not JSON lets the
    answer stand and says why."""
    with ScriptedServer([text("42")]) as srv:
        r = run(srv, "--json", "--no-verify", "six times seven")
    srv.assert_ok()
    assert r.rc == 0 and "verification" not in r.json and srv.side_requests == []
    with ScriptedServer([text("42")], side={"verify": [text("looks fine to me")]}) as srv:
        r = run(srv, "--json", "six times seven")
    srv.assert_ok()
    v = r.json["verification"]
    assert r.rc == 0 and v["complete"] is None and "not a JSON object" in v["verdicts"][0]["error"]


def test_verifier_model_and_live_view(run):
    """--verifier-model names the model of the side call; the live view shows
    the verdict."""
    side = {"verify": [verdict(False, ["the unit"]) | {"expect": {"model": "judge-1"}},
                       verdict(True) | {"expect": {"model": "judge-1"}}]}
    with ScriptedServer([text("42"), text("42 apples")], side=side) as srv:
        r = run(srv, "--verifier-model", "judge-1", "six times seven apples")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert "42 apples" in r.out
    assert "check" in r.err and "the unit" in r.err


def test_replay_keeps_recorded_checks(run, tmp_path):
    """A transcript recorded with the check and a plan replays them (the
    verdict and plan lines are played to their side calls, not to the loop);
    with --no-verify the same transcript replays without the checks."""
    rec = tmp_path / "t.jsonl"
    side = {"verify": [verdict(False, ["the unit"]), verdict(True)]}
    with ScriptedServer([text("42"), text("42 apples")], side=side) as srv:
        r = run(srv, "--json", "--plan", "--record", str(rec), "six times seven apples")
    srv.assert_ok()
    assert r.rc == 0, r.err
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    assert [x.get("purpose") for x in lines if "reply" in x] == ["plan", None, "verify", None, "verify"]
    r = run("http://127.0.0.1:9/v1", "--json", "six times seven apples", model=f"replay:{rec}")
    assert r.rc == 0, r.err
    assert r.json["answer"] == "42 apples" and r.json["verification"]["sent_back"] == 1
    assert r.json["planning"]["plans"] == 1
    r = run("http://127.0.0.1:9/v1", "--json", "--no-verify", "six times seven apples", model=f"replay:{rec}")
    assert r.rc == 0, r.err
    assert r.json["answer"] == "42" and "verification" not in r.json


# ---- planning

def test_plan_first_and_kept_in_context(run, sales):
    """--plan: a plan side call before the first turn (told the task and the
    inputs); the plan rides with the task in every turn."""
    plan = "1. Read input/sales.csv.\n2. Sum revenue per product.\n3. Answer."
    side = {"plan": [text(plan) | {"expect": {"contains": ["Task:\nrevenue per product", "sales.csv",
                                                           "Write the plan."], "tools": False}}]}
    turns = [tool_call("run_python", code=TOTAL)
             | {"expect": {"contains": ["Your plan (corral revises it", "2. Sum revenue per product."]}},
             text("Doohickey leads.") | {"expect": {"contains": ["2. Sum revenue per product."]}}]
    with ScriptedServer(turns, side=side) as srv:
        r = run(srv, "-i", sales, "--json", "--no-verify", "--plan", "revenue per product")
    assert r.rc == 0, r.err
    srv.assert_ok()
    p = r.json["planning"]
    assert p["plans"] == 1 and p["stuck"] == 0 and p["plan"] == plan
    assert p["usage"]["requests"] == 1
    (ev,) = [e for e in r.events() if e["type"] == "plan"]
    assert ev["reason"] == "initial" and ev["plan"] == plan and ev["iteration"] == 1


def test_same_error_three_times_forces_a_replan(run):
    """Three steps failing with the same error: the next turn carries a
    replan that says what went wrong, before any scheduled revision."""
    side = {"plan": [text("1. Divide."),
                     text("1. Do not divide by zero.")
                     | {"expect": {"contains": ["The agent is stuck: the same error 3 times in a row: "
                                                "ZeroDivisionError: division by zero", "The current plan:\n1. Divide."]}}]}
    turns = [tool_call("run_python", code="1/0")] * 3 + [
        text("It cannot be divided.")
        | {"expect": {"contains": ["You seem to be stuck: the same error 3 times in a row",
                                   "1. Do not divide by zero."], "last_role": "user"}}]
    with ScriptedServer(turns, side=side) as srv:
        r = run(srv, "--json", "--no-stream", "--no-verify", "--plan", "--replan-every", "0", "divide")
    assert r.rc == 0, r.err
    srv.assert_ok()
    p = r.json["planning"]
    assert p["plans"] == 2 and p["stuck"] == 1
    assert [e["reason"] for e in p["events"]] == ["initial", "stuck"]


def test_scheduled_revision_then_stall_replan(run):
    """--replan-every 2: a revision after two steps; a third step that still
    prints nothing new makes two stalled steps in a row: a stuck replan.  The
    live view shows the plans."""
    side = {"plan": [text("1. Print."),
                     text("1. Print more.") | {"expect": {"contains": ["Revise the plan"]}},
                     text("1. Print something else.")
                     | {"expect": {"contains": ["The agent is stuck: 2 steps in a row made no new output"]}}]}
    turns = [tool_call("run_python", code="print('same')")] * 2 + [
        tool_call("run_python", code="print('same')")
        | {"expect": {"contains": ["The plan, revised after your last steps:\n1. Print more."]}},
        text("done") | {"expect": {"contains": ["You seem to be stuck: 2 steps in a row made no new output",
                                                "1. Print something else."]}}]
    with ScriptedServer(turns, side=side) as srv:
        r = run(srv, "--no-verify", "--replan-every", "2", "print")
    assert r.rc == 0, r.err
    srv.assert_ok()
    assert "replanned: stuck: 2 steps in a row" in r.err and "1. Print something else." in r.err


# ---- context compaction

def pairs_whole(messages):
    """Every tool message answers a call of the assistant message before its
    run of tool messages, and every call is answered."""
    for i, m in enumerate(messages):
        if m.get("role") == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            j, answered = i + 1, []
            while j < len(messages) and messages[j].get("role") == "tool":
                answered.append(messages[j]["tool_call_id"])
                j += 1
            if answered != ids:
                return False
        if m.get("role") == "tool":
            k = i
            while k > 0 and messages[k - 1].get("role") == "tool":
                k -= 1
            prev = messages[k - 1] if k > 0 else {}
            if m["tool_call_id"] not in [c["id"] for c in prev.get("tool_calls") or []]:
                return False
    return True


def test_compaction_summarises_and_keeps_pairs(run):
    """A small context: older turns are summarised by a side call, the
    summary rides after the task, and no request ever parts a tool call from
    its answer."""
    step = "print('%s' * 1500)"
    turns = [tool_call("run_python", code=step % c) for c in "abcdef"] + [
        text("done") | {"expect": {"contains": ["Summary of your earlier steps", "SUMMARY-1"]}}]
    side = {"compact": [text("SUMMARY-1: printed a, b and c.")
                        | {"expect": {"contains": ["The messages to summarise", "aaaa"], "tools": False}}]}
    with ScriptedServer(turns, side=side) as srv:
        r = run(srv, "--json", "--no-verify", "--context-tokens", "4096", "print things")
    assert r.rc == 0, r.err
    srv.assert_ok()
    c = r.json["compaction"]
    assert c["compactions"] == 1 and c["usage"]["requests"] == 1 and c["events"][0]["summary"].startswith("SUMMARY-1")
    assert all(pairs_whole(req["messages"]) for req in srv.requests)
    # the side call itself offered no tools, and a later request is shorter than it would be
    assert len(srv.requests[-1]["messages"]) < 2 + 2 * 6
    ev = [e for e in r.events() if e["type"] == "compact"][0]
    assert ev["messages"] >= 2 and ev["est_tokens_before"] > 3072  # 3/4 of the context


def test_compactions_stop_at_their_cap(run):
    """At most compact_max (4) summaries a run: past them, older output is
    only shortened, and the run still ends with every pair whole."""
    step = "print('%s' * 1500)"
    turns = [tool_call("run_python", code=step % c) for c in "abcdefghijklmnopqrstuvwx"] + [text("done")]
    side = {"compact": [text(f"SUMMARY-{i}") for i in range(1, 5)]}
    with ScriptedServer(turns, side=side) as srv:
        r = run(srv, "--json", "--no-verify", "--context-tokens", "4096", "--max-iterations", "30", "print things")
    assert r.rc == 0, r.err
    srv.assert_ok()  # every scripted summary was asked for
    c = r.json["compaction"]
    assert c["compactions"] == 4 and len(srv.side_requests) == 4, c
    assert all(pairs_whole(req["messages"]) for req in srv.requests)


def test_no_compact_shortens_only(run):
    step = "print('%s' * 1500)"
    turns = [tool_call("run_python", code=step % c) for c in "abcdef"] + [text("done")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--json", "--no-verify", "--no-compact", "--context-tokens", "4096", "print things")
    assert r.rc == 0, r.err
    srv.assert_ok()
    assert "compaction" not in r.json and srv.side_requests == []
    assert all(pairs_whole(req["messages"]) for req in srv.requests)


# ---- reproducible results

def test_reproduction_that_matches(run, sales):
    """The steps run again in a fresh workspace on the same inputs: the CSV
    and the PNG come out the same, and the answer's numbers are among what
    the code printed."""
    turns = [tool_call("run_python", code=TOTAL), tool_call("run_python", code=CHART),
             text("Doohickey leads with 300.0; Widget has 220.0. See output/revenue.png.")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "-i", sales, "--json", "--no-verify", "--reproduce", "revenue per product")
    assert r.rc == 0, r.err
    srv.assert_ok()
    rep = r.json["reproduction"]
    assert rep["result"] == "reproduced", rep
    assert rep["steps"] == 2 and rep["files_compared"] == 2 and rep["files_reproduced"] == 2
    assert {f["path"]: f["status"] for f in rep["files"]} == {"output/revenue.csv": "same",
                                                              "output/revenue.png": "same"}
    assert rep["unsupported_numbers"] == [] and rep["differences"] == []
    (ev,) = [e for e in r.events() if e["type"] == "reproduce"]
    assert ev["result"] == "reproduced"


def test_reproduction_that_does_not_match(run, sales):
    """A number the code never computed in the answer, and a CSV the model
    wrote by hand: both named, and the result is not reproduced (exit 0: the
    run still answered)."""
    turns = [tool_call("run_python", code=TOTAL),
             tool_call("write_file", path="output/top.csv", content="Product,Revenue\nDoohickey,300.0\n"),
             text("Doohickey leads with 300.0, and revenue grew 17.3% over the year.")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "-i", sales, "--no-verify", "--reproduce", "revenue per product")
    assert r.rc == 0, r.err
    srv.assert_ok()
    assert "not reproduced" in r.err
    assert "output/top.csv: written by the model (write_file), not by code" in r.err
    assert "the answer states 17.3, which no step printed" in r.err
    (ev,) = [e for e in r.events() if e["type"] == "reproduce"]
    assert ev["result"] == "not_reproduced"
    assert ev["unsupported_numbers"] == ["17.3"]
    assert {f["path"]: f["status"] for f in ev["files"]} == {"output/top.csv": "model_authored"}


def test_reproduction_notices_code_that_differs(run, tmp_path):
    """Output that depends on more than the inputs (here the clock) differs
    when run again, and says from where."""
    turns = [tool_call("run_python", code="import time\nopen('output/t.txt','w').write(repr(time.time_ns()))"),
             text("done")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--json", "--no-verify", "--reproduce", "stamp")
    assert r.rc == 0, r.err
    rep = r.json["reproduction"]
    assert rep["result"] == "not_reproduced"
    assert rep["files"] == [dict(rep["files"][0], path="output/t.txt", status="differs")]
    assert rep["differences"][0].startswith("output/t.txt: differs from byte ")
