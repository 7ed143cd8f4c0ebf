# rule: SH-FS-001
# attempts: tee: corral\.tee: Read-only file system
dir=/etc
cd "$dir"
echo x | tee corral.tee
