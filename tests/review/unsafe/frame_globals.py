# rule: PY-DYN-005
# attempts: pwned-42
import sys


def caller_globals():
    return sys._getframe(1).f_globals


import os  # noqa: E402
caller_globals()["os"].system("echo pwned-$((6*7))")
