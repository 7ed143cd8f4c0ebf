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

/* mkdir -p of dst's parents (as the cold path's OP_DIR ops do). */
static int make_parents(const char *dst)
{
        char path[4096];
        size_t len = strlen(dst);
        if (len >= sizeof(path)) {
                errno = ENAMETOOLONG;
                return -1;
        }
        memcpy(path, dst, len + 1);
        for (char *s = path + 1; (s = strchr(s, '/')) != NULL; s++) {
                *s = '\0';
                int r = make_target(path, true, 0755);
                *s = '/';
                if (r < 0)
                        return -1;
        }
        return 0;
}

/* Resize a tmpfs of the new root (an empty one: nothing ran in the jail
 * yet) to the caller's disk limit. */
static int resize_tmpfs(const char *dst, uint64_t size)
{
        char data[96], *d = data + sizeof(data);
        uint64_t v[2] = { size / 1024 + 1024, size };
        const char *keys[2] = { ",nr_inodes=", "size=" };
        *--d = '\0';
        for (int k = 0; k < 2; k++) { /* no snprintf in the child: digits backwards */
                do
                        *--d = (char)('0' + v[k] % 10);
                while ((v[k] /= 10) > 0);
                for (size_t n = strlen(keys[k]); n > 0; n--)
                        *--d = keys[k][n - 1];
        }
        return mount(NULL, dst, NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, d);
}

/* A claim's program text into /run/corral/NAME of the root, which grows to
 * hold it: what the plan's OP_FILE writes for a direct jail. */
static void write_script(const struct jail_premade_claim *c, int text)
{
        static char buf[65536];
        const char *name = c->script_name;
        size_t len = strnlen(name, sizeof(c->script_name));
        if (len == 0 || len == sizeof(c->script_name) || strchr(name, '/') || strcmp(name, ".") == 0 ||
            strcmp(name, "..") == 0) {
                errno = EPROTO;
                fail(STEP_ORDERS);
        }
        if (resize_tmpfs("/", c->root_bytes) < 0)
                fail(STEP_RESIZE);
        char path[sizeof("/run/corral/") + JAIL_PREMADE_MAX_SCRIPT_NAME];
        memcpy(path, "/run/corral/", sizeof("/run/corral/") - 1);
        memcpy(path + sizeof("/run/corral/") - 1, name, len + 1);
        if ((mkdir("/run", 0755) < 0 && errno != EEXIST) || (mkdir("/run/corral", 0755) < 0 && errno != EEXIST))
                fail(STEP_SCRIPT);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                fail(STEP_SCRIPT);
        for (uint64_t off = 0; off < c->script_len;) {
                size_t want = c->script_len - off < sizeof(buf) ? (size_t)(c->script_len - off) : sizeof(buf);
                ssize_t r = pread(text, buf, want, (off_t)off);
                if (r <= 0 || write_all(fd, buf, (size_t)r) < 0)
                        fail(STEP_SCRIPT);
                off += (uint64_t)r;
        }
        close(fd);
        close(text);
}

/* Wait for the claim of a pre-made jail (struct jail_premade_claim) and
 * carry it out: the caller's disk limit, workspace and binds; its orders
 * and stdin go into q.  No allocation here: the claim lands in this
 * child's own copy of a static buffer. */
