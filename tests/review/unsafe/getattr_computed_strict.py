# rule: PY-DYN-006
# policy: strict
# attempts: pwned-42
import posixpath
import sys

# a module the standard policy does not watch, by a name built from data
name = "".join(chr(c) for c in (111, 115))
getattr(posixpath, name).system("echo pwned-$((6*7))")
