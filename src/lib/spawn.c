/* spawn.c: "spawn and supervise", what the caller does for one jail.
 *
 * corral_jail_run() prepares everything (plan, cgroups, filter, init's
 * orders), clones a child into new namespaces with clone3() (CLONE_PIDFD, and
 * CLONE_INTO_CGROUP where a v2 cgroup exists), writes its id maps, attaches
 * v1 cgroups, lets it go, and supervises it from one epoll loop: the
 * program's stdout and stderr pipes (read concurrently, capped), init's
 * status pipe, the pidfd and a timerfd for the wall limit.  Nothing here
 * touches process-wide state: no unshare() in the caller, no signal handler,
 * and the child's exit signal is 0 so no SIGCHLD reaches the caller's own
 * handlers and no waitpid(-1) elsewhere can reap it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/sched.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

#include "jail-internal.h"
#include "proxy-tls.h"
#include "proxy.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* ---- corral-init ---- */

static int init_fd = -1;
static int init_errno;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static int open_init(const char *path)
{
        if (path == NULL || path[0] == '\0')
                return -1;
        int fd = open(path, O_PATH | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
                close(fd);
                return -1;
        }
        return fd;
}

static void find_init(void)
{
        init_fd = open_init(getenv("CORRAL_INIT"));
        if (init_fd < 0) {
                char exe[4096];
                ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 32);
                if (n > 0) {
                        exe[n] = '\0';
                        char *slash = strrchr(exe, '/');
                        if (slash) {
                                memcpy(slash + 1, "corral-init", sizeof("corral-init"));
                                init_fd = open_init(exe);
                        }
                }
        }
        /* The installed copy first; the build tree's only for uninstalled
         * programs (tests, benchmarks) that do not sit beside it. */
#ifdef CORRAL_LIBEXEC_INIT
        if (init_fd < 0)
                init_fd = open_init(CORRAL_LIBEXEC_INIT);
#endif
#ifdef CORRAL_BUILD_INIT
        if (init_fd < 0)
                init_fd = open_init(CORRAL_BUILD_INIT);
#endif
        if (init_fd < 0)
                init_errno = errno ? errno : ENOENT;
}

int jail_init_binary_fd(corral_error **ret_err)
{
        pthread_once(&init_once, find_init);
        if (init_fd < 0)
                return corral_fail(ret_err, init_errno,
                                   "cannot find corral-init (install it beside corral or set CORRAL_INIT)");
        return init_fd;
}

/* ---- init's orders ---- */

static const char *const default_env[] = {
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "HOME=/tmp",
        "USER=sandbox",
        "LOGNAME=sandbox",
        "LANG=C.UTF-8",
        "TMPDIR=/tmp",
        "PYTHONUNBUFFERED=1",
        "PYTHONDONTWRITEBYTECODE=1",
        "MPLBACKEND=Agg",
        "MPLCONFIGDIR=/tmp/matplotlib",
        "XDG_CACHE_HOME=/tmp/.cache",
        "OPENBLAS_NUM_THREADS=1",
        "OMP_NUM_THREADS=1",
        "NUMEXPR_NUM_THREADS=1",
        "MKL_NUM_THREADS=1",
};

struct strings {
        char *buf;
        size_t len, cap;
        uint32_t count;
};

static int strings_add(struct strings *s, const char *str)
{
        size_t n = strlen(str) + 1;
        if (s->len + n > s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 4096;
                while (cap < s->len + n)
                        cap *= 2;
                char *b = realloc(s->buf, cap);
                if (b == NULL)
                        return -1;
                s->buf = b;
                s->cap = cap;
        }
        memcpy(s->buf + s->len, str, n);
        s->len += n;
        s->count++;
        return 0;
}

/* Does cfg->env override NAME=... from the defaults? */
static bool env_overridden(const corral_jail_config *cfg, const char *assignment)
{
        size_t n = (size_t)(strchr(assignment, '=') - assignment) + 1;
        for (size_t i = 0; cfg->env && cfg->env[i]; i++)
                if (strncmp(cfg->env[i], assignment, n) == 0)
                        return true;
        return false;
}

const char *const *jail_net_allow_env(size_t *ret_n)
{
        static const char *const proxy_env[] = {
                "HTTP_PROXY=http://127.0.0.1:3128",  "HTTPS_PROXY=http://127.0.0.1:3128",
                "ALL_PROXY=http://127.0.0.1:3128",   "NO_PROXY=localhost,127.0.0.1,::1",
                "http_proxy=http://127.0.0.1:3128",  "https_proxy=http://127.0.0.1:3128",
                "all_proxy=http://127.0.0.1:3128",   "no_proxy=localhost,127.0.0.1,::1",
                "PIP_PROXY=http://127.0.0.1:3128",
        };
        *ret_n = ARRAY_SIZE(proxy_env);
        return proxy_env;
}

const char *const *jail_net_ca_env(size_t *ret_n)
{
        static const char *const ca_env[] = {
                "SSL_CERT_FILE=" JAIL_CA_BUNDLE,  "REQUESTS_CA_BUNDLE=" JAIL_CA_BUNDLE, "CURL_CA_BUNDLE=" JAIL_CA_BUNDLE,
                "PIP_CERT=" JAIL_CA_BUNDLE,       "NODE_EXTRA_CA_CERTS=" JAIL_CA_BUNDLE, "GIT_SSL_CAINFO=" JAIL_CA_BUNDLE,
        };
        *ret_n = ARRAY_SIZE(ca_env);
        return ca_env;
}

int jail_net_ca_new(const corral_jail_config *cfg, struct net_tls **ret_tls, int *ret_fd, corral_error **ret_err)
{
        struct net_tls *tls = NULL;
        if (net_tls_new(cfg, &tls, ret_err) < 0)
                return -1;
        const char *pem = net_tls_bundle(tls);
        int fd = memfd_create("corral-ca-bundle", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0 || write_all(fd, pem, strlen(pem)) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                net_tls_free(tls);
                return corral_fail(ret_err, e, "cannot hand the jail its CA bundle");
        }
        *ret_tls = tls;
        *ret_fd = fd;
        return 0;
}

