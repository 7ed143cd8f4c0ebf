# rule: PY-PROC-002
# attempts: pwned-42
import os


class Box:
    pass


box = Box()
box.mod = os
box.mod.system("echo pwned-$((6*7))")
