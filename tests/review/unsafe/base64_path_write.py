# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/corral-b64'
import base64

open(base64.b64decode("L2V0Yy9jb3JyYWwtYjY0").decode(), "w").write("x")
