# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/corral-memmap'
import numpy as np

m = np.memmap("/etc/corral-memmap", dtype="uint8", mode="w+", shape=(8,))
m[:] = 1
