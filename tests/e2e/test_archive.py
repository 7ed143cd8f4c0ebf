"""Workspace archives end to end: `corral workspace list|extract`, `corral run
--archive/--from`.  Round trips are compared byte for byte with GNU tar in
both directions; a hostile corpus is generated here with Python's tarfile
(nothing binary is committed) and each archive must be refused with exit 1,
a message naming the problem, and nothing left behind or touched outside."""
import gzip
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from conftest import CORRAL  # noqa: E402

ZSTD = shutil.which("zstd")


def corral(*args, cwd=None, timeout=120):
    p = subprocess.run([CORRAL, *args], capture_output=True, timeout=timeout, cwd=cwd)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def tree(root):
    """{relpath: (kind, mode, content-or-target, mtime)} of a tree, never following links."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", None, os.readlink(p), None)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode), None, None)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", stat.S_IMODE(st.st_mode), f.read(), int(st.st_mtime))
    return out


def make_source(root):
    """A small workspace-like tree: text, binary, empty, executable, nested, odd names, symlinks."""
    (root / "output" / "plots").mkdir(parents=True)
    (root / "output" / "a.txt").write_text("alpha\n")
    (root / "output" / "plots" / "p.bin").write_bytes(bytes(range(256)) * 300)
    (root / "empty").write_bytes(b"")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(root / "run.sh", 0o755)
    (root / "ro.txt").write_text("read only\n")
    os.chmod(root / "ro.txt", 0o444)
    (root / "name with spaces & ünïcode.txt").write_text("x\n")
    deep = root / "/".join(["d%d" % i for i in range(12)])
    deep.mkdir(parents=True)
    (deep / ("long" * 40)).write_text("deep\n")
    os.symlink("a.txt", root / "output" / "latest")
    os.symlink("../run.sh", root / "output" / "plots" / "up")
    os.utime(root / "output" / "a.txt", (1_600_000_000, 1_600_000_000))


def leftovers(parent, before):
    return sorted(set(os.listdir(parent)) - before)


# ---- round trips against GNU tar ----

@pytest.mark.parametrize("fmt", ["pax", "gnu", "ustar"])
def test_gnu_tar_archive_extracts_identically(tmp_path, fmt):
    src = tmp_path / "src"
    src.mkdir()
    make_source(src)
    if fmt == "ustar":  # ustar cannot hold a 160-byte name: leave the deep file out
        shutil.rmtree(src / "d0")
    arc = tmp_path / "t.tar"
    subprocess.run(["tar", f"--format={fmt}", "-C", str(src), "-cf", str(arc), "."], check=True)
    rc, out, err = corral("workspace", "extract", str(arc), str(tmp_path / "out"))
    assert rc == 0, err
    assert tree(src) == tree(tmp_path / "out")
    assert "extracted" in err


@pytest.mark.parametrize("comp", ["gzip", "zstd"])
def test_compressed_archives(tmp_path, comp):
    if comp == "zstd" and ZSTD is None:
        pytest.skip("no zstd")
    src = tmp_path / "src"
    src.mkdir()
    make_source(src)
    arc = tmp_path / ("t.tar." + ("gz" if comp == "gzip" else "zst"))
    subprocess.run(["tar", "--format=pax", f"--use-compress-program={comp}", "-C", str(src), "-cf", str(arc), "."],
                   check=True)
    rc, out, err = corral("workspace", "list", "--json", str(arc))
    assert rc == 0, err
    listing = json.loads(out)
    assert listing["ok"] and listing["filters"] == [comp]
    assert {e["path"] for e in listing["entries"]} >= {"output/a.txt", "output/latest", "run.sh"}
    link = [e for e in listing["entries"] if e["path"] == "output/latest"][0]
    assert link["type"] == "symlink" and link["target"] == "a.txt"
    rc, out, err = corral("workspace", "extract", str(arc), str(tmp_path / "out"))
    assert rc == 0, err
    assert tree(src) == tree(tmp_path / "out")


def test_extract_into_an_empty_directory(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_text("1")
    arc = tmp_path / "t.tar"
    subprocess.run(["tar", "-C", str(src), "-cf", str(arc), "f"], check=True)
    (tmp_path / "empty").mkdir()
    assert corral("workspace", "extract", str(arc), str(tmp_path / "empty"))[0] == 0
    assert (tmp_path / "empty" / "f").read_text() == "1"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep").write_text("mine")
    rc, _, err = corral("workspace", "extract", str(arc), str(tmp_path / "full"))
    assert rc == 2 and "not empty" in err
    assert os.listdir(tmp_path / "full") == ["keep"]
    (tmp_path / "file").write_text("x")
    rc, _, err = corral("workspace", "extract", str(arc), str(tmp_path / "file"))
    assert rc == 2 and "not a directory" in err


def test_usage_errors(tmp_path):
    assert corral("workspace")[0] == 2
    assert corral("workspace", "frobnicate")[0] == 2
    assert corral("workspace", "list")[0] == 2
    assert corral("workspace", "extract", "x.tar")[0] == 2
    rc, out, _ = corral("workspace", "--help")
    assert rc == 0 and "extract" in out and "exit statuses" in out
    rc, _, err = corral("workspace", "list", str(tmp_path / "missing.tar"))
    assert rc == 1 and "missing.tar" in err


# ---- hostile archives ----

def ti(name, type=tarfile.REGTYPE, size=0, **kw):
    t = tarfile.TarInfo(name)
    t.type = type
    t.size = size
    t.mode = 0o644
    for k, v in kw.items():
        setattr(t, k, v)
    return t


def build(path, members, fmt=tarfile.PAX_FORMAT, mode="w"):
    """members: [(TarInfo, bytes or None)]"""
    with tarfile.open(path, mode, format=fmt) as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)


HOSTILE = {
    "dotdot": ([(ti("../x", size=3), b"bad")], "'..'"),
    "absolute": ([(ti("/etc/corral-x", size=3), b"bad")], "absolute path"),
    "dotdot-inside": ([(ti("a/../../x", size=3), b"bad")], "'..'"),
    "symlink-then-through": ([(ti("etc", tarfile.SYMTYPE, linkname="/etc"), None)], "absolute path '/etc'"),
    "through-symlink": ([(ti("up", tarfile.SYMTYPE, linkname="sub"), None), (ti("sub", tarfile.DIRTYPE), None),
                         (ti("up/x", size=3), b"bad")], "beneath 'up', a symbolic link"),
    "symlink-climbing": ([(ti("a/b", tarfile.SYMTYPE, linkname="../../x"), None)], "climbs out"),
    "symlink-dotdot-after-name": ([(ti("s", tarfile.SYMTYPE, linkname="."), None),
                                   (ti("t", tarfile.SYMTYPE, linkname="s/.."), None)], "after a name"),
    "hardlink-passwd": ([(ti("pw", tarfile.LNKTYPE, linkname="/etc/passwd"), None)], "hard link"),
    "hardlink-relative-out": ([(ti("pw", tarfile.LNKTYPE, linkname="../../../etc/passwd"), None)], "hard link"),
    "hardlink-not-yet": ([(ti("pw", tarfile.LNKTYPE, linkname="later"), None), (ti("later", size=1), b"x")],
                         "not a regular file extracted before it"),
    "chardev": ([(ti("null", tarfile.CHRTYPE, devmajor=1, devminor=3), None)], "character device"),
    "blockdev": ([(ti("sda", tarfile.BLKTYPE, devmajor=8, devminor=0), None)], "block device"),
    "fifo": ([(ti("f", tarfile.FIFOTYPE), None)], "FIFO"),
    "size-bomb": ([(ti("huge", size=1 << 40), None)], "archive bomb"),
}


def write_hostile(path, name):
    members, _ = HOSTILE[name]
    with open(path, "wb") as f:
        with tarfile.open(fileobj=f, mode="w", format=tarfile.PAX_FORMAT) as t:
            for info, data in members:
                if info.size and data is None:
                    # A header claiming more data than follows: written by hand.
                    buf = info.tobuf(tarfile.PAX_FORMAT)
                    t.fileobj.write(buf)
                    t.offset += len(buf)
                else:
                    t.addfile(info, io.BytesIO(data) if data is not None else None)


def assert_refused(tmp_path, arc, says, dest_name="dest"):
    parent = tmp_path / "x"
    parent.mkdir(exist_ok=True)
    before = set(os.listdir(parent))
    etc_before = set(os.listdir("/etc"))
    rc, out, err = corral("workspace", "extract", str(arc), str(parent / dest_name), timeout=300)
    assert rc == 1, (rc, err)
    assert says in err, err
    assert leftovers(parent, before) == [], "something was left behind"
    assert not (tmp_path / "x.txt").exists() and not os.path.exists("/etc/corral-x")
    assert set(os.listdir("/etc")) == etc_before
    return err


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_archive_refused(tmp_path, name):
    arc = tmp_path / "h.tar"
    write_hostile(arc, name)
    err = assert_refused(tmp_path, arc, HOSTILE[name][1])
    assert "cannot extract" in err
    # list says the same and exits 1
    rc, out, lerr = corral("workspace", "list", "--json", str(arc))
    assert rc == 1
    listing = json.loads(out)
    assert listing["ok"] is False and any(HOSTILE[name][1] in r["reason"] for r in listing["refused"])


def test_symlink_to_etc_then_file_through_it(tmp_path):
    """The classic: a symlink to /etc, then etc/x: never written through, even if the link were allowed."""
    arc = tmp_path / "h.tar"
    build(arc, [(ti("etc", tarfile.SYMTYPE, linkname="/etc"), None), (ti("etc/corral-x", size=3), b"bad")])
    assert_refused(tmp_path, arc, "'etc'")
    assert not os.path.exists("/etc/corral-x")


def test_entry_count_bomb(tmp_path):
    arc = tmp_path / "many.tar"
    # 100,001 directory entries d000000/..d100000/: one header made by
    # tarfile, copied with the name and its checksum patched (tarfile
    # itself takes seconds of CPU for this many)
    head = bytearray(ti("d000000", type=tarfile.DIRTYPE).tobuf(tarfile.USTAR_FORMAT))
    base = sum(head[:148]) + 8 * ord(" ") + sum(head[156:])
    with open(arc, "wb") as f:
        for i in range(100_001):
            name = b"%06d" % i
            head[1:7] = name
            head[148:156] = b"%06o\0 " % (base + sum(name) - 6 * ord("0"))
            f.write(head)
        f.write(bytes(1024))
    err = assert_refused(tmp_path, arc, "past the limit of 100000 entries")
    assert "bomb" in err
    # a lower limit given on the command line applies too
    rc, out, err = corral("workspace", "list", "--max-entries", "10", str(arc))
    assert rc == 1 and "past the limit of 10 entries" in err


def test_gzip_ratio_bomb(tmp_path):
    arc = tmp_path / "zeros.tar.gz"
    size = 64 << 20
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        info = ti("zeros", size=size)
        t.addfile(info, io.BytesIO(bytes(size)))
    arc.write_bytes(gzip.compress(raw.getvalue(), 9))
    assert arc.stat().st_size < size // 500
    err = assert_refused(tmp_path, arc, "compression bomb")
    assert "expands more than 200 times" in err


def test_other_formats_refused(tmp_path):
    z = tmp_path / "a.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("a.txt", "zip")
    err = assert_refused(tmp_path, z, "tar archives only")
    # cpio (newc), written by hand: "070701" headers
    def newc(name, data, mode=0o100644):
        n = name.encode() + b"\0"
        hdr = b"070701" + b"".join(b"%08X" % v for v in
                                   (1, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(n), 0))
        pad = lambda b: b + b"\0" * (-len(b) % 4)
        return pad(hdr + n) + pad(data)
    c = tmp_path / "a.cpio"
    c.write_bytes(newc("a.txt", b"cpio") + newc("TRAILER!!!", b"", 0))
    assert_refused(tmp_path, c, "tar archives only")
    # bzip2-compressed tar: a filter that is not read
    src = tmp_path / "s"
    src.mkdir()
    (src / "f").write_text("x")
    bz = tmp_path / "t.tar.bz2"
    subprocess.run(["tar", "-C", str(src), "-cjf", str(bz), "f"], check=True)
    assert_refused(tmp_path, bz, "tar archives only")
    rc, _, err = corral("workspace", "list", str(z))
    assert rc == 1 and "tar archives only" in err


def test_refused_late_entry_leaves_nothing(tmp_path):
    """Many good entries, then a bad one: everything extracted so far goes too."""
    arc = tmp_path / "late.tar"
    members = [(ti("ok/f%d" % i, size=2), b"ok") for i in range(500)]
    members.append((ti("ok/../../evil", size=3), b"bad"))
    build(arc, members)
    assert_refused(tmp_path, arc, "'..'")


def test_list_shows_modes_and_targets(tmp_path):
    arc = tmp_path / "t.tar"
    build(arc, [(ti("x", tarfile.DIRTYPE, mode=0o750), None), (ti("x/f", size=2, mode=0o4755), b"hi"),
                (ti("x/l", tarfile.SYMTYPE, linkname="f"), None), (ti("x/h", tarfile.LNKTYPE, linkname="x/f"), None),
                (ti("esc\x1b[31mred", size=0), b"")])
    rc, out, err = corral("workspace", "list", str(arc))
    assert rc == 0, err
    assert "drwxr-x---" in out and "x/l -> f" in out and "x/h link to x/f" in out
    assert "\x1b" not in out  # names are sanitised before they reach a terminal
    rc, _, err = corral("workspace", "extract", str(arc), str(tmp_path / "o"))
    assert rc == 0, err
    st = os.stat(tmp_path / "o" / "x" / "f")
    assert stat.S_IMODE(st.st_mode) == 0o755  # no set-uid
    assert os.stat(tmp_path / "o" / "x" / "h").st_ino == st.st_ino
    assert os.readlink(tmp_path / "o" / "x" / "l") == "f"


# ---- corral run --archive / --from ----

def run_corral(srv, *args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CORRAL_MODEL", "XDG_CONFIG"))}
    env["NO_COLOR"] = "1"
    p = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "gpt-test", *args],
                       capture_output=True, timeout=180, cwd=cwd, env=env)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def test_archive_then_resume(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    arc = tmp_path / "ws.tar"
    code = ("import os\nos.makedirs('output', exist_ok=True)\n"
            "open('output/a.txt', 'w').write('from run one\\n')\n"
            "os.symlink('a.txt', 'output/link')\nos.mkfifo('fifo')\nos.link('output/a.txt', 'hard')\n"
            "print('written')")
    turns = [tool_call("run_python", code=code), text("wrote output/a.txt")]
    with ScriptedServer(turns) as srv:
        rc, out, err = run_corral(srv, "-i", str(data), "--archive", str(arc), "--json", "make a file", cwd=tmp_path)
    srv.assert_ok()
    assert rc == 0, err
    res = json.loads(out)
    assert res["archive"]["path"] == str(arc)
    assert "input" in res["archive"]["excluded"]
    skipped = {s["path"] for s in res["archive"]["skipped"]}
    assert {"fifo", "hard", "output/a.txt"} <= skipped  # FIFO, and both names of a hard-linked file
    # GNU tar reads it; inputs are not in it; metadata is
    names = subprocess.run(["tar", "-tf", str(arc)], capture_output=True, check=True, text=True).stdout.split()
    assert ".corral/run.json" in names and "output/link" in names
    assert not any(n.startswith("input") for n in names)
    meta = json.loads(subprocess.run(["tar", "-xOf", str(arc), ".corral/run.json"], capture_output=True,
                                     check=True).stdout)
    assert meta["task"] == "make a file" and meta["answer"] == "wrote output/a.txt" and meta["corral_version"]
    assert stat.S_IMODE(os.stat(arc).st_mode) == 0o600


def test_resume_from_an_archive(tmp_path):
    arc = tmp_path / "ws.tar"
    turns = [tool_call("run_python", code="open('output/a.txt', 'w').write('from run one\\n')"),
             text("wrote output/a.txt")]
    with ScriptedServer(turns) as srv:
        rc, out, err = run_corral(srv, "--archive", str(arc), "first", cwd=tmp_path)
    srv.assert_ok()
    assert rc == 0, err
    assert "workspace archived to" in err
    turns = [tool_call("run_python", code="print(open('output/a.txt').read())")
             | {"expect": {"contains": ["restored from an archive", "output/a.txt", "first",
                                        "wrote output/a.txt"]}},
             text("it says: from run one") | {"expect": {"contains": ["from run one"]}}]
    arc2 = tmp_path / "ws2.tar"
    with ScriptedServer(turns) as srv:
        rc, out, err = run_corral(srv, "--from", str(arc), "--archive", str(arc2), "--json", "second",
                                  cwd=tmp_path)
    srv.assert_ok()
    assert rc == 0, err
    assert json.loads(out)["answer"] == "it says: from run one"
    meta = json.loads(subprocess.run(["tar", "-xOf", str(arc2), ".corral/run.json"], capture_output=True,
                                     check=True).stdout)
    assert meta["task"] == "second"


def test_archive_written_when_the_run_gives_up(tmp_path):
    arc = tmp_path / "ws.tar"
    turns = [tool_call("run_python", code="open('output/partial.txt', 'w').write('half')")]
    with ScriptedServer(turns) as srv:
        rc, out, err = run_corral(srv, "--max-iterations", "1", "--archive", str(arc), "--json", "go",
                                  cwd=tmp_path)
    assert rc == 1, err
    assert json.loads(out)["archive"]["path"] == str(arc)
    out_dir = tmp_path / "x"
    out_dir.mkdir()
    subprocess.run(["tar", "-C", str(out_dir), "-xf", str(arc)], check=True)
    assert (out_dir / "output" / "partial.txt").read_text() == "half"
    assert json.loads((out_dir / ".corral" / "run.json").read_text())["status"] == "gave_up"


def test_hostile_from_is_refused_before_the_model(tmp_path):
    arc = tmp_path / "h.tar"
    write_hostile(arc, "dotdot")
    with ScriptedServer([]) as srv:
        rc, out, err = run_corral(srv, "--from", str(arc), "go", cwd=tmp_path)
    assert rc == 2, err
    assert "'..'" in err and "cannot restore" in err
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()


def test_our_archive_extracts_with_gnu_tar_identically(tmp_path):
    """corral writes, GNU tar extracts: equal to the workspace (modes, symlinks, contents, mtimes)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    # Planted from the host (as code in a jail could): the same tree as make_source, plus
    # a set-uid file and a symlink to /etc/passwd.
    make_source(ws)
    (ws / "suid").write_text("#!/bin/sh\n")
    os.chmod(ws / "suid", 0o4755)
    os.symlink("/etc/passwd", ws / "output" / "evil")
    # sparse: 40 MiB of which 6 bytes are data; stored sparse, not 40 MiB
    with open(ws / "output" / "sparse.bin", "wb") as f:
        f.write(b"abc")
        f.seek(20 << 20)
        f.write(b"def")
        f.truncate(40 << 20)
    turns = [tool_call("run_shell", command="echo hi > output/from-jail.txt"), text("ok")]
    arc = tmp_path / "ws.tar"
    with ScriptedServer(turns) as srv:
        rc, out, err = run_corral(srv, "-w", str(ws), "--archive", str(arc), "go", cwd=tmp_path)
    srv.assert_ok()
    assert rc == 0, err
    assert os.path.getsize(arc) < (1 << 20)
    out_dir = tmp_path / "gnu"
    out_dir.mkdir()
    subprocess.run(["tar", "-C", str(out_dir), "-xf", str(arc)], check=True)
    got, want = tree(out_dir), tree(ws)
    del got[".corral"], got[".corral/run.json"]
    for k in [k for k in want if k == "input" or k.startswith("input/")]:
        del want[k]
    want["suid"] = ("file", 0o755, want["suid"][2], want["suid"][3])  # set-uid is dropped
    assert got["output/from-jail.txt"][2] == b"hi\n"
    assert got == want
    assert os.readlink(out_dir / "output" / "evil") == "/etc/passwd"  # stored as a symlink, never followed
    # and corral itself refuses that absolute symlink on the way back in
    assert_refused(tmp_path, arc, "absolute path '/etc/passwd'")


