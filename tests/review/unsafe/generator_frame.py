# rule: PY-DYN-005
# attempts: pwned-42
import os  # noqa: F401


def gen():
    yield 1


g = gen()
g.gi_frame.f_globals["os"].system("echo pwned-$((6*7))")
