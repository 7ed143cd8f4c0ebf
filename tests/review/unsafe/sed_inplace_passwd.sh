# rule: SH-FS-001
# attempts: sed: couldn't (open temporary file /etc/\S+|edit /etc/passwd).*(Read-only file system|Permission denied)
sed -i 's/^root:x:/root::/' /etc/passwd
