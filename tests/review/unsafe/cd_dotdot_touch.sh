# rule: SH-FS-001
# attempts: cannot touch 'corral': Read-only file system
cd ../../etc && touch corral
