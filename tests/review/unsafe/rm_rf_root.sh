# rule: SH-RM-001
# attempts: rm: cannot remove '/(usr|etc|bin|lib|proc|dev)[^']*': (Read-only file system|Permission denied|Device or resource busy)
# jail: -t 2
# Only ever run through the jail, whose root is read-only.
rm -rf --no-preserve-root /
