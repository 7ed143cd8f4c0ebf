/* trees.c: a jail's workspace and binds as detached mount trees, made on
 * the host and attached by the jail itself in its own mount namespace
 * (move_mount()): how a warm session gets its binds at claim
 * (src/session/warm.c), and how a pre-made jail gets its caller's.
 *
 * As root each tree is cloned from the host (open_tree(OPEN_TREE_CLONE)),
 * idmapped to the jail's own host uid where it is writable; as an ordinary
 * user, who may not clone the host's mounts, a helper in a user and mount
 * namespace of its own clones its copy of them and hands the trees over.
 * Nothing is staged in a shared place.  Mount points for binds beneath
 * /workspace are made in the workspace tree, one component at a time,
 * never through a link.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail-internal.h"

#ifndef FSCONFIG_SET_STRING
#define FSCONFIG_SET_STRING 1
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef MOUNT_ATTR_NOSUID
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#endif

/* How long the helper of trees_user() may take. */
#define TREES_TIMEOUT_MS 20000.0

/* dst relative to /workspace, or NULL unless it lies strictly beneath it
 * with no empty, "." or ".." component. */
const char *jail_bind_beneath_workspace(const char *dst)
{
        if (strncmp(dst, "/workspace/", 11) != 0 || dst[11] == '\0')
                return NULL;
        const char *rel = dst + 11;
        for (const char *c = rel; *c;) {
                size_t n = strcspn(c, "/");
                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return NULL;
                c += n;
                if (*c == '/' && *++c == '\0')
                        return NULL;
        }
        return rel;
}

/* A detached mount for the jail's /workspace: the host directory,
 * idmapped so the jail's host uid writes as its owner, or a fresh tmpfs. */
static int workspace_tree(const corral_jail_config *cfg, uint32_t host_uid, corral_error **ret_err)
{
        if (cfg->workspace) {
                cleanup_free char *real = realpath(cfg->workspace, NULL);
                if (real == NULL)
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "workspace '%s'", cfg->workspace);
                corral_error *e = NULL;
                int fd = idmap_open_tree(real, true, host_uid, true, &e);
                if (fd >= 0) {
                        corral_error_free(e);
                        return fd;
                }
                if (ret_err)
                        *ret_err = e;
                else
                        corral_error_free(e);
                return -1;
        }
        int fs = (int)syscall(SYS_fsopen, "tmpfs", 1 /* FSOPEN_CLOEXEC */);
        if (fs < 0)
                return corral_fail(ret_err, errno, "cannot create the jail's workspace (tmpfs)");
        char size[64];
        snprintf(size, sizeof(size), "%" PRIu64, cfg->disk_bytes);
        char uid[32];
        snprintf(uid, sizeof(uid), "%u", host_uid);
        int mnt = -1;
        if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", size, 0) == 0 &&
            syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0755", 0) == 0 &&
            syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "uid", uid, 0) == 0 &&
            syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "gid", uid, 0) == 0 &&
            syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
                mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
        int e = errno;
        close(fs);
        if (mnt < 0)
                return corral_fail(ret_err, e, "cannot create the jail's workspace (tmpfs)");
        return mnt;
}

/* Make rel's mount point beneath the directory root (the host workspace,
 * or the jail's tmpfs), parents included, never through a symlink: one
 * component at a time, O_NOFOLLOW.  The jail's init, which attaches the
 * bind, may not create files there (the idmap has no place for its uid). */
static int make_mountpoint(int root, const char *rel, bool is_dir)
{
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s", rel) >= (int)sizeof(path)) {
                errno = ENAMETOOLONG;
                return -1;
        }
        int dir = fcntl(root, F_DUPFD_CLOEXEC, 3);
        for (char *comp = path; dir >= 0;) {
                char *slash = strchr(comp, '/');
                if (slash)
                        *slash = '\0';
                if (slash || is_dir) {
                        (void)mkdirat(dir, comp, 0755);
                } else {
                        int f = openat(dir, comp, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
                        if (f >= 0)
                                close(f);
                }
                int next = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC | (slash || is_dir ? O_DIRECTORY : 0));
                int e = errno;
                close(dir);
                if (next < 0) {
                        errno = e;
                        return -1;
                }
                if (slash == NULL) {
                        struct stat st;
                        bool ok = fstat(next, &st) == 0 && (is_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
                        close(next);
                        errno = ok ? 0 : ELOOP;
                        return ok ? 0 : -1;
                }
                dir = next;
                comp = slash + 1;
        }
        return -1;
}

/* Every bind's mount point beneath root, for the binds beneath
 * /workspace (the jail makes the others' in its own root). */
