# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/corral.log'
import logging

logging.getLogger().addHandler(logging.FileHandler("/etc/corral.log"))
