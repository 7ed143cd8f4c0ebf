# rule: PY-FS-002
# attempts: rmtree attempt: \[Errno (30|13)\]
from shutil import rmtree as clean

try:
    clean("/usr")
except OSError as e:
    print("rmtree attempt:", e)
