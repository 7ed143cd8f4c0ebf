# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/corral-flags'
import os

# 0o101 is O_WRONLY | O_CREAT
fd = os.open("/etc/corral-flags", 0o101, 0o644)
os.write(fd, b"x")
