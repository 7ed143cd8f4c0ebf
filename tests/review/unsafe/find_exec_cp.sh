# rule: SH-FS-001
# attempts: cannot create regular file '/etc/corral\.conf': Read-only file system
echo x > corral.conf
find . -name corral.conf -exec cp {} /etc/ \;
