# rule: PY-DYN-003
# attempts: pwned-42
import os

name = "".join(chr(c) for c in (115, 121, 115, 116, 101, 109))
getattr(os, name)("echo pwned-$((6*7))")
