/* devpts.h: the mount options of a jail's own devpts, shared by the jail's
 * plan (plan.c) and corral-zygote's sessions (src/session/zygote.c).
 *
 * A new instance, so no host pty is in it; /dev/ptmx (a symlink to its ptmx)
 * open to all; each pty owned by its creator, with no gid= option, since the
 * tty group is not mapped in a single-uid user namespace; at most 256 ptys,
 * because every instance but the host's shares the kernel's kernel.pty.max
 * minus kernel.pty.reserve (3072 by default), and one jail must not take
 * them all.  Mounted nosuid and noexec.
 * Threads: a constant only. */
#ifndef CORRAL_DEVPTS_H
#define CORRAL_DEVPTS_H

#define JAIL_DEVPTS_OPTIONS "newinstance,ptmxmode=0666,mode=0620,max=256"

#endif
