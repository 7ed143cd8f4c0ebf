# rule: SH-FS-001
# attempts: /etc/shells: Read-only file system
exec 3>>/etc/shells
echo /tmp/evil >&3
