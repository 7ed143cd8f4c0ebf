# rule: PY-PROC-002
# attempts: pwned-42
import operator
import sys

operator.getitem(sys.modules, "o" + "s").system("echo pwned-$((6*7))")
