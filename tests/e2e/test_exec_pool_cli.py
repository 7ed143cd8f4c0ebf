"""tests/e2e/test_cli.py again (it is `corral exec`'s), with a session host keeping a pool of pre-made jails
(CORRAL_EXEC_POOL=4, docs/exec-pool.md): every one must hold as it does for a direct jail, and the host must
have served claims from its pool meanwhile.  The attack suite's files, processes and limits attacks run
through a pool in tests/attack/test_via_pool.py; the whole suite in `make stress`
(tests/stress/exec-pool-attack.sh)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

CORRAL = os.environ.get("CORRAL") or os.path.join(os.path.dirname(__file__), "../../build/corral")
HERE = os.path.dirname(os.path.abspath(__file__))


def test_cli_exec_tests_through_the_pool():
    rt = tempfile.mkdtemp(prefix="corral-exec-pool-")
    os.chmod(rt, 0o700)
    # The pool refills at once (not only once claims stop coming for 100 ms), so that test_cli.py's runs one
    # after the other are served by it.
    env = dict(os.environ, XDG_RUNTIME_DIR=rt, CORRAL_EXEC_POOL="4", CORRAL_EXEC_POOL_QUIET_MS="0",
               CORRAL_EXEC_POOL_WAIT_MS="3000")
    assert subprocess.run([CORRAL, "session", "start", "--cold"], env=env, capture_output=True,
                          timeout=120).returncode == 0
    try:
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            os.path.join(HERE, "test_cli.py")], env=env, capture_output=True, text=True,
                           timeout=600, cwd=os.path.dirname(os.path.dirname(HERE)))
        assert p.returncode == 0, p.stdout[-4000:]
        st = json.loads(subprocess.run([CORRAL, "session", "status", "--json"], env=env, capture_output=True,
                                       text=True, timeout=60).stdout)["exec_pool"]
        # 11 of its runs ask for a pooled jail (the others are bad input,
        # refused as a direct jail refuses it, or ask what a pooled jail cannot
        # give) and take one unless the pool is empty at that moment (a busy
        # host refills it slowly; attack/test_via_pool.py waits for it and
        # checks every run); those that ask for a workspace or bind a jail may
        # not have fell back, so that the direct jail says why in its own words.
        asked = st["claimed"] + st["fallbacks"].get("none ready", 0)
        assert asked >= 11 and st["claimed"] >= 5 and st["failed"] == 0, st
        assert set(st["fallbacks"]) <= {"a workspace a jail may not have", "a writable bind a jail may not have",
                                        "none ready"}, st
    finally:
        subprocess.run([CORRAL, "session", "shutdown"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(rt, ignore_errors=True)
