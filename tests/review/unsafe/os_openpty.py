# rule: PY-PROC-004
# attempts: openpty attempt: got \d+ \d+
import os

try:
    master, slave = os.openpty()
    print("openpty attempt: got", master, slave)
except OSError as e:
    print("openpty attempt:", e)
