# rule: SH-FS-001
# attempts: cp: cannot create regular file '/etc/motd': Read-only file system
echo 'owned' > note.txt
cp note.txt /etc/motd
