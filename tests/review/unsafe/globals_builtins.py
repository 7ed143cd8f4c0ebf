# rule: PY-DYN-004
# attempts: pwned-42
b = globals()["__builtins__"]
imp = b["__import__"] if isinstance(b, dict) else b.__import__
imp("os").system("echo pwned-$((6*7))")
