/* corral-init: pid 1 of every jail.
 *
 * A small, static, libc-free program (see sys.h) that the setup child execs
 * as its last step, so that no process inside the jail is a fork of corral
 * (whose memory holds API keys and the host environment).  It reads its
 * orders from fd 3, starts the program in a new session with rlimits and the
 * seccomp filter, reaps every orphan, answers the calls the filter hands it
 * (a seccomp user-notification listener): EPERM for those in its orders' EPERM
 * set, reported once each, a report and a kill of the tree for any other;
 * and reports the program's wait status on fd 4.  When it returns, the kernel
 * kills whatever is left in the pid namespace, double-forked daemons
 * included.
 *
 * In a pre-made jail (CORRAL_INIT_ADOPT=PID) the program's process is
 * already there, forked by the setup child to wait for the claim
 * (src/lib/enter.c): init is started before the claim, adopts it, gets
 * the orders from it (fd 3 is then their socket), and does the rest as
 * above; once the program ended it kills the rest of the tree, reports,
 * and waits for the supervisor's kill (CORRAL_INIT_FLAG_LINGER).  That
 * process runs corral-init too, in program mode (CORRAL_INIT_PROGRAM=1):
 * it waits for the claim, carries it out (the caller's workspace, binds
 * and disk, the root sealed, its last capability dropped), hands init the
 * orders and starts the program as init's own child does.
 *
 * It runs with no capabilities, under no_new_privs, as the jail's uid, and is
 * never built with sanitizers (their runtimes do not survive RLIMIT_AS).
 */
#include <stdbool.h>

#include "../lib/init-orders.h"
#include "../lib/protocol.h"
#include "sys.h"

/* ---- the few library functions we need ---- */

void *memcpy(void *d, const void *s, size_t n)
{
        unsigned char *dp = d;
        const unsigned char *sp = s;
        while (n--)
                *dp++ = *sp++;
        return d;
}

void *memset(void *d, int c, size_t n)
{
        unsigned char *dp = d;
        while (n--)
                *dp++ = (unsigned char)c;
        return d;
}

size_t strlen(const char *s)
{
        size_t n = 0;
        while (s[n])
                n++;
        return n;
}

/* ---- reporting ---- */

static void report(uint32_t type, int32_t a, int32_t b)
{
        struct init_msg m = { .type = type, .a = a, .b = b, .t = s_now_ms() };
        /* A full or closed pipe means the supervisor is gone; nothing to do. */
        s_write(CORRAL_INIT_STATUS_FD, &m, sizeof(m));
}

static __attribute__((noreturn)) void die(enum init_step step, long err)
{
        report(MSG_INIT_FAILED, (int32_t)step, (int32_t)-err);
        s_exit(125);
}

/* ---- orders ---- */

