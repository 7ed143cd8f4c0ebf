"""What a corral process loads at start: the libraries only some commands
need (HTTP serving, model calls, archives, TLS) are loaded when first used,
so that `corral exec` does not pay for them (docs/architecture.md: a
linked libmicrohttpd alone cost every start 3.7 ms here).  OpenSSL's own
checks are in test_net_secrets.py."""
import json
import subprocess

from conftest import CORRAL, loaded_libraries

# Each of these brings its own dependencies (GnuTLS and its seven
# libraries under libmicrohttpd, ~30 under libcurl).
LOADED_ON_USE = ("libmicrohttpd", "libwslay", "libgnutls", "libcurl", "libarchive", "libssl", "libcrypto",
                 "libcmark")


def test_exec_loads_no_library_it_does_not_use(corral):
    names, r = loaded_libraries(corral, "exec", "--json", "--", "true")
    assert r.rc == 0 and r.json["status"] == "ok", r.err[-2000:]
    loaded = sorted(n for n in names if n.startswith(LOADED_ON_USE))
    assert loaded == [], f"corral exec loaded {loaded}: load them on first use instead"


def test_serve_and_doctor_load_them_when_used(corral):
    r = corral("doctor", "--json", timeout=120)
    checks = {c["name"]: c for c in json.loads(r.out)["checks"]}
    assert checks["libmicrohttpd"]["ok"], checks["libmicrohttpd"]
    names, _ = loaded_libraries(corral, "doctor", "--json")
    assert any(n.startswith("libmicrohttpd") for n in names), names
    assert any(n.startswith("libwslay") for n in names), names
    assert checks["libcmark"]["ok"], checks["libcmark"]  # for the HTML export's reports
    assert any(n.startswith("libcmark") for n in names), names


def test_cmark_is_not_linked_in():
    # Linked in, its table of HTML entities was a third of corral's relocations, made at every start
    # (src/trace/cmark-dl.h): it is loaded by the HTML export instead.
    r = subprocess.run(["nm", "--defined-only", CORRAL], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "cmark_markdown_to_html" not in r.stdout and "cmark_entities" not in r.stdout
