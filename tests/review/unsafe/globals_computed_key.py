# rule: PY-PROC-002
# attempts: pwned-42
import os  # noqa: F401

key = "o" + "s"
globals()[key].system("echo pwned-$((6*7))")
