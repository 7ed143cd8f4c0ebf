# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/usr/bin/python3-helper'
import shutil

with open("payload.sh", "w") as f:
    f.write("#!/bin/sh\necho hi\n")
shutil.copy("payload.sh", "/usr/bin/python3-helper")
