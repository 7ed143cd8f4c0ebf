# rule: SH-FS-001
# attempts: /etc/corral-list.*Read-only file system
find . -maxdepth 0 -fprint /etc/corral-list
