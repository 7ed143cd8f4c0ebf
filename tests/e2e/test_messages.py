"""Library messages speak of settings, not of the CLI's flags.

The library (src/ outside src/cli/) is driven by the CLI and by servers
(HTTP, MCP) whose callers have no flags: a message says "the request
timeout" and names the config field in corral_error.field; the CLI adds the
flag (src/cli/errors.c, docs/errors.md).  This scans every string literal of
the library for one of corral's options, as `corral run|exec|session|serve|mcp|mcp-jail --help`
list them, and checks that every field the library names has a flag in the
CLI's table."""
import os
import re
import subprocess

import pytest

from conftest import CORRAL

ROOT = os.environ.get("CORRAL_SOURCE_ROOT") or os.path.join(os.path.dirname(__file__), "..", "..")
SRC = os.path.join(ROOT, "src")
LONG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
SHORT_IN_HELP = re.compile(r"(?<![\w-])-[a-zA-Z](?=[ ,\]])")

# Literals that name a corral option without being a message about it, by
# (file, option).  Each entry must still match (a stale one fails), so the
# list stays as short as what it excuses.
ALLOWED = {
    # The review parses shell commands and quotes them back: "install -m
    # MODE" is install(1)'s flag, spelt like corral's -m (--model).
    ("src/review/shell.c", "-m"),
    # ... and its long form "install --mode MODE", spelt like corral run's
    # --mode (plain, tdd, team).
    ("src/review/shell.c", "--mode"),
    # The advice for a slow cgroup v1 migration quotes mount(8): "mount -o
    # remount,favordynmods", spelt like corral run's -o (--out).
    ("src/lib/probe.c", "-o"),
}
# The HTTP API's request fields ("limits", "code"): a caller's JSON, which no
# CLI flag sets, so they need no flag in src/cli/errors.c.
API_FIELD_SOURCES = {"src/server/routes.c", "src/server/sandbox.c", "src/server/e2b.c", "src/server/e2b-envd.c",
                     "src/server/mcp-http.c", "src/server/runs.c"}
# Not scanned: the parsers tree-sitter generates (fetched, not corral's text).
SKIP_DIRS = {os.path.join(SRC, "cli"), os.path.join(SRC, "review", "grammars")}
# Not corral options, so not matched at all (no entry needed): the CSS custom
# properties of src/trace/export.c (--fg, --bad), the llama.cpp and vLLM error
# texts src/model/openai.c recognises (--jinja, --enable-auto-tool-choice),
# python3's -c and -u passed as arguments (a short option alone is no flag).

# scripts/run-tests.sh's second pass (as an ordinary user) copies only a few
# sources: the scan needs them all, and the first pass has run it.
needs_sources = pytest.mark.skipif(not os.path.exists(os.path.join(SRC, "cli", "errors.c")),
                                   reason="the sources are not here (CORRAL_SOURCE_ROOT)")

TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|\'(?:\\.|[^\\\'\n])*\'|"(?:\\.|[^\\"\n])*"', re.S)
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def corral_options():
    longs, shorts = set(), set()
    for cmd in ("run", "exec", "session", "serve", "mcp", "mcp-jail"):
        r = subprocess.run([CORRAL, cmd, "--help"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        longs |= set(LONG.findall(r.stdout))
        shorts |= set(SHORT_IN_HELP.findall(r.stdout))
    longs.discard("--help")
    shorts.discard("-h")
    return longs, shorts


def literals(text):
    """(line, text) of each string literal, adjacent ones joined as C joins
    them (comments between them too); comments and character constants are
    not literals."""
    out, cur, end = [], None, 0
    for m in TOKEN.finditer(text):
        t = m.group(0)
        if t.startswith("/"):
            continue
        if t.startswith('"') and cur is not None and COMMENT.sub("", text[end:m.start()]).strip() == "":
            cur[1] += t[1:-1]
        elif t.startswith('"'):
            cur = [text.count("\n", 0, m.start()) + 1, t[1:-1]]
            out.append(cur)
        else:
            cur = None
        end = m.end()
    return [tuple(c) for c in out]


def library_sources():
    for d, dirs, files in os.walk(SRC):
        dirs[:] = sorted(x for x in dirs if os.path.join(d, x) not in SKIP_DIRS)
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                p = os.path.join(d, f)
                yield os.path.relpath(p, ROOT), open(p, encoding="utf-8", errors="replace").read()


def named_options(s, longs, shorts):
    """The corral options a literal names: a long one anywhere, a short one
    where it reads as a flag ("-o DIR", "use -o", "(-o)"), not alone ("-c"
    as an argument)."""
    found = {o for o in LONG.findall(s) if o in longs}
    found |= {o for o in shorts if re.search(rf"(?<![\w-]){re.escape(o)}(?=[ ),])", s)}
    return found


def test_the_scanner_finds_flags():
    """What the test below relies on: joined literals, flags told apart."""
    text = ('f("no model given: use "\n  "--model NAME", x); g(\'"\'); h("-o DIR"); /* "--model" */ i("-c")\n'
            'j("a" /* why */ "b"); k("x", \'y\', "z")')
    joined = [s for _, s in literals(text)]
    assert joined == ["no model given: use --model NAME", "-o DIR", "-c", "ab", "x", "z"], joined
    longs, shorts = {"--model", "--out"}, {"-o", "-c"}
    assert named_options("use --model NAME", longs, shorts) == {"--model"}
    assert named_options("write it with -o DIR", longs, shorts) == {"-o"}
    assert named_options("--reviewer-model x --models", longs, shorts) == set()
    assert named_options("-c", longs, shorts) == set() and named_options("(-c)", longs, shorts) == {"-c"}


@needs_sources
def test_library_messages_name_no_cli_flags():
    longs, shorts = corral_options()
    # the lists come from the real --help: they must hold the options messages used to name
    assert {"--model", "--base-url", "--max-iterations", "--request-timeout"} <= longs, longs
    assert "-o" in shorts, shorts
    bad, used = [], set()
    for path, text in library_sources():
        for line, s in literals(text):
            for o in sorted(named_options(s, longs, shorts)):
                if (path, o) in ALLOWED:
                    used.add((path, o))
                else:
                    bad.append(f"{path}:{line}: {o} in \"{s[:120]}\"")
    assert not bad, ("library messages name CLI flags; say the setting in words and set the error's field "
                     "(corral_usage_field, corral_error_set_field; src/cli/errors.c adds the flag):\n" +
                     "\n".join(bad))
    stale = sorted(ALLOWED - used)
    assert not stale, f"allow-list entries that match nothing any more: {stale}"


@needs_sources
def test_every_field_has_a_flag():
    """A field the library names is one the CLI can turn into a flag, and the
    flag exists."""
    fields = set()
    patterns = [
        r'corral_usage_field\(\s*[\w&>*-]+\s*,\s*"([a-z_,]+)"',
        r'corral_error_set_field\([^;]*?"([a-z_,]+)"',
        r'->field\s*=\s*"([a-z_,]+)"',
        r'"field",\s*"([a-z_,]+)"',
        r'set_outcome\(\s*\w+\s*,\s*\w+\s*,\s*\w+\s*,\s*"([a-z_,]+)"',
    ]
    for path, text in library_sources():
        if path in API_FIELD_SOURCES:
            continue
        for p in patterns:
            for m in re.findall(p, text, re.S):
                fields |= set(m.split(","))
    assert {"model", "base_url", "max_iterations", "request_timeout", "context_tokens", "inputs"} <= fields, fields
    table = dict(re.findall(r'\{\s*"([a-z_]+)",\s*"(-[-a-z]+)"\s*\}',
                            open(os.path.join(SRC, "cli", "errors.c")).read()))
    missing = sorted(fields - set(table))
    assert not missing, f"fields with no flag in src/cli/errors.c: {missing}"
    longs, shorts = corral_options()
    unknown = sorted(f for f in table.values() if f not in longs | shorts)
    assert not unknown, f"src/cli/errors.c names flags no --help has: {unknown}"


def test_the_cli_adds_the_flag(tmp_path):
    """The library says "the model" and names the field; the CLI's message
    tells its user the flag to fix, once, and its other commands' words stay
    as they were."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CORRAL_MODEL", "OPENAI_"))}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_STATE_HOME=str(tmp_path / "state"))
    r = subprocess.run([CORRAL, "run", "--base-url", "http://127.0.0.1:9/v1", "x"], capture_output=True, text=True,
                       timeout=60, env=env, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "no model given" in r.stderr and r.stderr.rstrip().endswith("the model (--model)"), r.stderr
    assert r.stderr.count("--model") == 1, r.stderr
