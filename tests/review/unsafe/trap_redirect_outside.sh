# rule: SH-FS-001
# attempts: /etc/corral-trap: Read-only file system
# the trap's string is a script that runs when the shell exits
trap 'echo x > /etc/corral-trap' EXIT
echo done