static int write_orders(const corral_jail_config *cfg, const struct jail_bpf *bpf, const struct init_rlimit *rl,
                        uint32_t n_rl, uint32_t flags, corral_error **ret_err)
{
        struct strings s = { 0 };
        struct init_header h = { .magic = CORRAL_INIT_MAGIC, .version = CORRAL_INIT_VERSION, .n_rlimits = n_rl,
                                 .bpf_len = (uint32_t)bpf->len, .flags = flags };
        memcpy(h.eperm, bpf->eperm, sizeof(h.eperm));
        int fd = -1;
        for (size_t i = 0; cfg->argv[i]; i++)
                if (strings_add(&s, cfg->argv[i]) < 0)
                        goto oom;
        h.argc = s.count;
        for (size_t i = 0; i < ARRAY_SIZE(default_env); i++)
                if (!env_overridden(cfg, default_env[i]) && strings_add(&s, default_env[i]) < 0)
                        goto oom;
        /* --net allow: programs find the proxy (docs/network.md). */
        size_t n_proxy_env;
        const char *const *proxy_env = jail_net_allow_env(&n_proxy_env);
        for (size_t i = 0; cfg->net == CORRAL_NET_ALLOW && i < n_proxy_env; i++)
                if (!env_overridden(cfg, proxy_env[i]) && strings_add(&s, proxy_env[i]) < 0)
                        goto oom;
        /* Brokered credentials: the bundle with the jail's CA (plan.c). */
        size_t n_ca_env;
        const char *const *ca_env = jail_net_ca_env(&n_ca_env);
        for (size_t i = 0; cfg->net == CORRAL_NET_ALLOW && cfg->n_net_secrets > 0 && i < n_ca_env; i++)
                if (!env_overridden(cfg, ca_env[i]) && strings_add(&s, ca_env[i]) < 0)
                        goto oom;
        for (size_t i = 0; cfg->env && cfg->env[i]; i++)
                if (strings_add(&s, cfg->env[i]) < 0)
                        goto oom;
        h.envc = s.count - h.argc;
        if (strings_add(&s, "/workspace") < 0)
                goto oom;
        h.strings_len = (uint32_t)s.len;

        size_t total = sizeof(h) + n_rl * sizeof(*rl) + bpf->len * sizeof(bpf->insns[0]) + s.len;
        if (total > CORRAL_INIT_MAX_CONFIG) {
                free(s.buf);
                return corral_usage(ret_err, "the command line and environment are too large (%zu bytes)", total);
        }
        fd = memfd_create("corral-orders", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                goto fail;
        if (write_all(fd, &h, sizeof(h)) < 0 || write_all(fd, rl, n_rl * sizeof(*rl)) < 0 ||
            write_all(fd, bpf->insns, bpf->len * sizeof(bpf->insns[0])) < 0 || write_all(fd, s.buf, s.len) < 0)
                goto fail;
        /* Sealed: nothing inside can change init's orders after the fact. */
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
                goto fail;
        free(s.buf);
        return fd;
oom:
        errno = ENOMEM;
fail:
        corral_fail(ret_err, errno, "cannot write the jail's orders");
        free(s.buf);
        if (fd >= 0)
                close(fd);
        return -1;
}

/* ---- supervision ---- */

/* --stdin: bytes from the caller's fd copied into the jail's stdin pipe,
 * never blocking the loop.  A pipe or terminal is read only when epoll says
 * so (its file description is the caller's: we cannot make it non-blocking);
 * a regular file, which epoll cannot watch, is read whenever the jail's pipe
 * has room. */
#define STDIN_PUMP_BUF 65536
struct stdin_pump {
        int src, dst;
        bool pollable, eof, src_watched, dst_watched;
        size_t off, len;
        char *buf; /* STDIN_PUMP_BUF bytes, allocated at the first read: a jail without --stdin
                    * touches none of it (each page a fault, dear in a VM) */
};

/* The jail's end of its stdin closed, and the buffer gone. */
static void stdin_pump_release(struct stdin_pump *p)
{
        if (p->dst >= 0)
                close(p->dst);
        p->dst = -1;
        free(p->buf);
        p->buf = NULL;
}

struct jail {
        const corral_jail_config *cfg;
        const corral_jail_io *io;
        struct jail_plan plan;
        struct jail_cgroup cg;
        bool have_cg;
        struct uid_lease lease;
        enum corral_limits_backend backend;
        int pidfd;
        pid_t pid;
        int out_r, err_r, status_r, sync_w;
        struct stdin_pump in;
        struct capbuf out, err;
        /* what init and the setup child reported */
        double t_start, t_clone, t_child, t_root, t_init, t_seccomp, t_exit_seen;
        bool setup_failed, init_failed, exited, exec_failed, violation;
        int setup_step, setup_errno, exec_errno, wait_status, violation_nr;
        uint32_t violation_arch;
        struct jail_denied denied; /* calls init answered with EPERM */
        bool timed_out;
        bool cancelled;
        bool cpu_exceeded;       /* the tree's CPU time passed --cpu-time */
        struct rusage ru;
        struct net_proxy *proxy;  /* CORRAL_NET_ALLOW */
        struct net_tls *tls;      /* brokered credentials: the jail's CA, until the proxy takes it */
        int proxy_child_fd;       /* the child's end of the proxy's handoff socket */
        int child_fds[6];         /* the child's ends until the clone: stdin, stdout, stderr, orders, status, sync */
        bool zygote;
        bool reaped;              /* its init waited for: nothing of it is left */
        bool premade;             /* made by jail_premade_make(), waiting for jail_premade_run() */
        bool linger;              /* ... whose result is whole at init's report: init lingers (protocol.h) */
        int order_w, order_child; /* a pre-made jail: our end of its claim socket, and its end until the clone */
        uint32_t host_uid;
        bool leased;              /* host_uid is a lease of the uid pool (root) */
};

static void jail_close_fds(struct jail *j)
{
        stdin_pump_release(&j->in);
        int *fds[] = { &j->pidfd, &j->out_r, &j->err_r, &j->status_r, &j->sync_w, &j->order_w };
        for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
                if (*fds[i] >= 0)
                        close(*fds[i]);
                *fds[i] = -1;
        }
}

static void jail_close_child_fds(struct jail *j)
{
        for (int i = 0; i < 6; i++) {
                if (j->child_fds[i] >= 0)
                        close(j->child_fds[i]);
                j->child_fds[i] = -1;
        }
        if (j->proxy_child_fd >= 0)
                close(j->proxy_child_fd);
        j->proxy_child_fd = -1;
        if (j->order_child >= 0)
                close(j->order_child);
        j->order_child = -1;
}

/* The output caps for cfg: streaming callers get the bytes through
 * on_output and keep none; what is only streamed is not capped with
 * stream_unlimited. */
static void jail_set_caps(struct jail *j, const corral_jail_config *cfg, const corral_jail_io *io)
{
        j->out.count_only = j->err.count_only = io != NULL && !io->capture;
        j->out.cap = j->err.cap = cfg->stream_unlimited && j->out.count_only ? SIZE_MAX : (size_t)cfg->output_limit;
}

static void jail_close_cg_tasks(struct jail *j)
{
        for (size_t i = 0; i < j->plan.n_cg_tasks_fds; i++)
                close(j->plan.cg_tasks_fds[i]);
        j->plan.n_cg_tasks_fds = 0;
}

static void read_status(struct jail *j)
{
        struct init_msg m;
        for (;;) {
                ssize_t n = read(j->status_r, &m, sizeof(m));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n != (ssize_t)sizeof(m))
                        return;
                switch (m.type) {
                case MSG_CHILD_START:
                        j->t_child = m.t;
                        break;
                case MSG_ROOT_READY:
                        j->t_root = m.t;
                        break;
                case MSG_SETUP_FAILED:
                        j->setup_failed = true;
                        j->setup_step = m.a;
                        j->setup_errno = m.b;
                        break;
                case MSG_INIT_START:
                        j->t_init = m.t;
                        break;
                case MSG_SECCOMP_LOADED:
                        j->t_seccomp = m.t;
                        break;
                case MSG_EXEC_FAILED:
                        j->exec_failed = true;
                        j->exec_errno = m.a;
                        break;
                case MSG_SECCOMP_VIOLATION:
                        if (!j->violation) {
                                j->violation = true;
                                j->violation_nr = m.a;
                                j->violation_arch = (uint32_t)m.b;
                        }
                        break;
                case MSG_SECCOMP_EPERM:
                        jail_denied_add(&j->denied, m.a, (uint32_t)m.b);
                        break;
                case MSG_EXITED:
                        j->exited = true;
                        j->wait_status = m.a;
                        break;
                case MSG_INIT_FAILED:
                        j->init_failed = true;
                        j->setup_step = m.a;
                        j->setup_errno = m.b;
                        break;
                default:
                        break;
                }
        }
}

/* Read what is there; returns false at EOF. */
static bool pump_output(struct jail *j, int fd, struct capbuf *b, int stream)
{
        char buf[65536];
        for (int rounds = 0; rounds < 16; rounds++) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0)
                        return errno == EAGAIN || errno == EINTR;
                if (n == 0)
                        return false;
                bool was_truncated = b->truncated;
                size_t kept = capbuf_append(b, buf, (size_t)n);
                if (kept == (size_t)-1)
                        kept = 0; /* out of memory: the bytes are dropped, still counted */
                if (kept && j->io && j->io->on_output)
                        j->io->on_output(j->io->userdata, stream, buf, kept);
                if (b->truncated && !was_truncated && j->io && j->io->on_truncate)
                        j->io->on_truncate(j->io->userdata, stream);
        }
        return true;
}

static void kill_tree(struct jail *j)
{
        if (j->have_cg)
                cgroup_kill(&j->cg);
        /* SIGKILL to the pid namespace's init takes every process in it. */
        syscall(SYS_pidfd_send_signal, j->pidfd, SIGKILL, NULL, 0);
}

static void watch_fd(int ep, int fd, uint32_t events, uint32_t tag, bool *watched, bool want)
{
        if (want == *watched)
                return;
        struct epoll_event ev = { .events = events, .data.u32 = tag };
        if (epoll_ctl(ep, want ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, want ? &ev : NULL) == 0)
                *watched = want;
}

