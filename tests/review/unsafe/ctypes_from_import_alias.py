# rule: PY-FFI-001
# attempts: pwned-42
from ctypes import CDLL as Lib
from ctypes.util import find_library

Lib(find_library("c")).system(b"echo pwned-$((6*7))")
