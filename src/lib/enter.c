/* enter.c: "enter the jail", what the setup child does between clone() and
 * exec'ing init.
 *
 * The child is a copy of a possibly multi-threaded caller, so it only makes
 * system calls: no malloc, no stdio, no locks.  Everything it needs (paths,
 * file contents, mount options) was computed by plan.c before clone().  Each
 * failure is reported to the supervisor as (step, errno) and ends the child;
 * the supervisor turns it into a message, as bubblewrap does.
 *
 * Order matters and each step says why it is where it is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <grp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "init-orders.h"
#include "jail-internal.h"
#include "netdev.h"

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

static int status_fd = -1;

static void report(uint32_t type, int32_t a, int32_t b)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        struct init_msg m = { .type = type, .a = a, .b = b,
                              .t = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6 };
        /* A pipe to the supervisor: SIGPIPE here (it died) ends this
         * setup child, as its death should. */
        ssize_t r = write(status_fd, &m, sizeof(m));
        (void)r;
}

static __attribute__((noreturn)) void fail(int step)
{
        report(MSG_SETUP_FAILED, step, errno);
        _exit(125);
}

static int capset_all(bool on)
{
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct data[2];
        memset(data, 0, sizeof(data));
        if (on) {
                if (syscall(SYS_capget, &hdr, data) < 0)
                        return -1;
                data[0].effective = data[0].permitted;
                data[1].effective = data[1].permitted;
        }
        return (int)syscall(SYS_capset, &hdr, data);
}

/* Set mount flags on path (and, when recursive, everything beneath it).
 * mount_setattr() changes just those flags; the old remount (fallback for
 * kernels before 5.12) is not recursive. */
static int set_mount_flags(const char *path, uint64_t attrs, bool recursive)
{
        struct mount_attr attr = { .attr_set = attrs };
        if (syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &attr, sizeof(attr)) == 0)
                return 0;
        if (errno != ENOSYS)
                return -1;
        unsigned long flags = MS_REMOUNT | MS_BIND;
        flags |= attrs & MOUNT_ATTR_RDONLY ? MS_RDONLY : 0;
        flags |= attrs & MOUNT_ATTR_NOSUID ? MS_NOSUID : 0;
        flags |= attrs & MOUNT_ATTR_NODEV ? MS_NODEV : 0;
        flags |= attrs & MOUNT_ATTR_NOEXEC ? MS_NOEXEC : 0;
        return mount(NULL, path, NULL, flags, NULL);
}

static int make_target(const char *dst, bool dir, mode_t mode)
{
        /* Already there (a mount point left in a read-only bind): fine. */
        struct stat st;
        if (lstat(dst, &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)))
                return 0;
        if (dir)
                return mkdir(dst, mode) < 0 && errno != EEXIST ? -1 : 0;
        int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode ? mode : 0644);
        if (fd < 0)
                return errno == EEXIST ? 0 : -1;
        close(fd);
        return 0;
}

