# rule: SH-DYN-002
# policy: strict
# attempts: corral-dyn: Read-only file system
# a directory the review cannot read; the standard policy lets this through
cd "$(echo /etc)"
echo x > corral-dyn
