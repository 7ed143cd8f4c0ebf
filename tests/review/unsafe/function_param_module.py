# rule: PY-PROC-002
# attempts: pwned-42
import os


def call(mod, cmd):
    fn = getattr(mod, "sys" + "tem")
    return fn(cmd)


call(os, "echo pwned-$((6*7))")
