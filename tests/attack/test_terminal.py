"""Bytes that a model, a jail or an archive chose, on their way to the user's
terminal or into markup (docs/security.md, "Terminals and markup").

A terminal acts on what it prints: OSC 52 writes the clipboard, OSC 0 the
window title, CSI 2J clears the screen, DSR (CSI 6n) and DECRQSS (DCS $ q)
make the terminal type a reply into the shell's input, C1 controls act as
ESC sequences on many terminals, and bidirectional overrides make text read
as something it is not.  Each test sends them through one path to a real
pseudo-terminal and checks that none arrives raw; --json and files keep the
exact bytes.  The notebook export gets the same strings and must not carry
them, nor HTML, into its cells."""
import json
import os
import pty
import select
import shutil
import subprocess
import sys
import tarfile
import tempfile
import io

import pytest

from corral_attack import CORRAL

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

# What must never reach a terminal raw (as Python string escapes, so that a
# model reply, a program and an archive name can all carry them).
HOSTILE = ("\x1b]52;c;cm0gLXJmIH4=\x07"        # OSC 52: clipboard
           "\x1b]0;pwned\x1b\\"                # OSC 0: title
           "\x1b[2J\x1b[6n"                    # clear screen, DSR
           "\x1bP$q m\x1b\\"                   # DECRQSS
           "\u009b6n"                          # C1 CSI
           "\u202eevil")                       # right-to-left override
RAW = [b"\x1b]", b"\x1b[2J", b"\x1b[6n", b"\x1bP", b"\xc2\x9b", b"\xe2\x80\xae", b"\x07"]


