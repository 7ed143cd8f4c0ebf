"""corral exec on the command line: programs, exit statuses, bad input."""
import os
import subprocess
import re
import stat

import pytest


def test_help_documents_every_option_and_exit_status(corral):
    r = corral("exec", "--help")
    assert r.rc == 0
    text = r.out.decode()
    for opt in ["--workspace", "--timeout", "--cpu-time", "--memory", "--pids", "--cpus", "--nofile", "--disk",
                "--output-limit", "--net", "--ro-bind", "--bind", "--rootfs", "--env", "--stdin", "--profile",
                "--print-profile", "--json", "--lang", "--require-cgroups"]:
        assert opt in text, opt
    for code in ["124", "125", "126", "127", "128+N"]:
        assert code in text
    top = corral("--help")
    assert top.rc == 0 and b"124" in top.out and b"exec" in top.out


def test_code_runs_in_workspace_as_unprivileged_user(jail):
    r = jail("import os; print(os.getcwd(), os.getuid(), os.getgid())")
    assert r["status"] == "ok" and r["exit_code"] == 0
    assert r["stdout"] == "/workspace 1000 1000\n"


def test_program_status_passes_through(corral):
    assert corral("exec", "-c", "import sys; sys.exit(3)").rc == 3
    assert corral("exec", "--", "sh", "-c", "exit 42").rc == 42
    r = corral("exec", "--", "sh", "-c", "kill -TERM $$")
    assert r.rc == 128 + 15


def test_not_found_and_not_executable(corral):
    r = corral("exec", "--", "no-such-program-xyz")
    assert r.rc == 127 and b"No such file" in r.err
    r = corral("exec", "--", "/etc/passwd")
    assert r.rc == 126 and b"Permission denied" in r.err


def test_file_by_extension(corral, tmp_path):
    py = tmp_path / "hello.py"
    py.write_text("import sys\nprint('py', sys.argv[1:])\n")
    r = corral("exec", str(py), "a", "b")
    assert r.rc == 0 and r.out == b"py ['a', 'b']\n"
    sh = tmp_path / "hello.sh"
    sh.write_text("echo sh \"$@\" $BASH_VERSION | cut -c1-8\n")
    r = corral("exec", str(sh), "x")
    assert r.rc == 0 and r.out.startswith(b"sh x")


def test_traceback_shows_source_line(jail):
    r = jail("x = 1\nundefined_name + x\n")
    assert r["status"] == "error" and r["exit_code"] == 1
    assert "undefined_name + x" in r["stderr"] and "NameError" in r["stderr"]


def test_bash_code(jail):
    r = jail('echo "$0 $((6*7))"; echo err >&2; exit 5', lang="bash")
    assert r["exit_code"] == 5 and r["stdout"].endswith("42\n") and r["stderr"] == "err\n"


@pytest.mark.parametrize("args,message", [
    (["exec", "--memory", "12XB", "--", "true"], "unknown unit 'XB'"),
    (["exec", "--memory", "-1", "--", "true"], "invalid size '-1'"),
    (["exec", "--memory", "0", "--", "true"], "at least 1 byte"),
    (["exec", "--memory", "1M", "--", "true"], "at least 8M"),
    (["exec", "--timeout", "abc", "--", "true"], "invalid duration 'abc'"),
    (["exec", "--timeout", "0", "--", "true"], "greater than zero"),
    (["exec", "--pids", "0", "--", "true"], "greater than zero"),
    (["exec", "--pids", "1.5", "--", "true"], "expected a positive integer"),
    (["exec", "--disk", "1K", "--", "true"], "at least 64K"),
    (["exec", "--net", "internet", "--", "true"], "invalid mode 'internet'"),
    (["exec", "--lang", "ruby", "-c", "1"], "unknown language 'ruby'"),
    (["exec", "--frobnicate", "--", "true"], "unknown option"),
    (["exec", "-e", "1BAD=x", "--", "true"], "invalid environment assignment"),
    (["exec", "--bind", "/tmp:relative", "--", "true"], "absolute path"),
    (["exec", "--bind", "/tmp:/proc", "--", "true"], "managed by corral"),
    (["exec", "-w", "/nonexistent-dir-xyz", "--", "true"], "workspace '/nonexistent-dir-xyz'"),
    (["exec", "-w", "/etc/hostname", "--", "true"], "is not a directory"),
    (["exec", "-w", "/", "--", "true"], "system directory"),
    (["exec", "--bind", "/usr/local/bin:/x", "--", "true"], "system directory '/usr/local/bin'"),
    (["exec", "--output-limit", "2G", "--", "true"], "between 1 byte and 1G"),
    (["exec", "--memory", "8388608T", "--", "true"], "too large"),
    (["exec", "/nonexistent-file.py"], "cannot open '/nonexistent-file.py'"),
    (["exec", "/etc/hostname"], "unknown file type"),
    (["exec"], "nothing to run"),
    (["exec", "--uid-range", "5", "--", "true"], "invalid uid range"),
])
def test_bad_input_is_a_one_line_error_with_status_125(corral, args, message):
    r = corral(*args)
    assert r.rc == 125, (r.rc, r.err)
    lines = r.err.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("corral exec: ") and message in lines[0], lines[0]
    assert r.out == b""


def test_code_with_nul_or_invalid_utf8_is_refused(corral, tmp_path):
    nul = tmp_path / "nul.py"
    nul.write_bytes(b"print(1)\0\n")
    r = corral("exec", str(nul))
    assert r.rc == 125 and b"NUL byte" in r.err
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"print('\xff\xfe')\n")
    r = corral("exec", str(bad))
    assert r.rc == 125 and b"not valid UTF-8" in r.err
    r = corral("exec", "-c", b"print('\xc3')")
    assert r.rc == 125 and b"not valid UTF-8" in r.err


def test_unknown_command_and_doctor_usage(corral):
    r = corral("frobnicate")
    assert r.rc == 2 and b"unknown command" in r.err
    r = corral("doctor", "--bogus")
    assert r.rc == 2


def test_doctor_reports_mechanisms_and_runs_a_jail(corral):
    r = corral("doctor")
    text = r.out.decode()
    assert r.rc == 0, text
    for word in ["user namespaces", "seccomp", "no_new_privs", "cgroup v2", "cgroup v1", "limits backend",
                 "landlock", "jail"]:
        assert word in text
    assert "corral can run code on this host." in text


def test_refuses_to_run_without_user_namespaces(tmp_path):
    """A host without user namespaces: corral says so and runs nothing.
    Simulated inside a user namespace whose limit of nested ones is 0."""
    import shutil
    from conftest import CORRAL
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) is not installed")
    marker = tmp_path / "ran"
    os.chmod(tmp_path, 0o777)
    script = ("echo 0 > /proc/sys/user/max_user_namespaces || exit 99; "
              f"'{CORRAL}' exec -w '{tmp_path}' -c \"open('ran', 'w')\"; echo \"rc=$?\"; "
              f"'{CORRAL}' doctor; echo \"doctor=$?\"")
    p = subprocess.run(["unshare", "-Ur", "sh", "-c", script], capture_output=True, text=True, timeout=60)
    if p.returncode == 99 or "unshare failed" in p.stderr:
        pytest.skip("cannot make a user namespace to simulate the host")
    assert "rc=125" in p.stdout, (p.stdout, p.stderr)
    assert "cannot create the jail's namespaces" in p.stderr and "corral doctor" in p.stderr
    assert "doctor=1" in p.stdout and "MISSING" in p.stdout and "cannot run code" in p.stdout
    assert not marker.exists()
