"""What a new user meets in the first hour: commands that say what they did,
and errors that say what to do (the sharp edges of issue "Sharp edges a new
user hits in the first hour")."""
import json
import os
import shutil
import subprocess
import tempfile

from conftest import CORRAL


def run(*args, env=None, input=None, timeout=60):
    return subprocess.run([CORRAL, *args], capture_output=True, text=True, env=env, input=input, timeout=timeout)


def test_review_says_ok_for_safe_code(tmp_path):
    ok = tmp_path / "ok.py"
    ok.write_text("import pandas as pd\nprint(pd.__version__)\n")
    r = run("review", str(ok))
    assert r.returncode == 0 and r.stdout == f"{ok}: ok (no findings)\n", r.stdout


def test_trace_show_of_an_empty_file_is_an_error(tmp_path):
    empty = tmp_path / "t.jsonl"
    empty.write_text("")
    r = run("trace", "show", str(empty))
    assert r.returncode == 1 and "holds no events" in r.stderr, r.stderr


def test_session_list_and_stop_say_what_they_did():
    rundir = tempfile.mkdtemp(prefix="corral-test-run-")
    os.chmod(rundir, 0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=rundir, CORRAL_SESSION_LINGER="0")
    try:
        r = run("session", "list", env=env)
        assert r.returncode == 0 and r.stdout == "no sessions\n", r.stdout
        r = run("session", "start", "--cold", env=env)
        sid = r.stdout.strip()
        r = run("session", "stop", sid, env=env)
        assert r.returncode == 0 and f"session {sid} stopped" in r.stderr, r.stderr
    finally:
        run("session", "shutdown", env=env)
        shutil.rmtree(rundir, ignore_errors=True)
