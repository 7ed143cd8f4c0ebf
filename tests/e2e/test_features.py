"""Workspace, binds, environment, stdin, profiles, network modes, rootfs."""
import json
import os
import shutil
import subprocess

import pytest


def test_workspace_dir_is_read_write_and_files_come_back(corral, tmp_path):
    (tmp_path / "in.txt").write_text("data\n")
    r = corral("exec", "-w", str(tmp_path), "-c",
               "print(open('in.txt').read(), end=''); open('out.txt', 'w').write('made inside')")
    assert r.rc == 0, r.err
    assert r.out == b"data\n"
    out = tmp_path / "out.txt"
    assert out.read_text() == "made inside"
    # What the jail writes belongs to whoever owns the workspace on the host.
    assert out.stat().st_uid == tmp_path.stat().st_uid


def test_default_workspace_is_private_and_capped(jail):
    r = jail("import os, shutil; open('f', 'w').write('x'); print(os.listdir('.'), shutil.disk_usage('.').total)",
             "--disk", "1M")
    assert r["stdout"] == "['f'] 1048576\n"
    again = jail("import os; print(os.listdir('.'))")
    assert again["stdout"] == "[]\n"


def test_ro_bind_and_bind(corral, tmp_path):
    ro = tmp_path / "ro"
    rw = tmp_path / "rw"
    ro.mkdir()
    rw.mkdir()
    (ro / "a").write_text("A")
    r = corral("exec", "--ro-bind", f"{ro}:/data/ro", "--bind", f"{rw}:/data/rw", "-c",
               "print(open('/data/ro/a').read())\n"
               "try:\n    open('/data/ro/b', 'w')\nexcept OSError as e:\n    print(e.errno)\n"
               "open('/data/rw/c', 'w').write('C')")
    assert r.rc == 0, r.err
    assert r.out == b"A\n30\n"  # EROFS
    assert not (ro / "b").exists() and (rw / "c").read_text() == "C"


def test_environment_is_clean_plus_given(corral):
    env = dict(os.environ, CORRAL_TEST_SECRET="do-not-leak", OPENAI_API_KEY="sk-test")
    r = corral("exec", "-e", "FOO=bar", "-e", "OMP_NUM_THREADS=2", "--json", "-c",
               "import os, json; print(json.dumps(dict(os.environ)))", env=env)
    inside = json.loads(json.loads(r.out)["stdout"])
    assert inside["FOO"] == "bar" and inside["OMP_NUM_THREADS"] == "2"
    assert "CORRAL_TEST_SECRET" not in inside and "OPENAI_API_KEY" not in inside
    assert inside["HOME"] == "/tmp" and inside["MPLBACKEND"] == "Agg" and inside["OPENBLAS_NUM_THREADS"] == "1"
    assert set(inside) <= {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR", "PYTHONUNBUFFERED",
                           "PYTHONDONTWRITEBYTECODE", "MPLBACKEND", "MPLCONFIGDIR", "XDG_CACHE_HOME",
                           "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "NUMEXPR_NUM_THREADS", "MKL_NUM_THREADS",
                           "FOO", "LC_CTYPE"}


def test_stdin_is_dev_null_unless_asked(corral):
    r = corral("exec", "-c", "import sys; print(repr(sys.stdin.read()))", input=b"hello")
    assert r.out == b"''\n"
    r = corral("exec", "--stdin", "-c", "import sys; print(sys.stdin.read().upper())", input=b"hello")
    assert r.out == b"HELLO\n"


def test_profile_and_overrides(corral, tmp_path):
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps({"timeout": 7, "memory": "300M", "env": {"P": "1"}, "pids": 50}))
    r = corral("exec", "--profile", str(prof), "--pids", "60", "--print-profile")
    assert r.rc == 0
    eff = json.loads(r.out)
    assert eff["timeout"] == 7 and eff["memory"] == 300 << 20 and eff["pids"] == 60 and eff["env"] == {"P": "1"}
    r = corral("exec", "--profile", str(prof), "-c", "import os; print(os.environ['P'])")
    assert r.out == b"1\n"


@pytest.mark.parametrize("content,message", [
    ('{"timeout": 1, "timeout": 2}', "duplicate"),
    ('{"memroy": "1G"}', "unknown key 'memroy'"),
    ('{"memory": "12XB"}', "unknown unit"),
    ('{"timeout": 1', "line"),
    ('[1]', "expected a JSON object"),
])
def test_bad_profile(corral, tmp_path, content, message):
    prof = tmp_path / "bad.json"
    prof.write_text(content)
    r = corral("exec", "--profile", str(prof), "--", "true")
    assert r.rc == 125 and message in r.err.decode(), r.err


