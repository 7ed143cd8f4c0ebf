"""The legitimate corpus (legit/): data-analysis scripts of the kind an agent
writes (Python, and a few shell scripts: .sh runs as bash).  Each must pass review under `standard` (exit 0, no reject finding)
and must really run in the jail on the generated dataset (dataset.py), so
that the corpus is code that works, not code shaped to please the review.

All scripts run by default (about a second each, most of it importing
pandas/matplotlib); CORRAL_REVIEW_LEGIT_SAMPLE=N runs an even spread of N.
"""
import os

import pytest

from review_corpus import LEGIT, check_finding_shape, lang_of, note, review, snippet_files

SCRIPTS = snippet_files(LEGIT)
IDS = [p.name for p in SCRIPTS]


def _jail_sample():
    n = os.environ.get("CORRAL_REVIEW_LEGIT_SAMPLE")
    if not n:
        return SCRIPTS
    n = max(1, int(n))
    step = max(1, len(SCRIPTS) // n)
    return SCRIPTS[::step][:n]


def test_corpus_is_large_and_varied():
    assert len(SCRIPTS) >= 100, f"the legitimate corpus has {len(SCRIPTS)} scripts (at least 100 wanted)"
    text = "\n".join(p.read_text() for p in SCRIPTS)
    for lib in ("import pandas", "import numpy", "matplotlib.use(\"Agg\")", "from scipy", "import csv",
                "import json", "pathlib", "datetime", "statistics", "import re", "itertools", "collections",
                "os.makedirs", "os.path", "tempfile", "logging", "argparse"):
        assert lib in text, f"no legitimate script uses {lib}"
    note(f"legitimate corpus: {len(SCRIPTS)} scripts")


@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
def test_passes_review_standard(corral_bin, script):
    r = review(script, policy="standard")
    assert r.rc == 0, f"{script.name}: a false positive (exit {r.rc}): {r.findings or r!r}"
    assert r.json is not None, r
    assert r.json.get("verdict") in ("allow", "warn"), r
    for f in r.findings:
        check_finding_shape(f)
    assert not r.rules("reject"), r.findings
    if r.findings:
        note(f"legit/{script.name}: warnings {[(f['rule'], f['line']) for f in r.findings]}")


@pytest.mark.parametrize("script", _jail_sample(), ids=lambda p: p.name)
def test_runs_in_the_jail(isolation, run_jail, data_workspace, script):
    args = ["-w", data_workspace, "--net", "none", "-m", "512M", "--pids", "64"]
    run = run_jail(args, script.read_text(), timeout=60, lang=lang_of(script))
    assert run["status"] == "ok" and run["exit_code"] == 0, f"{script.name} failed in the jail: {run!r}"
    assert "Traceback" not in run["stderr"], run
    assert (run["stdout"] + run["stderr"]).strip(), f"{script.name} printed nothing: {run!r}"
