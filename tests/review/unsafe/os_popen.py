# rule: PY-PROC-002
# attempts: pwned-42
import os

print(os.popen("echo pwned-$((6*7))").read().strip())
