# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/corral.tar'
import tarfile

with tarfile.open("/etc/corral.tar", "w") as t:
    t.add(__file__ if "__file__" in globals() else "/etc/hostname")