def test_network_none_has_loopback_down_has_none(jail):
    """--net none (the default): the jail's own loopback is up, so a program
    talks to itself over 127.0.0.1; --net down: not even that;
    --net loopback: the old name of none."""
    code = ("import socket\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
            "c = socket.create_connection(s.getsockname(), timeout=1); print('connected')\n")
    for opts in ((), ("--net", "none"), ("--net", "loopback")):
        r = jail(code, *opts)
        assert r["status"] == "ok" and r["stdout"] == "connected\n", (opts, r)
    r = jail(code, "--net", "down")
    assert r["status"] == "error" and ("Network is unreachable" in r["stderr"] or "Cannot assign" in r["stderr"]), r


def test_local_http_server_in_background(jail):
    """The E2B pattern: a shell starts an HTTP server in the background, then
    Python calls it over 127.0.0.1."""
    script = ("cd /tmp && echo hello > index.html && (python3 -m http.server 8000 --bind 127.0.0.1 "
              ">/dev/null 2>&1 &) && python3 - <<'EOF'\n"
              "import time, urllib.request\n"
              "for _ in range(100):\n"
              "    try:\n"
              "        print(urllib.request.urlopen('http://127.0.0.1:8000/index.html', timeout=2).read().decode())\n"
              "        break\n"
              "    except OSError:\n"
              "        time.sleep(0.05)\n"
              "EOF\n")
    r = jail(script, lang="bash")
    assert r["status"] == "ok" and r["stdout"] == "hello\n\n", r


PTY = r"""
import os, pty, subprocess, sys
master, slave = os.openpty()
name = os.ttyname(slave)
child = subprocess.Popen(["sh", "-c", "tty; stty size; echo from the child"], stdin=slave, stdout=slave,
                         stderr=slave, start_new_session=True)
os.close(slave)
out = b""
while True:
    try:
        chunk = os.read(master, 4096)
    except OSError:  # EIO: the child side closed
        break
    if not chunk:
        break
    out += chunk
child.wait()
print(name, os.listdir("/dev/pts"), os.readlink("/dev/ptmx"))
print(out.decode().replace("\r\n", "\n"), end="")
# the pty module's own fork: the child's stdio is the pty
pid, fd = pty.fork()
if pid == 0:
    os.execvp("sh", ["sh", "-c", "test -t 0 && test -t 1 && echo isatty"])
data = b""
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    data += chunk
os.waitpid(pid, 0)
print(data.decode().strip())
"""


def test_pty_pair_runs_a_child(jail):
    """A pty pair in the jail: a child runs on the slave side, its output is
    read from the master; pty.fork gives a child a terminal as stdio."""
    r = jail(PTY)
    assert r["status"] == "ok", r
    lines = r["stdout"].splitlines()
    assert lines[0].startswith("/dev/pts/0 ") and "'ptmx'" in lines[0] and lines[0].endswith(" pts/ptmx"), r
    assert lines[1:] == ["/dev/pts/0", "0 0", "from the child", "isatty"], r


def test_net_host_warns(corral):
    r = corral("exec", "--net", "host", "--", "true")
    assert r.rc == 0 and b"warning: --net host" in r.err


def test_rootfs(corral, tmp_path):
    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("gcc is not installed")
    src = tmp_path / "hello.c"
    src.write_text('#include <stdio.h>\nint main(void) { puts("from the rootfs"); return 0; }\n')
    root = tmp_path / "rootfs"
    (root / "usr/bin").mkdir(parents=True)
    subprocess.run([cc, "-static", "-O2", "-o", str(root / "usr/bin/hello"), str(src)], check=True)
    os.chmod(tmp_path, 0o755)
    r = corral("exec", "--rootfs", str(root), "--", "/usr/bin/hello")
    assert r.rc == 0 and r.out == b"from the rootfs\n", r.err
    r = corral("exec", "--rootfs", str(root), "--", "/bin/sh", "-c", "true")
    assert r.rc == 127


