# rule: PY-PROC-002
# attempts: pwned-42
import os

registry = []
registry.append(os)
registry[-1].system("echo pwned-$((6*7))")
