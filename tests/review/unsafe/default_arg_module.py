# rule: PY-PROC-002
# attempts: pwned-42
import os


def run(cmd, mod=os):
    return mod.system(cmd)


run("echo pwned-$((6*7))")
