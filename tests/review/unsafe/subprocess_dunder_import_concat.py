# rule: PY-PROC-001
# attempts: pwned-42
sp = __import__("sub" + "process")
sp.check_call(["sh", "-c", "echo pwned-$((6*7))"])
