# rule: PY-PROC-002
# attempts: pwned-42
import importlib

m = importlib.__import__("os")
m.system("echo pwned-$((6*7))")
