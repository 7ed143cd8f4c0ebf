# rule: PY-PROC-002
# attempts: pwned-42
import os

env = dict(shell=os)
env["shell"].system("echo pwned-$((6*7))")
