"""Real programs run unmodified in the jail: CPython's own regression suite as
the yardstick (docs/compatibility.md).

The quick set of cpython_compare.py runs here, each module bare and through
`corral exec` at once; every test that does worse in the jail must be listed
with its reason in cpython-differences.txt.  No module may be killed by a
probe.  `tests/compat/cpython_compare.py` (no arguments) runs the full set.
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cpython_compare as cc  # noqa: E402

CORRAL = os.environ.get("CORRAL") or os.path.join(HERE, "../../build/corral")
WHO = "root" if os.geteuid() == 0 else "user"

needs_suite = pytest.mark.skipif(not os.path.exists(os.path.join(cc.TESTSUITE, "test_os.py")),
                                 reason="CPython's test suite is not installed (libpython3.11-testsuite)")


def test_differences_file_is_well_formed():
    """Every entry names a module of the comparison and gives a reason."""
    rules = cc.load_differences()
    assert rules, "cpython-differences.txt lists nothing"
    for pattern, who, reason in rules:
        module = pattern.split(".")[0]
        assert module in cc.FULL, f"{pattern}: {module} is not in the comparison"
        assert len(reason) > 20, f"{pattern}: a reason in words, please"


@needs_suite
@pytest.mark.parametrize("module", cc.QUICK)
def test_module_runs_as_on_the_bare_host(module):
    r = cc.compare_module(CORRAL, module, cc.load_differences(), WHO)
    jail = r["jail"]
    assert not jail["status"].startswith("killed"), f"{module} was killed in the jail: {jail}"
    lines = [f"{d[0]}: bare {d[1]}, jail {d[2]} {d[3]}" for d in r["unexplained"]]
    assert not lines, (f"{module}: differences without a reason in cpython-differences.txt (as {WHO}):\n  "
                       + "\n  ".join(lines) + f"\njail: {jail}")