static int make_mountpoints(int root, const corral_jail_config *cfg, corral_error **ret_err)
{
        for (size_t i = 0; i < cfg->n_binds; i++) {
                const struct corral_bind *b = &cfg->binds[i];
                if (jail_bind_beneath_workspace(b->dst) == NULL)
                        continue;
                struct stat st;
                if (b->src_fd >= 0 ? fstat(b->src_fd, &st) < 0 : stat(b->src, &st) < 0)
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "bind source '%s'", b->src);
                if (make_mountpoint(root, jail_bind_beneath_workspace(b->dst), S_ISDIR(st.st_mode)) < 0)
                        return corral_fail(ret_err, errno, "cannot make the mount point '%s' of bind '%s'", b->dst,
                                           b->src);
        }
        return 0;
}

/* A bind's tree as root: as plan.c makes a cold jail's (an fd's own mount
 * cloned, idmapped to the jail's uid where the filesystem allows; a
 * path's mount cloned, idmapped when it is a writable directory). */
static int bind_tree(const struct corral_bind *b, uint32_t host_uid, corral_error **ret_err)
{
        corral_error *e = NULL;
        if (b->src_fd >= 0) {
                int tree = idmap_open_tree_fd(b->src_fd, b->src, true, host_uid, false, &e);
                corral_error_free(e);
                return tree >= 0 ? tree : idmap_open_tree_fd(b->src_fd, b->src, true, 0, false, ret_err);
        }
        cleanup_free char *real = realpath(b->src, NULL);
        struct stat st;
        if (real == NULL || stat(real, &st) < 0)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "bind source '%s'", b->src);
        if (b->writable && jail_path_is_system(real))
                return corral_usage(ret_err, "refusing to give the jail write access to the system directory '%s'",
                                    real);
        bool idmap = b->writable && S_ISDIR(st.st_mode);
        int tree = idmap_open_tree(real, !b->writable, idmap ? host_uid : 0, b->writable, &e);
        if (tree < 0 && idmap) {
                corral_error_clear(&e);
                tree = idmap_open_tree(real, false, 0, b->writable, &e);
        }
        if (tree < 0) {
                if (ret_err)
                        *ret_err = e;
                else
                        corral_error_free(e);
        } else {
                corral_error_free(e);
        }
        return tree;
}

/* What the helper of trees_user() reports: 0 done (the trees come with
 * it), else the step that failed, for which tree (0 the workspace, i the
 * i-th bind) and its errno. */
struct ws_reply {
        int32_t step;
        int32_t which;
        int32_t err;
};

enum { WS_STEP_MAP = 1, WS_STEP_OPEN, WS_STEP_SAME, WS_STEP_CLONE, WS_STEP_FLAGS, WS_STEP_TMPFS };

/* A host path for the helper to clone, and what it must still be. */
struct ws_source {
        char *real;
        struct stat want;
        bool writable;
};

/* In the helper: clone src's mount (recursive: the host's mounts beneath
 * are locked together with it in our namespace, and a lone clone of their
 * parent is refused), with its flags.  A ws_reply step, or 0. */
static int helper_clone(const struct ws_source *src, int *ret_tree, int *ret_errno)
{
        int fd = open(src->real, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        *ret_tree = -1;
        if (fd < 0) {
                *ret_errno = errno;
                return WS_STEP_OPEN;
        }
        if (fstat(fd, &st) < 0 || st.st_dev != src->want.st_dev || st.st_ino != src->want.st_ino) {
                *ret_errno = ESTALE; /* swapped since the caller resolved it */
                close(fd);
                return WS_STEP_SAME;
        }
        int tree = (int)syscall(SYS_open_tree, fd, "", AT_EMPTY_PATH | AT_RECURSIVE | 1 /* OPEN_TREE_CLONE */ |
                                                                O_CLOEXEC);
        *ret_errno = errno;
        close(fd);
        if (tree < 0)
                return WS_STEP_CLONE;
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                               (src->writable ? 0 : MOUNT_ATTR_RDONLY) };
        if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0) {
                *ret_errno = errno;
                close(tree);
                return WS_STEP_FLAGS;
        }
        *ret_tree = tree;
        return 0;
}

