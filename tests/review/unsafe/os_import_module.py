# rule: PY-PROC-002
# attempts: pwned-42
import importlib

importlib.import_module("os").system("echo pwned-$((6*7))")
