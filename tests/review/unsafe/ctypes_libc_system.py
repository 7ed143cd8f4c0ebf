# rule: PY-FFI-001
# attempts: pwned-42
import ctypes

libc = ctypes.CDLL("libc.so.6")
libc.system(b"echo pwned-$((6*7))")
