# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/x'
import pathlib

pathlib.Path("/etc/x").write_text("owned\n")
