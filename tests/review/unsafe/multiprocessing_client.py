# rule: PY-NET-001
# attempts: client: .*(Network is unreachable|Errno 101)
from multiprocessing.connection import Client

try:
    Client(("203.0.113.9", 4444))
except OSError as e:
    print("client:", e)
