# rule: SH-FS-001
# attempts: /etc/corral-find: Read-only file system
find . -maxdepth 0 -exec sh -c 'echo x > /etc/corral-find' \;
