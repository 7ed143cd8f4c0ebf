# rule: SH-FS-001
# attempts: couldn't open file /usr/local/corral-sed: Read-only file system
echo x > notes.txt
sed -e 's/x/y/w /usr/local/corral-sed' notes.txt
