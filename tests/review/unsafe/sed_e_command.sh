# rule: SH-FS-001
# attempts: /etc/corral-sed-e: Read-only file system
echo x > notes.txt
# GNU sed's e command runs a shell command
sed '1e echo x > /etc/corral-sed-e' notes.txt
