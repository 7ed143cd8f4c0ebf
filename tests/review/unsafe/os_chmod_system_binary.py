# rule: PY-FS-001
# attempts: chmod attempt: .*(Errno 30|Errno 1|Errno 13)
import os

try:
    os.chmod("/usr/bin/env", 0o777)
except OSError as e:
    print("chmod attempt:", e)
