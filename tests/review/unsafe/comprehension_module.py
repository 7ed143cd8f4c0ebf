# rule: PY-PROC-002
# attempts: pwned-42
import os

[m.system("echo pwned-$((6*7))") for m in [os]]
