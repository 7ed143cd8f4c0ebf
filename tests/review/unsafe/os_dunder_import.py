# rule: PY-PROC-002
# attempts: pwned-42
__import__("os").system("echo pwned-$((6*7))")
