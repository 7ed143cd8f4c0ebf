# rule: PY-PROC-002
# attempts: pwned-42
import functools
import os

functools.partial(os.system, "echo pwned-$((6*7))")()
