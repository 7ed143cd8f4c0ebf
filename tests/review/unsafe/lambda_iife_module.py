# rule: PY-PROC-002
# attempts: pwned-42
import os

print((lambda m: m.popen("echo pwned-$((6*7))").read())(os))
