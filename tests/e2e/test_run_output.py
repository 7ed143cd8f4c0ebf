"""A step's output as "output" trace events while it runs (docs/trace.md,
"output"): sent as it comes, line by line, both streams, for run_python and
run_shell; capped per step; a secret cut between two events still redacted."""
import json
import sys
import os

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from test_run import base_env, run  # noqa: E402,F401  (run: the fixture)

SECRET = "s3cr3t-value-for-the-output-test-0123"
LIVE = ("import sys, time\nprint('first', flush=True)\ntime.sleep(0.8)\n"
        "print('err-line', file=sys.stderr, flush=True)\nprint('second')\n")
# a long line with no line end, the secret across the 8 KiB a chunk holds
SPLIT = "import os, sys\nsys.stdout.write('x' * 8180 + os.environ['OUT_SECRET'] + 'y' * 100)\n"
CHATTY = "for i in range(20000):\n    print(f'line {i:05d} ' + 'z' * 20)\n"


def test_output_while_a_step_runs(run):
    turns = [tool_call("run_python", code=LIVE), tool_call("run_shell", command="echo shell-out; echo shell-err >&2"),
             tool_call("run_python", code=SPLIT), tool_call("run_python", code=CHATTY), text("done")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "-e", f"OUT_SECRET={SECRET}", "talk")
    srv.assert_ok()
    assert r.rc == 0, r.err
    events = r.events()
    outs = {}
    for e in events:
        if e["type"] == "output":
            outs.setdefault(e["iteration"], []).append(e)
    results = {e["iteration"]: e for e in events if e["type"] == "tool_result"}
    assert sorted(outs) == [1, 2, 3, 4], outs.keys()
    for it, evs in outs.items():
        assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1)), it
        # before the step's result, in the file's order
        assert all(events.index(e) < events.index(results[it]) for e in evs)

    # 1: live: "first" was out long before the step ended; each stream whole
    one = outs[1]
    first = next(e for e in one if "first" in e["text"])
    assert first["stream"] == "stdout" and first["t_ms"] < results[1]["t_ms"] - 500, (first, results[1]["t_ms"])
    joined = {s: "".join(e["text"] for e in one if e["stream"] == s) for s in ("stdout", "stderr")}
    assert joined == {"stdout": results[1]["exec"]["stdout"], "stderr": results[1]["exec"]["stderr"]}, joined
    assert joined["stdout"] == "first\nsecond\n" and "err-line" in joined["stderr"]

    # 2: a shell step's streams
    two = {e["stream"]: e["text"] for e in outs[2]}
    assert two == {"stdout": "shell-out\n", "stderr": "shell-err\n"}, outs[2]

    # 3: a cut in a long line keeps the secret whole: redacted, never seen
    three = "".join(e["text"] for e in outs[3])
    assert len(outs[3]) >= 2 and "[REDACTED]" in three and three.endswith("y" * 100), outs[3]
    with open(r.traces()[0]) as f:
        assert SECRET not in f.read()

    # 4: the cap: 64 KiB in all, the last event says so; the result has more
    four = outs[4]
    sent = sum(len(e["text"].encode()) for e in four)
    assert sent <= 64 * 1024 and four[-1].get("capped") is True and sent > 60 * 1024, (sent, four[-1])
    assert not any(e.get("capped") for e in four[:-1])
    assert len(four) <= 64, len(four)  # coalesced: 8 KiB events, not a line each
    assert four[0]["text"].startswith("line 00000 ")


def test_cost_from_the_config_files_prices(run, tmp_path):
    """The config file's "cost" of a model (opencode.json's shape, per
    million tokens): each model_reply's cost and the run's, in the trace and
    in --json; a bad price is a usage error naming it."""
    turns = [tool_call("run_shell", command="echo hi"), text("done")]
    conf = tmp_path / "config" / "corral"
    conf.mkdir(parents=True)
    with ScriptedServer(turns) as srv:
        (conf / "config.json").write_text(json.dumps({"provider": {"priced": {
            "baseURL": srv.base_url, "models": {"gpt-test": {"cost": {"input": 2.5, "output": 10, "cache_read": 1}}}}}}))
        env = base_env(NO_COLOR="1", XDG_CONFIG_HOME=str(tmp_path / "config"))
        r = run(srv, "--json", "hi", env=env, model="priced/gpt-test")
    assert r.rc == 0, r.err
    replies = [e for e in r.events() if e["type"] == "model_reply"]
    assert len(replies) == 2
    for e in replies:
        u = e["usage"]
        assert abs(e["cost"] - (u["prompt_tokens"] * 2.5 + u["completion_tokens"] * 10) / 1e6) <= 1e-6, e
    usage = r.json["usage"]
    assert abs(usage["cost"] - (usage["prompt_tokens"] * 2.5 + usage["completion_tokens"] * 10) / 1e6) <= 1e-6
    assert usage["cost"] > 0
    end = r.events()[-1]
    assert end["type"] == "run_end" and end["usage"]["cost"] == usage["cost"]

    (conf / "config.json").write_text(json.dumps({"provider": {"priced": {
        "baseURL": "http://127.0.0.1:9/v1", "models": {"gpt-test": {"cost": {"input": "cheap", "output": 1}}}}}}))
    r = run("http://127.0.0.1:9/v1", "hi", env=env, model="priced/gpt-test")
    assert r.rc == 2 and "provider.priced.models.gpt-test.cost needs" in r.err, r.err
