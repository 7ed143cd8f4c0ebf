"""corral serve's E2B-compatible API driven by the official E2B JavaScript
SDK from npm, unmodified (tests/e2b/sdk.test.mjs under `node --test`): a
server of its own with two tokens and a variable in its environment that
no sandbox may see, then a SIGTERM that must leave nothing behind.

tests/e2b/setup.sh provides Node and the SDK (from the npm registry); the
test is skipped only when neither a new enough Node nor npm can be had."""
import os
import secrets
import signal
import subprocess
import threading
import time

import pytest

from test_serve import LIVE, Server, alive

E2B = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2b")
NO_NODE = 77  # setup.sh's exit status when no Node or npm can be had


def test_the_official_e2b_sdk(tmp_path, monkeypatch):
    setup = subprocess.run([os.path.join(E2B, "setup.sh")], capture_output=True, text=True, timeout=900)
    if setup.returncode == NO_NODE:
        pytest.skip(setup.stderr.strip())
    assert setup.returncode == 0, setup.stderr
    node, modules = setup.stdout.split("\n")[:2]

    # The E2B Python SDK insists on keys of this form; the JS one takes any.
    tokens = {"e2b-one": "e2b_" + secrets.token_hex(20), "e2b-two": "e2b_" + secrets.token_hex(20)}
    secret = "corral-e2b-secret-" + secrets.token_hex(8)
    host_file = tmp_path / "host-only.txt"
    host_file.write_text(f"host only {secrets.token_hex(8)}\n")
    monkeypatch.setenv("CORRAL_TEST_SECRET", secret)  # in the server's environment only
    s = Server(tmp_path, tokens=tokens)
    monkeypatch.delenv("CORRAL_TEST_SECRET")
    # Its log read as it comes: a full pipe would stall the server mid-run.
    log = []
    drain = threading.Thread(target=lambda: log.extend(s.proc.stderr), daemon=True)
    drain.start()
    url = s.url.rstrip("/")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "LANG": "C.UTF-8",
        "E2B_API_KEY": tokens["e2b-one"],
        "E2B_API_URL": url,
        "E2B_SANDBOX_URL": url,
        "CORRAL_E2B_OTHER_KEY": tokens["e2b-two"],
        "CORRAL_TEST_SECRET": secret,
        "CORRAL_E2B_HOST_FILE": str(host_file),
        "CORRAL_E2B_MODULES": modules,
    }
    try:
        r = subprocess.run([node, "--test", "--test-reporter=spec", os.path.join(E2B, "sdk.test.mjs")],
                           env=env, capture_output=True, text=True, timeout=600)
        t0 = time.monotonic()
        rc, kids = s.stop()
        stop_s = time.monotonic() - t0
    finally:
        if s in LIVE:
            s.stop(signal.SIGKILL)
    drain.join(10)
    if r.returncode != 0:
        pytest.fail(f"node --test exited {r.returncode}:\n{r.stdout}\n{r.stderr}\nserver log:\n{''.join(log)}",
                    pytrace=False)
    assert rc == 0, "".join(log)
    assert stop_s < 15, f"SIGTERM took {stop_s:.0f} s to stop the server"
    assert not alive(kids), f"left running after SIGTERM: {alive(kids)}"
    assert os.listdir(s.tmp) == [], os.listdir(s.tmp)
