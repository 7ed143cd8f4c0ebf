"""The test-driven mode (--mode tdd, docs/modes.md) end to end: the real
binary and jails, a scripted model server on 127.0.0.1.  The tests the model
writes first are frozen at its first code step: nothing in the jail, no
write_file and no file beside them (conftest.py, pytest.ini, sitecustomize)
can change what pytest runs; their failures go back to the model, and an
answer waits until they pass and the code ran."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from test_run import run  # noqa: E402,F401  (run: a fixture)

TEST = ("from solution import add\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n"
        "def test_add_negative():\n    assert add(-1, 1) == 0\n")
WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
USE = "from solution import add\nprint('sum:', add(2, 3))\n"


def tdd_events(r, event=None):
    return [e for e in r.events() if e["type"] == "tdd" and (event is None or e["event"] == event)]


@pytest.mark.parametrize("protocol", ["tools", "text"])
def test_failure_fed_back_then_green(run, protocol):
    """Tests first, then wrong code: pytest runs in the jail, the failure is
    the next turn's; the fix makes them pass, the real run succeeds, the
    answer stands.  Both protocols: the text protocol writes with file=."""
    if protocol == "tools":
        write_test = tool_call("write_file", path="tests/test_solution.py", content=TEST)
        write_wrong = tool_call("write_file", path="solution.py", content=WRONG)
        write_right = tool_call("write_file", path="solution.py", content=RIGHT)
        use = tool_call("run_python", code=USE)
        answer = tool_call("final_answer", answer="add(2, 3) is 5; tests pass.")
        extra, last = [], "tool"
    else:
        write_test = text(f"```python file=tests/test_solution.py\n{TEST}```")
        write_wrong = text(f"```python file=solution.py\n{WRONG}```")
        write_right = text(f"```python file=solution.py\n{RIGHT}```")
        use = text(f"```python\n{USE}```")
        answer = text("add(2, 3) is 5; tests pass.")
        extra, last = ["--no-tools"], "user"
    turns = [
        write_test | {"expect": {"contains": ["# Test-driven work", "tests/"]}},
        write_wrong | {"expect": {"contains": ["wrote"], "last_role": last}},
        write_right | {"expect": {"contains": ["FAILED: 0 passed, 2 failed", "assert -1 == 5",
                                               "test_add_negative"], "last_role": last}},
        use | {"expect": {"contains": ["all 2 passed"]}},
        answer | {"expect": {"contains": ["sum: 5", "all 2 passed", "give your final answer"]}},
    ]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--json", "--no-verify", "--mode", "tdd", *extra, "write add(a, b), test first")
    srv.assert_ok()
    assert r.rc == 0, r.err
    res = r.json
    assert res["status"] == "answered", res
    t = res["tdd"]
    assert t["passed"] is True and t["phase"] == "code" and t["tests"] == ["tests/test_solution.py"]
    assert t["checks"] == 3 and t["code_ok"] is True and t["refused"] == 0
    checks = tdd_events(r, "check")
    assert [c["status"] for c in checks] == ["failed", "passed", "passed"]
    assert checks[0]["failed"] == 2 and "assert -1 == 5" in checks[0]["report"]
    assert [e["phase"] for e in tdd_events(r, "phase")] == ["tests", "code"]
    # Tests and code are both artifacts.
    assert t["code"] == ["solution.py"]
    arts = {a["path"] for a in res["artifacts"]}
    assert {"output/tdd/tests/test_solution.py", "output/tdd/solution.py"} <= arts, arts
    with open(os.path.join(res["output_dir"], "tdd", "tests", "test_solution.py")) as f:
        assert f.read() == TEST


ATTACK = r"""
for what in "echo '# x' >> tests/test_solution.py" "rm -f tests/test_solution.py" \
            "mv tests/test_solution.py x.py" "chmod 666 tests/test_solution.py" \
            "ln -s /dev/null tests/test_zzz.py" "touch tests/conftest.py" "mv tests gone" "rmdir tests"; do
  if sh -c "$what" 2>err; then echo "allowed!!: $what"; else echo "refused: $what: $(cat err)"; fi
