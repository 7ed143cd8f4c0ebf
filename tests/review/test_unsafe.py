"""The unsafe corpus (unsafe/): each snippet must be rejected by `corral
review` with the rule its header names, and, run without review inside the
jail, must show that it really attempts what that rule claims (a rule that
only ever catches harmless code proves nothing).

The jailed runs sit behind the isolation preflight (conftest.py); a snippet
never runs on the host.
"""
import os
import re

import pytest

from review_corpus import UNSAFE, Snippet, check_finding_shape, documented_rules, note, review, snippet_files

SNIPPETS = [Snippet(p) for p in snippet_files(UNSAFE)]
IDS = [s.name for s in SNIPPETS]

# Every bypass the issue names, and the snippet that carries it.
REQUIRED = {
    "import os as o; o.system": "os_import_as.py",
    "from os import system as s": "os_from_import_system_as.py",
    "__import__(\"os\")": "os_dunder_import.py",
    "importlib.import_module": "os_import_module.py",
    "getattr(os, \"sys\"+\"tem\")": "os_getattr_concat.py",
    "globals()[\"__builtins__\"]": "globals_builtins.py",
    "eval of a built string": "eval_built_string.py",
    "exec of a built string": "exec_reversed_source.py",
    "compile of a built string": "compile_then_exec.py",
    "ctypes (libc.system)": "ctypes_libc_system.py",
    "subprocess": "subprocess_run.py",
    "socket": "socket_connect.py",
    "pty": "pty_spawn.py",
    "os.fork loop": "fork_for_loop.py",
    "write outside /workspace and /tmp by literal path": "write_etc_literal.py",
    "shutil.rmtree of /": "rmtree_root.py",
    "rm -rf /": "rm_rf_root.sh",
    "curl ... | sh": "curl_pipe_sh.sh",
    "/dev/tcp": "dev_tcp_reverse_shell.sh",
    "fork bomb": "fork_bomb_classic.sh",
    "chmod +s": "chmod_plus_s.sh",
    "sys.modules[\"os\"]": "os_sys_modules.py",
    "().__class__.__base__.__subclasses__()": "subclasses_walk.py",
    "lambda aliasing": "os_lambda_alias.py",
    "operator.attrgetter": "os_attrgetter.py",
    "string building with join/reversed": "os_getattr_reversed.py",
    "string building with chr": "os_getattr_chr.py",
    "base64-decoded code fed to exec": "exec_base64.py",
    "from subprocess import *": "subprocess_star_import.py",
    "nested function aliasing": "subprocess_nested_function_alias.py",
    "importlib.__import__": "os_importlib_dunder_import.py",
    "os.popen": "os_popen.py",
    "os.execv": "os_execv.py",
    "os.posix_spawn": "os_posix_spawn.py",
    "pathlib.Path(\"/etc/x\").write_text": "write_pathlib_write_text.py",
    # issue 13: obfuscation
    "pkgutil.resolve_name": "pkgutil_resolve_name.py",
    "importlib.util spec loading": "importlib_find_spec_posix.py",
    "importer objects": "meta_path_find_spec.py",
    "functools.reduce/getattr chain over a module": "reduce_getattr_chain.py",
    "module as a default argument": "default_arg_module.py",
    "module through a lambda": "lambda_iife_module.py",
    "module in a container": "dict_of_modules.py",
    "asyncio subprocess API": "asyncio_loop_subprocess_exec.py",
    "asyncio connection API": "asyncio_create_connection.py",
    "io.FileIO outside /workspace": "io_fileio_outside.py",
    "os.open with flags outside /workspace": "os_open_numeric_flags.py",
    "numpy.memmap outside /workspace": "numpy_memmap_outside.py",
    "pandas/numpy writer outside /workspace": "pandas_to_csv_keyword.py",
    "sed w": "sed_w_command.sh",
    "find -exec": "find_exec_sh_c.sh",
    "cd, then a relative write": "cd_then_redirect.sh",
    "/dev/tcp from ANSI-C quoting": "ansi_c_dev_tcp.sh",
    "/dev/tcp from expansions in a trap string": "trap_expansion_dev_tcp.sh",
    "/dev/tcp from expansions in an eval string": "eval_expansion_dev_tcp.sh",
}

# A few snippets are also reviewed without --json.
TEXT_CASES = ("os_system.py", "subprocess_run.py", "ctypes_libc_system.py", "rm_rf_root.sh", "curl_pipe_sh.sh")

# Rules that reject under `standard` but have no snippet, and why.
NOT_DEMONSTRABLE = {
    "PY-FFI-002": "cffi is not installed on the host or in the jail, so no snippet could show the attempt",
}


