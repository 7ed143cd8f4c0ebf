# rule: PY-FS-002
# attempts: removedirs attempt: .*(Errno 30|Errno 39|Errno 13)
import os

try:
    os.removedirs("/etc")
except OSError as e:
    print("removedirs attempt:", e)
