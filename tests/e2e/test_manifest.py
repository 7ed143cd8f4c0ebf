"""`corral run --manifest` end to end: the real binary, real jails and the
scripted model server (tests/model-server).  What a manifest stages must be
where it says, with the right contents; a read-only entry is bound (not
copied) and nothing in a jail can change the host file behind it; a
writable entry is a copy whose changes stay in the workspace; nothing is left
mounted or in $TMPDIR afterwards."""
import base64
import glob
import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from conftest import CORRAL  # noqa: E402


def base_env(tmpdir, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "CORRAL_MODEL", "XDG_CONFIG"))}
    env.update(NO_COLOR="1", TMPDIR=str(tmpdir), XDG_STATE_HOME=os.path.join(os.path.dirname(str(tmpdir)), "state"), **extra)
    return env


class Result:
    def __init__(self, rc, out, err, cwd):
        self.rc = rc
        self.out = out.decode(errors="replace")
        self.err = err.decode(errors="replace")
        self.cwd = cwd

    def events(self):
        (path,) = glob.glob(os.path.join(self.cwd, "state", "corral", "runs", "*", "trace.jsonl"))
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def staged(self):
        return [e for e in self.events() if e["type"] == "run_start"][0]["inputs"]

    def tool_results(self):
        return [e for e in self.events() if e["type"] == "tool_result"]


@pytest.fixture
def tmpdir_env(tmp_path):
    """A private $TMPDIR for corral, to see what it leaves there."""
    d = tmp_path / "tmp"
    d.mkdir()
    return d


@pytest.fixture
def run(tmp_path, tmpdir_env):
    def go(srv, *args, timeout=120):
        url = srv if isinstance(srv, str) else srv.base_url
        cmd = [CORRAL, "run", "--base-url", url, "--model", "gpt-test", *args]
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=tmp_path, env=base_env(tmpdir_env))
        return Result(p.returncode, p.stdout, p.stderr, str(tmp_path))
    return go


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def mounts():
    with open("/proc/self/mountinfo") as f:
        return f.read()


def write_manifest(path, entries):
    path.write_text(json.dumps({"entries": entries}))
    return str(path)


@pytest.fixture
def sources(tmp_path):
    src = tmp_path / "src"
    (src / "ref" / "sub").mkdir(parents=True)
    (src / "sales.csv").write_text("Product,Revenue\nWidget,120.5\n")
    (src / "ref" / "a.txt").write_text("alpha\n")
    (src / "ref" / "sub" / "b.txt").write_text("beta\n")
    (src / "tpl").mkdir()
    (src / "tpl" / "t.txt").write_text("template\n")
    return src


def test_entries_are_where_the_manifest_says(run, tmp_path, sources, tmpdir_env):
    man = write_manifest(tmp_path / "m.json", [
        {"dest": "data/sales.csv", "file": "src/sales.csv"},            # relative to the manifest
        {"dest": "ref", "dir": str(sources / "ref")},
        {"dest": "notes/task.md", "content": "# Task\nfind the widgets\n"},
        {"dest": "bin/blob", "base64": base64.b64encode(b"\x00\x01binary\xff").decode()},
        {"dest": "work", "dir": "src/tpl", "writable": True, "ephemeral": True},
    ])
    code = ("cat data/sales.csv ref/a.txt ref/sub/b.txt notes/task.md work/t.txt; "
            "od -An -tx1 bin/blob | tr -d ' \\n'; echo; "
            "grep ' /workspace/' /proc/self/mountinfo | awk '{print $5, $6}' | sort")
    py = ("import os\nprint(open('data/sales.csv').read() + open('ref/sub/b.txt').read(), sorted(os.listdir('ref')))\n"
          "try:\n    open('ref/a.txt', 'w')\nexcept OSError as e:\n    print('python refused', e.errno)\n")
    turns = [tool_call("run_shell", command=code)
             | {"expect": {"contains": ["data/sales.csv (", "Product,Revenue", "ref/sub/b.txt", "notes/task.md"]}},
             text("ok") | {"expect": {"contains": ["Widget,120.5\nbeta\n ['a.txt', 'sub']", "python refused 30"]}}]
    turns.insert(1, tool_call("run_python", code=py) | {"expect": {"contains": [
                 "Product,Revenue\nWidget,120.5\nalpha\nbeta\n# Task\nfind the widgets\ntemplate\n",
                 "000162696e617279ff",
                 "/workspace/data/sales.csv ro,nosuid,nodev", "/workspace/ref ro,nosuid,nodev",
                 "/workspace/notes/task.md ro,nosuid,nodev"],
                 "not_contains": ["/workspace/work "]}})
    with ScriptedServer(turns) as srv:
        r = run(srv, "--manifest", man, "go")
    srv.assert_ok()
    assert r.rc == 0, r.err
    staged = {s["dest"]: s for s in r.staged()}
    assert {k: v["staging"] for k, v in staged.items()} == {
        "data/sales.csv": "bind", "ref": "bind", "notes/task.md": "write", "bin/blob": "write", "work": "copy"}
    assert staged["data/sales.csv"]["source"] == str(sources / "sales.csv")
    assert staged["ref"]["files"] == 2 and staged["ref"]["bytes"] == 11
    assert staged["work"]["writable"] and staged["work"]["ephemeral"]
    assert not staged["ref"]["writable"]
    # nothing left: no staging store, no workspace, no mount
    assert os.listdir(tmpdir_env) == []
    assert str(tmpdir_env) not in mounts()


