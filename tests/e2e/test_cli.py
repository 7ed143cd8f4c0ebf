"""corral exec on the command line: programs, exit statuses, bad input."""
import json
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


def test_home_user_is_the_workspace(jail, corral):
    """/home/user (where E2B programs keep their files) is the workspace in
    every jail, and no bind may cover it."""
    r = jail("import os\nopen('/home/user/x', 'w').write('x')\n"
             "print(os.path.realpath('/home/user'), open('/workspace/x').read(), sorted(os.listdir('/home')))")
    assert r["stdout"] == "/workspace x ['user']\n", r
    r = corral("exec", "--bind", "/tmp:/home/user/data", "--", "true")
    assert r.rc == 125 and b"managed by corral" in r.err


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


def test_doctor_json_is_the_report_it_prints(corral):
    """--json: the checks the text lists, in its order, with their states;
    advice only for what is not ok; can_run as the exit status says."""
    import json
    r = corral("doctor", "--json")
    assert r.rc == 0, r.err
    report = json.loads(r.out)
    assert set(report) == {"host", "checks", "can_run"} and report["can_run"] is True
    assert report["host"]["system"] == "Linux" and isinstance(report["host"]["uid"], int)
    checks = report["checks"]
    names = [c["name"] for c in checks]
    assert names[:3] == ["user namespaces", "seccomp", "no_new_privs"], names
    for name in ["cgroup v2", "cgroup v1", "limits backend", "landlock", "jail", "python in a jail", "libcurl",
                 "libarchive", "libcmark", "libssl", "session host"]:
        assert name in names, names
    libssl = checks[names.index("libssl")]
    assert libssl["ok"] is True and libssl["detail"].startswith("OpenSSL 3."), libssl
    assert names.index("jail") < names.index("python in a jail") < names.index("libcurl")
    proxy = checks[names.index("net allow proxy")]
    assert proxy["ok"] is True and "answers inside a jail at 127.0.0.1:3128" in proxy["detail"], proxy
    ca = checks[names.index("net brokered TLS")]
    assert ca["ok"] is True and "a CA made for a jail is in its /etc/ssl/certs (OpenSSL " in ca["detail"], ca
    trust = checks[names.index("net trust store")]
    with open("/etc/ssl/certs/ca-certificates.crt") as f:
        n = f.read().count("-----BEGIN CERTIFICATE-----")
    assert trust["ok"] is True and trust["detail"] == (
        f"{n} certificates in /etc/ssl/certs/ca-certificates.crt, given read-only to allow-list jails"), trust
    for c in checks:
        assert isinstance(c["ok"], bool) and isinstance(c["detail"], str), c
        assert c["state"] in ("ok", "missing", "none", "yes", "fast", "slow"), c
        if c["ok"]:
            assert "advice" not in c, c
    jail = checks[names.index("jail")]
    assert jail["ok"] and jail["state"] == "ok" and "/bin/true ran in a jail" in jail["detail"]
    # the text is the same report: a line per check, in the same order
    text = corral("doctor").out.decode()
    lines = [l for l in text.splitlines() if l[:22].rstrip() in names]
    assert [l[:22].rstrip() for l in lines] == names, text
    for l, c in zip(lines, checks):
        word = l[23:].split(" ", 1)[0]
        assert word == {"missing": "MISSING", "none": "-"}.get(c["state"], c["state"]), (l, c)
    r = corral("doctor", "--json", "--bogus")
    assert r.rc == 2 and b"--bogus" in r.err and r.out == b""


POOL = (1400000000, 65536)  # the default --uid-range


def in_user_namespace(script, uid_map=None, timeout=60):
    """sh -c script in a user namespace of its own: `unshare -Ur` (uid 0
    mapped to the caller), or with uid_map (also the gid map), which only
    root may write.  Returns (rc, stdout, stderr); rc 97: no namespace."""
    import ctypes
    import tempfile
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:  # CLONE_NEWUSER
                    os._exit(97)
                os.write(ready_w, b"x")
                if os.read(go_r, 1) != b"x":
                    os._exit(97)
                os.execvp("sh", ["sh", "-c", script])
            finally:
                os._exit(97)
        os.close(ready_w)
        os.close(go_r)
        try:
            if os.read(ready_r, 1) == b"x":
                mine = f"0 {os.geteuid()} 1\n", f"0 {os.getegid()} 1\n"
                if uid_map is None:
                    with open(f"/proc/{pid}/setgroups", "w") as f:
                        f.write("deny")
                for name, text in (("uid_map", uid_map or mine[0]), ("gid_map", uid_map or mine[1])):
                    with open(f"/proc/{pid}/{name}", "w") as f:
                        f.write(text)
                os.write(go_w, b"x")
        finally:
            os.close(ready_r)
            os.close(go_w)
            _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), out.read().decode(), err.read().decode()


