/* corral-init: pid 1 of every jail.
 *
 * A small, statically linked program the setup child exec's as its last step,
 * so that no process inside the jail is a fork of corral (whose memory holds
 * API keys and the host environment).  It reads its orders from fd 3, starts
 * the payload in a new session with rlimits and the seccomp filter, reaps
 * every orphan, turns filter violations (delivered through a seccomp user-
 * notification listener) into a report and a kill, and reports the payload's
 * wait status on fd 4.  When it returns, the kernel kills whatever is left in
 * the pid namespace, double-forked daemons included.
 *
 * It runs with no capabilities, under no_new_privs, as the jail's uid, and is
 * never built with sanitizers (their runtimes do not survive RLIMIT_AS).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/protocol.h"

struct orders {
        struct init_header hdr;
        struct init_rlimit *rlimits;
        struct sock_filter *bpf;
        char **argv;
        char **envp;
        const char *cwd;
};

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void report(uint32_t type, int32_t a, int32_t b)
{
        struct init_msg m = { .type = type, .a = a, .b = b, .t = now_ms() };
        /* A full or closed pipe means the supervisor is gone; nothing to do. */
        ssize_t r = write(CORRAL_INIT_STATUS_FD, &m, sizeof(m));
        (void)r;
}

static __attribute__((noreturn)) void die(enum init_step step, int err)
{
        report(MSG_INIT_FAILED, (int32_t)step, err);
        _exit(125);
}

static int read_orders(struct orders *o)
{
        struct stat st;
        if (fstat(CORRAL_INIT_CONFIG_FD, &st) < 0 || st.st_size < (off_t)sizeof(struct init_header) ||
            st.st_size > (off_t)CORRAL_INIT_MAX_CONFIG)
                return -1;
        size_t size = (size_t)st.st_size;
        char *buf = malloc(size + 1);
        if (buf == NULL)
                return -1;
        size_t got = 0;
        while (got < size) {
                ssize_t n = pread(CORRAL_INIT_CONFIG_FD, buf + got, size - got, (off_t)got);
                if (n <= 0)
                        return -1;
                got += (size_t)n;
        }
        buf[size] = '\0';
        memcpy(&o->hdr, buf, sizeof(o->hdr));
        if (o->hdr.magic != CORRAL_INIT_MAGIC || o->hdr.version != CORRAL_INIT_VERSION || o->hdr.argc == 0)
                return -1;
        size_t off = sizeof(o->hdr);
        size_t need = off + (size_t)o->hdr.n_rlimits * sizeof(struct init_rlimit) +
                      (size_t)o->hdr.bpf_len * sizeof(struct sock_filter) + o->hdr.strings_len;
        if (need != size || o->hdr.bpf_len == 0)
                return -1;
        o->rlimits = (struct init_rlimit *)(buf + off);
        off += o->hdr.n_rlimits * sizeof(struct init_rlimit);
        o->bpf = (struct sock_filter *)(buf + off);
        off += o->hdr.bpf_len * sizeof(struct sock_filter);

        o->argv = calloc(o->hdr.argc + 1, sizeof(char *));
        o->envp = calloc(o->hdr.envc + 1, sizeof(char *));
        if (o->argv == NULL || o->envp == NULL)
                return -1;
        char *s = buf + off, *end = buf + size;
        for (uint32_t i = 0; i < o->hdr.argc + o->hdr.envc + 1; i++) {
                char *z = memchr(s, '\0', (size_t)(end - s));
                if (z == NULL)
                        return -1;
                if (i < o->hdr.argc)
                        o->argv[i] = s;
                else if (i < o->hdr.argc + o->hdr.envc)
                        o->envp[i - o->hdr.argc] = s;
                else
                        o->cwd = s;
                s = z + 1;
        }
        return 0;
}

static const char *env_get(char **envp, const char *name)
{
        size_t n = strlen(name);
        for (; *envp; envp++)
                if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
                        return *envp + n + 1;
        return NULL;
}

/* execve argv[0], searching the jail's PATH (from the payload's own
 * environment, not init's empty one) when it has no slash.  Returns the most
 * telling errno on failure. */
static int exec_payload(char **argv, char **envp)
{
        if (strchr(argv[0], '/') != NULL) {
                execve(argv[0], argv, envp);
                return errno;
        }
        const char *path = env_get(envp, "PATH");
        if (path == NULL)
                path = "/usr/local/bin:/usr/bin:/bin";
        int best = ENOENT;
        while (*path) {
                const char *colon = strchrnul(path, ':');
                char full[PATH_MAX];
                size_t dlen = (size_t)(colon - path);
                if (dlen + 1 + strlen(argv[0]) + 1 <= sizeof(full)) {
                        memcpy(full, path, dlen);
                        full[dlen] = '/';
                        memcpy(full + dlen + 1, argv[0], strlen(argv[0]) + 1);
                        execve(full, argv, envp);
                        if (errno == EACCES || errno == ENOEXEC)
                                best = errno;
                }
                path = *colon ? colon + 1 : colon;
        }
        return best;
}

