# rule: SH-FS-001
# attempts: couldn't open file /etc/corral-sed: Read-only file system
echo x > notes.txt
# sed's w command writes the lines to a file of its own
sed -n 'w /etc/corral-sed' notes.txt
