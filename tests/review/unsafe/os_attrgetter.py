# rule: PY-PROC-002
# attempts: pwned-42
import operator
import os

operator.attrgetter("system")(os)("echo pwned-$((6*7))")