static void await_claim(struct jail_plan *q)
{
        static struct jail_premade_claim c; /* the child's own copy of it */
        union {
                char buf[CMSG_SPACE(sizeof(int) * UNIX_MAX_FDS)];
                struct cmsghdr align;
        } u;
        char ready = JAIL_PREMADE_READY;
        if (send(q->order_fd, &ready, 1, MSG_NOSIGNAL) != 1)
                _exit(125);
        struct iovec iov = { &c, sizeof(c) };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        ssize_t n;
        do
                n = recvmsg(q->order_fd, &m, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n == 0)
                _exit(125); /* the pool let it go unclaimed */
        int fds[UNIX_MAX_FDS];
        int nfds = 0;
        for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); n > 0 && h; h = CMSG_NXTHDR(&m, h))
                if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
                        nfds = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                        memcpy(fds, CMSG_DATA(h), sizeof(int) * (size_t)nfds);
                }
        if (n < (ssize_t)offsetof(struct jail_premade_claim, dsts) || (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) ||
            c.n_trees > UNIX_MAX_FDS || c.script > 1 || nfds != 2 + (int)c.n_trees + (int)c.script ||
            c.dsts_len > sizeof(c.dsts) ||
            (size_t)n != offsetof(struct jail_premade_claim, dsts) + c.dsts_len ||
            (c.dsts_len > 0 && c.dsts[c.dsts_len - 1] != '\0') || c.workspace > c.n_trees) {
                errno = EPROTO;
                fail(STEP_ORDERS);
        }
        close(q->order_fd);
        q->stdin_fd = fds[0];
        q->config_fd = fds[1];
        if (c.disk_bytes > 0 && (resize_tmpfs("/tmp", c.disk_bytes) < 0 ||
                                 (!c.workspace && resize_tmpfs("/workspace", c.disk_bytes) < 0)))
                fail(STEP_RESIZE);
        const char *dst = c.dsts;
        for (uint32_t i = 0; i < c.n_trees; i++) {
                int tree = fds[2 + i];
                struct stat st;
                if (fstat(tree, &st) < 0)
                        fail(STEP_ATTACH);
                if (i == 0 && c.workspace) {
                        /* The caller's workspace instead of the empty tmpfs. */
                        if (umount2("/workspace", MNT_DETACH) < 0 ||
                            syscall(SYS_move_mount, tree, "", AT_FDCWD, "/workspace", MOVE_MOUNT_F_EMPTY_PATH) < 0)
                                fail(STEP_ATTACH);
                } else {
                        if (dst >= c.dsts + c.dsts_len || dst[0] != '/') {
                                errno = EPROTO;
                                fail(STEP_ORDERS);
                        }
                        /* Flags (read-only, nosuid, nodev) were set on the tree. */
                        if (make_parents(dst) < 0 || make_target(dst, S_ISDIR(st.st_mode), 0) < 0 ||
                            syscall(SYS_move_mount, tree, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                                fail(STEP_ATTACH);
                        dst += strlen(dst) + 1;
                }
                close(tree);
        }
        if (c.script)
                write_script(&c, fds[2 + c.n_trees]);
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

/* The failure of a step init would have taken (protocol.h's init_step),
 * reported as init reports it, so that a pre-made jail's caller hears what
 * a direct jail's hears. */
static __attribute__((noreturn)) void init_step_failed(enum init_step step, int err)
{
        report(MSG_INIT_FAILED, step, err);
        _exit(125);
}

static long exec_fn(const char *path, char *const *argv, char *const *envp)
{
        execve(path, argv, envp);
        return -errno;
}

/* A pre-made jail's program process: the rlimits in force, read before
 * its claim. */
static struct rlimit64 limits_now[RLIM_NLIMITS];

/* The program process's descriptors: stdout and stderr at 1 and 2, the
 * status pipe at 3, init's socket at 4, placed before the claim (the
 * claim's socket waits at 6); the claim's stdin goes to 0 and its orders
 * to 5. */
enum { FD_STATUS = 3, FD_SOCK, FD_ORDERS, FD_CLAIM };

static void place_waiting_fds(struct jail_plan *q, int sock)
{
        int src[7] = { -1, q->stdout_fd, q->stderr_fd, q->status_fd, sock, -1, q->order_fd };
        if (place_fds(src, 7, 3) < 0)
                fail(STEP_FDS);
        status_fd = FD_STATUS;
        q->stdout_fd = 1;
        q->stderr_fd = 2;
        q->status_fd = FD_STATUS;
        q->order_fd = FD_CLAIM;
}

/* The claim's stdin at 0 and orders at 5: where they land, the lowest
 * numbers free, unless something else was open. */
static int place_claim_fds(const struct jail_plan *q)
{
        if (q->stdin_fd != 0 || q->config_fd != FD_ORDERS) {
                int src[6] = { q->stdin_fd, 1, 2, FD_STATUS, FD_SOCK, q->config_fd };
                return place_fds(src, 6, 3);
        }
        if (fcntl(0, F_SETFD, 0) < 0) /* received close-on-exec: the program's stdin stays open */
                return -1;
        if (syscall(SYS_close_range, FD_ORDERS + 1, ~0U, 0) < 0) {
                for (int fd = FD_ORDERS + 1; fd < 65536; fd++)
                        close(fd);
        }
        return 0;
}

/* A pre-made jail's program process, once claimed: the claim's stdin at
 * 0 and orders at 5, then what corral-init's forked child does in a
 * direct jail (its run_program()): the orders read (and handed to init,
 * for the EPERM set), the rlimits, the working directory, the filter (its
 * listener to init), and the program (its session of its own was made
 * before the claim).  The root is sealed and every privilege gone already.
 * Memory comes from mmap: this is a copy of a threaded process, whose
 * allocator's locks it must not touch. */
static __attribute__((noreturn)) void start_claimed_program(const struct jail_plan *q)
{
        if (place_claim_fds(q) < 0)
                fail(STEP_FDS);
        report(MSG_ROOT_READY, 0, 0);

        off_t size = lseek(FD_ORDERS, 0, SEEK_END);
        if (size < (off_t)sizeof(struct init_header) || size > (off_t)CORRAL_INIT_MAX_CONFIG)
                init_step_failed(INIT_STEP_CONFIG, EINVAL);
        char *buf = mmap(NULL, (size_t)size + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED)
                init_step_failed(INIT_STEP_CONFIG, ENOMEM);
        for (off_t got = 0; got < size;) {
                ssize_t n = pread(FD_ORDERS, buf + got, (size_t)(size - got), got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        init_step_failed(INIT_STEP_CONFIG, n < 0 ? errno : EINVAL);
                got += n;
        }
        struct corral_orders o;
        if (corral_orders_header(buf, (size_t)size, &o.hdr) < 0)
                init_step_failed(INIT_STEP_CONFIG, EINVAL);
        /* mmap'd memory is zeroed: argv[argc] and envp[envc] are NULL. */
        char **vec = mmap(NULL, (o.hdr.argc + o.hdr.envc + 2) * sizeof(char *), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (vec == MAP_FAILED)
                init_step_failed(INIT_STEP_CONFIG, ENOMEM);
        if (corral_orders_parse(buf, (size_t)size, vec, &o) < 0)
                init_step_failed(INIT_STEP_CONFIG, EINVAL);
        char tag = CORRAL_ORDERS_MSG_ORDERS;
        int orders_fd = FD_ORDERS;
        if (unix_send_fds(FD_SOCK, &tag, 1, &orders_fd, 1) < 0)
                init_step_failed(INIT_STEP_CONFIG, errno);
        close(FD_ORDERS);

        for (uint32_t i = 0; i < o.hdr.n_rlimits; i++) {
                struct rlimit64 rl = { o.rlimits[i].cur, o.rlimits[i].max };
                uint32_t res = o.rlimits[i].resource;
                if (res < RLIM_NLIMITS)
                        corral_orders_lower(&rl.rlim_cur, &rl.rlim_max, limits_now[res].rlim_max, RLIM64_INFINITY);
                if (prlimit64(0, (enum __rlimit_resource)res, &rl, NULL) < 0)
                        init_step_failed(INIT_STEP_RLIMIT, errno);
        }
        /* (Its umask is 022 since jail_enter().) */
        if (chdir(o.cwd) < 0)
                init_step_failed(INIT_STEP_CHDIR, errno);

        /* The filter's inner part, on the outer one loaded before the
         * claim: the two stand for the orders' program, which must be the
         * one they were split from (seccomp.c). */
        const struct jail_bpf *whole = q->bpf_whole, *inner = q->bpf_inner;
        if (o.hdr.bpf_len != whole->len || memcmp(o.bpf, whole->insns, whole->len * sizeof(*whole->insns)) != 0)
                init_step_failed(INIT_STEP_SECCOMP, EINVAL);
        struct sock_fprog prog = { .len = (unsigned short)inner->len, .filter = inner->insns };
        bool want_listener = !(o.hdr.flags & CORRAL_INIT_FLAG_NO_LISTENER);
        long listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                want_listener ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0, &prog);
        if (listener < 0)
                init_step_failed(INIT_STEP_SECCOMP, errno);
        /* From here on every system call passes the filter. */
        report(MSG_SECCOMP_LOADED, 0, 0);
        if (want_listener) {
                int fd = (int)listener;
                tag = CORRAL_ORDERS_MSG_LISTENER;
                if (unix_send_fds(FD_SOCK, &tag, 1, &fd, 1) < 0)
                        init_step_failed(INIT_STEP_LISTENER, errno);
                close((int)listener);
        }

        int err = corral_orders_exec(o.argv, o.envp, exec_fn);
        char msg[1 + sizeof(int)] = { CORRAL_ORDERS_MSG_EXEC_ERR };
        memcpy(msg + 1, &err, sizeof(int));
        send(FD_SOCK, msg, sizeof(msg), MSG_NOSIGNAL);
        _exit(err == ENOENT ? 127 : 126);
}

/* A pre-made jail splits in two before its claim.  The program's process
 * is forked now and waits for the claim; this process (pid 1) drops every
 * privilege and becomes corral-init, which adopts it.  So the claim wakes
 * one process that is ready to run the program: no corral-init to execute
 * and no fork between the claim and the program (docs/exec-pool.md). */
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
                /* What needs no claim is done before it: the bounding set
                 * (its mounts need only the effective set) and the limits
                 * in force, which the orders' rlimits may not exceed. */
                drop_bounding_set();
                for (int r = 0; r < RLIM_NLIMITS; r++)
                        if (prlimit64(0, (enum __rlimit_resource)r, NULL, &limits_now[r]) < 0)
                                fail(STEP_PROGRAM_PROCESS);
                /* Own session: no controlling terminal, so no TIOCSTI
                 * into the caller's. */
                setsid();
                struct jail_plan claimed = *p;
                place_waiting_fds(&claimed, sv[1]);
                /* The filter's outer part now, with no listener (the inner
                 * one's, loaded at the claim, gets every notification): a
                 * big program is 0.2 ms of the claim's path, the inner one
                 * 0.05 (docs/exec-pool.md).  Still capable here, so no
                 * no_new_privs is needed yet. */
                struct sock_fprog outer = { .len = (unsigned short)p->bpf_outer->len, .filter = p->bpf_outer->insns };
                if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &outer) < 0)
                        init_step_failed(INIT_STEP_SECCOMP, errno);
                await_claim(&claimed);
                seal_root();
                drop_capabilities(&claimed);
                start_claimed_program(&claimed);
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
