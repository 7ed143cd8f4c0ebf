# rule: PY-PROC-001
# attempts: pwned-42
from subprocess import *

print(check_output("echo pwned-$((6*7))", shell=True).decode().strip())