def test_rootfs_etc_links_stay_in_the_rootfs(corral, tmp_path):
    """The host files corral passes through to /etc (services, localtime, ...)
    come from the rootfs under --rootfs, its links resolved inside it: a
    rootfs whose etc/services names a host file (absolutely or by '..') never
    shows that host file in the jail."""
    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("gcc is not installed")
    secret = tmp_path / "host-secret"
    secret.write_text("host secret line\n")
    os.chmod(secret, 0o644)
    os.chmod(tmp_path, 0o755)
    src = tmp_path / "head.c"
    src.write_text('#include <stdio.h>\nint main(int c, char **v) {\n'
                   '  for (int i = 1; i < c; i++) { FILE *f = fopen(v[i], "r"); char b[64] = "";\n'
                   '    if (!f) { puts("missing"); continue; } fgets(b, sizeof b, f); fputs(b, stdout); }\n'
                   '  return 0;\n}\n')
    outs = []
    for i, target in enumerate([None, str(secret), "../../../../../../../.." + str(secret)]):
        root = tmp_path / f"rootfs{i}"
        (root / "usr/bin").mkdir(parents=True)
        (root / "etc").mkdir()
        subprocess.run([cc, "-static", "-O2", "-o", str(root / "usr/bin/head1"), str(src)], check=True)
        for name in ("services", "protocols", "localtime"):
            if target is None:
                (root / "etc" / name).write_text(f"the rootfs's own {name}\n")
            else:
                (root / "etc" / name).symlink_to(target)
        r = corral("exec", "--rootfs", str(root), "--", "/usr/bin/head1", "/etc/services", "/etc/protocols",
                   "/etc/localtime")
        assert r.rc == 0, r.err
        outs.append(r.out.decode())
    assert outs[0] == "the rootfs's own services\nthe rootfs's own protocols\nthe rootfs's own localtime\n"
    assert outs[1] == outs[2] == "missing\nmissing\nmissing\n", outs


def test_python_data_stack_and_no_dotfiles(corral, tmp_path):
    code = ("import numpy as np, pandas as pd, scipy.stats, matplotlib.pyplot as plt\n"
            "df = pd.DataFrame({'x': np.arange(10), 'y': np.arange(10) ** 2})\n"
            "print(int(df.y.sum()), round(float(scipy.stats.pearsonr(df.x, df.y)[0]), 3))\n"
            "df.plot(x='x', y='y'); plt.savefig('plot.png')\n")
    r = corral("exec", "-w", str(tmp_path), "--timeout", "120", "-c", code, timeout=180)
    assert r.rc == 0, r.err
    assert r.out == b"285 0.963\n"
    assert b"Matplotlib" not in r.err and b"Warning" not in r.err, r.err
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(os.listdir(tmp_path)) == ["plot.png"]


def test_hostname_and_filesystem_view(jail):
    r = jail("import os, socket; print(socket.gethostname(), sorted(os.listdir('/')), sorted(os.listdir('/dev')), "
             "os.listdir('/home'), os.readlink('/home/user'))")
    host, *rest = r["stdout"].split(" ", 1)
    assert host == "corral"
    assert "'sys'" not in rest[0] and "'root'" not in rest[0]
    # No host home: /home holds only user, the workspace's other name.
    assert rest[0].rstrip().endswith("['user'] /workspace"), rest
    for node in ["null", "zero", "full", "random", "urandom"]:
        assert f"'{node}'" in rest[0]


def test_matplotlib_font_cache_is_prebuilt_and_read_only(jail):
    code = ("import os, time\n"
            "t = time.time(); import matplotlib.font_manager; took = time.time() - t\n"
            "names = os.listdir('/tmp/matplotlib')\n"
            "try:\n    open('/tmp/matplotlib/' + names[0], 'w').write('poison')\n    wrote = True\n"
            "except OSError:\n    wrote = False\n"
            "print(names[0].startswith('fontlist-'), wrote, took < 5)\n")
    jail("import matplotlib.font_manager")  # builds the cache on a fresh host
    r = jail(code)
    assert r["stdout"] == "True False True\n", r
    assert "Matplotlib is building the font cache" not in r["stderr"]


def test_cpu_share_limits_the_tree(jail):
    code = ("import time, os\n"
            "t = time.time(); c = time.process_time()\n"
            "while time.time() - t < 1.0: pass\n"
            "print(round((time.process_time() - c) / (time.time() - t), 2))\n")
    r = jail(code, "--cpus", "0.25")
    if r["limits_backend"] == "rlimit":
        return  # documented: no CPU share without a cgroup cpu controller
    assert r["status"] == "ok"
    assert float(r["stdout"]) < 0.5, r["stdout"]


def test_limits_backend_matches_privileges(jail):
    r = jail("print(1)")
    if os.geteuid() != 0:
        assert r["limits_backend"] in ("rlimit", "cgroup-v2")
    else:
        assert r["limits_backend"] in ("cgroup-v1", "cgroup-v2")


