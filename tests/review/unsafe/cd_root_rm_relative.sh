# rule: SH-RM-001
# attempts: Read-only file system
cd / && rm -rf etc