def test_host_tools_see_bound_content(run, tmp_path, sources):
    man = write_manifest(tmp_path / "m.json", [
        {"dest": "data/sales.csv", "file": str(sources / "sales.csv")},
        {"dest": "ref", "dir": str(sources / "ref")}])
    turns = [tool_call("read_file", path="data/sales.csv"),
             tool_call("read_file", path="ref/sub/b.txt")
             | {"expect": {"contains": ["Widget,120.5"]}},
             tool_call("list_files", path="")
             | {"expect": {"contains": ["beta"]}},
             tool_call("write_file", path="data/sales.csv", content="x")
             | {"expect": {"contains": ["data/sales.csv  (29 bytes)", "ref/sub/b.txt  (5 bytes)"]}},
             tool_call("write_file", path="ref/new.txt", content="x")
             | {"expect": {"contains": ["cannot write 'data/sales.csv': 'data/sales.csv' is a read-only input"]}},
             tool_call("run_shell", command="true")
             | {"expect": {"contains": ["cannot write 'ref/new.txt': 'ref' is a read-only input"]}},
             text("ok")]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--manifest", man, "go")
    srv.assert_ok()
    assert r.rc == 0, r.err
    # the mount points are no change of the step's
    (shell,) = [e for e in r.tool_results() if e["name"] == "run_shell"]
    assert shell["ok"] and shell["artifacts"] == [], shell
    assert (sources / "sales.csv").read_text() == "Product,Revenue\nWidget,120.5\n"
    assert sorted(os.listdir(sources / "ref")) == ["a.txt", "sub"]


ATTACKS = r"""
f=input/secret.csv; d=ref
for what in \
  "echo x > $f" "echo x >> $f" "truncate -s0 $f" "chmod 777 $f" "touch $f" "rm -f $f" "mv $f x" "ln $f hl" \
  "echo x > $d/a.txt" "touch $d/new" "rm -f $d/a.txt" "mv $d/a.txt $d/b" "rm -rf $d" "mv $d gone" \
  "ln $d/a.txt hl" "ln -s /etc $d/etc" "mv input gone" "rm -rf input" "python3 -c 'import os; os.utime(\"$f\")'" ; do
  if sh -c "$what" 2>/dev/null; then echo "ALLOW""ED: $what"; else echo "refused: $what"; fi
done
cat $f; cat $d/a.txt
"""
# Each its own step: the filter answers mount(2) and unshare(2) with EPERM
# (the observation names the call) and the write that follows meets a
# read-only file.
REMOUNTS = ["mount -o remount,rw /workspace/input/secret.csv; echo x > input/secret.csv",
            "mount -o remount,rw,suid,dev /workspace/ref; echo x > ref/a.txt",
            "umount -l /workspace/input/secret.csv; echo x > input/secret.csv",
            "unshare -rm sh -c 'mount -o remount,rw /workspace/input/secret.csv; echo x > input/secret.csv'"]


def test_read_only_entries_cannot_be_changed(run, tmp_path, sources):
    secret = sources / "sales.csv"
    before = (sha(secret), os.stat(secret).st_mtime_ns, sha(sources / "ref" / "a.txt"))
    man = write_manifest(tmp_path / "m.json", [{"dest": "ref", "dir": str(sources / "ref")}])
    turns = [tool_call("run_shell", command=ATTACKS)]
    turns += [tool_call("run_shell", command=c) for c in REMOUNTS]
    turns += [text("ok")]
    turns[1] |= {"expect": {"contains": ["refused: echo x > input/secret.csv", "refused: mv input gone",
                                         "Product,Revenue\nWidget,120.5\nalpha\n"],
                            "not_contains": ["ALLOWED"]}}
    # umount(8) refuses by itself (not setuid here) before any system call.
    for t, said in zip(turns[2:], ("refused by the sandbox (EPERM, the program went on): mount\n",) * 2
                       + ("umount: /workspace/input/secret.csv:",
                          "refused by the sandbox (EPERM, the program went on): unshare\n")):
        t |= {"expect": {"contains": [said]}}
    with ScriptedServer(turns) as srv:
        r = run(srv, "-i", f"{secret}:secret.csv", "--manifest", man, "go")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert (sha(secret), os.stat(secret).st_mtime_ns, sha(sources / "ref" / "a.txt")) == before
    assert sorted(os.listdir(sources / "ref")) == ["a.txt", "sub"]
    assert [s["staging"] for s in r.staged()] == ["bind", "bind"]


