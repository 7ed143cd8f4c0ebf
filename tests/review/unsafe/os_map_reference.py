# rule: PY-PROC-002
# attempts: pwned-42
import os

list(map(os.system, ["echo pwned-$((6*7))"]))
