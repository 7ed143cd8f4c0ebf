# rule: PY-PROC-002
# attempts: pwned-42
def tools():
    import os as m
    return m


tools().system("echo pwned-$((6*7))")
