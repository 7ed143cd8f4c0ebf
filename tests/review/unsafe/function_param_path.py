# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/corral-param'


def save(path, text):
    with open(path, "w") as f:
        f.write(text)


save("/etc/corral-param", "x")