def on_a_terminal(argv, env=None, cwd=None, timeout=60, stdin=None):
    """Run argv with stdout and stderr on one pseudo-terminal; returns (rc,
    everything the terminal received)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=slave, stderr=slave, stdin=stdin or subprocess.DEVNULL, env=env, cwd=cwd)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(timeout=timeout)
    os.close(master)
    return proc.returncode, seen


def assert_inert(seen):
    for raw in RAW:
        assert raw not in seen, (raw, seen[-600:])


def env_for(home):
    return {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "TERM": "xterm",
            "XDG_STATE_HOME": os.path.join(home, "state")}


def test_exec_output_on_a_terminal_keeps_colour_not_control(tmp_path):
    code = f"import sys\nprint('\\x1b[1;31mred\\x1b[0m', {HOSTILE!r})\nprint({HOSTILE!r}, file=sys.stderr)"
    rc, seen = on_a_terminal([CORRAL, "exec", "-c", code], env=env_for(str(tmp_path)))
    assert rc == 0, seen
    assert_inert(seen)
    assert b"\x1b[1;31mred\x1b[0m" in seen       # colours stay
    assert b"^[]52;c;cm0gLXJmIH4=^G" in seen       # shown, inert
    # into a pipe, the exact bytes
    r = subprocess.run([CORRAL, "exec", "-c", code], capture_output=True, env=env_for(str(tmp_path)), timeout=60)
    assert HOSTILE.encode() in r.stdout and HOSTILE.encode() in r.stderr


def test_final_answer_on_a_terminal(tmp_path):
    turns = [text(f"The answer {HOSTILE}")]
    with ScriptedServer(turns) as srv:
        argv = [CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--cold", "go"]
        rc, seen = on_a_terminal(argv, env=env_for(str(tmp_path)), cwd=str(tmp_path))
    assert rc == 0, seen
    assert_inert(seen)
    assert b"The answer ^[]52" in seen
    # -q on a terminal too; --json keeps the text exactly (JSON-escaped)
    with ScriptedServer([text(f"The answer {HOSTILE}")]) as srv:
        rc, seen = on_a_terminal([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--cold", "-q", "go"],
                                 env=env_for(str(tmp_path)), cwd=str(tmp_path))
    assert rc == 0 and b"The answer" in seen, seen
    assert_inert(seen)
    with ScriptedServer([text(f"The answer {HOSTILE}")]) as srv:
        r = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--cold", "--json", "go"],
                           capture_output=True, text=True, env=env_for(str(tmp_path)), cwd=str(tmp_path), timeout=60)
    assert json.loads(r.stdout)["answer"] == f"The answer {HOSTILE}"


def hostile_archive(path):
    """A workspace archive whose first entry is refused (absolute), named with
    control sequences."""
    with tarfile.open(path, "w") as tar:
        data = b"x"
        info = tarfile.TarInfo("/" + HOSTILE.replace("\x07", "") + ".txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def test_refused_archive_names_on_a_terminal(tmp_path):
    arc = tmp_path / "evil.tar"
    hostile_archive(arc)
    env = env_for(str(tmp_path))
    with ScriptedServer([]) as srv:
        rc, seen = on_a_terminal([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--from", str(arc),
                                  "go"], env=env, cwd=str(tmp_path))
    assert rc != 0 and b"absolute" in seen, seen
    assert_inert(seen)
    rundir = tempfile.mkdtemp(prefix="corral-attack-run-")
    os.chmod(rundir, 0o700)
    senv = dict(env, XDG_RUNTIME_DIR=rundir, CORRAL_SESSION_LINGER="0")
    try:
        rc, seen = on_a_terminal([CORRAL, "session", "start", "--from", str(arc)], env=senv)
        assert rc == 1 and b"absolute" in seen, seen
        assert_inert(seen)
        rc, seen = on_a_terminal([CORRAL, "workspace", "list", str(arc)], env=senv)
        assert_inert(seen)
    finally:
        subprocess.run([CORRAL, "session", "shutdown"], capture_output=True, env=senv, timeout=60)
        shutil.rmtree(rundir, ignore_errors=True)


def test_session_step_output_and_values_on_a_terminal(tmp_path):
    rundir = tempfile.mkdtemp(prefix="corral-attack-run-")
    os.chmod(rundir, 0o700)
    env = dict(env_for(str(tmp_path)), XDG_RUNTIME_DIR=rundir, CORRAL_SESSION_LINGER="0")
    try:
        r = subprocess.run([CORRAL, "session", "start", "--cold"], capture_output=True, text=True, env=env,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        sid = r.stdout.strip()
        for code in (f"print({HOSTILE!r})", f"{HOSTILE!r}", f"raise ValueError({HOSTILE!r})"):
            rc, seen = on_a_terminal([CORRAL, "session", "exec", sid, "-c", code], env=env)
            assert b"evil" in seen, seen
            assert_inert(seen)
    finally:
        subprocess.run([CORRAL, "session", "shutdown"], capture_output=True, env=env, timeout=60)
        shutil.rmtree(rundir, ignore_errors=True)


def test_notebook_export_carries_no_control_and_no_markup(tmp_path):
    """A run whose model and program use every hostile string; its trace
    exported as a notebook: no control character in any cell, no raw tag in
    the markdown corral wrote."""
    code = f"print({HOSTILE!r})\nprint('<img src=x onerror=alert(1)>')"
    turns = [{"reply": {"content": f"Let me look {HOSTILE} <script>alert(1)</script>",
                        "tool_calls": [{"name": "run_python", "arguments": {"code": code}}]}},
             {"reply": {"content": None,
                        "tool_calls": [{"name": "<img src=x onerror=alert(2)>", "arguments": {}}]}},
             text(f"Done {HOSTILE} <iframe src=javascript:alert(3)>")]
    trace = tmp_path / "t.jsonl"
    with ScriptedServer(turns) as srv:
        r = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--cold", "--review-policy",
                            "off", "--trace", str(trace), "-q", "go"], capture_output=True, text=True,
                           env=env_for(str(tmp_path)), cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    nb_path = tmp_path / "t.ipynb"
    r = subprocess.run([CORRAL, "trace", "export", "--ipynb", "-o", str(nb_path), str(trace)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    nb = json.loads(nb_path.read_text())
    for cell in nb["cells"]:
        strings = ["".join(cell["source"])]
        for o in cell.get("outputs", []):
            strings.append("".join(o.get("text", [])))
        for s in strings:
            assert not any(c in s for c in "\x1b\x07\x9b\u202e"), (cell["cell_type"], s)
            if cell["cell_type"] == "markdown":
                for tag in ("<img", "<script", "<iframe"):
                    i = s.find(tag)
                    assert i < 0 or s[i - 1] == "\\", (tag, s)
