# rule: SH-FS-001
# attempts: dd: failed to open '/etc/ld\.so\.preload': Read-only file system
dd if=/dev/zero of=/etc/ld.so.preload bs=1 count=16
