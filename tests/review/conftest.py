"""Fixtures for the review corpus: `corral review` on the unsafe and the
legitimate corpus, and runs of both through `corral exec` (review off; the
jail is the boundary).

Jails are started with the attack suite's helpers, and the jailed tests sit
behind the attack suite's isolation preflight (tests/attack/README.md): before
the first snippet runs, a jail must prove it has its own pid, network, mount
and user namespaces.  If it does not, the session stops: an unsafe snippet is
never run anywhere but in a working jail.
"""
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ATTACK = HERE.parent / "attack"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ATTACK))

import corral_attack  # noqa: E402
from dataset import write_dataset  # noqa: E402
from review_corpus import CORRAL, SUMMARY  # noqa: E402

# The jails must use the same corral as the reviews, started directly
# whatever session host another suite left running (as the attack suite's).
corral_attack.CORRAL = CORRAL
os.environ.setdefault("CORRAL_EXEC_POOL", "0")


@pytest.fixture(scope="session")
def isolation():
    """Prove isolation before anything runs in a jail; stop the session otherwise."""
    if not (os.path.isfile(CORRAL) and os.access(CORRAL, os.X_OK)):
        pytest.exit(f"review corpus: no corral binary at {CORRAL} (set CORRAL)", returncode=1)
    problems, run = [], None
    for net in ("none", "down"):
        p, r = corral_attack.preflight_problems(corral_attack.run_jail, net)
        problems += p
        run = run or r
    if problems:
        pytest.exit("review corpus preflight FAILED, no snippet was run:\n  " + "\n  ".join(problems),
                    returncode=1)
    return run["limits_backend"]


@pytest.fixture(scope="session")
def corral_bin():
    if not (os.path.isfile(CORRAL) and os.access(CORRAL, os.X_OK)):
        pytest.fail(f"no corral binary at {CORRAL} (set CORRAL)")
    return CORRAL


def _shared_tmpdir(prefix, mode):
    # Not pytest's tmp_path: that is 0700 under root, and as root the jail
    # runs as a pooled uid that must reach what is bound in.
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    os.chmod(d, mode)
    return d


@pytest.fixture
def workspace():
    """A fresh host directory for `-w` (mode 0777), removed afterwards."""
    d = _shared_tmpdir("corral-review-ws-", 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def dataset():
    """A host directory holding data/ (dataset.py), written once."""
    d = _shared_tmpdir("corral-review-data-", 0o755)
    write_dataset(d)
    for root, dirs, files in os.walk(d):
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def data_workspace(dataset, workspace):
    """A fresh `-w` directory holding a copy of the dataset."""
    shutil.copytree(os.path.join(dataset, "data"), os.path.join(workspace, "data"))
    for root, dirs, files in os.walk(workspace):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o777 if name in dirs else 0o666)
    return workspace


@pytest.fixture
def run_jail():
    """run_jail(args, code=..., timeout=..., lang=...) -> JailRun (the attack suite's)."""
    return corral_attack.run_jail


def pytest_terminal_summary(terminalreporter):
    if not SUMMARY:
        return
    terminalreporter.section("corral review corpus")
    terminalreporter.write_line(f"corral: {CORRAL}")
    for line in SUMMARY:
        terminalreporter.write_line(line)
