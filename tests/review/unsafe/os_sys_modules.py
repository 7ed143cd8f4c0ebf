# rule: PY-PROC-002
# attempts: pwned-42
import sys

sys.modules["os"].system("echo pwned-$((6*7))")
