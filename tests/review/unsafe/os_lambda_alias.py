# rule: PY-PROC-002
# attempts: pwned-42
import os

pick = lambda mod: mod.system
run = pick(os)
run("echo pwned-$((6*7))")
