# rule: PY-NET-001
# attempts: create_connection: .*(Network is unreachable|Errno 101)
from socket import create_connection as dial

try:
    dial(("10.1.2.3", 4444), timeout=2)
except OSError as e:
    print("create_connection:", e)