static __attribute__((noreturn)) void ws_helper(int sock, const struct ws_source *ws, const struct ws_source *binds,
                                                 const corral_jail_config *cfg, uid_t uid, gid_t gid)
{
        /* A fresh user and mount namespace of our own (clone3 made them):
         * its copy of the host's mounts is ours to clone, and tmpfs may be
         * made here.  We stay the caller's host uid for every permission
         * check, so the trees are what the caller may reach and no more.
         * The map (our own ids, as themselves) is for the tmpfs, which
         * belongs to this namespace: nobody could create a file in it
         * otherwise (EOVERFLOW). */
        struct ws_reply r = { 0, 0, 0 };
        int trees[1 + JAIL_TREES_MAX_BINDS];
        size_t n = 0;
        char map[64];
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
        if (write_file_at(AT_FDCWD, "/proc/self/uid_map", map) < 0 ||
            write_file_at(AT_FDCWD, "/proc/self/setgroups", "deny") < 0 ||
            (snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid),
             write_file_at(AT_FDCWD, "/proc/self/gid_map", map) < 0)) {
                r = (struct ws_reply){ WS_STEP_MAP, 0, errno };
        } else if (ws->real) {
                int e = 0;
                r.step = helper_clone(ws, &trees[0], &e);
                r.err = e;
        } else {
                char size[32];
                snprintf(size, sizeof(size), "%" PRIu64, cfg->disk_bytes);
                int fs = (int)syscall(SYS_fsopen, "tmpfs", 1 /* FSOPEN_CLOEXEC */);
                /* No uid= option: the root directory is created as our
                 * uid, the jail's owner. */
                trees[0] = -1;
                if (fs >= 0 && syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", size, 0) == 0 &&
                    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0755", 0) == 0 &&
                    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
                        trees[0] = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
                                                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
                if (trees[0] < 0 || make_mountpoints(trees[0], cfg, NULL) < 0)
                        r = (struct ws_reply){ WS_STEP_TMPFS, 0, errno };
        }
        if (r.step == 0)
                n = 1;
        for (size_t i = 0; r.step == 0 && i < cfg->n_binds; i++) {
                int e = 0;
                r.step = helper_clone(&binds[i], &trees[n], &e);
                r.which = (int32_t)i + 1;
                r.err = e;
                if (r.step == 0)
                        n++;
        }
        if (r.step != 0) {
                while (n > 0)
                        close(trees[--n]);
        } else {
                r.which = 0;
        }
        unix_send_fds(sock, &r, sizeof(r), trees, (int)n);
        _exit(0);
}

/* The detached mounts of the jail's workspace and binds for an ordinary
 * user, who may not call open_tree() or fsopen() in the host's namespaces:
 * a child in a user and mount namespace of its own makes them and hands
 * them over, into trees (1 + cfg->n_binds).  The jail attaches them in its
 * own mount namespace as for root; there is no idmapping (the jail runs as
 * the caller's own uid, the owner of the directory) and
 * nothing is staged in a shared place. */
