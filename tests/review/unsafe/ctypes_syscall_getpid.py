# rule: PY-FFI-001
# attempts: raw-syscall-pid=\d+
import ctypes

libc = ctypes.CDLL(None, use_errno=True)
print("raw-syscall-pid=%d" % libc.syscall(39))