def test_refuses_to_run_without_user_namespaces(tmp_path):
    """A host without user namespaces: corral says so and runs nothing.
    Simulated inside a user namespace whose limit of nested ones is 0: as
    root, one that maps root and the uid pool's range (jails lease uids
    there as on the host), else as `unshare -Ur` would (jails run as the
    caller)."""
    from conftest import CORRAL
    marker = tmp_path / "ran"
    os.chmod(tmp_path, 0o777)
    # The direct path's refusal: a session host outside this namespace (the
    # pool test's) would make the jail there, as it makes a session's.
    script = ("echo 0 > /proc/sys/user/max_user_namespaces || exit 99; export CORRAL_EXEC_POOL=0; "
              f"'{CORRAL}' exec -w '{tmp_path}' -c \"open('ran', 'w')\"; echo \"rc=$?\"; "
              f"'{CORRAL}' doctor; echo \"doctor=$?\"")
    uid_map = f"0 0 1\n{POOL[0]} {POOL[0]} {POOL[1]}\n" if os.geteuid() == 0 else None
    rc, out, err = in_user_namespace(script, uid_map)
    if rc in (97, 99):
        pytest.skip("cannot make a user namespace to simulate the host")
    assert "rc=125" in out, (out, err)
    assert "cannot create the jail's namespaces" in err and "corral doctor" in err
    assert "doctor=1" in out and "MISSING" in out and "cannot run code" in out
    assert not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="root's own user namespace")
def test_root_of_a_namespace_that_is_host_root_runs_nothing(tmp_path):
    """Root in a user namespace that maps only itself (`unshare -r`): a jail
    could not lease a uid of the pool there, and running it as the caller
    would run it as the host's root.  corral refuses and says why."""
    from conftest import CORRAL
    marker = tmp_path / "ran"
    # The direct path (see above): a pooled jail is the session host's, made outside this namespace.
    rc, out, err = in_user_namespace(f"CORRAL_EXEC_POOL=0 '{CORRAL}' exec -w '{tmp_path}' -c \"open('ran', 'w')\"")
    if rc == 97:
        pytest.skip("cannot make a user namespace")
    assert rc == 125, (out, err)
    assert "jails never run as the host's root" in err and "--uid-range" in err
    assert not marker.exists()
    # --json: the setting's field for a program, the message as the user reads it
    rc, out, err = in_user_namespace(f"CORRAL_EXEC_POOL=0 '{CORRAL}' exec --json -w '{tmp_path}' "
                                     "-c \"open('ran', 'w')\"")
    assert rc == 125, (out, err)
    error = json.loads(out)["error"]
    assert error["field"] == "uid_range" and error["message"].endswith("(--uid-range)"), error
    assert not marker.exists()
    assert not [n for n in os.listdir("/tmp") if n.startswith("corral-uid-pool")]


def test_an_ordinary_root_of_a_namespace_runs_jails_as_itself(tmp_path):
    """Root of `unshare -Ur` run by an ordinary user (a rootless
    container): the namespace maps no pool, so jails run as it, as an
    ordinary user's do."""
    from conftest import CORRAL
    if os.geteuid() == 0:
        pytest.skip("as root the namespace's uid 0 is the host's (the test above)")
    # The direct path: a pooled jail is the session host's, made outside this namespace.
    rc, out, err = in_user_namespace(
        f"CORRAL_EXEC_POOL=0 '{CORRAL}' exec --json -c "
        "\"import os; print(os.getuid(), open('/proc/self/uid_map').read().split())\"")
    if rc == 97:
        pytest.skip("cannot make a user namespace")
    import json
    r = json.loads(out)
    assert rc == 0 and r["status"] == "ok", (out, err)
    # uid 1000 in the jail is the namespace's root, the one id it maps
    assert r["stdout"] == "1000 ['1000', '0', '1']\n"
