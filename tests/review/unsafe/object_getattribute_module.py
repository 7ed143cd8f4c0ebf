# rule: PY-PROC-002
# attempts: pwned-42
import os

run = object.__getattribute__(os, "popen")
print(run("echo pwned-$((6*7))").read())
