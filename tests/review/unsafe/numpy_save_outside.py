# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/usr/lib/model\.npy'
import numpy as np

np.save("/usr/lib/model.npy", np.zeros(3))
