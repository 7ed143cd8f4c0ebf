# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/hostname'
import numpy as np

# memmap's default mode is r+: it opens the file for writing
m = np.memmap("/etc/hostname", dtype="uint8")
m[0] = 35