def test_moving_a_mount_point_does_not_unprotect_it(run, tmp_path, sources):
    """A jail may rename the parent of a mount point (the bind moves along);
    the next jail gets the entry back at its place, bound again."""
    man = write_manifest(tmp_path / "m.json", [
        {"dest": "data/sales.csv", "file": str(sources / "sales.csv")},
        {"dest": "notes/task.md", "content": "read me\n"}])
    turns = [tool_call("run_shell", command="mv data moved && mv notes n2 && ln -s /etc data && echo moved"),
             tool_call("run_shell", command="echo x > data/sales.csv; echo x > notes/task.md; "
                                            "cat data/sales.csv notes/task.md")
             | {"expect": {"contains": ["moved"]}},
             text("ok") | {"expect": {"contains": ["Read-only file system", "Product,Revenue\nWidget,120.5\n"
                                                   "read me\n"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "--manifest", man, "go")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert (sources / "sales.csv").read_text() == "Product,Revenue\nWidget,120.5\n"


def test_writable_entry_changes_stay_in_the_workspace(run, tmp_path, sources):
    ws = tmp_path / "ws"
    ws.mkdir()
    man = write_manifest(tmp_path / "m.json", [
        {"dest": "work", "dir": str(sources / "tpl"), "writable": True},
        {"dest": "output/draft.txt", "file": str(sources / "sales.csv"), "writable": True}])
    turns = [tool_call("run_shell", command="echo changed > work/t.txt; echo new > work/n.txt; "
                                            "echo more >> output/draft.txt; cat work/t.txt"),
             text("ok") | {"expect": {"contains": ["changed"]}}]
    with ScriptedServer(turns) as srv:
        r = run(srv, "-w", str(ws), "--manifest", man, "go")
    srv.assert_ok()
    assert r.rc == 0, r.err
    assert (sources / "tpl" / "t.txt").read_text() == "template\n"
    assert os.listdir(sources / "tpl") == ["t.txt"]
    assert (sources / "sales.csv").read_text() == "Product,Revenue\nWidget,120.5\n"
    assert (ws / "work" / "t.txt").read_text() == "changed\n"
    assert (ws / "output" / "draft.txt").read_text().endswith("more\n")


def test_bad_manifests_are_usage_errors(run, tmp_path, sources):
    cases = [
        ({"entries": [{"dest": "/etc/x", "content": ""}]}, "entries[0].dest '/etc/x' must be relative"),
        ({"entries": [{"dest": "a/../b", "content": ""}]}, "may not contain '.' or '..'"),
        ({"entries": [{"dest": "x", "content": "", "writeable": True}]}, 'unknown key "writeable"'),
        ({"entries": [{"dest": "x", "file": "missing.csv"}]}, "cannot stage"),
        ({"entries": [{"dest": "a", "content": ""}, {"dest": "a/b", "content": ""}]},
         "entries[1].dest 'a/b' overlaps entries[0] ('a')"),
        ({"entries": [{"dest": "output/x", "content": ""}]}, "read-only but under output/"),
        ({"entries": [{"dest": "input/sales.csv", "content": ""}]},
         "entries[0].dest 'input/sales.csv' is also the destination of the input 'input/sales.csv' (--input)"),
    ]
    for manifest, says in cases:
        (tmp_path / "bad.json").write_text(json.dumps(manifest))
        r = run("http://127.0.0.1:9/v1", "-i", str(sources / "sales.csv"), "--manifest",
                str(tmp_path / "bad.json"), "x")
        assert r.rc == 2, (manifest, r.err)
        assert says in r.err, (manifest, r.err)
        assert not glob.glob(str(tmp_path / "state" / "corral" / "runs" / "*"))
    (tmp_path / "dup.json").write_text('{"entries": [{"dest": "a", "dest": "b", "content": ""}]}')
    r = run("http://127.0.0.1:9/v1", "--manifest", str(tmp_path / "dup.json"), "x")
    assert r.rc == 2 and "duplicate" in r.err, r.err


def test_large_input_is_bound_not_copied(tmp_path, sources, tmpdir_env):
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        chunk = os.urandom(1 << 20)
        for _ in range(256):
            f.write(chunk)
    digest = sha(big)
    ws = tmp_path / "ws"
    ws.mkdir()
    turns = [tool_call("run_shell", command="sha256sum input/big.bin; sleep 4"),
             text("ok") | {"expect": {"contains": [digest]}}]
    with ScriptedServer(turns) as srv:
        cmd = [CORRAL, "run", "--base-url", srv.base_url, "--model", "gpt-test", "-w", str(ws),
               "-i", str(big), "go"]
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, cwd=tmp_path, env=base_env(tmpdir_env), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        point = ws / "input" / "big.bin"
        while not point.exists() and time.monotonic() - t0 < 30:
            time.sleep(0.01)
        staged_s = time.monotonic() - t0
        time.sleep(1)  # inside the step now
        du = int(subprocess.run(["du", "-sk", str(ws)], capture_output=True, text=True).stdout.split()[0])
        size = point.stat().st_size
        out, err = p.communicate(timeout=120)
    srv.assert_ok()
    assert p.returncode == 0, err.decode()
    print(f"staged 256 MiB in {staged_s * 1000:.0f} ms (to the mount point); workspace {du} KiB")
    assert size == 0 and du < 64, (size, du)
    assert staged_s < 5
    assert not point.exists()  # the kept workspace loses its mount points
    assert os.listdir(tmpdir_env) == []
    assert str(ws) not in mounts()


@pytest.fixture
def nobody_dir():
    """A directory an ordinary user (65534) owns, for runs as that user."""
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="corral-e2e-manifest-")
    os.chmod(d, 0o755)
    if os.geteuid() == 0:  # (only the "nobody" case uses it, and only as root)
        os.chown(d, 65534, 65534)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_swapping_the_source_after_staging_redirects_nothing(user, tmp_path, nobody_dir):
    """The entry is bound from the fd opened at staging: a host path renamed
    away and replaced by a symlink to other data later changes nothing."""
    if user == "nobody" and os.geteuid() != 0:
        pytest.skip("needs root to switch to an ordinary user")
    base = tmp_path if user == "root" else nobody_dir
    base = str(base)
    for d in ("src", "evil", "ws", "tmp"):
        os.mkdir(os.path.join(base, d))
    with open(os.path.join(base, "src", "s.csv"), "w") as f:
        f.write("the real data\n")
    with open(os.path.join(base, "evil", "s.csv"), "w") as f:
        f.write("EVIL\n")
    os.mkdir(os.path.join(base, "src", "ref"))
    with open(os.path.join(base, "src", "ref", "a.txt"), "w") as f:
        f.write("real ref\n")
    man = os.path.join(base, "m.json")
    with open(man, "w") as f:
        json.dump({"entries": [{"dest": "data/s.csv", "file": "src/s.csv"}, {"dest": "ref", "dir": "src/ref"}]}, f)
    if user == "nobody":
        for dirpath, dirnames, filenames in os.walk(base):
            for n in dirnames + filenames:
                os.chown(os.path.join(dirpath, n), 65534, 65534)

    def drop():
        if user == "nobody":
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)

    ws = os.path.join(base, "ws")
    turns = [tool_call("run_shell", command="sleep 3; echo slept"),
             tool_call("run_shell", command="cat data/s.csv ref/a.txt; ls ref"),
             text("ok") | {"expect": {"contains": ["the real data\nreal ref\na.txt\n"], "not_contains": ["EVIL"]}}]
    with ScriptedServer(turns) as srv:
        cmd = [CORRAL, "run", "--base-url", srv.base_url, "--model", "gpt-test", "-w", ws, "--manifest", man, "go"]
        # No session host of nobody's lingers after the test.
        env = base_env(os.path.join(base, "tmp"), HOME=base, CORRAL_SESSION_LINGER="0")
        p = subprocess.Popen(cmd, cwd=base, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=drop)
        t0 = time.monotonic()
        while not os.path.exists(os.path.join(ws, "ref")) and time.monotonic() - t0 < 30:
            time.sleep(0.01)
        time.sleep(1)  # staged, and the first step is sleeping
        src = os.path.join(base, "src")
        os.rename(os.path.join(src, "s.csv"), os.path.join(src, "moved.csv"))
        os.symlink(os.path.join(base, "evil", "s.csv"), os.path.join(src, "s.csv"))
        os.rename(os.path.join(src, "ref"), os.path.join(src, "ref.moved"))
        os.symlink(os.path.join(base, "evil"), os.path.join(src, "ref"))
        out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err.decode()
    srv.assert_ok()
    assert open(os.path.join(src, "moved.csv")).read() == "the real data\n"
    assert open(os.path.join(base, "evil", "s.csv")).read() == "EVIL\n"
