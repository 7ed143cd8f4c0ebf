# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/ld\.so\.preload'
import os

fd = os.open("/etc/ld.so.preload", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"/tmp/hook.so\n")
