# rule: SH-PERM-001
# attempts: install: cannot change permissions of '[^']*rootsh': Operation not permitted
install -m 4755 /bin/sh /tmp/rootsh
