# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/corral-
import numpy as np

name = "corral-" + str(np.int64(42))
np.savetxt(f"/etc/{name}.txt", np.arange(3))
