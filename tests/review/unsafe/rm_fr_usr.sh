# rule: SH-RM-001
# attempts: rm: cannot remove '/usr[^']*': (Read-only file system|Permission denied)
# jail: -t 2
rm -fr /usr 2>&1 | head -n 5