/* Move what can move now; then watch the source only when the buffer is
 * empty and the jail's pipe only when it is full (or the source is a file). */
static void pump_stdin(struct stdin_pump *p, int ep, uint32_t src_tag, uint32_t dst_tag, bool src_ready)
{
        while (p->dst >= 0) {
                if (p->buf == NULL && (p->buf = malloc(STDIN_PUMP_BUF)) == NULL)
                        p->eof = true; /* out of memory: the jail's stdin ends */
                if (p->len == 0 && !p->eof && (src_ready || !p->pollable)) {
                        ssize_t r = read(p->src, p->buf, STDIN_PUMP_BUF);
                        src_ready = false;
                        if (r > 0) {
                                p->off = 0;
                                p->len = (size_t)r;
                        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                                p->eof = true;
                        }
                }
                if (p->len > 0) {
                        /* The jail's stdin pipe: its reader may be gone. */
                        struct sigpipe_guard g;
                        sigpipe_block(&g);
                        ssize_t w = write(p->dst, p->buf + p->off, p->len);
                        int e = errno;
                        sigpipe_unblock(&g);
                        errno = e;
                        if (w > 0) {
                                p->off += (size_t)w;
                                p->len -= (size_t)w;
                        } else if (errno != EAGAIN && errno != EINTR) {
                                p->eof = true; /* the jail closed its stdin */
                                p->len = 0;
                        }
                }
                if (p->len == 0 && p->eof) {
                        watch_fd(ep, p->src, EPOLLIN, src_tag, &p->src_watched, false);
                        watch_fd(ep, p->dst, EPOLLOUT, dst_tag, &p->dst_watched, false);
                        stdin_pump_release(p);
                        return;
                }
                if (p->len > 0 || p->pollable)
                        break; /* the pipe is full, or wait for the source */
        }
        if (p->dst < 0)
                return;
        watch_fd(ep, p->src, EPOLLIN, src_tag, &p->src_watched, p->pollable && p->len == 0 && !p->eof);
        watch_fd(ep, p->dst, EPOLLOUT, dst_tag, &p->dst_watched, p->len > 0 || (!p->pollable && !p->eof));
}

/* Kill the tree and reap its init: for a jail abandoned before supervision. */
static void stop_and_reap(struct jail *j)
{
        kill_tree(j);
        siginfo_t si;
        syscall(SYS_waitid, P_PIDFD, j->pidfd, &si, WEXITED | __WALL, NULL);
}

static int supervise(struct jail *j, corral_error **ret_err)
{
        cleanup_close int ep = epoll_create1(EPOLL_CLOEXEC);
        cleanup_close int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (ep < 0 || tfd < 0)
                return corral_fail(ret_err, errno, "cannot set up supervision");
        /* no_timeout: the timer stays disarmed and never fires. */
        double t = j->cfg->timeout_s;
        struct itimerspec its = { .it_value = { .tv_sec = (time_t)t,
                                                .tv_nsec = (long)((t - floor(t)) * 1e9) } };
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
                its.it_value.tv_nsec = 1;
        if (!j->cfg->no_timeout && timerfd_settime(tfd, 0, &its, NULL) < 0)
                return corral_fail(ret_err, errno, "cannot arm the wall-clock timer");

        /* --cpu-time over the whole tree: RLIMIT_CPU bounds each process, and
         * where the cgroup accounts the tree's CPU time it is checked too,
         * every 20 ms, so that a program cannot split its work across
         * processes to exceed the limit. */
        cleanup_close int cpu_tfd = -1;
        uint64_t usec;
        if (j->cfg->cpu_time_s > 0 && j->have_cg && cgroup_cpu_usage(&j->cg, &usec)) {
                cpu_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
                struct itimerspec tick = { .it_interval = { 0, 20000000 }, .it_value = { 0, 20000000 } };
                if (cpu_tfd < 0 || timerfd_settime(cpu_tfd, 0, &tick, NULL) < 0)
                        return corral_fail(ret_err, errno, "cannot arm the CPU-time check");
        }

        enum { EV_OUT = 1, EV_ERR, EV_STATUS, EV_PIDFD, EV_TIMER, EV_STDIN, EV_STDIN_OUT, EV_CANCEL, EV_CPU };
        struct {
                int fd;
                int tag;
        } watch[] = { { j->out_r, EV_OUT }, { j->err_r, EV_ERR }, { j->status_r, EV_STATUS },
                      { j->pidfd, EV_PIDFD }, { tfd, EV_TIMER },
                      { j->io && j->io->cancel_fd > 0 ? j->io->cancel_fd : -1, EV_CANCEL }, { cpu_tfd, EV_CPU } };
        for (size_t i = 0; i < ARRAY_SIZE(watch); i++) {
                if (watch[i].fd < 0)
                        continue;
                struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)watch[i].tag };
                if (epoll_ctl(ep, EPOLL_CTL_ADD, watch[i].fd, &ev) < 0)
                        return corral_fail(ret_err, errno, "cannot watch the jail");
        }
        if (j->in.dst >= 0) {
                struct epoll_event ev = { .events = EPOLLIN, .data.u32 = EV_STDIN };
                j->in.pollable = epoll_ctl(ep, EPOLL_CTL_ADD, j->in.src, &ev) == 0;
                if (!j->in.pollable && errno != EPERM)
                        return corral_fail(ret_err, errno, "cannot watch stdin");
                j->in.src_watched = j->in.pollable;
                pump_stdin(&j->in, ep, EV_STDIN, EV_STDIN_OUT, false);
        }
        /* A lingering init (jail_orders()) reports the program's end once
         * it killed the rest of the tree: the result is whole then (the
         * cgroups counted what the tree used), and the output ends as the
         * last writers die.  Init's exit, with the rest of its namespace,
         * is the teardown's to wait for, after the caller has the result. */
        bool out_open = j->out_r >= 0, err_open = j->err_r >= 0, running = true;
        bool done_at_report = j->linger;
        while (running || out_open || err_open) {
                struct epoll_event evs[8];
                int n = epoll_wait(ep, evs, 8, running ? -1 : 1000);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return corral_fail(ret_err, errno, "cannot supervise the jail");
                }
                if (n == 0 && !running)
                        break; /* all writers are dead; nothing more can come */
                for (int i = 0; i < n; i++) {
                        switch (evs[i].data.u32) {
                        case EV_OUT:
                                if (!(out_open = pump_output(j, j->out_r, &j->out, 1)))
                                        epoll_ctl(ep, EPOLL_CTL_DEL, j->out_r, NULL);
                                break;
                        case EV_ERR:
                                if (!(err_open = pump_output(j, j->err_r, &j->err, 2)))
                                        epoll_ctl(ep, EPOLL_CTL_DEL, j->err_r, NULL);
                                break;
                        case EV_STATUS:
                                read_status(j);
                                if (j->violation)
                                        kill_tree(j); /* init does too; this also covers a stuck init */
                                if (done_at_report && j->exited && running) {
                                        j->t_exit_seen = monotonic_ms();
                                        running = false;
                                }
                                if (evs[i].events & (EPOLLHUP | EPOLLERR) && !(evs[i].events & EPOLLIN))
                                        epoll_ctl(ep, EPOLL_CTL_DEL, j->status_r, NULL);
                                break;
                        case EV_CANCEL:
                                j->cancelled = true;
                                kill_tree(j);
                                epoll_ctl(ep, EPOLL_CTL_DEL, j->io->cancel_fd, NULL);
                                break;
                        case EV_CPU: {
                                uint64_t ticks;
                                ssize_t r = read(cpu_tfd, &ticks, sizeof(ticks));
                                (void)r;
                                if (running && cgroup_cpu_usage(&j->cg, &usec) &&
                                    (double)usec >= j->cfg->cpu_time_s * 1e6) {
                                        j->cpu_exceeded = true;
                                        kill_tree(j);
                                        epoll_ctl(ep, EPOLL_CTL_DEL, cpu_tfd, NULL);
                                }
                                break;
                        }
                        case EV_TIMER:
                                j->timed_out = true;
                                kill_tree(j);
                                epoll_ctl(ep, EPOLL_CTL_DEL, tfd, NULL);
                                break;
                        case EV_STDIN:
                        case EV_STDIN_OUT:
                                pump_stdin(&j->in, ep, EV_STDIN, EV_STDIN_OUT, evs[i].data.u32 == EV_STDIN);
                                break;
                        case EV_PIDFD: {
                                siginfo_t si;
                                memset(&si, 0, sizeof(si));
                                if (syscall(SYS_waitid, P_PIDFD, j->pidfd, &si, WEXITED | __WALL, &j->ru) == 0) {
                                        j->t_exit_seen = monotonic_ms();
                                        j->reaped = true;
                                        running = false;
                                        epoll_ctl(ep, EPOLL_CTL_DEL, j->pidfd, NULL);
                                        /* Everyone in the namespace is gone: the
                                         * pipes now only hold what was written. */
                                }
                                break;
                        }
                        default:
                                break;
                        }
                }
                if (!running && (out_open || err_open)) {
                        while (out_open && (out_open = pump_output(j, j->out_r, &j->out, 1)))
                                ;
                        while (err_open && (err_open = pump_output(j, j->err_r, &j->err, 2)))
                                ;
                }
        }
        read_status(j);
        return 0;
}

