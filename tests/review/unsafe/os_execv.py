# rule: PY-PROC-003
# attempts: pwned-42
import os

os.execv("/bin/sh", ["sh", "-c", "echo pwned-$((6*7))"])
