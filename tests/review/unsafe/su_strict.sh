# rule: SH-PRIV-001
# policy: strict
# attempts: su: (Critical error|Authentication failure|must be run from a terminal|Permission denied|cannot)
su -c 'id' root
