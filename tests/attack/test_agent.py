"""Attacks through the agent loop: code in the jail plants things in the
workspace that corral itself then touches on the host (the model's
read_file / write_file / list_files, the per-step snapshot, the copy to
--out, the live view).  The jail cannot reach host paths, but a symlink's
target is resolved by whoever follows it: if corral followed one, the jail
would read or write host files through corral.  Each test checks the host.

The model's side is the scripted server of tests/model-server."""
import json
import os
import subprocess
import sys
import time

import pytest

from corral_attack import CORRAL, marker

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402


def agent(tmp_path, turns, *args, timeout=120):
    """Run `corral run` against the scripted turns; returns (proc, server)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", "NO_COLOR": "1"}
    with ScriptedServer(turns) as srv:
        # The safety review is off: these attacks test corral's host side and the jail, not the review.
        proc = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--no-trace",
                               "--review-policy", "off", *args, "attack"],
                              capture_output=True, timeout=timeout, cwd=tmp_path, env=env)
    return proc, srv


def tool_messages(srv, request):
    return {m["tool_call_id"]: m["content"] for m in srv.requests[request]["messages"] if m["role"] == "tool"}


def calls(*specs):
    """One reply with several tool calls: ("id", "name", {args})."""
    return {"reply": {"content": None, "tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in specs]}}


def test_symlinks_planted_by_code_are_never_followed_by_corral(tmp_path, host_file):
    secret = marker("agent-secret")
    target = host_file(secret + "\n")
    victim = host_file("victim-untouched\n")
    plant = ("import os\n"
             f"os.symlink({target!r}, 'output/read-me')\n"
             f"os.symlink({victim!r}, 'output/write-me')\n"
             f"os.symlink({os.path.dirname(target)!r}, 'output/hostdir')\n"
             "os.symlink('../../../../../../etc/passwd', 'output/climb')\n"
             "print('planted')\n")
    turns = [
        tool_call("run_python", code=plant),
        calls(("r1", "read_file", {"path": "output/read-me"}),
              ("r2", "read_file", {"path": "output/climb"}),
              ("r3", "read_file", {"path": f"output/hostdir/{os.path.basename(target)}"}),
              ("w1", "write_file", {"path": "output/write-me", "content": "OVERWRITTEN"}),
              ("w2", "write_file", {"path": "output/hostdir/corral-attack-created", "content": "x"}),
              ("l1", "list_files", {"path": "output/hostdir"})),
        text("done") | {"expect": {"not_contains": [secret, "root:x:0:0"]}},
    ]
    out = tmp_path / "out"
    proc, srv = agent(tmp_path, turns, "-o", str(out))
    srv.assert_ok()
    assert proc.returncode == 0, proc.stderr.decode()
    msgs = tool_messages(srv, 2)
    for k in ("r1", "r2", "r3", "w1", "w2", "l1"):
        assert msgs[k].startswith("error:"), (k, msgs[k])
    with open(victim) as f:
        assert f.read() == "victim-untouched\n"
    assert not os.path.exists(os.path.join(os.path.dirname(target), "corral-attack-created"))
    # nothing of the host came out through --out
    for root, dirs, files in os.walk(out):
        for name in files + dirs:
            p = os.path.join(root, name)
            assert not os.path.islink(p), p
            if os.path.isfile(p):
                assert secret not in open(p, errors="replace").read()
    assert secret.encode() not in proc.stdout + proc.stderr


def test_output_replaced_by_a_symlink_to_the_host(tmp_path, host_file):
    secret = marker("agent-outdir")
    target = host_file(secret + "\n")
    plant = ("import os, shutil\n"
             "shutil.rmtree('output')\n"
             f"os.symlink({os.path.dirname(target)!r}, 'output')\n"
             "print('swapped')\n")
    turns = [tool_call("run_python", code=plant),
             calls(("a", "list_files", {"path": "output"}),
                   ("b", "read_file", {"path": f"output/{os.path.basename(target)}"})),
             text("done") | {"expect": {"not_contains": [secret]}}]
    out = tmp_path / "out"
    proc, srv = agent(tmp_path, turns, "-o", str(out))
    srv.assert_ok()
    msgs = tool_messages(srv, 2)
    assert msgs["a"].startswith("error:") and msgs["b"].startswith("error:")
    copied = [os.path.join(r, f) for r, _, fs in os.walk(out) for f in fs] if out.exists() else []
    assert copied == []
    assert secret.encode() not in proc.stdout + proc.stderr


def test_special_files_do_not_hang_or_leak(tmp_path):
    plant = ("import os, socket\n"
             "os.mkfifo('output/pipe')\n"
             "s = socket.socket(socket.AF_UNIX); s.bind('output/sock')\n"
             "open('output/a.txt', 'w').write('a')\n"
             "os.link('output/a.txt', 'output/b.txt')\n"
             "d = 'output'\n"
             "for i in range(100):\n"
             "    d += '/d'\n"
             "    os.mkdir(d)\n"
             "open(d + '/deep.txt', 'w').write('deep')\n")
    turns = [tool_call("run_python", code=plant),
             calls(("p", "read_file", {"path": "output/pipe"}),
                   ("s", "read_file", {"path": "output/sock"}),
                   ("h", "read_file", {"path": "output/b.txt"}),
                   ("w", "write_file", {"path": "output/pipe", "content": "x"})),
             text("done")]
    out = tmp_path / "out"
    t0 = time.monotonic()
    proc, srv = agent(tmp_path, turns, "-o", str(out), timeout=60)
    assert time.monotonic() - t0 < 30
    srv.assert_ok()
    assert proc.returncode == 0, proc.stderr.decode()
    msgs = tool_messages(srv, 2)
    assert "FIFO" in msgs["p"] and "socket" in msgs["s"] and "link" in msgs["h"]
    assert msgs["w"].startswith("error:")
    names = sorted(os.listdir(out))
    assert "pipe" not in names and "sock" not in names and "a.txt" not in names and "b.txt" not in names
    err = proc.stderr.decode()
    assert "not copied" in err and "output/pipe" in err


def test_file_names_cannot_drive_the_terminal(tmp_path):
    plant = ("open('output/\\x1b]0;pwned\\x07\\x1b[2J.txt', 'w').write('x')\n"
             "print('\\x1b[31mred\\x1b]52;c;Y29weQ==\\x07')\n")
    turns = [tool_call("run_python", code=plant), text("done \x1b[2J")]
    proc, srv = agent(tmp_path, turns, "-o", str(tmp_path / "out"))
    srv.assert_ok()
    err = proc.stderr.decode(errors="replace")
    assert "pwned" in err  # the name is shown...
    assert "\x1b]0;" not in err and "\x1b]52;" not in err and "\x1b[2J" not in err  # ...neutralised


def test_the_api_key_is_nowhere_in_the_jail(tmp_path):
    key = marker("sk-agent-key")
    probe = ("import os\n"
             "hits = []\n"
             "for pid in os.listdir('/proc'):\n"
             "    if not pid.isdigit():\n"
             "        continue\n"
             "    for f in ('environ', 'cmdline'):\n"
             "        try:\n"
             "            if b'sk-agent-key' in open(f'/proc/{pid}/{f}', 'rb').read():\n"
             "                hits.append((pid, f))\n"
             "        except OSError:\n"
             "            pass\n"
             "print('hits', hits, 'env', 'OPENAI_API_KEY' in os.environ)\n")
    turns = [tool_call("run_python", code=probe),
             text("done") | {"expect": {"contains": ["hits [] env False"]}}]
    env_key = {"OPENAI_API_KEY": key}
    with ScriptedServer(turns) as srv:
        proc = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--no-trace", "x"],
                              capture_output=True, timeout=60, cwd=tmp_path,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env_key})
    srv.assert_ok()
    assert proc.returncode == 0, proc.stderr.decode()
    assert srv.request_headers[0].get("Authorization") == f"Bearer {key}"