/* The orders in fd, read whole and parsed (init-orders.h). */
static long read_orders(int fd, struct corral_orders *o)
{
        long size = s_lseek(fd, 0, S_SEEK_END);
        if (size < 0)
                return size;
        if (size < (long)sizeof(struct init_header) || size > (long)CORRAL_INIT_MAX_CONFIG)
                return -S_EINVAL;
        char *buf = s_mmap((size_t)size + 1);
        if (buf == NULL)
                return -S_ENOMEM;
        for (long got = 0; got < size;) {
                long n = s_pread(fd, buf + got, (size_t)(size - got), got);
                if (n == -S_EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? n : -S_EINVAL;
                got += n;
        }
        buf[size] = '\0';
        long r = corral_orders_header(buf, (size_t)size, &o->hdr);
        if (r < 0)
                return r;
        /* mmap'd memory is zeroed: argv[argc] and envp[envc] are NULL. */
        char **vec = s_mmap((o->hdr.argc + o->hdr.envc + 2) * sizeof(char *));
        if (vec == NULL)
                return -S_ENOMEM;
        return corral_orders_parse(buf, (size_t)size, vec, o);
}

/* ---- starting the program ---- */

static long exec_fn(const char *path, char *const *argv, char *const *envp)
{
        return s_execve(path, argv, envp);
}

static long send_fd(int sock, char tag, int fd)
{
        struct s_iovec iov = { &tag, 1 };
        /* One descriptor: CMSG_LEN(sizeof(int)), not the padded struct,
         * whose tail the kernel would take for a second one. */
        struct s_cmsghdr c = { .len = offsetof(struct s_cmsghdr, fd) + sizeof(int), .level = S_SOL_SOCKET,
                               .type = S_SCM_RIGHTS, .fd = fd };
        struct s_msghdr m = { .iov = &iov, .iovlen = 1, .control = &c, .controllen = sizeof(c) };
        long r = s_sendmsg(sock, &m, S_MSG_NOSIGNAL);
        return r == 1 ? 0 : (r < 0 ? r : -S_EINVAL);
}

/* What the program's process said on their socket (init-orders.h). */
struct from_program {
        struct corral_orders *orders; /* filled by its orders, when it sends them (adopted) */
        int listener;
        int exec_errno;
};

/* Receive and take in one message of the program's process: its orders
 * (adopted), its listener, or an exec errno.  flags: S_MSG_DONTWAIT to
 * drain what is left.  recvmsg's result. */
static long recv_msg(int sock, struct from_program *f, int flags)
{
        char buf[8];
        struct s_iovec iov = { buf, sizeof(buf) };
        struct s_cmsghdr c;
        memset(&c, 0, sizeof(c));
        struct s_msghdr m = { .iov = &iov, .iovlen = 1, .control = &c, .controllen = sizeof(c) };
        long n = s_recvmsg(sock, &m, S_MSG_CMSG_CLOEXEC | flags);
        if (n <= 0)
                return n;
        int fd = c.level == S_SOL_SOCKET && c.type == S_SCM_RIGHTS ? c.fd : -1;
        if (buf[0] == CORRAL_ORDERS_MSG_LISTENER && fd >= 0 && f->listener < 0) {
                f->listener = fd;
        } else if (buf[0] == CORRAL_ORDERS_MSG_ORDERS && fd >= 0) {
                /* Adopted: the EPERM set, before any listener. */
                long r = read_orders(fd, f->orders);
                if (r < 0)
                        die(INIT_STEP_CONFIG, r);
                s_close(fd);
        } else {
                if (buf[0] == CORRAL_ORDERS_MSG_EXEC_ERR && n >= 5)
                        memcpy(&f->exec_errno, buf + 1, sizeof(int));
                if (fd >= 0)
                        s_close(fd);
        }
        return n;
}

/* Every signal's default action, as a program started from a shell gets
 * it: an ignored one stays ignored across exec, and corral ignores SIGPIPE
 * (a program that writes to a closed pipe would go on, with EPIPE, where
 * it should die).  64 system calls, 23 us here. */
static void default_signal_actions(void)
{
        for (int sig = 1; sig <= 64; sig++)
                s_sigaction_dfl(sig);
}

/* signals_done: default_signal_actions() ran already (program mode, before
 * its claim). */
static __attribute__((noreturn)) void run_program(struct corral_orders *o, int sock, const uint64_t *oldmask,
                                                   bool signals_done)
{
        s_sigprocmask(S_SIG_SETMASK, oldmask, NULL);
        if (!signals_done)
                default_signal_actions();
        /* Own session: no controlling terminal, so no TIOCSTI into the caller's. */
        s_setsid();
        for (uint32_t i = 0; i < o->hdr.n_rlimits; i++) {
                struct s_rlimit rl = { o->rlimits[i].cur, o->rlimits[i].max }, now;
                /* Only ever lower: raising a hard limit needs a privilege we
                 * do not have, and a lower host limit is stricter anyway. */
                if (s_prlimit(o->rlimits[i].resource, NULL, &now) == 0)
                        corral_orders_lower(&rl.cur, &rl.max, now.max, S_RLIM_INFINITY);
                long r = s_prlimit(o->rlimits[i].resource, &rl, NULL);
                if (r < 0)
                        die(INIT_STEP_RLIMIT, r);
        }
        long r = s_chdir(o->cwd);
        if (r < 0)
                die(INIT_STEP_CHDIR, r);
        s_umask(022);

        struct sock_fprog prog = { .len = (unsigned short)o->hdr.bpf_len, .filter = o->bpf };
        bool want_listener = !(o->hdr.flags & CORRAL_INIT_FLAG_NO_LISTENER);
        long listener = s_seccomp(SECCOMP_SET_MODE_FILTER, want_listener ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0,
                                  &prog);
        if (listener < 0)
                die(INIT_STEP_SECCOMP, listener);
        /* From here on every system call passes the filter. */
        report(MSG_SECCOMP_LOADED, 0, 0);
        if (want_listener) {
                if ((r = send_fd(sock, CORRAL_ORDERS_MSG_LISTENER, (int)listener)) < 0)
                        die(INIT_STEP_LISTENER, r);
                s_close((int)listener);
        }

        int err = corral_orders_exec(o->argv, o->envp, exec_fn);
        char msg[1 + sizeof(int)] = { CORRAL_ORDERS_MSG_EXEC_ERR };
        memcpy(msg + 1, &err, sizeof(int));
        struct s_iovec iov = { msg, sizeof(msg) };
        struct s_msghdr m = { .iov = &iov, .iovlen = 1 };
        s_sendmsg(sock, &m, S_MSG_NOSIGNAL);
        s_exit(err == S_ENOENT ? 127 : 126);
}

/* ---- a pre-made jail's program process: program mode ---- */

static __attribute__((noreturn)) void setup_failed(int step, long err)
{
        report(MSG_SETUP_FAILED, step, (int32_t)-err);
        s_exit(125);
}

static bool str_eq(const char *a, const char *b)
{
        while (*a && *a == *b) {
                a++;
                b++;
        }
        return *a == *b;
}

static bool has_slash(const char *s)
{
        for (; *s; s++)
                if (*s == '/')
                        return true;
        return false;
}

/* What the cold path's OP_DIR ops make, or a file to mount a file on. */
static long make_target(const char *dst, bool dir, int mode)
{
        /* Already there (a mount point left in a read-only bind): fine. */
        struct statx st;
        if (s_statx(S_AT_FDCWD, dst, AT_SYMLINK_NOFOLLOW, &st) == 0 &&
            (st.stx_mode & S_IFMT_MASK) == (dir ? S_IFDIR_BITS : S_IFREG_BITS))
                return 0;
        if (dir) {
                long r = s_mkdir(dst, mode);
                return r == -S_EEXIST ? 0 : r;
        }
        long fd = s_openat(dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode ? mode : 0644);
        if (fd < 0)
                return fd == -S_EEXIST ? 0 : fd;
        s_close((int)fd);
        return 0;
}

/* mkdir -p of dst's parents. */
static long make_parents(const char *dst)
{
        static char path[4096];
        size_t len = strlen(dst);
        if (len >= sizeof(path))
                return -S_ENAMETOOLONG;
        memcpy(path, dst, len + 1);
        for (char *p = path + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                long r = make_target(path, true, 0755);
                *p = '/';
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Resize a tmpfs of the new root (an empty one: nothing ran in the jail
 * yet) to the caller's disk limit. */
static long resize_tmpfs(const char *dst, uint64_t size)
{
        char data[96], *d = data + sizeof(data);
        uint64_t v[2] = { size / 1024 + 1024, size };
        const char *keys[2] = { ",nr_inodes=", "size=" };
        *--d = '\0';
        for (int k = 0; k < 2; k++) { /* digits backwards */
                do
                        *--d = (char)('0' + v[k] % 10);
                while ((v[k] /= 10) > 0);
                for (size_t n = strlen(keys[k]); n > 0; n--)
                        *--d = keys[k][n - 1];
        }
        return s_mount(NULL, dst, NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, d);
}

/* A claim's program text into /run/corral/NAME of the root, which grows to
 * hold it: what the plan's OP_FILE writes for a direct jail. */
static void write_script(const struct jail_premade_claim *c, int text)
{
        const char *name = c->script_name;
        size_t len = 0;
        while (len < sizeof(c->script_name) && name[len])
                len++;
        if (len == 0 || len == sizeof(c->script_name) || has_slash(name) || str_eq(name, ".") || str_eq(name, ".."))
                setup_failed(STEP_ORDERS, -S_EPROTO);
        long r = resize_tmpfs("/", c->root_bytes);
        if (r < 0)
                setup_failed(STEP_RESIZE, r);
        static char path[sizeof("/run/corral/") + JAIL_PREMADE_MAX_SCRIPT_NAME];
        memcpy(path, "/run/corral/", sizeof("/run/corral/") - 1);
        memcpy(path + sizeof("/run/corral/") - 1, name, len + 1);
        if (((r = s_mkdir("/run", 0755)) < 0 && r != -S_EEXIST) ||
            ((r = s_mkdir("/run/corral", 0755)) < 0 && r != -S_EEXIST))
                setup_failed(STEP_SCRIPT, r);
        long fd = s_openat(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        char *buf = s_mmap(1u << 16);
        if (fd < 0 || buf == NULL)
                setup_failed(STEP_SCRIPT, fd < 0 ? fd : -S_ENOMEM);
        for (uint64_t off = 0; off < c->script_len;) {
                size_t want = c->script_len - off < (1u << 16) ? (size_t)(c->script_len - off) : (1u << 16);
                long got = s_pread(text, buf, want, (long)off);
                if (got <= 0)
                        setup_failed(STEP_SCRIPT, got < 0 ? got : -S_EINVAL);
                for (long w = 0; w < got;) {
                        long n = s_write((int)fd, buf + w, (size_t)(got - w));
                        if (n <= 0)
                                setup_failed(STEP_SCRIPT, n < 0 ? n : -S_EINVAL);
                        w += n;
                }
                off += (uint64_t)got;
        }
        s_close((int)fd);
        s_close(text);
}

/* The claim (protocol.h's struct jail_premade_claim), received into our
 * own static copy with its descriptors. */
static struct jail_premade_claim claim;
static struct {
        size_t len;
        int level;
        int type;
        int fds[JAIL_PREMADE_MAX_FDS];
} claim_fds;

/* Program mode (enter.c forked us to wait for a pre-made jail's claim):
 * the caller's disk limit, workspace and binds, the root sealed, every
 * privilege dropped, then the orders handed to init (for the EPERM set)
 * and the program started as init's own child would start it, with the
 * filter's inner part on the outer one loaded before we were. */
static __attribute__((noreturn)) void program_main(void)
{
        /* Ours alone: the program must not inherit them. */
        s_fcntl(CORRAL_PROGRAM_SOCK_FD, F_SETFD, FD_CLOEXEC);
        s_fcntl(CORRAL_INIT_STATUS_FD, F_SETFD, FD_CLOEXEC);
        s_fcntl(CORRAL_PROGRAM_CLAIM_FD, F_SETFD, FD_CLOEXEC);
        default_signal_actions(); /* now rather than on the claim's path */
        char ready = JAIL_PREMADE_READY;
        struct s_iovec riov = { &ready, 1 };
        struct s_msghdr rm = { .iov = &riov, .iovlen = 1 };
        if (s_sendmsg(CORRAL_PROGRAM_CLAIM_FD, &rm, S_MSG_NOSIGNAL) != 1)
                s_exit(125);
        struct s_iovec iov = { &claim, sizeof(claim) };
        struct s_msghdr m = { .iov = &iov, .iovlen = 1, .control = &claim_fds, .controllen = sizeof(claim_fds) };
        long n;
        do
                n = s_recvmsg(CORRAL_PROGRAM_CLAIM_FD, &m, S_MSG_CMSG_CLOEXEC);
        while (n == -S_EINTR);
        if (n == 0)
                s_exit(125); /* the pool let it go unclaimed */
        if (n < 0)
                setup_failed(STEP_ORDERS, n);
        int nfds = 0;
        if (m.controllen >= offsetof(__typeof__(claim_fds), fds) && claim_fds.level == S_SOL_SOCKET &&
            claim_fds.type == S_SCM_RIGHTS && claim_fds.len >= offsetof(__typeof__(claim_fds), fds))
                nfds = (int)((claim_fds.len - offsetof(__typeof__(claim_fds), fds)) / sizeof(int));
        const struct jail_premade_claim *c = &claim;
        if (n < (long)offsetof(struct jail_premade_claim, dsts) || (m.flags & (S_MSG_CTRUNC | S_MSG_TRUNC)) ||
            c->n_trees > JAIL_PREMADE_MAX_FDS || c->script > 1 || nfds != 2 + (int)c->n_trees + (int)c->script ||
            c->dsts_len > sizeof(c->dsts) || (size_t)n != offsetof(struct jail_premade_claim, dsts) + c->dsts_len ||
            (c->dsts_len > 0 && c->dsts[c->dsts_len - 1] != '\0') || c->workspace > c->n_trees)
                setup_failed(STEP_ORDERS, -S_EPROTO);
        s_close(CORRAL_PROGRAM_CLAIM_FD);
        const int *fds = claim_fds.fds;
        long r;
        if (c->disk_bytes > 0 && ((r = resize_tmpfs("/tmp", c->disk_bytes)) < 0 ||
                                  (!c->workspace && (r = resize_tmpfs("/workspace", c->disk_bytes)) < 0)))
                setup_failed(STEP_RESIZE, r);
        const char *dst = c->dsts;
        for (uint32_t i = 0; i < c->n_trees; i++) {
                int tree = fds[2 + i];
                struct statx st;
                if ((r = s_statx(tree, "", AT_EMPTY_PATH, &st)) < 0)
                        setup_failed(STEP_ATTACH, r);
                if (i == 0 && c->workspace) {
                        /* The caller's workspace instead of the empty tmpfs. */
                        if ((r = s_umount2("/workspace", S_MNT_DETACH)) < 0 ||
                            (r = s_move_mount(tree, "/workspace")) < 0)
                                setup_failed(STEP_ATTACH, r);
                } else {
                        if (dst >= c->dsts + c->dsts_len || dst[0] != '/')
                                setup_failed(STEP_ORDERS, -S_EPROTO);
                        /* Flags (read-only, nosuid, nodev) were set on the tree. */
                        bool dir = (st.stx_mode & S_IFMT_MASK) == S_IFDIR_BITS;
                        if ((r = make_parents(dst)) < 0 || (r = make_target(dst, dir, 0)) < 0 ||
                            (r = s_move_mount(tree, dst)) < 0)
                                setup_failed(STEP_ATTACH, r);
                        dst += strlen(dst) + 1;
                }
                s_close(tree);
        }
        if (c->script)
                write_script(c, fds[2 + c->n_trees]);

        /* The root read-only, as the program will see it; then no
         * capability (CAP_SYS_ADMIN was the one left) and no way back. */
        if ((r = s_mount("/", "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL)) < 0)
                setup_failed(STEP_ROOT_READONLY, r);
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct none[2];
        memset(none, 0, sizeof(none));
        if ((r = s_capset(&hdr, none)) < 0)
                setup_failed(STEP_DROP_CAPS, r);
        if ((r = SYS5(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) < 0)
                setup_failed(STEP_NO_NEW_PRIVS, r);
        /* The claim's stdin at 0; its orders (close-on-exec) wherever they
         * landed. */
        int in = fds[0], orders = fds[1];
        if (in != 0 && ((r = s_dup3(in, 0, 0)) < 0 || (r = s_close(in)) < 0))
                setup_failed(STEP_FDS, r);
        if (in == 0 && (r = s_fcntl(0, F_SETFD, 0)) < 0)
                setup_failed(STEP_FDS, r);
        report(MSG_ROOT_READY, 0, 0);

        struct corral_orders o;
        memset(&o, 0, sizeof(o));
        if ((r = read_orders(orders, &o)) < 0)
                die(INIT_STEP_CONFIG, r);
        if ((r = send_fd(CORRAL_PROGRAM_SOCK_FD, CORRAL_ORDERS_MSG_ORDERS, orders)) < 0)
                die(INIT_STEP_CONFIG, r);
        s_close(orders);
        uint64_t no_mask = 0;
        run_program(&o, CORRAL_PROGRAM_SOCK_FD, &no_mask, true);
}

/* One call the filter handed us.  In the EPERM set: fail it with EPERM (it
 * never runs: only SECCOMP_USER_NOTIF_FLAG_CONTINUE, which we never send,
 * would let it) and report its number the first time.  Anything else is a
 * violation: report it and kill everything but us, the caller's whole tree. */
static void answer(int listener, const struct seccomp_notif *req, const uint64_t *eperm, uint64_t *seen)
{
        int32_t nr = (int32_t)req->data.nr;
        if (req->data.arch == CORRAL_AUDIT_ARCH_NATIVE && corral_eperm_has(eperm, nr)) {
                struct seccomp_notif_resp resp;
                memset(&resp, 0, sizeof(resp));
                resp.id = req->id;
                resp.error = -S_EPERM;
                /* ENOENT: the caller died meanwhile; nothing to answer. */
                s_ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
                if (!corral_eperm_has(seen, nr)) {
                        seen[nr / 64] |= 1ull << (nr % 64);
                        report(MSG_SECCOMP_EPERM, nr, (int32_t)req->data.arch);
                }
                return;
        }
        /* Kill first: the supervisor kills us when it reads the report,
         * and our exit closes the listener, which fails the pending call
         * with ENOSYS; a program not yet sent SIGKILL would go on from
         * there. */
        s_kill(-1, S_SIGKILL);
        report(MSG_SECCOMP_VIOLATION, nr, (int32_t)req->data.arch);
}

/* NAME's value in envp, or NULL.  The environment rather than argv: a
 * program reads /proc/PID/cmdline, which stays "corral-init", but not
 * /proc/PID/environ (init is not dumpable). */
static const char *env_value(char **envp, const char *name)
{
        for (; *envp; envp++) {
                const char *a = *envp, *want = name;
                while (*want && *a == *want) {
                        a++;
                        want++;
                }
                if (*want == '\0' && *a == '=')
                        return a + 1;
        }
        return NULL;
}

/* CORRAL_INIT_ADOPT=PID in init's environment (enter.c): the pid, or 0
 * (not adopting, or not a pid). */
static long adopted_pid(char **envp)
{
        const char *a = env_value(envp, CORRAL_INIT_ADOPT_VAR);
        long pid = 0;
        for (; a && *a; a++) {
                if (*a < '0' || *a > '9' || pid > (1L << 30))
                        return 0;
                pid = pid * 10 + (*a - '0');
        }
        return pid;
}

int init_main(int argc, char **argv);
int init_main(int argc, char **argv)
{
        /* Not dumpable: the program runs as our uid, and a dumpable init's
         * /proc/1/mem, /proc/1/fd (our status pipe and listener) and
         * /proc/1/maps would be open to it.  Its own exec makes it dumpable
         * again, which is fine: it is the one under the filter. */
        SYS2(__NR_prctl, PR_SET_DUMPABLE, 0);
        if (env_value(argv + argc + 1, CORRAL_INIT_PROGRAM_VAR))
                program_main();
        report(MSG_INIT_START, 0, 0);
        struct corral_orders o;
        memset(&o, 0, sizeof(o));
        long r, child = adopted_pid(argv + argc + 1);
        if (child == 0) {
                if ((r = read_orders(CORRAL_INIT_CONFIG_FD, &o)) < 0)
                        die(INIT_STEP_CONFIG, r);
                s_close(CORRAL_INIT_CONFIG_FD);
        }
        /* The status pipe is ours alone: the program must not inherit it. */
        s_fcntl(CORRAL_INIT_STATUS_FD, F_SETFD, FD_CLOEXEC);

        uint64_t mask = 1ull << (S_SIGCHLD - 1), oldmask = 0;
        if ((r = s_sigprocmask(S_SIG_BLOCK, &mask, &oldmask)) < 0)
                die(INIT_STEP_SIGNALS, r);
        long sfd = s_signalfd(&mask, O_CLOEXEC | O_NONBLOCK);
        if (sfd < 0)
                die(INIT_STEP_SIGNALS, sfd);
        int sv[2] = { CORRAL_INIT_CONFIG_FD, -1 };
        bool adopted = child > 0;
        if (adopted) {
                /* Adopted: fd 3 is the socket to the program's process,
                 * which sends the orders once it has them. */
                s_fcntl(sv[0], F_SETFD, FD_CLOEXEC);
        } else {
                if ((r = s_socketpair(S_AF_UNIX, S_SOCK_SEQPACKET | O_CLOEXEC, 0, sv)) < 0)
                        die(INIT_STEP_SIGNALS, r);
                child = s_fork();
                if (child < 0)
                        die(INIT_STEP_FORK, child);
                if (child == 0) {
                        s_close(sv[0]);
                        s_close((int)sfd);
                        run_program(&o, sv[1], &oldmask, false);
                }
                s_close(sv[1]);
        }

        struct from_program f = { .orders = &o, .listener = -1, .exec_errno = 0 };
        int status = 0;
        bool sock_open = true, done = false;
        uint64_t eperm_seen[CORRAL_INIT_EPERM_WORDS];
        memset(eperm_seen, 0, sizeof(eperm_seen));
        /* An adopted process may have ended before SIGCHLD was blocked
         * above (claimed as this init started): its signal was discarded,
         * so look once now; any later end is on sfd. */
        for (long w; adopted && !done && (w = s_wait4(-1, &status, S_WNOHANG | __WALL)) > 0;)
                done = w == child;
        while (!done) {
                struct pollfd p[3] = {
                        { .fd = (int)sfd, .events = POLLIN },
                        { .fd = sock_open ? sv[0] : -1, .events = POLLIN },
                        { .fd = f.listener, .events = POLLIN },
                };
                r = s_ppoll(p, 3);
                if (r == -S_EINTR)
                        continue;
                if (r < 0)
                        die(INIT_STEP_SIGNALS, r);
                if (p[1].revents && recv_msg(sv[0], &f, 0) <= 0) {
                        /* the program exec'd (CLOEXEC) or died */
                        s_close(sv[0]);
                        sock_open = false;
                }
                if (p[2].revents & POLLIN) {
                        struct seccomp_notif req;
                        memset(&req, 0, sizeof(req));
                        if (s_ioctl(f.listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0)
                                answer(f.listener, &req, o.hdr.eperm, eperm_seen);
                } else if (p[2].revents & (POLLHUP | POLLERR)) {
                        s_close(f.listener); /* no filtered task left */
                        f.listener = -1;
                }
                if (p[0].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        while (s_read((int)sfd, &si, sizeof(si)) > 0)
                                ;
                        int st = 0;
                        long w;
                        while ((w = s_wait4(-1, &st, S_WNOHANG | __WALL)) > 0) {
                                if (w == child) {
                                        status = st;
                                        done = true;
                                }
                        }
                }
        }
        /* Everything it said before it ended, an exec error last: it may
         * have sent all of it (orders, listener, error) before we looked. */
        while (sock_open && recv_msg(sv[0], &f, S_MSG_DONTWAIT) > 0)
                ;
        if (f.exec_errno != 0)
                report(MSG_EXEC_FAILED, f.exec_errno, 0);
        if (o.hdr.flags & CORRAL_INIT_FLAG_LINGER) {
                /* Nothing of the program's runs on after its end; our exit,
                 * and the teardown of the namespaces with it, wait for the
                 * supervisor's kill, once its caller is done. */
                s_kill(-1, S_SIGKILL);
                report(MSG_EXITED, status, 0);
                for (;;)
                        s_ppoll(NULL, 0);
        }
        report(MSG_EXITED, status, 0);
        return 0;
}

/* The entry point: no libc to set anything up, so align the stack and call
 * init_main(argc, argv). */
#if defined(__x86_64__)
__asm__(".text\n.global _start\n_start:\n\txor %rbp, %rbp\n\tmov (%rsp), %edi\n\tlea 8(%rsp), %rsi\n"
        "\tand $-16, %rsp\n\tcall init_main\n\tmov %eax, %edi\n\tmov $231, %eax\n\tsyscall\n\thlt\n");
#elif defined(__aarch64__)
__asm__(".text\n.global _start\n_start:\n\tmov x29, #0\n\tmov x30, #0\n\tldr x0, [sp]\n\tadd x1, sp, #8\n"
        "\tbl init_main\n\tmov x8, #94\n\tsvc 0\n");
#endif
