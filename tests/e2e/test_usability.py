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


def test_wording_of_common_mistakes(tmp_path):
    r = run("exec", "/tmp")
    assert r.returncode == 125 and "'/tmp' is a directory" in r.stderr and "-w DIR" in r.stderr, r.stderr
    r = run("exec", "--profile", "/nonexistent.json", "--", "true")
    assert r.returncode == 125 and "No such file or directory" in r.stderr and "line -1" not in r.stderr, r.stderr
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (17 << 20))
    r = run("exec", str(big))
    assert "is larger than 16 MiB" in r.stderr, r.stderr


def test_a_second_ctrl_c_says_what_it_leaves_behind(tmp_path):
    """The run's temporary workspace is named, and the next run removes it."""
    import signal
    import sys
    import time
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
    from modelserver import ScriptedServer, tool_call
    env = dict(os.environ, TMPDIR=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "state"))
    turns = [tool_call("run_python", code="import time\nprint('go', flush=True)\ntime.sleep(30)")]
    with ScriptedServer(turns) as srv:
        p = subprocess.Popen([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--cold", "go"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        srv.wait_for_requests(1, timeout=30)
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
    left = [n for n in os.listdir(tmp_path) if n.startswith("corral-ws-")]
    assert p.returncode == 130
    if left:  # the first Ctrl-C may have finished cleaning up already
        assert f"left behind: {tmp_path}/{left[0]} (the next corral run" in err.decode(), err


def test_the_first_python_jail_says_it_builds_the_font_cache(tmp_path):
    """About a second the first time on a host, with a one-line note; silent
    afterwards."""
    # where the jail's uid can read it (pytest's tmp_path is private)
    cache = tempfile.mkdtemp(prefix="corral-test-cache-", dir="/tmp")
    os.chmod(cache, 0o755)
    try:
        env = dict(os.environ, CORRAL_CACHE_DIR=cache)
        r = run("exec", "-c", "print(1)", env=env)
        assert r.returncode == 0 and "building matplotlib's font cache" in r.stderr, r.stderr
        r = run("exec", "-c", "print(1)", env=env)
        assert r.returncode == 0 and "font cache" not in r.stderr, r.stderr
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def test_font_cache_made_under_a_tight_umask_serves_later_jails(tmp_path):
    """The session host runs with umask 077: a cache root it made 0700 broke
    every later Python jail of root's (the bind is made as the jail's uid).
    The modes are set whatever the umask, and a 0700 root left by an earlier
    corral is repaired; either way the next jail runs and uses the cache."""
    parent = tempfile.mkdtemp(prefix="corral-test-cache-", dir="/tmp")
    os.chmod(parent, 0o755)
    try:
        cache = os.path.join(parent, "made")  # made by corral, under umask 077
        env = dict(os.environ, CORRAL_CACHE_DIR=cache)
        r = subprocess.run(["sh", "-c", 'umask 077 && exec "$0" exec -c "print(1)"', CORRAL],
                           env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "building matplotlib's font cache" in r.stderr, r.stderr
        if os.geteuid() == 0:
            assert os.stat(cache).st_mode & 0o777 == 0o755
            os.chmod(cache, 0o700)  # as an earlier corral left it
        r = run("exec", "-c", "import matplotlib.pyplot; print(2)", env=env)
        assert r.returncode == 0 and r.stdout == "2\n", r.stderr
        assert "font cache" not in r.stderr and "Matplotlib is building" not in r.stderr, r.stderr
        if os.geteuid() == 0:
            assert os.stat(cache).st_mode & 0o777 == 0o755
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_the_first_session_start_says_why_it_waits():
    """On a terminal, a start that waits for the host's zygote to import the
    data libraries says so; a later start (the zygote ready) does not."""
    import pty
    import select
    rundir = tempfile.mkdtemp(prefix="corral-test-run-")
    os.chmod(rundir, 0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=rundir, CORRAL_SESSION_LINGER="30")

    def start():
        master, slave = pty.openpty()
        p = subprocess.Popen([CORRAL, "session", "start"], stdout=subprocess.PIPE, stderr=slave, env=env)
        os.close(slave)
        seen = b""
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            try:
                chunk = os.read(master, 4096) if ready else b""
            except OSError:
                chunk = b""
            if not chunk:
                break
            seen += chunk
        p.wait(timeout=60)
        os.close(master)
        return p.returncode, seen.decode(errors="replace")
    try:
        rc, said = start()
        assert rc == 0 and "the first start of the session host imports numpy" in said, said
        rc, said = start()
        assert rc == 0 and "imports numpy" not in said, said
    finally:
        run("session", "shutdown", env=env)
        shutil.rmtree(rundir, ignore_errors=True)


def test_doctor_checks_what_a_run_needs(tmp_path):
    """Python with the data libraries as a jail sees them, the libraries
    loaded on first use, the model a run would use (and whether it answers),
    the session host."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
    from modelserver import ScriptedServer
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CORRAL_MODEL", "XDG_CONFIG"))}
    base["XDG_CONFIG_HOME"] = str(tmp_path)  # no config file
    with ScriptedServer([], models=["gpt-test"]) as srv:
        r = run("doctor", env=dict(base, OPENAI_BASE_URL=srv.base_url, CORRAL_MODEL="gpt-test"))
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "python in a jail       ok   Python 3." in out and "pandas" in out and "matplotlib" in out, out
    assert "libcurl                ok" in out and "libarchive             ok" in out, out
    assert f"model                  ok   gpt-test at {srv.base_url}: the endpoint answers" in out, out
    assert "session host" in out
    r = run("doctor", env=dict(base, OPENAI_BASE_URL="http://127.0.0.1:9/v1", CORRAL_MODEL="gpt-test"))
    assert "model                  MISSING gpt-test at http://127.0.0.1:9/v1: the endpoint does not answer" in \
        r.stdout, r.stdout
    assert r.returncode == 0  # code still runs here: a model is for corral run


def test_exec_json_says_why_it_failed():
    """--json promises one object on stdout: also for a usage error or a jail
    that cannot be set up (exit 125)."""
    for args, kind, says in ((["--pids", "1"], "usage", "the jail's init is one process"),
                             (["--bogus"], "usage", "unknown option"),
                             (["-m", "1K"], "usage", "memory limit must be at least")):
        r = run("exec", "--json", *args, "--", "true")
        assert r.returncode == 125, r.stderr
        j = json.loads(r.stdout)
        assert j["status"] == "failed" and j["exit_code"] == 125 and j["error"]["kind"] == kind, j
        assert says in j["reason"] and says in r.stderr, (j, r.stderr)


def test_help_says_version_and_session_alone_is_short():
    r = run("--help")
    assert "'corral --version' prints the version" in r.stdout and "corral completion bash|zsh" in r.stdout
    assert "corral trace: the trace could not be read" in r.stdout and "corral doctor: corral cannot run" in r.stdout
    r = run("session")
    assert r.returncode == 2 and len(r.stderr.splitlines()) <= 6 and "corral session --help" in r.stderr, r.stderr
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("corral ")
