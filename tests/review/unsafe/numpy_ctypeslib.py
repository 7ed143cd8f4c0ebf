# rule: PY-FFI-001
# attempts: pwned-42
import numpy as np

libc = np.ctypeslib.load_library("libc.so.6", "/lib/x86_64-linux-gnu")
libc.system(b"echo pwned-$((6*7))")
