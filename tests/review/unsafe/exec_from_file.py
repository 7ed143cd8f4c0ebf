# rule: PY-DYN-001
# attempts: pwned-42
with open("/tmp/stage2.py", "w") as f:
    f.write("import os\nos.system('echo pwned-$((6*7))')\n")
with open("/tmp/stage2.py") as f:
    exec(f.read())