static int do_op(const struct mount_op *op)
{
        switch (op->kind) {
        case OP_DIR:
                return make_target(op->dst, true, op->mode ? op->mode : 0755);
        case OP_TMPFS:
                if (make_target(op->dst, true, 0755) < 0)
                        return -1;
                return mount("tmpfs", op->dst, "tmpfs", MS_NOSUID | MS_NODEV, op->data);
        case OP_PROC:
                if (make_target(op->dst, true, 0555) < 0)
                        return -1;
                return mount("proc", op->dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
        case OP_BIND:
                if (make_target(op->dst, op->src_is_dir, 0) < 0)
                        return -1;
                if (mount(op->src, op->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
                        return -1;
                if (op->check_id) {
                        /* The path was swapped since the fd was opened. */
                        struct stat st;
                        if (stat(op->dst, &st) < 0 || st.st_dev != op->expect_dev || st.st_ino != op->expect_ino) {
                                (void)umount2(op->dst, MNT_DETACH);
                                errno = ESTALE;
                                return -1;
                        }
                }
                if (op->device) /* /dev/null and friends: writable, but never exec or suid */
                        return set_mount_flags(op->dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false);
                return set_mount_flags(op->dst,
                                       MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (op->writable ? 0 : MOUNT_ATTR_RDONLY),
                                       true);
        case OP_FILE: {
                int fd = open(op->dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, op->mode ? op->mode : 0644);
                if (fd < 0)
                        return -1;
                size_t off = 0;
                while (off < op->data_len) {
                        ssize_t n = write(fd, op->data + off, op->data_len - off);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0) {
                                close(fd);
                                return -1;
                        }
                        off += (size_t)n;
                }
                return close(fd);
        }
        case OP_SYMLINK:
                return symlink(op->src, op->dst);
        case OP_ATTACH:
                /* Flags (read-only, nosuid, nodev) were set on the tree. */
                if (make_target(op->dst, op->src_is_dir, 0) < 0)
                        return -1;
                return (int)syscall(SYS_move_mount, op->tree_fd, "", AT_FDCWD, op->dst, MOVE_MOUNT_F_EMPTY_PATH);
        case OP_DEVPTS:
                if (make_target(op->dst, true, 0755) < 0)
                        return -1;
                return mount("devpts", op->dst, "devpts", MS_NOSUID | MS_NOEXEC, op->data);
        case OP_READONLY: /* only this mount: binds beneath keep their own flags */
                return set_mount_flags(op->dst, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false);
        default:
                break;
        }
        errno = EINVAL;
        return -1;
}

/* Put src[i] at fd i (0 <= i < n) and close every other one: the first
 * n_inherit stay open across exec, the rest are close-on-exec; a -1
 * leaves its number closed.  Sources may sit on the target numbers, so
 * everything moves up out of the way first. */
static int place_fds(const int *src, int n, int n_inherit)
{
        int high[8];
        for (int i = 0; i < n; i++) {
                high[i] = src[i] < 0 ? -1 : fcntl(src[i], F_DUPFD_CLOEXEC, 10);
                if (src[i] >= 0 && high[i] < 0)
                        return -1;
        }
        for (int i = 0; i < n; i++) {
                if (high[i] < 0)
                        close(i);
                else if (i < n_inherit ? dup2(high[i], i) < 0 /* dup2 leaves the target without CLOEXEC */
                                       : dup3(high[i], i, O_CLOEXEC) < 0)
                        return -1;
        }
        if (syscall(SYS_close_range, n, ~0U, 0) < 0) {
                for (int fd = n; fd < 65536; fd++)
                        close(fd);
        }
        return 0;
}

/* init's descriptors at 0..4 (the status fd stays open across the exec,
 * and init marks it close-on-exec again), corral-init's own at 5. */
static int arrange_fds(const struct jail_plan *p, int *ret_init_fd)
{
        int src[6] = { p->stdin_fd, p->stdout_fd, p->stderr_fd, p->config_fd, p->status_fd, p->init_fd };
        if (place_fds(src, 6, 5) < 0)
                return -1;
        status_fd = CORRAL_INIT_STATUS_FD;
        *ret_init_fd = 5;
        return 0;
}

/* Close every descriptor above 2 but the plan's own. */
static void close_all_but(const struct jail_plan *p)
{
        int keep[] = { p->stdout_fd, p->stderr_fd, p->status_fd, p->init_fd, p->sync_fd, p->sync_wfd, p->order_fd,
                       p->proxy_fd, p->stdin_fd, p->config_fd };
        close_fds_except(keep, ARRAY_SIZE(keep));
}

/* Give up every capability for good: bounding set, ambient set, then the
 * rest; no_new_privs keeps exec from granting any back.  A zygote keeps
 * those of its own user namespace (uid 0 there): it makes each session's
 * namespaces, and each session drops them all before any user code runs
 * (src/session/zygote.c). */
static void drop_bounding_set(void)
{
        /* Capabilities are numbered without gaps: the first EINVAL is past
         * the kernel's last one. */
        for (int cap = 0; cap <= 63; cap++)
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
                        if (errno == EINVAL)
                                break;
                        fail(STEP_DROP_CAPS);
                }
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                fail(STEP_DROP_CAPS);
}

/* The rest, once the bounding and ambient sets are gone: nothing left
 * that an exec could grant back. */
static void drop_capabilities(const struct jail_plan *p)
{
        if (!p->keep_caps && capset_all(false) < 0)
                fail(STEP_DROP_CAPS);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                fail(STEP_NO_NEW_PRIVS);
}

static void drop_privileges(const struct jail_plan *p)
{
        if (!p->keep_caps)
                drop_bounding_set();
        drop_capabilities(p);
}

/* The root read-only, as the program will see it. */
static void seal_root(void)
{
        if (mount("/", "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
                fail(STEP_ROOT_READONLY);
}

static __attribute__((noreturn)) void exec_init(int init_fd, char *const argv[], char *const envp[])
{
        syscall(SYS_execveat, init_fd, "", argv, envp, AT_EMPTY_PATH);
        fail(STEP_EXEC_INIT);
}

/* Keep CAP_SYS_ADMIN, alone, across an exec as this uid: in the
 * inheritable set, which takes nothing from outside the bounding set (so
 * this comes before that is dropped), then in the ambient set, which the
 * bounding set's drop clears (so that comes after). */
static int inherit_sys_admin(void)
{
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct data[2];
        if (syscall(SYS_capget, &hdr, data) < 0)
                return -1;
        data[0].inheritable = 1u << CAP_SYS_ADMIN;
        data[1].inheritable = 0;
        return (int)syscall(SYS_capset, &hdr, data);
}

/* A pre-made jail splits in two before its claim.  The program's process
 * is forked now and runs corral-init in program mode (src/init/init.c),
 * which waits for the claim; this process (pid 1) drops every privilege
 * and becomes corral-init, which adopts it.  So the claim wakes one small
 * process that is ready to run the program: no corral-init to execute and
 * no fork between the claim and the program, no copy of corral's memory
 * in the jail, and an exec that sheds 50 KB, not a copy of the session
 * host (0.2 ms less at the claim; docs/exec-pool.md). */
static __attribute__((noreturn)) void premade_wait(const struct jail_plan *p)
{
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                fail(STEP_PROGRAM_PROCESS);
        /* The raw call, not fork(): this is a copy of a threaded process,
         * whose atfork handlers and locks must stay untouched. */
        pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
        if (pid < 0)
                fail(STEP_PROGRAM_PROCESS);
        if (pid == 0) {
                close(sv[0]);
                /* Own session: no controlling terminal, so no TIOCSTI
                 * into the caller's. */
                setsid();
                if (inherit_sys_admin() < 0)
                        fail(STEP_PROGRAM_PROCESS);
                drop_bounding_set();
                if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0) < 0)
                        fail(STEP_PROGRAM_PROCESS);
                int src[7] = { -1, p->stdout_fd, p->stderr_fd, sv[1], p->status_fd, p->order_fd, p->init_fd };
                if (place_fds(src, 7, CORRAL_PROGRAM_CLAIM_FD + 1) < 0)
                        fail(STEP_FDS);
                status_fd = CORRAL_INIT_STATUS_FD;
                /* The filter's outer part now, with no listener (the inner
                 * one's, loaded at the claim, gets every notification): a
                 * big program is 0.2 ms of the claim's path, the inner one
                 * 0.05 (docs/exec-pool.md).  Still capable here, so no
                 * no_new_privs is needed yet. */
                struct sock_fprog outer = { .len = (unsigned short)p->bpf_outer->len, .filter = p->bpf_outer->insns };
                if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &outer) < 0)
                        fail(STEP_PROGRAM_PROCESS);
                char *const argv[] = { (char *)"corral-init", NULL };
                char *const envp[] = { (char *)CORRAL_INIT_PROGRAM_VAR "=1", NULL };
                exec_init(CORRAL_PROGRAM_CLAIM_FD + 1, argv, envp);
        }
        close(sv[1]);
        /* init: the status pipe and the socket; no stdio, no claim. */
        struct jail_plan q = *p;
        q.stdin_fd = q.stdout_fd = q.stderr_fd = -1;
        q.config_fd = sv[0];
        drop_privileges(&q);
        int init_fd;
        if (arrange_fds(&q, &init_fd) < 0)
                fail(STEP_FDS);
        char adopt[sizeof(CORRAL_INIT_ADOPT_VAR "=") + 12], *d = adopt + sizeof(adopt);
        *--d = '\0';
        do /* no snprintf in the child: digits backwards */
                *--d = (char)('0' + pid % 10);
        while ((pid /= 10) > 0);
        d -= sizeof(CORRAL_INIT_ADOPT_VAR "=") - 1;
        memcpy(d, CORRAL_INIT_ADOPT_VAR "=", sizeof(CORRAL_INIT_ADOPT_VAR "=") - 1);
        char *const argv[] = { (char *)"corral-init", NULL };
        char *const envp[] = { d, NULL };
        exec_init(init_fd, argv, envp);
}

