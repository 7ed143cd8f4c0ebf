# rule: PY-PROC-002
# attempts: pwned-42
import os

next(iter([os])).system("echo pwned-$((6*7))")
