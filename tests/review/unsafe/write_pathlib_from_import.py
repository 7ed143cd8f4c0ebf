# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/usr/local/bin/helper'
from pathlib import Path as P

P("/usr/local/bin/helper").write_bytes(b"#!/bin/sh\necho hijacked\n")
