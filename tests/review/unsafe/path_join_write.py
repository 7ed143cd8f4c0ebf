# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/usr/lib/corral.pth'
import os

with open(os.path.join("/usr", "lib", "corral.pth"), "w") as f:
    f.write("import os\n")
