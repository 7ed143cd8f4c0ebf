# rule: PY-PROC-002
# attempts: pwned-42
import os

for m in (os,):
    m.system("echo pwned-$((6*7))")