def test_archive_inputs_and_ephemeral_entries(tmp_path):
    """Staged inputs are left out unless --archive-inputs; then a read-only (bound) input is archived from its
    source, not from the empty mount point the workspace holds.  Ephemeral entries are never archived."""
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "r.txt").write_text("reference\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "c.bin").write_bytes(b"cached")
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"entries": [
        {"dest": "ref", "dir": str(ref)},
        {"dest": "cache", "dir": str(cache), "writable": True, "ephemeral": True},
        {"dest": "notes.md", "content": "# notes\n"}]}))
    for inputs in (False, True):
        arc = tmp_path / ("in.tar" if inputs else "out.tar")
        turns = [tool_call("run_shell", command="cat input/data.csv ref/r.txt > output/both.txt"), text("ok")]
        with ScriptedServer(turns) as srv:
            rc, out, err = run_corral(srv, "-i", str(data), "--manifest", str(manifest), "--archive", str(arc),
                                      *(["--archive-inputs"] if inputs else []), "--json", "go", cwd=tmp_path)
        srv.assert_ok()
        assert rc == 0, err
        excluded = json.loads(out)["archive"]["excluded"]
        assert "cache" in excluded
        x = tmp_path / ("x-in" if inputs else "x-out")
        rc, _, err = corral("workspace", "extract", str(arc), str(x))
        assert rc == 0, err
        assert (x / "output" / "both.txt").read_text() == "a,b\n1,2\nreference\n"
        assert not (x / "cache").exists()
        assert (x / "notes.md").read_text() == "# notes\n"  # inline content is not an input
        if inputs:
            assert (x / "input" / "data.csv").read_text() == "a,b\n1,2\n"
            assert (x / "ref" / "r.txt").read_text() == "reference\n"
        else:
            assert {"input", "ref"} <= set(excluded)
            assert not (x / "input").exists() and not (x / "ref").exists()
    # the host's inputs are untouched
    assert data.read_text() == "a,b\n1,2\n" and (cache / "c.bin").read_bytes() == b"cached"
