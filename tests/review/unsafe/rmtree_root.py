# rule: PY-FS-002
# attempts: rmtree attempt: \[Errno (30|13|16)\]
# Demonstrated only through the jail: its root is read-only, so the attempt fails.
import shutil

try:
    shutil.rmtree("/")
except OSError as e:
    print("rmtree attempt:", e)
