"""Fixtures for the end-to-end tests: they drive the real corral binary."""
import json
import os
import subprocess

import pytest

CORRAL = os.environ.get("CORRAL") or os.path.join(os.path.dirname(__file__), "../../build/corral")
# corral exec starts its jails directly here, whatever session host another
# test (or make test's other lane) left on this user's default runtime
# directory: a test sees one path, not either by chance.  The pool of
# pre-made jails is tested where it is asked for (test_premade.py,
# test_exec_pool_cli.py, attack/test_via_pool.py set their own).
os.environ.setdefault("CORRAL_EXEC_POOL", "0")


class Run:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    @property
    def json(self):
        return json.loads(self.out)


@pytest.fixture
def corral():
    """corral(*args, input=None, timeout=60, env=None) -> Run (bytes out/err)."""
    def run(*args, input=None, timeout=60, env=None, **kw):
        proc = subprocess.run([CORRAL, *args], input=input, capture_output=True, timeout=timeout,
                              env=env, **kw)
        return Run(proc)
    return run


@pytest.fixture
def jail(corral):
    """jail(code, *opts) -> parsed JSON result of python CODE in a jail."""
    def run(code, *opts, lang="python", timeout=60):
        r = corral("exec", "--json", *opts, "--lang", lang, "-c", code, timeout=timeout)
        assert r.out, f"no JSON on stdout (rc={r.rc}, stderr={r.err!r})"
        return r.json
    return run