def test_corpus_is_large_and_well_formed():
    assert len(SNIPPETS) >= 220, f"the unsafe corpus has {len(SNIPPETS)} snippets (at least 220 wanted)"
    bad = {s.name: s.problems() for s in SNIPPETS if s.problems()}
    assert not bad, f"snippets with a broken header: {bad}"
    langs = {s.lang for s in SNIPPETS}
    assert langs == {"python", "bash"}, langs
    note(f"unsafe corpus: {len(SNIPPETS)} snippets "
         f"({sum(s.lang == 'python' for s in SNIPPETS)} Python, {sum(s.lang == 'bash' for s in SNIPPETS)} shell), "
         f"{len({s.rule for s in SNIPPETS})} rules")


@pytest.mark.parametrize("bypass", sorted(REQUIRED))
def test_every_named_bypass_is_in_the_corpus(bypass):
    path = UNSAFE / REQUIRED[bypass]
    assert path.is_file(), f"{bypass}: {path} is missing"
    assert not Snippet(path).problems()


def test_rules_are_documented_and_covered():
    docs = documented_rules()
    if docs is None:
        pytest.skip("docs/review.md is not readable here (set CORRAL_SOURCE_ROOT)")
    unknown = sorted({s.rule for s in SNIPPETS} - set(docs))
    assert not unknown, f"snippets name rules docs/review.md does not list: {unknown}"
    rejecting = {r for r, sev in docs.items() if sev == "reject"}
    covered = {s.rule for s in SNIPPETS if s.policy != "strict" and not s.gap}
    missing = sorted(rejecting - covered - set(NOT_DEMONSTRABLE))
    assert not missing, f"rules that reject under standard without a snippet: {missing}"


def _with_gaps(snippets):
    """Snippets the review is known to miss are strict xfails: the test turns
    red when the review starts catching them, to have the header removed."""
    return [pytest.param(s, id=s.name, marks=pytest.mark.xfail(strict=True, reason=f"known gap: {s.gap}"))
            if s.gap else pytest.param(s, id=s.name) for s in snippets]


def test_known_gaps_are_few():
    gaps = [s.name for s in SNIPPETS if s.gap]
    note(f"unsafe corpus: {len(gaps)} known review gaps (strict xfail): {', '.join(gaps) or 'none'}")
    assert len(gaps) <= len(SNIPPETS) // 4, gaps


@pytest.mark.parametrize("snippet", _with_gaps(SNIPPETS))
def test_review_rejects(corral_bin, snippet):
    r = review(snippet.path, policy=snippet.policy)
    assert r.rc == 1, f"{snippet.name} was not rejected (exit {r.rc}, want 1): {r!r}"
    assert r.json is not None, f"--json printed no JSON object: {r!r}"
    assert r.json.get("verdict") == "reject", r
    for f in r.findings:
        check_finding_shape(f)
    assert snippet.rule in r.rules("reject"), (
        f"{snippet.name} must be rejected by {snippet.rule}; got {[(f['rule'], f['severity']) for f in r.findings]}")
    # The line of the finding is within the file.
    n_lines = len(snippet.text.splitlines())
    assert all(f["line"] <= n_lines for f in r.findings), r.findings


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.name in TEXT_CASES], ids=lambda s: s.name)
def test_review_text_output(corral_bin, snippet):
    """Without --json: the same verdict, one line per finding naming the rule."""
    r = review(snippet.path, policy=snippet.policy, json_out=False)
    assert r.rc == 1, r
    assert f"(rule {snippet.rule})" in r.stdout + r.stderr, r
    assert re.search(r"line \d+, column \d+: rejected by safety review: ", r.stdout + r.stderr), r


@pytest.mark.parametrize("snippet", SNIPPETS, ids=IDS)
def test_attempt_shows_in_the_jail(isolation, run_jail, workspace, snippet):
    """Run without review, inside the jail: the observable must appear."""
    args = ["-w", workspace, "--net", "none", "--pids", "32", "-m", "256M"]
    timeout = 10
    extra = list(snippet.jail_args)
    for i, a in enumerate(extra):
        if a in ("-t", "--timeout") and i + 1 < len(extra):
            timeout = float(extra[i + 1])
    run = run_jail(args + extra, snippet.text, timeout=timeout, lang=snippet.lang)
    seen = (run.get("stdout") or "") + (run.get("stderr") or "")
    if snippet.attempts:
        assert re.search(snippet.attempts, seen, re.M), (
            f"{snippet.name}: /{snippet.attempts}/ not in the jailed output: {run!r}")
    if snippet.creates:
        assert os.path.exists(os.path.join(workspace, snippet.creates)), (
            f"{snippet.name}: {snippet.creates} was not created in the workspace: {run!r}")
