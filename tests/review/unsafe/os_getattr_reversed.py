# rule: PY-DYN-003
# attempts: pwned-42
import os

name = "".join(reversed("metsys"))
getattr(os, name)("echo pwned-$((6*7))")
