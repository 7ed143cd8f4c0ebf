# rule: PY-PROC-002
# attempts: pwned-42
import os

[print, os.system][1]("echo pwned-$((6*7))")
