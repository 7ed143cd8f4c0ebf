# rule: SH-FS-001
# attempts: Read-only file system
echo x > a.txt
tar -cf /tmp/corral.tar a.txt
pushd /usr/local
tar -xf /tmp/corral.tar
