# rule: PY-PROC-002
# attempts: pwned-42
import builtins

builtins.__import__("os").system("echo pwned-$((6*7))")