static int send_fd(int sock, int fd)
{
        char dummy = 'L';
        struct iovec iov = { .iov_base = &dummy, .iov_len = 1 };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        memset(&u, 0, sizeof(u));
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                              .msg_controllen = sizeof(u.buf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
        return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* Receive either a listener fd ('L' + SCM_RIGHTS) or an exec errno ('E'). */
static int recv_msg(int sock, int *ret_fd, int *ret_errno)
{
        char buf[8];
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                              .msg_controllen = sizeof(u.buf) };
        ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (n <= 0)
                return (int)n;
        if (buf[0] == 'L') {
                struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
                if (c && c->cmsg_type == SCM_RIGHTS)
                        memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
        } else if (buf[0] == 'E' && n >= 5) {
                memcpy(ret_errno, buf + 1, sizeof(int));
        }
        return 1;
}

static __attribute__((noreturn)) void payload(struct orders *o, int sock, const sigset_t *oldmask)
{
        sigprocmask(SIG_SETMASK, oldmask, NULL);
        /* Own session: no controlling terminal, so no TIOCSTI into the caller's. */
        setsid();
        for (uint32_t i = 0; i < o->hdr.n_rlimits; i++) {
                struct rlimit rl = { .rlim_cur = o->rlimits[i].cur, .rlim_max = o->rlimits[i].max }, now;
                /* Only ever lower: raising a hard limit needs a privilege we
                 * do not have, and a lower host limit is stricter anyway. */
                if (getrlimit(o->rlimits[i].resource, &now) == 0 && now.rlim_max != RLIM_INFINITY) {
                        if (rl.rlim_max > now.rlim_max)
                                rl.rlim_max = now.rlim_max;
                        if (rl.rlim_cur > rl.rlim_max)
                                rl.rlim_cur = rl.rlim_max;
                }
                if (setrlimit(o->rlimits[i].resource, &rl) < 0)
                        die(INIT_STEP_RLIMIT, errno);
        }
        if (chdir(o->cwd) < 0)
                die(INIT_STEP_CHDIR, errno);
        umask(022);

        struct sock_fprog prog = { .len = (unsigned short)o->hdr.bpf_len, .filter = o->bpf };
        int listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (listener < 0)
                die(INIT_STEP_SECCOMP, errno);
        /* From here on every syscall passes the filter: only allowed ones. */
        report(MSG_SECCOMP_LOADED, 0, 0);
        if (send_fd(sock, listener) < 0)
                die(INIT_STEP_LISTENER, errno);
        close(listener);

        int err = exec_payload(o->argv, o->envp);
        char msg[1 + sizeof(int)] = { 'E' };
        memcpy(msg + 1, &err, sizeof(int));
        ssize_t r = send(sock, msg, sizeof(msg), MSG_NOSIGNAL);
        (void)r;
        _exit(err == ENOENT ? 127 : 126);
}

int main(void)
{
        report(MSG_INIT_START, 0, 0);
        struct orders o;
        memset(&o, 0, sizeof(o));
        if (read_orders(&o) < 0)
                die(INIT_STEP_CONFIG, errno);
        close(CORRAL_INIT_CONFIG_FD);
        /* The status pipe is ours alone: the program must not inherit it. */
        fcntl(CORRAL_INIT_STATUS_FD, F_SETFD, FD_CLOEXEC);

        sigset_t mask, oldmask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        if (sigprocmask(SIG_BLOCK, &mask, &oldmask) < 0)
                die(INIT_STEP_SIGNALS, errno);
        int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        int sv[2];
        if (sfd < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                die(INIT_STEP_SIGNALS, errno);

        pid_t child = fork();
        if (child < 0)
                die(INIT_STEP_FORK, errno);
        if (child == 0) {
                close(sv[0]);
                close(sfd);
                payload(&o, sv[1], &oldmask);
        }
        close(sv[1]);

        int listener = -1, exec_errno = 0, status = 0;
        bool sock_open = true, done = false;
        while (!done) {
                struct pollfd p[3] = {
                        { .fd = sfd, .events = POLLIN },
                        { .fd = sock_open ? sv[0] : -1, .events = POLLIN },
                        { .fd = listener, .events = POLLIN },
                };
                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        die(INIT_STEP_SIGNALS, errno);
                }
                if (p[1].revents) {
                        int r = recv_msg(sv[0], &listener, &exec_errno);
                        if (r <= 0) { /* payload exec'd (CLOEXEC) or died */
                                close(sv[0]);
                                sock_open = false;
                        }
                }
                if (p[2].revents & POLLIN) {
                        struct seccomp_notif req;
                        memset(&req, 0, sizeof(req));
                        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
                                report(MSG_SECCOMP_VIOLATION, req.data.nr, (int32_t)req.data.arch);
                                /* Everything but us: the violator and its whole tree. */
                                kill(-1, SIGKILL);
                        }
                } else if (p[2].revents & (POLLHUP | POLLERR)) {
                        close(listener); /* no filtered task left */
                        listener = -1;
                }
                if (p[0].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof(si)) > 0)
                                ;
                        int st;
                        pid_t w;
                        while ((w = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
                                if (w == child) {
                                        status = st;
                                        done = true;
                                }
                        }
                }
        }
        if (sock_open) /* collect a late exec error */
                recv_msg(sv[0], &listener, &exec_errno);
        if (exec_errno != 0)
                report(MSG_EXEC_FAILED, exec_errno, 0);
        report(MSG_EXITED, status, 0);
        return 0;
}