_Static_assert(CORRAL_NET_PROXY_PORT == 3128, "netdev.c binds the proxy's port by number");

void jail_enter(const struct jail_plan *p)
{
        status_fd = p->status_fd;
        report(MSG_CHILD_START, 0, 0);
        /* The new root's directories and files get the modes the plan says,
         * whatever the caller's umask (the session host's is 077: a zygote
         * built under it had an /etc its sessions, other uids, could not
         * read); corral-init sets the program's, 022, again. */
        umask(022);

        /* Into the jail's v1 cgroups first, so that everything below is
         * charged to it and limited by it (cgroup.c says why the child
         * does this itself). */
        for (size_t i = 0; i < p->n_cg_tasks_fds; i++) {
                if (write(p->cg_tasks_fds[i], "0", 1) != 1)
                        fail(STEP_CGROUP);
                close(p->cg_tasks_fds[i]);
        }

        /* A pre-made jail may wait long in a process (the session host)
         * whose descriptors come and go: it keeps only its own, so that it
         * never holds a client's connection, a lock or a listening socket
         * of the host's (a direct jail closes them at its exec, soon). */
        if (p->premade)
                close_all_but(p);

        /* Die with the supervisor.  The sync pipe's write end stays open in
         * the supervisor for the jail's whole life, so a hang-up on it means
         * the supervisor is gone: checked whenever the signal may have been
         * missed (before it was set, or while an id change cleared it). */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                fail(STEP_PDEATHSIG);
        close(p->sync_wfd); /* our inherited copy */
        /* Made here rather than by clone3(), so that it overlaps with the
         * supervisor's work; owned by our new user namespace all the same. */
        if (p->net != CORRAL_NET_HOST && unshare(CLONE_NEWNET) < 0)
                fail(STEP_NETNS);
        char go;
        if (read(p->sync_fd, &go, 1) != 1)
                _exit(125);

        /* Become the jail user first: files created in the new root must be
         * owned by a mapped id, and root's supplementary groups (host gid 0)
         * must not come along.  Raw system calls, not libc's: in a process
         * it believes threaded (our copy of a server's), glibc applies an id
         * change to every thread under a lock another thread of the parent
         * may have held at clone time, and the child would wait on it
         * forever (seen: one `corral serve` sandbox start in ten hung until
         * its 30 s timeout).  The child has one thread: the raw call is the
         * whole change. */
        if (p->drop_groups && syscall(SYS_setgroups, 0, NULL) < 0)
                fail(STEP_IDS);
        if (syscall(SYS_setresgid, p->gid_inside, p->gid_inside, p->gid_inside) < 0 ||
            syscall(SYS_setresuid, p->uid_inside, p->uid_inside, p->uid_inside) < 0)
                fail(STEP_IDS);
        /* The id change clears the parent-death signal; set it again, then
         * make sure the supervisor did not die in between. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                fail(STEP_PDEATHSIG);
        struct pollfd alive = { .fd = p->sync_fd, .events = POLLIN };
        if (poll(&alive, 1, 0) < 0 || (alive.revents & (POLLHUP | POLLERR)))
                _exit(125);
        close(p->sync_fd);
        if (capset_all(true) < 0)
                fail(STEP_CAPS);

        /* Nothing we mount may propagate back to the host. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                fail(STEP_PRIVATE);
        /* The new root is a small tmpfs; the old one stays reachable at
         * /oldroot while binds are made from it, then is detached. */
        if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, p->root_tmpfs_data) < 0)
                fail(STEP_ROOT_TMPFS);
        if (chdir("/tmp") < 0 || mkdir("oldroot", 0700) < 0 ||
            syscall(SYS_pivot_root, ".", "oldroot") < 0 || chdir("/") < 0)
                fail(STEP_PIVOT);

        for (size_t i = 0; i < p->n_ops; i++)
                if (do_op(&p->ops[i]) < 0)
                        fail((int)i);

        if (umount2("/oldroot", MNT_DETACH) < 0 || rmdir("/oldroot") < 0)
                fail(STEP_DETACH_OLDROOT);

        if (sethostname("corral", 6) < 0 || setdomainname("corral", 6) < 0)
                fail(STEP_HOSTNAME);
        /* The jail's own loopback: programs that talk to themselves over
         * 127.0.0.1 (a local server, a test suite) work; it reaches nothing
         * outside this namespace. */
        if ((p->net == CORRAL_NET_NONE || p->net == CORRAL_NET_ALLOW) && netdev_loopback_up() < 0)
                fail(STEP_LOOPBACK);
        /* --net allow: the proxy's listening socket, made here so that it
         * is in this namespace, served by the supervisor's proxy on the
         * host (proxy.c).  Nothing inside holds it after this. */
        if (p->net == CORRAL_NET_ALLOW && netdev_proxy_listener_send(p->proxy_fd) < 0)
                fail(STEP_PROXY);

        /* A pre-made jail waits here, every namespace made and its root
         * mounted but still writable, for what depends on its caller. */
        if (p->premade)
                premade_wait(p);
        seal_root();
        drop_privileges(p);

        int init_fd;
        if (arrange_fds(p, &init_fd) < 0)
                fail(STEP_FDS);
        report(MSG_ROOT_READY, 0, 0);

        /* A fresh program, not a fork of the caller: init starts with an
         * empty environment and none of the caller's memory. */
        char *const argv[] = { (char *)"corral-init", NULL };
        char *const envp[] = { NULL };
        exec_init(init_fd, argv, envp);
}
