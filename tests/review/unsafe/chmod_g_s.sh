# rule: SH-PERM-001
# attempts: chmod: changing permissions of '[^']*grp': Operation not permitted
touch grp && chmod g+s grp
