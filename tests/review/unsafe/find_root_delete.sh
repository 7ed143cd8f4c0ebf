# rule: SH-RM-001
# attempts: find: cannot delete .(/usr|/etc|/bin|/lib)[^a-z].*(Read-only file system|Permission denied|Directory not empty)
find / -maxdepth 1 -delete
