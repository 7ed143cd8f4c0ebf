# rule: PY-PROC-006
# attempts: forked-child-0\nforked-child-1\nforked-child-2
# Bounded to 3 forks so that it is harmless even without the jail's pid limit.
import os

for i in range(3):
    pid = os.fork()
    if pid == 0:
        print(f"forked-child-{i}", flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