/* ---- result ---- */

/* What this jail knows about its program's end, for outcome.c. */
static void classify(struct jail *j, const struct cgroup_stats *st, corral_jail_result *r)
{
        struct jail_outcome o = {
                .end = JAIL_END_NO_REPORT,
                .exec_failed = j->exec_failed,
                .exec_errno = j->exec_errno,
                .violation = j->violation,
                .violation_nr = j->violation_nr,
                .violation_arch = j->violation_arch,
                .cancelled = j->cancelled,
                .cpu_exceeded = j->cpu_exceeded,
                .timed_out = j->timed_out,
                .oom_kills = st->oom_kills,
                .pids_max_hits = st->pids_max_hits,
                .backend = j->backend,
                /* a cut-off stderr has lost its last line */
                .stderr_memory_error = !j->err.truncated && jail_outcome_memory_error(j->err.data, j->err.len),
                /* Without init's wait (a pre-made jail done at its report),
                 * the tree's CPU time as the cgroup counted it. */
                .cpu_s = j->reaped    ? (double)j->ru.ru_utime.tv_sec + (double)j->ru.ru_stime.tv_sec
                         : st->have_cpu ? floor((double)st->cpu_usec / 1e6)
                                        : -1,
        };
        if (j->exited)
                jail_outcome_set_wait_status(&o, j->wait_status);
        jail_outcome_set_limits(&o, j->cfg);
        jail_outcome_classify(&o, r);
}

/* ---- the whole run ---- */

static atomic_uint jail_seq;

/* The hard limit this process may hand on for res (the most a jail's init,
 * which cannot raise it, can set). */
static uint64_t own_hard_limit(int res)
{
        struct rlimit rl;
        if (getrlimit(res, &rl) < 0 || rl.rlim_max == RLIM_INFINITY)
                return RLIM_INFINITY;
        return rl.rlim_max;
}

/* RLIMIT_AS under the rlimit fallback. */
static uint64_t jail_address_space(const corral_jail_config *cfg)
{
        return cfg->address_space_bytes ? cfg->address_space_bytes : cfg->memory_bytes;
}

/* ceilings: a zygote's.  Its own soft limits are its configuration's, but
 * the hard ones stay as high as corral's, so that each session it forks can
 * be given its caller's limits (it sets soft and hard to them). */
static int build_rlimits(const corral_jail_config *cfg, enum corral_limits_backend mem_backend, bool pids_in_cgroup,
                         bool ceilings, struct init_rlimit *rl)
{
        int n = 0;
        rl[n++] = (struct init_rlimit){ .resource = RLIMIT_NOFILE, .cur = cfg->nofile,
                                        .max = ceilings ? own_hard_limit(RLIMIT_NOFILE) : cfg->nofile };
        rl[n++] = (struct init_rlimit){ .resource = RLIMIT_CORE, .cur = 0, .max = 0 };
        rl[n++] = (struct init_rlimit){ .resource = RLIMIT_FSIZE, .cur = cfg->disk_bytes,
                                        .max = ceilings ? own_hard_limit(RLIMIT_FSIZE) : cfg->disk_bytes };
        rl[n++] = (struct init_rlimit){ .resource = RLIMIT_MEMLOCK, .cur = 8u << 20, .max = 8u << 20 };
        rl[n++] = (struct init_rlimit){ .resource = RLIMIT_MSGQUEUE, .cur = 1u << 20, .max = 1u << 20 };
        if (cfg->cpu_time_s > 0) {
                uint64_t s = (uint64_t)ceil(cfg->cpu_time_s);
                /* SIGXCPU at the limit, SIGKILL a second later. */
                rl[n++] = (struct init_rlimit){ .resource = RLIMIT_CPU, .cur = s, .max = s + 1 };
        }
        uint64_t as = jail_address_space(cfg);
        if (mem_backend == CORRAL_BACKEND_RLIMIT)
                rl[n++] = (struct init_rlimit){ .resource = RLIMIT_AS, .cur = as,
                                                .max = ceilings ? own_hard_limit(RLIMIT_AS) : as };
        if (!pids_in_cgroup)
                /* Per user namespace since Linux 5.14, so per jail here. */
                rl[n++] = (struct init_rlimit){ .resource = RLIMIT_NPROC, .cur = cfg->pids, .max = cfg->pids };
        return n;
}

/* extra: more "INSIDE HOST 1" lines for both maps (a zygote's session ids),
 * or NULL. */
static int write_id_maps(pid_t pid, uint32_t inside, uint32_t host_uid, uint32_t host_gid, bool root,
                         const char *extra, corral_error **ret_err)
{
        char path[64], map[64 + 24 * JAIL_MAX_EXTRA_IDS];
        if (!root) {
                snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
                if (write_file_at(AT_FDCWD, path, "deny") < 0 && errno != ENOENT)
                        return corral_fail(ret_err, errno, "cannot write '%s'", path);
        }
        snprintf(map, sizeof(map), "%u %u 1\n%s", inside, host_uid, extra ? extra : "");
        snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
        if (write_file_at(AT_FDCWD, path, map) < 0)
                return corral_fail(ret_err, errno, "cannot write the jail's uid map");
        snprintf(map, sizeof(map), "%u %u 1\n%s", inside, host_gid, extra ? extra : "");
        snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
        if (write_file_at(AT_FDCWD, path, map) < 0)
                return corral_fail(ret_err, errno, "cannot write the jail's gid map");
        return 0;
}

static int setup_error(struct jail *j, corral_error **ret_err)
{
        char buf[512];
        static const char *const init_steps[] = {
                [INIT_STEP_CONFIG] = "read its orders",       [INIT_STEP_SIGNALS] = "set up signals",
                [INIT_STEP_FORK] = "start the program",       [INIT_STEP_RLIMIT] = "set resource limits",
                [INIT_STEP_CHDIR] = "enter /workspace",       [INIT_STEP_SECCOMP] = "load the seccomp filter",
                [INIT_STEP_LISTENER] = "hand over the seccomp listener",
        };
        if (j->init_failed)
                return corral_make_error(ret_err, CORRAL_ERR_INTERNAL, j->setup_errno,
                                         "cannot set up the jail: corral-init could not %s",
                                         j->setup_step > 0 && (size_t)j->setup_step < ARRAY_SIZE(init_steps)
                                                 ? init_steps[j->setup_step]
                                                 : "start");
        const char *what = jail_plan_step_name(&j->plan, j->setup_step, buf, sizeof(buf));
        int kind = CORRAL_ERR_INTERNAL;
        if (j->setup_step == STEP_NO_NEW_PRIVS)
                kind = CORRAL_ERR_UNSUPPORTED;
        return corral_make_error(ret_err, kind, j->setup_errno, "cannot set up the jail: %s", what);
}

int corral_jail_run(const corral_jail_config *cfg, const corral_jail_io *io, corral_jail_result *ret,
                    corral_error **ret_err)
{
        return jail_run_special(cfg, io, NULL, ret, ret_err);
}

/* The claim's input: init's orders for cfg (a pre-made jail's come at its
 * claim, a direct jail's at its clone). */
