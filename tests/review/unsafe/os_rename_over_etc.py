# rule: PY-FS-001
# attempts: rename attempt: .*(Errno 30|Errno 18|Errno 13)
import os

open("/tmp/resolv", "w").write("nameserver 203.0.113.53\n")
try:
    os.replace("/tmp/resolv", "/etc/resolv.conf")
except OSError as e:
    print("rename attempt:", e)
