# rule: PY-PROC-006
# attempts: depth-2-child
import os


def spread(depth):
    if depth == 3:
        return
    if os.fork() == 0:
        print(f"depth-{depth}-child", flush=True)
        spread(depth + 1)
        os._exit(0)
    os.wait()


spread(0)