static int jail_orders(struct jail *j, const corral_jail_config *cfg, corral_error **ret_err)
{
        /* A pre-made jail's program process loaded the outer part of the
         * filter before its claim: the inner part completes it. */
        const struct jail_bpf *bpf, *outer;
        if ((j->zygote    ? jail_seccomp_zygote_program(&bpf, ret_err)
             : j->premade ? jail_seccomp_premade_programs(&outer, &bpf, ret_err)
                          : jail_seccomp_program(&bpf, ret_err)) < 0)
                return -1;
        struct init_rlimit rl[12];
        int n_rl = build_rlimits(cfg, j->backend, j->have_cg && j->cg.pids != CG_NONE, j->zygote, rl);
        /* A pre-made jail whose cgroups count what its tree used has its
         * result at init's report (supervise()); its init then waits for
         * the kill that starts the teardown, which its owner sends once
         * its caller is done (exec-pool.c). */
        j->linger = j->premade && j->have_cg && cgroup_counts_usage(&j->cg);
        uint32_t flags = (j->zygote ? CORRAL_INIT_FLAG_NO_LISTENER : 0) | (j->linger ? CORRAL_INIT_FLAG_LINGER : 0);
        return write_orders(cfg, bpf, rl, (uint32_t)n_rl, flags, ret_err);
}

/* The jail's stdin for cfg: its caller's bytes through a pipe (--stdin),
 * the socket of sp, or /dev/null.  The child's end, or -1. */
