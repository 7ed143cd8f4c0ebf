"""One outcome, one wording: a cold jail (`corral exec --json`) and a session's
jail (warm: forked from the zygote; cold: `session start --cold`) that end the
same way give the same status, limit and reason (src/lib/outcome.c classifies
both).  A session step that loses its interpreter reports its jail's reason as
`jail_reason` (docs/sessions.md)."""
import json
import subprocess

import pytest

from conftest import CORRAL
# the fixtures: warm and cold sessions on one host per kind for this module, in a private runtime dir
from test_session import sessions, shared_rundirs  # noqa: F401

MEMORY = "256M"

# name: (code, the cold result's status, limit, reason)
ENDS = {
    "seccomp": ("import ctypes\nctypes.CDLL(None).ptrace(16, 1, 0, 0)", "killed", "seccomp",
                "blocked system call 'ptrace': not allowed in the jail"),
    "memory": ("hog = []\nwhile True:\n    hog.append(bytearray(16 << 20))", "oom", "memory",
               "memory limit of 256 MiB reached"),
    "signal": ("import ctypes\nctypes.string_at(0)", "killed", "signal", "killed by signal 11 (Segmentation fault)"),
}


def cold_exec(code):
    r = subprocess.run([CORRAL, "exec", "--json", "-m", MEMORY, "--lang", "python", "-c", code],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout, f"no JSON (rc={r.returncode}, stderr={r.stderr!r})"
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def backend():
    return cold_exec("pass")["limits_backend"]


@pytest.mark.parametrize("end", sorted(ENDS))
def test_same_end_same_reason_cold_and_in_a_session(sessions, backend, end):
    code, status, limit, reason = ENDS[end]
    if end == "memory" and backend == "rlimit":
        pytest.skip("under RLIMIT_AS the allocation fails (MemoryError) and a session's interpreter lives on")
    cold = cold_exec(code)
    assert (cold["status"], cold["limit"], cold["reason"]) == (status, limit, reason), cold

    info = sessions.start("-m", MEMORY)
    assert info["warm"] is (sessions.kind == "warm"), info
    rc, r, err = sessions.step(info["id"], code, "--timeout", "30")
    assert r["status"] == "lost" and r["state_lost"] is True, (r, err)
    assert r["limit"] == cold["limit"], r
    assert r["jail_reason"] == cold["reason"], r
    assert rc == cold["exit_code"], (rc, r)
    if end == "seccomp":
        assert r["syscall"] == cold["syscall"] == "ptrace", (r, cold)
    # The next step starts clean and reports no jail of the past.
    rc, r, err = sessions.step(info["id"], "21 * 2")
    assert rc == 0 and r["value"]["text"] == "42" and "jail_reason" not in r, (r, err)
