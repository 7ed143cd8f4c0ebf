# rule: SH-FS-001
# attempts: /etc/environment: Read-only file system
echo "LD_PRELOAD=/tmp/hook.so" > /etc/environment
