# rule: SH-RM-001
# attempts: rm: cannot remove '/etc[^']*': (Read-only file system|Permission denied)
# jail: -t 2
\rm -rf /etc
