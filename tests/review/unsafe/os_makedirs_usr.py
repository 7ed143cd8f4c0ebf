# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/usr/lib/python3/dist-packages/sitecustomize\.d'
import os

os.makedirs("/usr/lib/python3/dist-packages/sitecustomize.d", exist_ok=True)
