# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: 'corral.conf'
import os

os.chdir("/etc")
open("corral.conf", "w").write("x\n")
