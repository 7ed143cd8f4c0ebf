# rule: PY-FFI-001
# attempts: pwned-42
ct = __import__("ctypes")
ct.CDLL("libc.so.6").system(b"echo pwned-$((6*7))")
