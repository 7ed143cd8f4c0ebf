# rule: PY-PROC-002
# attempts: pwned-42
import base64

code = base64.b64decode("aW1wb3J0IG9zOyBvcy5zeXN0ZW0oJ2VjaG8gcHduZWQtJCgoNio3KSknKQ==")
exec(code)
