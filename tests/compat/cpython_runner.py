"""Run one module of CPython's regression suite and print a summary.

usage: python3 cpython_runner.py MODULE [TIMEOUT [--ignore PATTERN]... [TEST-ID...]]

The same program runs on the bare host and inside `corral exec` (as the
jail's program file), so both sides are measured the same way.  It starts
regrtest (`python3 -m test --junit-xml`) on MODULE in a fresh temporary
directory, without the tests matching each --ignore pattern (regrtest's
--ignore), only the given test ids when there are any (a rerun), then prints
one line: the marker COMPAT-RESULT followed by a JSON object {module, rc,
seconds, tests: {test id: outcome}, messages: {test id: last line of the
failure}, tail: the end of regrtest's output}.  outcome is ok, fail, error,
skip or xfail.  When the whole tree is killed (a seccomp kill in the jail)
nothing is printed and the caller reports why.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

MARKER = "COMPAT-RESULT "


def outcomes(xml_path):
    tests, messages = {}, {}
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return tests, messages
    for case in root.iter("testcase"):
        name = case.get("name")
        if name is None:
            continue  # a test whose subTests failed: named from the output instead
        kinds = {child.tag: child for child in case}
        if "error" in kinds:
            outcome, why = "error", kinds["error"].get("message", "")
        elif "failure" in kinds:
            outcome, why = "fail", kinds["failure"].get("message", "")
        elif "skipped" in kinds:
            outcome, why = "skip", kinds["skipped"].text or ""
        elif "output" in kinds:
            outcome, why = "xfail", ""
        else:
            outcome, why = "ok", ""
        tests[name] = outcome
        if why and outcome != "ok":
            lines = [ln for ln in why.strip().splitlines() if ln.strip()]
            messages[name] = (lines[-1] if lines else "")[:300]
    return tests, messages


# unittest's summary of a failure, in regrtest -v's output.  A test whose
# subTests failed is the one kind the junit XML leaves unnamed.
FAILURE_HEADER = re.compile(r"^(FAIL|ERROR): \S+ \(([\w.]+)\)", re.M)


def subtest_failures(output, tests):
    for kind, test_id in FAILURE_HEADER.findall(output):
        if tests.get(test_id, "ok") == "ok":
            tests[test_id] = "fail" if kind == "FAIL" else "error"


def main():
    module = sys.argv[1]
    timeout = sys.argv[2] if len(sys.argv) > 2 else "600"
    rest = sys.argv[3:]
    ignore = []
    while len(rest) >= 2 and rest[0] == "--ignore":
        ignore += ["--ignore", rest[1]]
        rest = rest[2:]
    only = rest
    work = tempfile.mkdtemp(prefix="compat-")
    xml_path = os.path.join(work, "junit.xml")
    cmd = [sys.executable, "-m", "test", "-v", "--junit-xml", xml_path, "--timeout", timeout, *ignore]
    if only:
        match = os.path.join(work, "match.txt")
        with open(match, "w") as f:
            f.write("".join(t + "\n" for t in only))
        cmd += ["--matchfile", match]
    start = time.monotonic()
    # --timeout: faulthandler dumps the stacks and ends a hung test, so one
    # hang costs one module, not the whole comparison.
    p = subprocess.run(cmd + [module], cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    seconds = time.monotonic() - start
    tests, messages = outcomes(xml_path)
    output = p.stdout.decode("utf-8", "replace")
    subtest_failures(output, tests)
    tail = output[-3000:]
    print(MARKER + json.dumps({"module": module, "rc": p.returncode, "seconds": round(seconds, 1),
                               "tests": tests, "messages": messages, "tail": tail}), flush=True)


if __name__ == "__main__":
    main()
