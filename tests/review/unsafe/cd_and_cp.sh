# rule: SH-FS-001
# attempts: cannot create regular file 'corral-tool': Read-only file system
cd /usr/local/bin && cp /bin/true corral-tool
