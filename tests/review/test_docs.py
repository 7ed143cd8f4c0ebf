"""Legitimate code from independent sources, unedited: the examples in
Debian's documentation packages python-pandas-doc, python-scipy-doc,
python-statsmodels-doc and python-sklearn-doc.  Every one must pass `corral
review` under `standard` (no reject finding); an exception needs an entry in
EXCEPTIONS with its reason (and in docs/review.md).

What is reviewed, enumerated at test time from /usr/share/doc (nothing is
copied into the repository):
  - every .py file the packages ship (statsmodels and sklearn: their example
    galleries), one review unit per distinct file;
  - for pandas and scipy, which ship no .py files, the code examples of their
    HTML pages: the Python, IPython and doctest blocks, taken verbatim with the
    `>>> `/`... ` and `In [n]:`/`...:` prompts removed and the printed output
    left out.  A block that is not valid Python 3 (shell commands, IPython
    magics, pseudo-code) is left out and counted.  One review unit per page.

Each `corral review` run under ASan costs ~50 ms to start, so units are
reviewed in batches (one file of many units, findings mapped back to their
unit by line); every unit with a finding is then reviewed again on its own,
and only that verdict counts.  A batch could in principle hide a finding (a
name bound in one unit changing what a later unit's call means);
CORRAL_REVIEW_DOCS_UNBATCHED=1 reviews every unit on its own (minutes).

The packages are installed by `scripts/install-deps.sh test`.  When one is
missing the test fails as root (CI runs as root after install-deps) and is
skipped otherwise.
"""
import ast
import fnmatch
import hashlib
import html
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from review_corpus import check_finding_shape, note, review

DOC_ROOT = Path("/usr/share/doc")
PACKAGES = ("python-pandas-doc", "python-scipy-doc", "python-statsmodels-doc", "python-sklearn-doc")
# Packages whose HTML code examples are reviewed (they ship no example scripts).
HTML_PACKAGES = ("python-pandas-doc", "python-scipy-doc")

# Units (an fnmatch pattern over "PACKAGE/PATH") that the review may reject
# under `standard`, each with its reason.  Also listed in docs/review.md.
EXCEPTIONS = {
    "python-statsmodels-doc/examples/run_all.py":
        "PY-DYN-001: a driver that exec()s the text of the other example files it reads from disk; running code "
        "read at run time is what the rule stops (an agent runs or imports the scripts themselves)",
    "python-scipy-doc/html/reference/generated/scipy.integrate.quad.html":
        "PY-FFI-001: the LowLevelCallable example loads a compiled C library with ctypes; loading native code is "
        "what the rule stops",
    "python-scipy-doc/html/tutorial/integrate.html":
        "PY-FFI-001: the tutorial's section on faster integration loads a compiled C library with ctypes",
    "python-scipy-doc/html/tutorial/ndimage.html":
        "PY-FFI-001, PY-FFI-002: the tutorial's section on C callbacks for ndimage filters loads a compiled "
        "extension through ctypes and cffi",
}

BATCH_UNITS = 1 if os.environ.get("CORRAL_REVIEW_DOCS_UNBATCHED") else 150
BATCH_BYTES = 512 * 1024


def installed(pkg):
    dpkg = shutil.which("dpkg-query")
    if dpkg:
        r = subprocess.run([dpkg, "-W", "-f=${Status}", pkg], capture_output=True, text=True)
        return r.returncode == 0 and "install ok installed" in r.stdout
    return (DOC_ROOT / pkg).is_dir()


class Unit:
    def __init__(self, origin, code, blocks=1):
        self.origin = origin
        self.code = code if code.endswith("\n") else code + "\n"
        self.blocks = blocks


def is_python(code):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes in old examples
        try:
            ast.parse(code)
        except (SyntaxError, ValueError):
            return False
    return True


PROMPT_PY = re.compile(r"^(>>>|\.\.\.)( |$)")
PROMPT_IN = re.compile(r"^In \[\d*\]: ?")
PROMPT_CONT = re.compile(r"^\s*\.\.\.: ?")


def strip_prompts(text):
    """The code of a doctest or IPython session block, verbatim, without its
    prompts and printed output; a block without prompts as it is."""
    lines = text.split("\n")
    if any(PROMPT_PY.match(ln) for ln in lines):
        return "\n".join(PROMPT_PY.sub("", ln, count=1) for ln in lines if PROMPT_PY.match(ln))
    if any(PROMPT_IN.match(ln) for ln in lines):
        out, inside = [], False
        for ln in lines:
            if PROMPT_IN.match(ln):
                out.append(PROMPT_IN.sub("", ln, count=1))
                inside = True
            elif inside and PROMPT_CONT.match(ln):
                out.append(PROMPT_CONT.sub("", ln, count=1))
            else:
                inside = False
        return "\n".join(out)
    return text


# A Sphinx code block: <div class="... highlight-LANG ..."><div class="highlight"><pre>...</pre>.
CODE_BLOCK = re.compile(r'<div class="[^"]*\bhighlight-(?:python3?|ipython3?|default|pycon)\b[^"]*">\s*'
                        r'<div class="highlight">\s*<pre>(.*?)</pre>', re.S)
