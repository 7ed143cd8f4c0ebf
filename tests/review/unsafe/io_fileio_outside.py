# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/corral-fileio'
import io

io.FileIO("/etc/corral-fileio", "w").write(b"x")
