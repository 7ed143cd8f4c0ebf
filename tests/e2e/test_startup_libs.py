"""What a corral process loads at start: the libraries only some commands
need (HTTP serving, model calls, archives, TLS) are loaded when first used,
so that `corral exec` does not pay for them (docs/architecture.md: a
linked libmicrohttpd alone cost every start 3.7 ms here)."""
import json
import os
import re
import subprocess

from conftest import CORRAL

# Each of these brings its own dependencies (GnuTLS and its seven
# libraries under libmicrohttpd, ~30 under libcurl).
LOADED_ON_USE = ("libmicrohttpd", "libwslay", "libgnutls", "libcurl", "libarchive")


def loaded_libraries(corral, *args, env=None):
    """The shared objects the dynamic loader opened for `corral ARGS`, by
    LD_DEBUG (every load, dlopen() too, to stderr)."""
    e = dict(env or os.environ, LD_DEBUG="libs")
    proc = subprocess.run([corral, *args], capture_output=True, env=e, timeout=60)
    found = re.findall(rb"calling init: (\S+)", proc.stderr)
    assert found, proc.stderr[-2000:]
    return proc, {os.path.basename(p).decode() for p in found}


def test_exec_loads_no_library_it_does_not_use():
    proc, libs = loaded_libraries(CORRAL, "exec", "--json", "--", "true")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["status"] == "ok"
    assert any(lib.startswith("libc.so") for lib in libs), libs
    loaded = [lib for lib in libs if lib.startswith(LOADED_ON_USE)]
    assert loaded == [], f"corral exec loaded {loaded}: load them on first use instead"


def test_serve_and_doctor_load_them_when_used(corral):
    r = corral("doctor", "--json", timeout=120)
    checks = {c["name"]: c for c in json.loads(r.out)["checks"]}
    assert checks["libmicrohttpd"]["ok"], checks["libmicrohttpd"]
    _, libs = loaded_libraries(CORRAL, "doctor", "--json")
    assert any(lib.startswith("libmicrohttpd") for lib in libs), libs
    assert any(lib.startswith("libwslay") for lib in libs), libs
