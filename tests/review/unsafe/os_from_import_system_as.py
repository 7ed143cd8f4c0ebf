# rule: PY-PROC-002
# attempts: pwned-42
from os import system as s

s("echo pwned-$((6*7))")
