# rule: SH-PERM-001
# attempts: chmod: changing permissions of '[^']*helper': Operation not permitted
cp /usr/bin/id /tmp/helper
chmod 4755 /tmp/helper
