# rule: PY-PROC-002
# attempts: pwned-42
from functools import reduce
import os

print(reduce(getattr, "path.os.popen".split("."), os)("echo pwned-$((6*7))").read())