static int trees_user(const corral_jail_config *cfg, int *trees, corral_error **ret_err)
{
        struct ws_source ws = { 0 };
        struct ws_source binds[JAIL_TREES_MAX_BINDS];
        size_t nb = 0;
        int rc = -1;
        if (cfg->workspace) {
                ws.real = realpath(cfg->workspace, NULL);
                if (ws.real == NULL) {
                        corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "workspace '%s'", cfg->workspace);
                        goto out;
                }
                if (stat(ws.real, &ws.want) < 0 || !S_ISDIR(ws.want.st_mode)) {
                        corral_usage(ret_err, "workspace '%s' is not a directory", cfg->workspace);
                        goto out;
                }
                ws.writable = true;
                int root = open(ws.real, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (root < 0 || make_mountpoints(root, cfg, ret_err) < 0) {
                        if (root < 0)
                                corral_fail(ret_err, errno, "workspace '%s'", cfg->workspace);
                        else
                                close(root);
                        goto out;
                }
                close(root);
        }
        for (; nb < cfg->n_binds; nb++) {
                const struct corral_bind *b = &cfg->binds[nb];
                struct ws_source *src = &binds[nb];
                src->writable = b->writable && b->src_fd < 0;
                if (b->src_fd >= 0) {
                        /* By the path its fd has now, checked to be that
                         * very file (device and inode) as plan.c does. */
                        char link[64], target[PATH_MAX];
                        snprintf(link, sizeof(link), "/proc/self/fd/%d", b->src_fd);
                        ssize_t n = readlink(link, target, sizeof(target) - 1);
                        if (n <= 0 || target[0] != '/' || fstat(b->src_fd, &src->want) < 0) {
                                corral_fail(ret_err, n < 0 ? errno : ENOENT, "bind source '%s'", b->src);
                                goto out;
                        }
                        target[n] = '\0';
                        src->real = strdup(target);
                } else {
                        src->real = realpath(b->src, NULL);
                        if (src->real == NULL || stat(src->real, &src->want) < 0) {
                                corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "bind source '%s'", b->src);
                                free(src->real);
                                goto out;
                        }
                        if (b->writable && jail_path_is_system(src->real)) {
                                corral_usage(ret_err, "refusing to give the jail write access to the system "
                                                      "directory '%s'",
                                             src->real);
                                free(src->real);
                                goto out;
                        }
                }
                if (src->real == NULL) {
                        corral_fail(ret_err, ENOMEM, "bind source '%s'", b->src);
                        goto out;
                }
        }
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                corral_fail(ret_err, errno, "cannot create the jail's workspace");
                goto out;
        }
        uid_t uid = getuid();
        gid_t gid = getgid();
        int pidfd = -1;
        struct clone_args ca;
        memset(&ca, 0, sizeof(ca));
        ca.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_PIDFD;
        ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
        ca.exit_signal = 0;
        long pid = syscall(SYS_clone3, &ca, sizeof(ca));
        if (pid == 0) {
                close(sv[0]);
                ws_helper(sv[1], &ws, binds, cfg, uid, gid);
        }
        int e = errno;
        close(sv[1]);
        if (pid < 0) {
                close(sv[0]);
                corral_fail(ret_err, e, "cannot create a user namespace for the jail's workspace");
                goto out;
        }
        struct ws_reply r = { 0, 0, 0 };
        int nfds = 0;
        ssize_t n = unix_recv_fds_until(sv[0], &r, sizeof(r), trees, (int)(1 + nb), &nfds, NULL,
                                   monotonic_ms() + TREES_TIMEOUT_MS);
        e = errno;
        close(sv[0]);
        siginfo_t si;
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        syscall(SYS_waitid, 3 /* P_PIDFD */, pidfd, &si, WEXITED | __WALL, NULL);
        close(pidfd);
        if (n == (ssize_t)sizeof(r) && r.step == 0 && nfds == (int)(1 + nb)) {
                rc = 0;
                goto out;
        }
        for (int i = 0; i < nfds; i++)
                close(trees[i]);
        if (n != (ssize_t)sizeof(r)) {
                corral_fail(ret_err, n < 0 ? e : EPROTO, "cannot create the jail's workspace");
                goto out;
        }
        static const char *const what[] = { [WS_STEP_MAP] = "map the ids for",
                                            [WS_STEP_OPEN] = "open", [WS_STEP_SAME] = "recheck",
                                            [WS_STEP_CLONE] = "clone the mount of",
                                            [WS_STEP_FLAGS] = "set flags on", [WS_STEP_TMPFS] = "mount a tmpfs for" };
        const char *w = r.step > 0 && (size_t)r.step < ARRAY_SIZE(what) ? what[r.step] : "set up";
        if (r.which > 0 && (size_t)r.which <= nb)
                corral_fail(ret_err, r.err, "cannot %s the bind source '%s' in a user namespace of corral's", w,
                            cfg->binds[r.which - 1].src);
        else if (ws.real)
                corral_fail(ret_err, r.err, "cannot %s the workspace '%s' in a user namespace of corral's", w,
                            ws.real);
        else
                corral_fail(ret_err, r.err, "cannot %s the jail's workspace in a user namespace of corral's", w);
out:
        free(ws.real);
        for (size_t i = 0; i < nb; i++)
                free(binds[i].real);
        return rc;
}

/* The jail's detached mounts into trees: its workspace, then each bind
 * (1 + cfg->n_binds fds).  leased: the jail has a host uid of its own
 * (root); else it runs as the caller. */
int jail_trees_make(const corral_jail_config *cfg, uint32_t host_uid, bool leased, int *trees,
                    corral_error **ret_err)
{
        if (cfg->n_binds > JAIL_TREES_MAX_BINDS)
                return corral_usage(ret_err, "at most %d binds can be attached to a jail made in advance",
                                    JAIL_TREES_MAX_BINDS);
        if (!leased)
                return trees_user(cfg, trees, ret_err);
        if (cfg->workspace && cfg->n_binds > 0) {
                cleanup_free char *real = realpath(cfg->workspace, NULL);
                int root = real ? open(real, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
                if (root < 0)
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "workspace '%s'", cfg->workspace);
                int r = make_mountpoints(root, cfg, ret_err);
                close(root);
                if (r < 0)
                        return -1;
        }
        trees[0] = workspace_tree(cfg, host_uid, ret_err);
        if (trees[0] < 0)
                return -1;
        if (!cfg->workspace && make_mountpoints(trees[0], cfg, ret_err) < 0) {
                close(trees[0]);
                return -1;
        }
        for (size_t i = 0; i < cfg->n_binds; i++) {
                trees[i + 1] = bind_tree(&cfg->binds[i], host_uid, ret_err);
                if (trees[i + 1] < 0) {
                        for (size_t j = 0; j <= i; j++)
                                close(trees[j]);
                        return -1;
                }
        }
        return 0;
}
