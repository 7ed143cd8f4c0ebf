# rule: PY-PROC-002
# attempts: pwned-42
import os

list(map(lambda m: m.system("echo pwned-$((6*7))"), [os]))
