# rule: PY-PROC-002
# attempts: pwned-42
import os as o

o.system("echo pwned-$((6*7))")
