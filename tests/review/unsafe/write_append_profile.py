# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/profile'
open("/etc/profile", "a").write("export PATH=/tmp/evil:$PATH\n")
