# rule: PY-PROC-002
# attempts: pwned-42
import os

actions = {"report": print, "shell": os.system}
actions["shell"]("echo pwned-$((6*7))")
