# rule: PY-DYN-004
# attempts: pwned-42
ns = __builtins__.__dict__ if hasattr(__builtins__, "__dict__") else __builtins__
ns["ex" + "ec"]("import os; os.system('echo pwned-$((6*7))')")