static int jail_stdin(struct jail *j, const corral_jail_config *cfg, const corral_jail_io *io,
                      const struct jail_special *sp)
{
        if (sp && sp->stdin_socket >= 0)
                return fcntl(sp->stdin_socket, F_DUPFD_CLOEXEC, 3);
        if (cfg->stdin_mode == CORRAL_STDIN_PIPE && io && io->stdin_fd >= 0) {
                int p_in[2];
                if (pipe2(p_in, O_CLOEXEC) < 0)
                        return -1;
                j->in.dst = p_in[1];
                j->in.src = io->stdin_fd;
                fcntl(j->in.dst, F_SETFL, O_NONBLOCK);
                return p_in[0];
        }
        return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void jail_init(struct jail *j, const corral_jail_config *cfg, const corral_jail_io *io)
{
        *j = (struct jail){ .cfg = cfg, .io = io, .pidfd = -1, .out_r = -1, .err_r = -1, .status_r = -1,
                            .sync_w = -1, .in = { .src = -1, .dst = -1 }, .lease = { .fd = -1 },
                            .proxy_child_fd = -1, .order_w = -1, .order_child = -1,
                            .child_fds = { -1, -1, -1, -1, -1, -1 } };
        j->t_start = monotonic_ms();
        jail_set_caps(j, cfg, io);
}

/* Everything up to the jail's start: plan, cgroups, pipes, clone, id maps.
 * premade: the child stops once its root is mounted, for jail_claim(); its
 * stdin and orders are left to the claim. */
static int jail_start(struct jail *j, const struct jail_special *sp, bool premade, corral_error **ret_err)
{
        const corral_jail_config *cfg = j->cfg;
        const corral_jail_io *io = j->io;
        int *child_fds = j->child_fds; /* stdin, stdout, stderr, orders, status, sync */
        j->zygote = sp != NULL && sp->zygote;
        j->premade = premade;
        uint32_t inside = j->zygote ? 0 : JAIL_UID_INSIDE;

        if (corral_jail_config_validate(cfg, ret_err) < 0)
                return -1;
        const struct jail_bpf *bpf;
        if ((j->zygote ? jail_seccomp_zygote_program(&bpf, ret_err) : jail_seccomp_program(&bpf, ret_err)) < 0)
                return -1;
        int initfd = jail_init_binary_fd(ret_err);
        if (initfd < 0)
                return -1;

        /* Who the jail is on the host. */
        int root = uidpool_use(cfg->uid_base, cfg->uid_count, ret_err);
        uint32_t host_uid = (uint32_t)getuid(), host_gid = (uint32_t)getgid();
        if (root < 0)
                return -1;
        if (root) {
                if (uidpool_acquire(cfg->uid_base, cfg->uid_count, &j->lease, ret_err) < 0)
                        return -1;
                host_uid = host_gid = j->lease.uid;
                j->plan.idmap_to = j->lease.uid;
                j->plan.attach_trees = true;
        }
        j->host_uid = host_uid;
        j->leased = root;
        if (sp && sp->ret_host_uid)
                __atomic_store_n(sp->ret_host_uid, host_uid, __ATOMIC_RELEASE);
        if (io) {
                j->plan.on_notice = io->on_notice;
                j->plan.notice_userdata = io->userdata;
        }
        if (cfg->net == CORRAL_NET_ALLOW && cfg->n_net_secrets > 0) {
                /* The CA first: its certificate goes into the jail's /etc. */
                if (net_tls_new(cfg, &j->tls, ret_err) < 0)
                        return -1;
                j->plan.ca_bundle = net_tls_bundle(j->tls);
        }
        /* No credential: the system's roots alone (no CA of corral's). */
        j->plan.trust_store = cfg->net == CORRAL_NET_ALLOW;
        j->plan.ssl_certs_dir = j->zygote;
        if (jail_plan_build(&j->plan, cfg, ret_err) < 0)
                return -1;
        if (j->plan.notice && io && io->on_notice)
                io->on_notice(io->userdata, j->plan.notice);
        j->plan.uid_inside = inside;
        j->plan.gid_inside = inside;
        j->plan.keep_caps = j->zygote;
        j->plan.drop_groups = root;
        j->plan.net = cfg->net;

        /* Limits: cgroups where we can, rlimits where we cannot. */
        const struct cgroup_layout *layout = cgroup_host_layout();
        char name[64];
        snprintf(name, sizeof(name), "corral-%d-%u", (int)getpid(), atomic_fetch_add(&jail_seq, 1));
        struct cgroup_limits lim = { .memory_bytes = cfg->memory_bytes, .pids = cfg->pids, .cpus = cfg->cpus };
        corral_error *cg_err = NULL;
        if (layout->v2_dir || layout->v1_memory || layout->v1_pids) {
                if (cgroup_create(layout, name, &lim, &j->cg, &cg_err) == 0) {
                        j->have_cg = true;
                } else {
                        cgroup_destroy(&j->cg);
                }
        }
        j->backend = !j->have_cg || j->cg.memory == CG_NONE ? CORRAL_BACKEND_RLIMIT
                     : j->cg.memory == CG_V2               ? CORRAL_BACKEND_CGROUP_V2
                                                           : CORRAL_BACKEND_CGROUP_V1;
        if (j->backend == CORRAL_BACKEND_RLIMIT) {
                if (cfg->require_cgroups) {
                        corral_make_error(ret_err, CORRAL_ERR_UNSUPPORTED, 0,
                                          "no usable cgroup for memory and process limits%s%s (see 'corral doctor')",
                                          cg_err ? ": " : "", cg_err ? cg_err->msg : "");
                        corral_error_free(cg_err);
                        return -1;
                }
                if (io && io->on_notice)
                        io->on_notice(io->userdata, JAIL_NOTICE_RLIMITS);
        }
        corral_error_free(cg_err);

        if (!premade) {
                child_fds[3] = jail_orders(j, cfg, ret_err);
                if (child_fds[3] < 0)
                        return -1;
        }

        /* Pipes; every end is CLOEXEC, the child dup2s what it keeps. */
        int p_out[2], p_err[2], p_status[2], p_sync[2];
        if (pipe2(p_out, O_CLOEXEC) < 0)
                goto pipe_fail;
        j->out_r = p_out[0];
        child_fds[1] = p_out[1];
        if (pipe2(p_err, O_CLOEXEC) < 0)
                goto pipe_fail;
        j->err_r = p_err[0];
        child_fds[2] = p_err[1];
        if (pipe2(p_status, O_CLOEXEC) < 0)
                goto pipe_fail;
        j->status_r = p_status[0];
        child_fds[4] = p_status[1];
        if (pipe2(p_sync, O_CLOEXEC) < 0)
                goto pipe_fail;
        j->sync_w = p_sync[1];
        child_fds[5] = p_sync[0];
        if (!premade && (child_fds[0] = jail_stdin(j, cfg, io, sp)) < 0)
                goto pipe_fail;
        fcntl(j->out_r, F_SETFL, O_NONBLOCK);
        fcntl(j->err_r, F_SETFL, O_NONBLOCK);
        fcntl(j->status_r, F_SETFL, O_NONBLOCK);

        j->plan.stdin_fd = child_fds[0];
        j->plan.stdout_fd = child_fds[1];
        j->plan.stderr_fd = child_fds[2];
        j->plan.config_fd = child_fds[3];
        j->plan.status_fd = child_fds[4];
        j->plan.sync_fd = child_fds[5];
        j->plan.sync_wfd = j->sync_w;
        j->plan.init_fd = initfd;
        j->plan.proxy_fd = -1;
        j->plan.order_fd = -1;
        j->plan.premade = premade;
        if (premade) {
                const struct jail_bpf *inner;
                if (jail_seccomp_premade_programs(&j->plan.bpf_outer, &inner, ret_err) < 0)
                        return -1;
                int sv[2];
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                        goto pipe_fail;
                j->order_w = sv[0];
                j->plan.order_fd = j->order_child = sv[1];
        }
        if (cfg->net == CORRAL_NET_ALLOW) {
                /* The proxy runs from now to teardown; the child sends its
                 * listening socket over this pair (enter.c). */
                int sv[2];
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                        return corral_fail(ret_err, errno, "cannot start the network proxy");
                j->proxy_child_fd = j->plan.proxy_fd = sv[1];
                struct net_tls *tls = j->tls;
                j->tls = NULL;
                if (net_proxy_start(cfg, tls, sv[0], &j->proxy, ret_err) < 0)
                        return -1;
                if (io && io->on_net_conn)
                        net_proxy_observe(j->proxy, io->on_net_conn, io->userdata);
        }

        uint64_t flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
                         CLONE_PIDFD;
        /* The network namespace (the costliest, ~0.6 ms) is made by the child
         * with unshare() while we write its id maps and attach its cgroups. */
        struct clone_args ca;
        memset(&ca, 0, sizeof(ca));
        ca.pidfd = (uint64_t)(uintptr_t)&j->pidfd;
        ca.exit_signal = 0;
        if (j->have_cg && j->cg.v2_fd >= 0) {
                ca.flags = flags | CLONE_INTO_CGROUP;
                ca.cgroup = (uint64_t)j->cg.v2_fd;
                j->cg.v2_cloned_into = true;
        } else {
                ca.flags = flags;
        }
        if (j->have_cg)
                j->plan.n_cg_tasks_fds = cgroup_open_v1_tasks(&j->cg, j->plan.cg_tasks_fds);
        j->t_clone = monotonic_ms();
        long pid = syscall(SYS_clone3, &ca, sizeof(ca));
        if (pid < 0 && j->cg.v2_cloned_into && (errno == EOPNOTSUPP || errno == EBUSY || errno == EINVAL)) {
                j->cg.v2_cloned_into = false;
                ca.flags = flags;
                ca.cgroup = 0;
                pid = syscall(SYS_clone3, &ca, sizeof(ca));
        }
        if (pid == 0)
                jail_enter(&j->plan);
        if (pid < 0) {
                int e = errno;
                return corral_make_error(ret_err, e == EPERM || e == ENOSPC || e == EINVAL ? CORRAL_ERR_UNSUPPORTED
                                                                                           : CORRAL_ERR_INTERNAL,
                                         e, "cannot create the jail's namespaces (user namespaces may be disabled; "
                                            "see 'corral doctor')");
        }
        j->pid = (pid_t)pid;
        jail_close_cg_tasks(j);
        jail_close_child_fds(j);

        char extra[24 * JAIL_MAX_EXTRA_IDS + 1] = "";
        for (size_t i = 0, off = 0; sp && i < sp->n_extra_ids && i < JAIL_MAX_EXTRA_IDS; i++)
                off += (size_t)snprintf(extra + off, sizeof(extra) - off, "%zu %u 1\n", i + 1, sp->extra_ids[i]);
        if (write_id_maps(j->pid, inside, host_uid, host_gid, root, extra, ret_err) < 0 ||
            (j->have_cg && cgroup_attach_v1(&j->cg, j->pid, ret_err) < 0)) {
                stop_and_reap(j);
                return -1;
        }
        /* The write end stays open until teardown: the child reads its
         * closing as the supervisor's death (enter.c). */
        /* The child may have died already: EPIPE, not SIGPIPE. */
        struct sigpipe_guard g;
        sigpipe_block(&g);
        int go = write_all(j->sync_w, "g", 1);
        int e = errno;
        sigpipe_unblock(&g);
        if (go < 0)
                return corral_fail(ret_err, e, "cannot start the jail");
        return 0;

pipe_fail:
        return corral_fail(ret_err, errno, "cannot create pipes for the jail");
}

/* Supervise a started jail to its end and fill ret. */
static int jail_finish(struct jail *j, corral_jail_result *ret, corral_error **ret_err)
{
        if (supervise(j, ret_err) < 0) {
                stop_and_reap(j);
                return -1;
        }
        if (j->init_failed || j->setup_failed)
                return setup_error(j, ret_err);
        if (!j->exited && !j->timed_out && !j->violation && !j->cancelled && !j->cpu_exceeded)
                return corral_fail(ret_err, 0, "the jail's init ended without a report");

        struct cgroup_stats st = { 0 };
        if (j->have_cg)
                cgroup_read_stats(&j->cg, &st);
        classify(j, &st, ret);
        jail_denied_to_result(&j->denied, ret);
        ret->backend = j->backend;
        ret->stdout_truncated = j->out.truncated;
        ret->stderr_truncated = j->err.truncated;
        ret->stdout_total = j->out.total;
        ret->stderr_total = j->err.total;
        if (j->io == NULL || j->io->capture) {
                ret->stdout_buf = capbuf_detach(&j->out, &ret->stdout_len);
                ret->stderr_buf = capbuf_detach(&j->err, &ret->stderr_len);
        }
        double start = j->t_seccomp > 0 ? j->t_seccomp : j->t_clone;
        ret->wall_ms = j->t_exit_seen - start;
        ret->cpu_ms = st.have_cpu ? (double)st.cpu_usec / 1000.0
                                  : (double)(j->ru.ru_utime.tv_sec + j->ru.ru_stime.tv_sec) * 1e3 +
                                            (double)(j->ru.ru_utime.tv_usec + j->ru.ru_stime.tv_usec) / 1e3;
        ret->memory_peak_bytes = st.memory_peak ? st.memory_peak : (uint64_t)j->ru.ru_maxrss * 1024u;
        ret->phases.prepare = j->t_clone - j->t_start;
        if (j->t_child > 0)
                ret->phases.clone = j->t_child - j->t_clone;
        if (j->t_root > 0 && j->t_child > 0)
                ret->phases.mounts = j->t_root - j->t_child;
        /* A pre-made jail's init was executed before its claim: from its
         * root ready, the claim's next phase is the filter (enter.c). */
        double t_init = j->premade ? j->t_root : j->t_init;
        if (t_init > 0 && j->t_root > 0)
                ret->phases.exec = t_init - j->t_root;
        if (j->t_seccomp > 0 && t_init > 0)
                ret->phases.seccomp = j->t_seccomp - t_init;
        return 0;
}

/* Undo what jail_start() made; rc 0: ret holds the result. */
static void jail_teardown(struct jail *j, int rc, corral_jail_result *ret)
{
        jail_close_cg_tasks(j);
        jail_close_child_fds(j);
        jail_close_fds(j);
        if (j->proxy_child_fd >= 0)
                close(j->proxy_child_fd);
        j->proxy_child_fd = -1;
        /* The jail is gone: its end of every connection is closed. */
        net_proxy_stop(j->proxy, rc == 0 ? ret : NULL);
        j->proxy = NULL;
        net_tls_free(j->tls);
        j->tls = NULL;
        if (j->have_cg)
                cgroup_destroy(&j->cg);
        if (j->have_cg && rc == 0)
                cgroup_sweep_stale();
        j->have_cg = false;
        uidpool_release(&j->lease);
        jail_plan_release(&j->plan);
        capbuf_release(&j->out);
        capbuf_release(&j->err);
        if (rc == 0 && ret && j->t_exit_seen > 0)
                ret->phases.teardown = monotonic_ms() - j->t_exit_seen;
}

int jail_run_special(const corral_jail_config *cfg, const corral_jail_io *io, const struct jail_special *sp,
                     corral_jail_result *ret, corral_error **ret_err)
{
        memset(ret, 0, sizeof(*ret));
        struct jail j;
        jail_init(&j, cfg, io);
        int rc = jail_start(&j, sp, false, ret_err) < 0 || jail_finish(&j, ret, ret_err) < 0 ? -1 : 0;
        jail_teardown(&j, rc, ret);
        return rc;
}

/* ---- pre-made jails ---- */

#define PREMADE_READY_TIMEOUT_MS 20000.0

struct jail_premade {
        struct jail j;
        corral_jail_config made; /* the configuration it was made with (a copy) */
        double t_ready;
        bool ended;  /* jail_premade_run() reaped its init: nothing to kill */
        bool ran_ok; /* ... and it has a result */
};

int jail_premade_make(const corral_jail_config *cfg, struct jail_premade **ret, corral_error **ret_err)
{
        if (cfg->net == CORRAL_NET_ALLOW || cfg->net == CORRAL_NET_HOST || cfg->script)
                return corral_usage(ret_err, "a jail made in advance has its own network namespace without a proxy "
                                             "and no script");
        struct jail_premade *pm = calloc(1, sizeof(*pm));
        if (pm == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot make a jail in advance");
        if (corral_jail_config_copy(&pm->made, cfg, ret_err) < 0) {
                free(pm);
                return -1;
        }
        jail_init(&pm->j, &pm->made, NULL);
        if (jail_start(&pm->j, NULL, true, ret_err) < 0)
                goto fail;
        char ready = 0;
        ssize_t n = unix_recv_fds_until(pm->j.order_w, &ready, 1, NULL, 0, NULL, NULL,
                                        monotonic_ms() + PREMADE_READY_TIMEOUT_MS);
        if (n != 1 || ready != JAIL_PREMADE_READY) {
                int e = n < 0 ? errno : EPROTO;
                read_status(&pm->j); /* written before it ended, if it failed */
                if (pm->j.setup_failed)
                        setup_error(&pm->j, ret_err);
                else
                        corral_fail(ret_err, e, "the jail made in advance ended before it was ready");
                stop_and_reap(&pm->j);
                goto fail;
        }
        /* Its result, on its caller's path, then opens no file. */
        if (pm->j.have_cg)
                cgroup_open_stats(&pm->j.cg);
        pm->t_ready = monotonic_ms();
        *ret = pm;
        return 0;
fail:
        jail_teardown(&pm->j, -1, NULL);
        corral_jail_config_release(&pm->made);
        free(pm);
        return -1;
}

double jail_premade_idle_ms(const struct jail_premade *pm)
{
        return monotonic_ms() - pm->t_ready;
}

enum corral_limits_backend jail_premade_backend(const struct jail_premade *pm)
{
        return pm->j.backend;
}

pid_t jail_premade_pid(const struct jail_premade *pm)
{
        return pm->j.pid;
}

const char *jail_premade_misfit(const struct jail_premade *pm, const corral_jail_config *cfg)
{
        const corral_jail_config *m = &pm->made;
        const struct jail *j = &pm->j;
        if (cfg->rootfs)
                return "a root file system of its own";
        if (cfg->net != m->net)
                return "another network";
        if (cfg->uid_base != m->uid_base || cfg->uid_count != m->uid_count)
                return "another uid range";
        if (cfg->script && strlen(cfg->script_name) >= JAIL_PREMADE_MAX_SCRIPT_NAME)
                return "a script's long name";
        if (cfg->n_binds > JAIL_TREES_MAX_BINDS)
                return "too many binds";
        size_t dests = 0;
        for (size_t i = 0; i < cfg->n_binds; i++)
                dests += strlen(cfg->binds[i].dst) + 1;
        if (dests > JAIL_PREMADE_MAX_DESTS)
                return "too many binds";
        if (cfg->require_cgroups && j->backend == CORRAL_BACKEND_RLIMIT)
                return "cgroups required";
        if (cfg->cpus > 0 && !(j->have_cg && ((j->cg.v2 && j->cg.layout->v2_cpu) || j->cg.v1_cpu)))
                return "a CPU share";
        if (cfg->workspace) {
                /* plan.c's checks of a direct jail's workspace; one that
                 * fails them is left to the direct jail, which says why. */
                cleanup_free char *real = realpath(cfg->workspace, NULL);
                struct stat st;
                if (real == NULL || stat(real, &st) < 0 || !S_ISDIR(st.st_mode) || jail_path_is_system(real))
                        return "a workspace a jail may not have";
        }
        for (size_t i = 0; i < cfg->n_binds; i++) {
                if (!cfg->binds[i].writable || cfg->binds[i].src_fd >= 0)
                        continue;
                cleanup_free char *real = realpath(cfg->binds[i].src, NULL);
                if (real == NULL || jail_path_is_system(real))
                        return "a writable bind a jail may not have";
        }
        return NULL;
}

void jail_premade_free(struct jail_premade *pm)
{
        if (pm == NULL)
                return;
        if (!pm->ended)
                stop_and_reap(&pm->j);
        jail_teardown(&pm->j, pm->ran_ok ? 0 : -1, NULL);
        corral_jail_config_release(&pm->made);
        free(pm);
}

/* The claim (jail_premade_run()) up to the orders sent: -1 and nothing of
 * the caller has reached the jail. */
static int premade_claim(struct jail_premade *pm, const corral_jail_config *cfg, const corral_jail_io *io,
                         corral_error **ret_err)
{
        struct jail *j = &pm->j;
        const char *misfit = jail_premade_misfit(pm, cfg);
        if (misfit)
                return corral_make_error(ret_err, CORRAL_ERR_UNSUPPORTED, 0, "the jail made in advance does not fit: %s",
                                         misfit);
        j->cfg = cfg;
        j->io = io;
        jail_set_caps(j, cfg, io);
        /* Whatever the child said so far (that it started); from now on
         * the phases are the claim's. */
        read_status(j);
        if (j->setup_failed)
                return setup_error(j, ret_err);
        j->t_start = j->t_clone = j->t_child = monotonic_ms();
        struct cgroup_limits lim = { .memory_bytes = cfg->memory_bytes, .pids = cfg->pids, .cpus = cfg->cpus };
        /* Limits it was made with are in force already (most claims ask
         * for the defaults it was made with). */
        bool as_made = cfg->memory_bytes == pm->made.memory_bytes && cfg->pids == pm->made.pids &&
                       cfg->cpus == pm->made.cpus;
        if (j->have_cg && !as_made && cgroup_set_limits(&j->cg, &lim, ret_err) < 0)
                return -1;
        int fds[2 + 1 + JAIL_TREES_MAX_BINDS + 1];
        int nfds = 0, rc = -1;
        /* Only as much of the claim as it fills (jail_premade_misfit() bounds
         * the destinations): all of it is 32 KiB, each page a fault here. */
        size_t dsts = 0;
        for (size_t i = 0; i < cfg->n_binds; i++)
                dsts += strlen(cfg->binds[i].dst) + 1;
        struct jail_premade_claim *c = calloc(1, offsetof(struct jail_premade_claim, dsts) + dsts + 1);
        if (c == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot claim a jail made in advance");
        /* The stdin first, then the orders: they land at 0 and 5 of the
         * program process, the lowest numbers it has free (enter.c). */
        if ((fds[nfds] = jail_stdin(j, cfg, io, NULL)) < 0) {
                corral_fail(ret_err, errno, "cannot create pipes for the jail");
                goto out;
        }
        nfds++;
        if ((fds[nfds] = jail_orders(j, cfg, ret_err)) < 0)
                goto out;
        nfds++;
        /* Its tmpfs are the made size already: no remount for that. */
        c->disk_bytes = cfg->disk_bytes == pm->made.disk_bytes ? 0 : cfg->disk_bytes;
        if (cfg->workspace || cfg->n_binds > 0) {
                if (jail_trees_make(cfg, j->host_uid, j->leased, fds + nfds, ret_err) < 0)
                        goto out;
                if (cfg->workspace) {
                        c->workspace = 1;
                        nfds++;
                } else {
                        close(fds[nfds]); /* its own tmpfs is there already */
                        memmove(fds + nfds, fds + nfds + 1, cfg->n_binds * sizeof(int));
                }
                nfds += (int)cfg->n_binds;
                for (size_t i = 0; i < cfg->n_binds; i++) {
                        size_t n = strlen(cfg->binds[i].dst) + 1;
                        memcpy(c->dsts + c->dsts_len, cfg->binds[i].dst, n);
                        c->dsts_len += (uint32_t)n;
                }
        }
        c->n_trees = (uint32_t)nfds - 2;
        if (cfg->script) {
                /* The program text, which a direct jail's plan writes into
                 * its root: sealed, read by the child from offset 0. */
                int mfd = memfd_create("corral-script", MFD_CLOEXEC | MFD_ALLOW_SEALING);
                if (mfd < 0 || write_all(mfd, cfg->script, cfg->script_len) < 0 ||
                    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
                        corral_fail(ret_err, errno, "cannot hand the jail made in advance its program");
                        if (mfd >= 0)
                                close(mfd);
                        goto out;
                }
                fds[nfds++] = mfd;
                c->script = 1;
                c->script_len = cfg->script_len;
                c->root_bytes = jail_plan_root_bytes(cfg, NULL);
                snprintf(c->script_name, sizeof(c->script_name), "%s", cfg->script_name);
        }
        if (unix_send_fds(j->order_w, c, offsetof(struct jail_premade_claim, dsts) + c->dsts_len, fds, nfds) < 0) {
                corral_fail(ret_err, errno, "cannot hand the jail made in advance its orders");
                goto out;
        }
        rc = 0;
out:
        for (int i = 0; i < nfds; i++)
                close(fds[i]);
        free(c);
        return rc;
}

void jail_premade_take_output(struct jail_premade *pm, int *ret_stdout, int *ret_stderr)
{
        *ret_stdout = pm->j.out_r;
        *ret_stderr = pm->j.err_r;
        pm->j.out_r = pm->j.err_r = -1;
}

int jail_output_pump(int out_r, int err_r, int stdin_w, const corral_jail_config *cfg, const corral_jail_io *io,
                     int cancel_to, corral_jail_result *ret, corral_error **ret_err)
{
        enum { PUMP_STDIN = 3, PUMP_STDIN_OUT };
        struct jail j;
        memset(&j, 0, sizeof(j));
        j.io = io;
        j.in.src = j.in.dst = -1;
        jail_set_caps(&j, cfg, io);
        cleanup_close int ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0) {
                if (stdin_w >= 0)
                        close(stdin_w);
                return corral_fail(ret_err, errno, "cannot read the jail's output");
        }
        int fds[2] = { out_r, err_r };
        bool open[2] = { false, false };
        int cancel = io && io->cancel_fd > 0 && cancel_to >= 0 ? io->cancel_fd : -1;
        struct epoll_event cev = { .events = EPOLLIN, .data.u32 = 2 };
        for (int i = 0; i < 2; i++) {
                struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
                if (fds[i] >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0)
                        goto watch_failed;
                open[i] = fds[i] >= 0;
        }
        if (cancel >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, cancel, &cev) < 0)
                goto watch_failed;
        /* The caller's stdin into the jail's, as a direct jail's supervisor
         * copies it (the caller's descriptor is read, never handed on). */
        if (stdin_w >= 0 && io && io->stdin_fd >= 0) {
                j.in.src = io->stdin_fd;
                j.in.dst = stdin_w;
                fcntl(stdin_w, F_SETFL, O_NONBLOCK);
                struct epoll_event ev = { .events = EPOLLIN, .data.u32 = PUMP_STDIN };
                j.in.pollable = epoll_ctl(ep, EPOLL_CTL_ADD, j.in.src, &ev) == 0;
                if (!j.in.pollable && errno != EPERM) {
                        close(stdin_w);
                        return corral_fail(ret_err, errno, "cannot watch stdin");
                }
                j.in.src_watched = j.in.pollable;
                pump_stdin(&j.in, ep, PUMP_STDIN, PUMP_STDIN_OUT, false);
        } else if (stdin_w >= 0) {
                close(stdin_w); /* the jail reads an end at once */
        }
        /* Until every writer is gone: the jail's whole pid namespace. */
        while (open[0] || open[1]) {
                struct epoll_event evs[3];
                int n = epoll_wait(ep, evs, 3, -1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        capbuf_release(&j.out);
                        capbuf_release(&j.err);
                        stdin_pump_release(&j.in);
                        return corral_fail(ret_err, e, "cannot read the jail's output");
                }
                for (int i = 0; i < n; i++) {
                        int s = (int)evs[i].data.u32;
                        if (s == 2) {
                                /* The caller cancels: its supervisor hears
                                 * the hang-up and kills the jail. */
                                shutdown(cancel_to, SHUT_WR);
                                epoll_ctl(ep, EPOLL_CTL_DEL, cancel, NULL);
                                continue;
                        }
                        if (s == PUMP_STDIN || s == PUMP_STDIN_OUT) {
                                pump_stdin(&j.in, ep, PUMP_STDIN, PUMP_STDIN_OUT, s == PUMP_STDIN);
                                continue;
                        }
                        if (!(open[s] = pump_output(&j, fds[s], s == 0 ? &j.out : &j.err, s + 1)))
                                epoll_ctl(ep, EPOLL_CTL_DEL, fds[s], NULL);
                }
        }
        stdin_pump_release(&j.in); /* the jail may have ended before its stdin did */
        ret->stdout_truncated = j.out.truncated;
        ret->stderr_truncated = j.err.truncated;
        ret->stdout_total = j.out.total;
        ret->stderr_total = j.err.total;
        free(ret->stdout_buf);
        free(ret->stderr_buf);
        ret->stdout_buf = ret->stderr_buf = NULL;
        ret->stdout_len = ret->stderr_len = 0;
        if (io == NULL || io->capture) {
                ret->stdout_buf = capbuf_detach(&j.out, &ret->stdout_len);
                ret->stderr_buf = capbuf_detach(&j.err, &ret->stderr_len);
        }
        capbuf_release(&j.out);
        capbuf_release(&j.err);
        return 0;
watch_failed: {
        int e = errno;
        if (stdin_w >= 0)
                close(stdin_w);
        return corral_fail(ret_err, e, "cannot read the jail's output");
}
}

int jail_premade_claim(struct jail_premade *pm, const corral_jail_config *cfg, const corral_jail_io *io,
                       corral_error **ret_err)
{
        if (corral_jail_config_validate(cfg, ret_err) < 0 || premade_claim(pm, cfg, io, ret_err) < 0)
                return JAIL_PREMADE_UNCLAIMED;
        return 0;
}

int jail_premade_run(struct jail_premade *pm, const corral_jail_config *cfg, const corral_jail_io *io,
                     corral_jail_result *ret, corral_error **ret_err)
{
        memset(ret, 0, sizeof(*ret));
        if (jail_premade_claim(pm, cfg, io, ret_err) < 0)
                return JAIL_PREMADE_UNCLAIMED;
        return jail_premade_finish(pm, ret, ret_err);
}

int jail_premade_finish(struct jail_premade *pm, corral_jail_result *ret, corral_error **ret_err)
{
        memset(ret, 0, sizeof(*ret));
        int rc = jail_finish(&pm->j, ret, ret_err) < 0 ? -1 : 0;
        /* Its output's buffers are ret's now; the cgroups and descriptors
         * (and init, when its report was enough) wait for
         * jail_premade_free(), after the caller passed ret on. */
        pm->ended = pm->j.reaped;
        pm->ran_ok = rc == 0;
        return rc;
}

void corral_jail_result_release(corral_jail_result *res)
{
        free(res->reason);
        free(res->stdout_buf);
        free(res->stderr_buf);
        free(res->seccomp_syscall_name);
        for (size_t i = 0; i < res->n_denied; i++)
                free(res->denied[i]);
        free(res->denied);
        net_log_release(res);
        memset(res, 0, sizeof(*res));
}