done
ln -s tests t
printf 'import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    o = yield\n    o.get_result().outcome = "passed"\n' > conftest.py
printf '[pytest]\naddopts = -k nothing -p no:python\n' > pytest.ini
cp pytest.ini tox.ini
printf '[tool.pytest.ini_options]\naddopts = "-k nothing"\n' > pyproject.toml
printf 'import sys; sys.exit(0)\n' > sitecustomize.py
cp sitecustomize.py usercustomize.py
mkdir -p plug && printf 'pytest_plugins = ["evil"]\n' > plug/conftest.py
printf 'import os; os._exit(0)\n' > evil.py
echo 'import evil' > zz.pth
"""


def test_frozen_tests_cannot_be_changed_or_shadowed(run):
    """After the freeze, a step in the jail (a shell step's, the Python
    session's) cannot edit, delete, rename, chmod, add to or move tests/
    (EROFS/EBUSY); write_file into tests/ is
    refused, also through a symlink; a conftest.py, pytest.ini, tox.ini,
    pyproject.toml, sitecustomize.py, a plugin and a .pth beside the tests
    change nothing: the wrong code still fails them, and the answer is held."""
    turns = [
        tool_call("write_file", path="tests/test_solution.py", content=TEST),
        tool_call("write_file", path="solution.py", content=WRONG),
        tool_call("run_shell", command=ATTACK)
        | {"expect": {"contains": ["FAILED: 0 passed, 2 failed"]}},
        tool_call("write_file", path="tests/test_solution.py", content="def test_ok():\n    pass\n")
        | {"expect": {"contains": ["refused: echo", "refused: rm -f", "refused: mv tests/",
                                   "Read-only file system", "refused: chmod", "refused: ln -s",
                                   "refused: touch", "refused: mv tests gone", "refused: rmdir",
                                   "FAILED: 0 passed, 2 failed"],
                      "not_contains": [f"allowed!!: {c}" for c in ("echo", "rm", "mv", "chmod", "ln", "touch")]}},
        tool_call("run_python", code="open('tests/test_solution.py', 'a').write('# x')")
        | {"expect": {"contains": ["the tests are frozen", "cannot change in this run"]}},
        tool_call("write_file", path="t/test_solution.py", content="def test_ok():\n    pass\n")
        | {"expect": {"contains": ["OSError: [Errno 30] Read-only file system: 'tests/test_solution.py'"]}},
        tool_call("write_file", path="/workspace/./tests/test_more.py", content="x = 1\n")
        | {"expect": {"contains": ["leads into tests/, which is read-only"]}},
        tool_call("final_answer", answer="done")
        | {"expect": {"contains": ["the tests are frozen"]}},
        text("giving up") | {"expect": {"contains": ["Not done yet: the tests do not pass yet"]}},
    ]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--json", "--no-verify", "--mode", "tdd", "--max-iterations", "9", "add, test first")
    srv.assert_ok()
    assert r.rc == 0, r.err
    res = r.json
    t = res["tdd"]
    assert t["passed"] is False and t["refused"] == 2 and t["held"] == 1
    assert [c["allowed"] for c in t["changes"]] == [False, False]
    assert t["last"]["status"] == "failed" and t["last"]["failed"] == 2
    held = tdd_events(r, "answer_held")
    assert [h["action"] for h in held] == ["sent_back", "accepted"]


def test_warm_session_sees_the_tests_read_only(run):
    """The default Python session, forked warm from a zygote, gets the
    read-only tests/ as the cold one and the shell's one-shot jails do."""
    turns = [
        tool_call("write_file", path="tests/test_solution.py", content=TEST),
        tool_call("run_python", code="open('tests/test_solution.py', 'a').write('# x')"),
        text("stuck") | {"expect": {"contains": ["Read-only file system: 'tests/test_solution.py'"]}},
        text("stuck"),
    ]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--json", "--no-verify", "--mode", "tdd", "--max-iterations", "4", "add", warm=True)
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert r.json["tdd"]["passed"] is False and r.json["tdd"]["code_ok"] is False


def test_code_before_tests_is_refused_and_change_needs_reason(run, tmp_path):
    """A code step before any test is refused (nothing runs); with
    --tdd-test-changes allow, a frozen test changes only with a reason, and
    the change is traced.  The live view shows each as a tests line.  The
    run recorded replays with --mode tdd to the same end (the tests run
    again, for real)."""
    turns = [
        tool_call("run_python", code="print('hello')"),
        tool_call("write_file", path="tests/test_solution.py", content=TEST)
        | {"expect": {"contains": ["write the tests first"], "not_contains": ["hello\\n"]}},
        tool_call("write_file", path="solution.py", content=RIGHT),
        tool_call("write_file", path="tests/test_solution.py", content=TEST + "\ndef test_more():\n    pass\n")
        | {"expect": {"contains": ["all 2 passed"]}},
        tool_call("write_file", path="tests/test_solution.py", content=TEST + "\ndef test_more():\n    pass\n",
                  reason="one more case the task names")
        | {"expect": {"contains": ["must say why"]}},
        tool_call("run_python", code=USE) | {"expect": {"contains": ["all 3 passed"]}},
        tool_call("final_answer", answer="5"),
    ]
    rec = tmp_path / "t.jsonl"
    with ScriptedServer(turns) as srv:
        r = run(srv, "--no-verify", "--mode", "tdd", "--tdd-test-changes", "allow", "--record", str(rec),
                "add, test first")
    srv.assert_ok()
    assert r.rc == 0, r.err
    view = r.out + r.err
    for line in ("test first: tests/ is read-only to the jail", "refused run_python: nothing ran: write the tests",
                 "frozen: 1 test file", "pass: 2 passed, 0 failed", "change of tests/test_solution.py asked "
                 "(refused)", "(allowed): one more case", "pass: 3 passed"):
        assert line in view, (line, view)
    t = r.events()[-1]["tdd"]
    assert t["passed"] is True and t["refused"] == 2
    assert [(c["allowed"], c.get("reason")) for c in t["changes"]] == [
        (False, None), (True, "one more case the task names")]
    r = run("http://127.0.0.1:9/v1", "--json", "--no-verify", "--mode", "tdd", "--tdd-test-changes", "allow",
            "add, test first", model=f"replay:{rec}")
    assert r.rc == 0, r.err
    assert r.json["answer"] == "5" and r.json["tdd"]["passed"] is True and r.json["tdd"]["checks"] == 3


def test_mode_is_checked(run):
    r = run("http://127.0.0.1:9", "--mode", "pair", "x")
    assert r.rc == 2 and "--mode: expected plain, tdd or team, not 'pair'" in r.err
    r = run("http://127.0.0.1:9", "--tdd-test-changes", "maybe", "x")
    assert r.rc == 2 and "expected allow or deny" in r.err