TAG = re.compile(r"<[^>]+>")


def html_units(pkg, stats):
    units = []
    for page in sorted((DOC_ROOT / pkg).rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        if "highlight-" not in text:
            continue
        kept = []
        for m in CODE_BLOCK.finditer(text):
            block = html.unescape(TAG.sub("", m.group(1)))
            code = textwrap.dedent(strip_prompts(textwrap.dedent(block))).strip("\n")
            if not code.strip():
                continue
            if is_python(code):
                kept.append(code)
            else:
                stats["not_python"] += 1
        if kept:
            stats["blocks"] += len(kept)
            units.append(Unit(f"{pkg}/{page.relative_to(DOC_ROOT / pkg)}", "\n".join(kept), len(kept)))
    return units


def py_units(pkg, stats):
    units, seen = [], set()
    for path in sorted((DOC_ROOT / pkg).rglob("*.py")):
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest in seen:
            stats["duplicates"] += 1
            continue
        seen.add(digest)
        units.append(Unit(f"{pkg}/{path.relative_to(DOC_ROOT / pkg)}", data.decode("utf-8", "replace")))
    return units


def review_units(units, workdir):
    """{origin: Review} for every unit with a finding, each confirmed by a
    review of that unit alone."""
    flagged = {}
    batch, size = [], 0

    def flush():
        if not batch:
            return
        path = os.path.join(workdir, "batch.py")
        spans, line = [], 1
        with open(path, "w") as f:
            for u in batch:
                f.write(u.code)
                n = u.code.count("\n")
                spans.append((line, line + n - 1, u))
                line += n
        r = review(path, policy="standard", lang="python", timeout=300)
        assert r.rc in (0, 1) and r.json is not None, r
        for finding in r.findings:
            for first, last, u in spans:
                if first <= finding["line"] <= last:
                    flagged[u.origin] = u
                    break
        batch.clear()

    for u in units:
        batch.append(u)
        size += len(u.code)
        if len(batch) >= BATCH_UNITS or size >= BATCH_BYTES:
            flush()
            size = 0
    flush()

    confirmed = {}
    for origin, u in flagged.items():
        path = os.path.join(workdir, "unit.py")
        with open(path, "w") as f:
            f.write(u.code)
        r = review(path, policy="standard", lang="python")
        assert r.rc in (0, 1) and r.json is not None, r
        if r.findings:
            confirmed[origin] = r
    return confirmed


def excepted(origin):
    return next((reason for pat, reason in EXCEPTIONS.items() if fnmatch.fnmatch(origin, pat)), None)


@pytest.mark.parametrize("pkg", PACKAGES)
def test_doc_examples_pass_review(corral_bin, pkg):
    if not installed(pkg):
        msg = f"{pkg} is not installed (scripts/install-deps.sh test installs it)"
        if os.geteuid() == 0:
            pytest.fail(msg)
        pytest.skip(msg)
    stats = {"blocks": 0, "not_python": 0, "duplicates": 0}
    units = py_units(pkg, stats)
    n_py = len(units)
    if pkg in HTML_PACKAGES:
        units += html_units(pkg, stats)
    assert units, f"{pkg}: no example scripts or code blocks found under {DOC_ROOT / pkg}"

    workdir = tempfile.mkdtemp(prefix="corral-review-docs-")
    start = time.monotonic()
    try:
        flagged = review_units(units, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - start

    rejected, warned = {}, {}
    for origin, r in flagged.items():
        for f in r.findings:
            check_finding_shape(f)
        rules = sorted({(f["rule"], f["line"]) for f in r.findings if f["severity"] == "reject"})
        if rules:
            rejected[origin] = rules
        elif r.findings:
            warned[origin] = sorted({f["rule"] for f in r.findings})

    what = f"{n_py} .py scripts" + (f" ({stats['duplicates']} duplicates skipped)" if stats["duplicates"] else "")
    if pkg in HTML_PACKAGES:
        what += (f", {len(units) - n_py} HTML pages with {stats['blocks']} Python code blocks "
                 f"({stats['not_python']} non-Python blocks left out)")
    note(f"{pkg}: {what}: {len(rejected)} rejected, {len(warned)} with warnings only; {elapsed:.1f} s")
    for origin, rules in sorted(warned.items()):
        note(f"  warn: {origin}: {', '.join(rules)}")

    unexplained = {o: r for o, r in rejected.items() if not excepted(o)}
    assert not unexplained, (f"{pkg}: {len(unexplained)} false positives under standard "
                             f"(unit: [(rule, line)]): {dict(list(sorted(unexplained.items()))[:40])}")
    stale = [pat for pat in EXCEPTIONS if pat.startswith(pkg + "/")
             and not any(fnmatch.fnmatch(o, pat) for o in rejected)]
    assert not stale, f"{pkg}: EXCEPTIONS entries that the review no longer rejects (remove them): {stale}"