def test_v1_jail_is_in_its_cgroups_from_its_init(jail):
    """On a cgroup v1 host the setup child enters the jail's v1 cgroups itself, before anything else
    (docs/limits.md): its init (pid 1) and the program are both in the jail's own memory cgroup (pids too
    where v1 has it), seen from the jail's cgroup namespace as /corral-PID-N."""
    code = "print(open('/proc/1/cgroup').read() + '--' + open('/proc/self/cgroup').read())"
    r = jail(code)
    if r["limits_backend"] != "cgroup-v1":
        pytest.skip(f"limits backend {r['limits_backend']}, not cgroup-v1")
    assert r["status"] == "ok", r
    views = []
    for part in r["stdout"].split("--"):
        views.append({f[1]: f[2] for f in (line.split(":", 2) for line in part.split()) if len(f) == 3})
    init, prog = views
    assert init["memory"].startswith("/corral-"), init
    assert prog["memory"] == init["memory"], (init, prog)
    if init.get("pids", "/") != "/" or prog.get("pids", "/") != "/":
        assert init["pids"] == prog["pids"] and init["pids"].startswith("/corral-"), (init, prog)


def test_require_cgroups(corral):
    r = corral("exec", "--require-cgroups", "--", "true")
    if os.geteuid() == 0:
        assert r.rc == 0
    else:
        assert r.rc in (0, 125)
        if r.rc == 125:
            assert b"no usable cgroup" in r.err


def test_stdin_from_a_regular_file_and_a_jail_that_never_reads(corral, tmp_path):
    data = tmp_path / "in.txt"
    data.write_bytes(b"x" * 300000)
    with open(data, "rb") as f:
        r = corral("exec", "--stdin", "-c", "import sys; print(len(sys.stdin.buffer.read()))", stdin=f)
    assert r.out == b"300000\n"
    # A jail that never reads its stdin must not stall the supervisor: the
    # wall limit still ends it on time.
    import time
    t = time.time()
    r = corral("exec", "--stdin", "--timeout", "1", "--", "sleep", "10", input=b"y" * 5_000_000)
    assert r.rc == 124 and time.time() - t < 5


def test_cpu_time_limit_covers_the_whole_tree(jail):
    # Four busy processes: each stays under a 1 s RLIMIT_CPU for a while, but
    # together they pass it within about half a second on two CPUs.
    code = ("import os, time\n"
            "for _ in range(3):\n"
            "    if os.fork() == 0:\n"
            "        break\n"
            "t = time.time()\n"
            "while time.time() - t < 8: pass\n")
    r = jail(code, "--cpu-time", "1", "--timeout", "10")
    assert r["status"] == "killed" and r["limit"] == "cpu-time", r
    if r["limits_backend"] != "rlimit":
        assert "whole process tree" in r["reason"]
        assert r["cpu_ms"] < 2500 and r["wall_ms"] < 5000, r


def test_open_file_limit(jail):
    code = ("import os\nfds = []\n"
            "try:\n    while True:\n        fds.append(os.open('/dev/null', os.O_RDONLY))\n"
            "except OSError as e:\n    print(e.errno, len(fds) + 3)\n")
    r = jail(code, "--nofile", "32")
    assert r["status"] == "ok" and r["stdout"] == "24 32\n", r  # EMFILE at exactly the limit


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid range is used only when corral runs as root")
def test_uid_range_exhausted(corral):
    import subprocess, time
    from conftest import CORRAL
    rng = "1500000000:1"
    first = subprocess.Popen([CORRAL, "exec", "--uid-range", rng, "--", "sleep", "3"])
    try:
        time.sleep(0.5)
        r = corral("exec", "--uid-range", rng, "--", "true")
        assert r.rc == 125 and b"all 1 jail uids from 1500000000 are in use" in r.err, r.err
    finally:
        first.kill()
        first.wait()


def test_setup_failure_is_reported_not_run(corral, tmp_path):
    # A bind whose target cannot be made: /usr is read-only inside.
    marker = tmp_path / "ran"
    os.chmod(tmp_path, 0o777)
    r = corral("exec", "--ro-bind", "/etc/hostname:/usr/corral-test-x", "-w", str(tmp_path),
               "-c", "open('ran', 'w')")
    assert r.rc == 125, r.err
    assert b"cannot set up the jail: bind mount '/etc/hostname' at '/usr/corral-test-x'" in r.err, r.err
    assert not marker.exists()
