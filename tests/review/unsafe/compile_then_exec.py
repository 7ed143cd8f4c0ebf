# rule: PY-DYN-001
# attempts: pwned-42
lines = ["import os", "os.system('echo pwned-$((6*7))')"]
code = compile("\n".join(lines), "<report>", "exec")
exec(code)
