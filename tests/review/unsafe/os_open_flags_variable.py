# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/usr/local/corral-flags'
import os

flags = os.O_WRONLY
flags |= os.O_CREAT
path = "/usr/" + "local/corral-flags"
os.write(os.open(path, flags), b"x")
