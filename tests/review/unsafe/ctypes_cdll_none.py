# rule: PY-FFI-001
# creates: pwned-42.marker
# The observable is a file the shell command leaves in the workspace (checked on the host).
import ctypes as c

me = c.cdll.LoadLibrary(None)
me.system(b"touch pwned-$((6*7)).marker")
