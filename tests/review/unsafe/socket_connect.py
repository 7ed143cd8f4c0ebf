# rule: PY-NET-001
# attempts: connect: .*(Network is unreachable|ENETUNREACH|Errno 101)
import socket

s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    s.connect(("93.184.216.34", 80))
    print("connect: connected")
except OSError as e:
    print("connect:", e)
