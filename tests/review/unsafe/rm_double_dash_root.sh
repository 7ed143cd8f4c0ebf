# rule: SH-RM-001
# attempts: rm: it is dangerous to operate recursively on '/'
rm -rf -- /
