# rule: SH-PERM-001
# attempts: chmod: changing permissions of '[^']*tool': Operation not permitted
cp /usr/bin/id ./tool
chmod 6755 ./tool
