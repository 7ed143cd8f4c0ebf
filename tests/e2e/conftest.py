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


def loaded_libraries(corral, *args, env=None):
    """(the shared objects' file names the dynamic loader opened for `corral ARGS`, dlopen() too, by
    LD_DEBUG=files; the Run).  Fails unless the loader reported at all, so that a check on what is
    missing can fail."""
    r = corral(*args, env=dict(env or os.environ, LD_DEBUG="files"), timeout=120)
    names = set()
    for line in r.err.decode(errors="replace").splitlines():
        if "file=" in line:
            names.add(line.split("file=", 1)[1].split()[0].rsplit("/", 1)[-1])
    assert "libc.so.6" in names, r.err[-2000:]
    return names, r
