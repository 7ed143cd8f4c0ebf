# rule: PY-PROC-002
# attempts: pwned-42
import math
import os

mods = [math, os]
mods[1].system("echo pwned-$((6*7))")
