# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/usr/lib/python3/dist-packages/zz\.pth'
with open(file="/usr/lib/python3/dist-packages/zz.pth", mode="w") as f:
    f.write("import os; os.system('id')\n")
