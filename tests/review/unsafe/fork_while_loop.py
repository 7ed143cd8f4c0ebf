# rule: PY-PROC-006
# attempts: fork-round-3
import os

n = 0
while n < 3:
    n += 1
    if os.fork() == 0:
        print(f"fork-round-{n}", flush=True)
        os._exit(0)
    os.wait()
