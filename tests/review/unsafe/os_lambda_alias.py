# rule: PY-PROC-002
# attempts: pwned-42
# gap: a module passed through a lambda parameter is not followed
import os

pick = lambda mod: mod.system
run = pick(os)
run("echo pwned-$((6*7))")
