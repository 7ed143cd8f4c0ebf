# rule: SH-FS-001
# attempts: corral\.conf: Read-only file system
cd /etc
echo x > corral.conf
