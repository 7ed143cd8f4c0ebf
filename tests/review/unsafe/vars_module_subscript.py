# rule: PY-PROC-002
# attempts: pwned-42
import os

vars(os)["system"]("echo pwned-$((6*7))")
