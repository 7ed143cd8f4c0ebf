# rule: PY-PROC-003
# attempts: pwned-42
import os

os.spawnlp(os.P_WAIT, "sh", "sh", "-c", "echo pwned-$((6*7))")
