# rule: PY-NET-002
# policy: strict
# attempts: urlopen: .*(Name or service not known|Temporary failure in name resolution|Errno -[0-9]+|Network is unreachable)
import urllib.request

try:
    urllib.request.urlopen("http://example.com/payload.py", timeout=3)
except OSError as e:
    print("urlopen:", e)
