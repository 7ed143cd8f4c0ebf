# rule: SH-RM-001
# attempts: sudo: (command )?not found
sudo rm -rf --no-preserve-root /
