# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/hosts'
import os

os.remove("/etc/hosts")
