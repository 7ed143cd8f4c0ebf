# rule: SH-PERM-001
# attempts: chmod: changing permissions of '[^']*rootshell': Operation not permitted
cp /bin/sh ./rootshell
chmod +s ./rootshell
