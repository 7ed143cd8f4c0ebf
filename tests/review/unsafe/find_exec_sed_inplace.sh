# rule: SH-FS-001
# attempts: sed: couldn't (open|edit) .*Read-only file system
# {} is a file under /etc: sed -i rewrites it there
find /etc -maxdepth 1 -name hostname -exec sed -i 's/a/a/' {} +
