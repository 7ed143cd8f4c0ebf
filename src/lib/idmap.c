/* idmap.c: host paths bound into a jail when corral runs as root.
 *
 * The jail's setup child runs as the jail's unprivileged uid, which may not
 * even be able to reach a path the root caller named (a 0700 parent), so the
 * caller clones the mount itself (open_tree) and the child only attaches it.
 * A writable directory also gets an idmapping, so the jail's own host uid
 * can write to a directory it does not own (-w DIR, --bind):
 *
 * Each root-run jail has its own unprivileged host uid X.  A host directory
 * owned by uid O is bound into the jail through a mount whose idmapping says
 * "O is X": the jail sees its files as its own, and what it writes lands on
 * disk owned by O, as if O had written it.  The mapping is a user namespace
 * made only to carry it (a child that does nothing, killed once its
 * /proc/PID/ns/user is open).  Filesystems without idmapped-mount support
 * (NFS, FUSE, older kernels) make the caller fall back to a plain bind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "jail-internal.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif

static int userns_for(uid_t owner_uid, gid_t owner_gid, uint32_t jail_id, corral_error **ret_err)
{
        int pidfd = -1;
        struct clone_args ca;
        memset(&ca, 0, sizeof(ca));
        ca.flags = CLONE_NEWUSER | CLONE_PIDFD;
        ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
        ca.exit_signal = 0;
        long pid = syscall(SYS_clone3, &ca, sizeof(ca));
        if (pid == 0) {
                for (;;)
                        pause();
        }
        if (pid < 0)
                return corral_fail(ret_err, errno, "cannot create a user namespace for an idmapped mount");
        char path[64], map[64];
        int fd = -1, err = 0;
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)owner_uid, jail_id);
        snprintf(path, sizeof(path), "/proc/%ld/uid_map", pid);
        if (write_file_at(AT_FDCWD, path, map) < 0)
                err = errno;
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)owner_gid, jail_id);
        snprintf(path, sizeof(path), "/proc/%ld/gid_map", pid);
        if (err == 0 && write_file_at(AT_FDCWD, path, map) < 0)
                err = errno;
        snprintf(path, sizeof(path), "/proc/%ld/ns/user", pid);
        if (err == 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                err = errno;
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        siginfo_t si;
        syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED | __WALL, NULL);
        close(pidfd);
        if (err)
                return corral_fail(ret_err, err, "cannot write the idmapping");
        return fd;
}

int idmap_open_tree(const char *path, bool recursive, uint32_t idmap_to, bool writable, corral_error **ret_err)
{
        return idmap_open_tree_fd(-1, path, recursive, idmap_to, writable, ret_err);
}

int idmap_open_tree_fd(int fd, const char *path, bool recursive, uint32_t idmap_to, bool writable,
                       corral_error **ret_err)
{
        struct stat st;
        if (fd >= 0 ? fstat(fd, &st) < 0 : stat(path, &st) < 0)
                return corral_fail(ret_err, errno, "cannot stat '%s'", path);
        /* An idmapping applies to one mount only: idmapped binds are not
         * recursive (submounts would need their own). */
        unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive && !idmap_to ? AT_RECURSIVE : 0);
        int tree = fd >= 0 ? (int)syscall(SYS_open_tree, fd, "", flags | AT_EMPTY_PATH)
                           : (int)syscall(SYS_open_tree, AT_FDCWD, path, flags);
        if (tree < 0)
                return corral_fail(ret_err, errno, "cannot clone the mount of '%s'", path);
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                               (writable ? 0 : MOUNT_ATTR_RDONLY) };
        int userns = -1;
        if (idmap_to) {
                userns = userns_for(st.st_uid, st.st_gid, idmap_to, ret_err);
                if (userns < 0) {
                        close(tree);
                        return -1;
                }
                attr.attr_set |= MOUNT_ATTR_IDMAP;
                attr.userns_fd = (uint64_t)userns;
        }
        int r = (int)syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | (flags & AT_RECURSIVE), &attr,
                             sizeof(attr));
        int e = errno;
        if (userns >= 0)
                close(userns);
        if (r < 0) {
                close(tree);
                return corral_fail(ret_err, e, idmap_to ? "cannot idmap '%s'" : "cannot set flags on '%s'", path);
        }
        return tree;
}
