# rule: PY-PROC-001
# attempts: pwned-42
from subprocess import getoutput as g

print(g("echo pwned-$((6*7))"))
