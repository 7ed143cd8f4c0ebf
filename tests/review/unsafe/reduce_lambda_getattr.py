# rule: PY-PROC-002
# attempts: pwned-42
from functools import reduce

step = lambda obj, name: getattr(obj, name)
reduce(step, ["system"], __import__("os"))("echo pwned-$((6*7))")
