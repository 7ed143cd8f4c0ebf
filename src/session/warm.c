/* warm.c: the zygote, its pool and warm sessions (warm.h).
 *
 * The zygote is a jail like any other (jail_run_special(): the same plan,
 * clone, id maps, cgroup and init), running corral-zygote as uid 0 of its
 * own user namespace under the zygote filter; its stdin is a SEQPACKET
 * socket over which we send it the jail's filter once and a fork request
 * per session (zygote-protocol.h).  It is exec'd by corral-init with the
 * jail's fixed environment: nothing of ours (API keys) reaches it.
 *
 * A session's isolation is made inside it (zygote.c); what only the host
 * can do is done here at claim time: the session's cgroup (its init is moved
 * there before it forks the interpreter; rlimits without one) and its
 * workspace and its binds (beneath /workspace), passed as detached mounts:
 * cloned and idmapped to the session's own host uid as root, cloned in a
 * user and mount namespace of our own as an ordinary user (the library's
 * jail_trees_make(), src/lib/trees.c, which pre-made jails use too).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/sched.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/jail-internal.h"
#include "session.h"
#include "warm.h"
#include "zygote-protocol.h"

#define POOL_MAX 8
#define ZYGOTE_START_TIMEOUT_MS 120000.0
#define FORK_TIMEOUT_MS 20000.0
_Static_assert(ZYGOTE_MAX_BINDS <= JAIL_TREES_MAX_BINDS && ZYGOTE_MAX_BINDS + 4 <= UNIX_MAX_FDS,
               "the library's trees and fd passing take a session's binds");
#define REFILL_DELAY_MS 50
#define ZYGOTE_SESSION_IDS 32    /* live sessions per zygote with a host uid each (root) */

/* A pre-forked session: its init waits for a claim. */
struct warm {
        int frames;              /* our end of the driver's stream */
        int ctl;                 /* our end of its init's SEQPACKET socket */
        int diag;                /* the interpreter's stderr (last words) */
        pid_t pid;               /* its init on the host */
        int pidfd;
        int slot;                /* its id in the zygote's namespace (1..), 0 none */
        unsigned gen;            /* of the zygote it came from */
        struct jail_cgroup cg;
        bool have_cg;
        enum corral_limits_backend backend;
        struct net_proxy *proxy; /* --net allow: serves the session's 127.0.0.1:3128 from here */
};

static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int refs;
        bool running;            /* the jail thread is up */
        bool ready;
        bool stopping;
        bool failed;
        char *why;               /* why the zygote failed, for the next caller */
        pthread_t jail_thread, pool_thread;
        bool pool_started;
        int prestarts;           /* warm_prestart() calls not yet ended */
        bool prestart_live;      /* prestart_thread is to be joined */
        pthread_t prestart_thread;
        int ctl;                 /* our end of the zygote's stdin socket */
        int cancel_r, cancel_w;  /* a pipe, both ends ours until the jail thread is joined:
                                  * writing to it cannot raise SIGPIPE */
        uint32_t host_uid;
        pid_t pid;
        struct warm *pool[POOL_MAX];
        int n_pool;
        int target;
        struct capbuf out;       /* the zygote's stdout and stderr */
        /* Root: host ids leased for sessions, mapped as 1.. in the zygote's
         * namespace, one per live session. */
        struct uid_lease leases[JAIL_MAX_EXTRA_IDS];
        uint32_t ids[JAIL_MAX_EXTRA_IDS];
        bool used[JAIL_MAX_EXTRA_IDS];
        size_t n_ids;
        unsigned gen;
} Z = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .ctl = -1, .cancel_r = -1,
        .cancel_w = -1 };

static void slot_release(struct warm *w, bool locked)
{
        if (w->slot <= 0)
                return;
        if (!locked)
                pthread_mutex_lock(&Z.lock);
        if (w->gen == Z.gen && (size_t)w->slot <= Z.n_ids)
                Z.used[w->slot - 1] = false;
        if (!locked)
                pthread_mutex_unlock(&Z.lock);
        w->slot = 0;
}

static void warm_free_locked(struct warm *w, bool locked)
{
        if (w == NULL)
                return;
        if (w->pidfd >= 0)
                syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
        int fds[] = { w->frames, w->ctl, w->diag, w->pidfd };
        for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        /* After the kill: the listener's namespace dies with the session. */
        net_proxy_stop(w->proxy, NULL);
        if (w->have_cg) {
                /* Killing its init ended the pid namespace; cgroup_destroy()
                 * waits for the last exit before removing the cgroup. */
                cgroup_kill(&w->cg);
                cgroup_destroy(&w->cg);
        }
        slot_release(w, locked);
        free(w);
}

static void warm_free(struct warm *w)
{
        warm_free_locked(w, false);
}

/* ---- the zygote ---- */

static char *zygote_path;
static void find_zygote(void)
{
        const char *env = getenv("CORRAL_ZYGOTE");
        char exe[4096];
        struct stat st;
        if (env && env[0]) {
                /* Asked for: that one or none, never another silently. */
                if (stat(env, &st) == 0 && S_ISREG(st.st_mode))
                        zygote_path = realpath(env, NULL);
                return;
        }
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 32);
        if (n > 0) {
                exe[n] = '\0';
                char *slash = strrchr(exe, '/');
                if (slash) {
                        memcpy(slash + 1, "corral-zygote", sizeof("corral-zygote"));
                        if (stat(exe, &st) == 0 && S_ISREG(st.st_mode)) {
                                zygote_path = realpath(exe, NULL);
                                return;
                        }
                }
        }
        const char *candidates[] = {
#ifdef CORRAL_LIBEXEC_ZYGOTE
                CORRAL_LIBEXEC_ZYGOTE,
#endif
#ifdef CORRAL_BUILD_ZYGOTE
                CORRAL_BUILD_ZYGOTE,
#endif
                NULL,
        };
        for (size_t i = 0; candidates[i]; i++)
                if (stat(candidates[i], &st) == 0 && S_ISREG(st.st_mode)) {
                        zygote_path = realpath(candidates[i], NULL);
                        return;
                }
}

static const char *zygote_binary(corral_error **ret_err)
{
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        pthread_once(&once, find_zygote);
        const char *env = getenv("CORRAL_ZYGOTE");
        if (zygote_path == NULL && env && env[0])
                corral_fail(ret_err, ENOENT, "CORRAL_ZYGOTE='%s' is not a program", env);
        else if (zygote_path == NULL)
                corral_fail(ret_err, ENOENT,
                            "cannot find corral-zygote (install it beside corral or set CORRAL_ZYGOTE)");
        return zygote_path;
}

static void zygote_on_output(void *userdata, int stream, const char *data, size_t len)
{
        (void)userdata;
        (void)stream;
        pthread_mutex_lock(&Z.lock);
        capbuf_append(&Z.out, data, len);
        pthread_mutex_unlock(&Z.lock);
}

struct zygote_run {
        corral_jail_config cfg;
        int sock;                /* the zygote's end, dup'd into the jail as its stdin */
        uint32_t ids[JAIL_MAX_EXTRA_IDS];
        size_t n_ids;
};

static void *zygote_thread(void *arg)
{
        struct zygote_run *zr = arg;
        struct jail_special sp = { .zygote = true, .stdin_socket = zr->sock, .ret_host_uid = &Z.host_uid,
                                   .extra_ids = zr->ids, .n_extra_ids = zr->n_ids };
        corral_jail_io io = { .on_output = zygote_on_output, .cancel_fd = Z.cancel_r };
        corral_jail_result res;
        corral_error *err = NULL;
        int rc = jail_run_special(&zr->cfg, &io, &sp, &res, &err);
        pthread_mutex_lock(&Z.lock);
        if (!Z.stopping && Z.why == NULL) {
                if (rc < 0)
                        Z.why = strdup(err ? err->msg : "the zygote's jail failed");
                else if (asprintf(&Z.why, "the zygote ended (%s%s%s)", corral_status_to_string(res.status),
                                  res.reason ? ": " : "", res.reason ? res.reason : "") < 0)
                        Z.why = NULL;
        }
        Z.failed = true;
        Z.ready = false;
        pthread_cond_broadcast(&Z.cond);
        pthread_mutex_unlock(&Z.lock);
        if (rc == 0)
                corral_jail_result_release(&res);
        corral_error_free(err);
        close(zr->sock);
        corral_jail_config_release(&zr->cfg);
        free(zr);
        return NULL;
}

static const char *zstep_name(int step)
{
        static const char *const names[] = {
                [ZSTEP_UNSHARE] = "create the session's namespaces", [ZSTEP_FORK] = "fork",
                [ZSTEP_PROC] = "mount the session's /proc",        [ZSTEP_CLAIM] = "take the claim",
                [ZSTEP_TMP] = "mount the session's /tmp",          [ZSTEP_WORKSPACE] = "attach the workspace",
                [ZSTEP_LOOPBACK] = "bring up loopback",            [ZSTEP_USERNS] = "enter its user namespace",
                [ZSTEP_RLIMIT] = "set resource limits",            [ZSTEP_CAPS] = "drop its capabilities",
                [ZSTEP_SECCOMP] = "load the seccomp filter",       [ZSTEP_PYTHON] = "start the driver",
                [ZSTEP_BIND] = "attach a bind beneath /workspace", [ZSTEP_DEVPTS] = "mount the session's /dev/pts",
                [ZSTEP_PROXY] = "make the network proxy's listening socket",
                [ZSTEP_CA] = "put the CA bundle in /etc/ssl/certs",
        };
        return step > 0 && (size_t)step < ARRAY_SIZE(names) && names[step] ? names[step] : "set up";
}

/* Ask the zygote for one session and wait for its init's hello. */
static struct warm *pool_fork(char **ret_why)
{
        struct warm *w = calloc(1, sizeof(*w));
        int fr[2] = { -1, -1 }, ctl[2] = { -1, -1 }, dg[2] = { -1, -1 };
        if (w == NULL)
                return NULL;
        w->frames = w->ctl = w->diag = w->pidfd = -1;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fr) < 0 ||
            socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0 || pipe2(dg, O_CLOEXEC) < 0)
                goto fail;
        w->frames = fr[0];
        w->ctl = ctl[0];
        w->diag = dg[0];
        int one = 1;
        setsockopt(w->ctl, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
        char req = ZYGOTE_MSG_FORK;
        int theirs[3] = { fr[1], ctl[1], dg[1] };
        pthread_mutex_lock(&Z.lock);
        int zctl = Z.ready ? Z.ctl : -1;
        int r = zctl >= 0 ? unix_send_fds(zctl, &req, 1, theirs, 3) : -1;
        pthread_mutex_unlock(&Z.lock);
        for (int i = 0; i < 3; i++)
                close(theirs[i]);
        fr[1] = ctl[1] = dg[1] = -1;
        if (r < 0)
                goto fail;
        struct init_msg m;
        struct ucred cred = { 0 };
        ssize_t n = unix_recv_fds_until(w->ctl, &m, sizeof(m), NULL, 0, NULL, &cred, monotonic_ms() + FORK_TIMEOUT_MS);
        if (n != (ssize_t)sizeof(m) || m.type != MSG_INIT_START || cred.pid <= 0) {
                if (n == (ssize_t)sizeof(m) && m.type == MSG_SETUP_FAILED && ret_why &&
                    asprintf(ret_why, "cannot %s: %s", zstep_name(m.a), strerror(m.b)) < 0)
                        *ret_why = NULL;
                goto fail;
        }
        w->pid = cred.pid;
        w->pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
        if (w->pidfd < 0)
                goto fail;
        fcntl(w->frames, F_SETFL, O_NONBLOCK);
        fcntl(w->diag, F_SETFL, O_NONBLOCK);
        return w;
fail:
        for (int i = 0; i < 3; i++) {
                int *theirs_end[] = { &fr[1], &ctl[1], &dg[1] };
                if (*theirs_end[i] >= 0)
                        close(*theirs_end[i]);
        }
        warm_free(w);
        return NULL;
}

static void *pool_thread(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&Z.lock);
        while (!Z.stopping && !Z.failed) {
                if (Z.n_pool >= Z.target) {
                        pthread_cond_wait(&Z.cond, &Z.lock);
                        continue;
                }
                if (Z.n_pool > 0) {
                        /* A session was just claimed and is starting on
                         * these few cores: let it, unless the pool is dry. */
                        struct timespec ts;
                        clock_gettime(CLOCK_REALTIME, &ts);
                        long long ns = ts.tv_nsec + REFILL_DELAY_MS * 1000000LL;
                        ts.tv_sec += (time_t)(ns / 1000000000LL);
                        ts.tv_nsec = (long)(ns % 1000000000LL);
                        int n = Z.n_pool;
                        while (!Z.stopping && !Z.failed && Z.n_pool == n &&
                               pthread_cond_timedwait(&Z.cond, &Z.lock, &ts) == 0)
                                ;
                        if (Z.stopping || Z.failed)
                                break;
                }
                pthread_mutex_unlock(&Z.lock);
                char *why = NULL;
                struct warm *w = pool_fork(&why);
                pthread_mutex_lock(&Z.lock);
                if (w == NULL) {
                        if (!Z.stopping && !Z.failed) {
                                free(Z.why);
                                Z.why = why ? why : strdup("the zygote could not fork a session");
                                why = NULL;
                                Z.failed = true;
                        }
                        free(why);
                        pthread_cond_broadcast(&Z.cond);
                        break;
                }
                if (Z.stopping) {
                        pthread_mutex_unlock(&Z.lock);
                        warm_free(w);
                        pthread_mutex_lock(&Z.lock);
                        break;
                }
                Z.pool[Z.n_pool++] = w;
                pthread_cond_broadcast(&Z.cond);
        }
        pthread_mutex_unlock(&Z.lock);
        return NULL;
}

static int pool_size_from_env(void)
{
        const char *e = getenv("CORRAL_WARM_POOL");
        if (e && *e) {
                char *end;
                long v = strtol(e, &end, 10);
                if (*end == '\0' && v >= 1 && v <= POOL_MAX)
                        return (int)v;
        }
        return 2;
}

static void release_ids(void)
{
        for (size_t i = 0; i < Z.n_ids; i++)
                uidpool_release(&Z.leases[i]);
        Z.n_ids = 0;
        Z.gen++;
}

/* Start the zygote (Z.lock held, not running) and wait until it is ready. */
static int zygote_start(corral_error **ret_err)
{
        const char *bin = zygote_binary(ret_err);
        if (bin == NULL)
                return -1;
        const char *driver = session_driver_path(ret_err);
        if (driver == NULL)
                return -1;
        const struct jail_bpf *bpf;
        if (jail_seccomp_program(&bpf, ret_err) < 0)
                return -1;
        if (bpf->len > ZYGOTE_MAX_BPF)
                return corral_fail(ret_err, E2BIG, "the seccomp filter is too large for the zygote");
        struct zygote_run *zr = calloc(1, sizeof(*zr));
        if (zr == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the zygote");
        corral_jail_config_init(&zr->cfg);
        char *argv[] = { ZYGOTE_IN_JAIL, NULL };
        /* Its own limits, not a session's: the zygote holds the imports and
         * the pool (sessions move to their own cgroups when claimed). */
        zr->cfg.timeout_s = 31536000.0;
        zr->cfg.memory_bytes = 4ull << 30;
        zr->cfg.pids = 256;
        zr->cfg.nofile = 1024;
        zr->cfg.disk_bytes = 64u << 20;
        zr->cfg.output_limit = 64u << 10;
        zr->cfg.net = CORRAL_NET_NONE;
        int sv[2] = { -1, -1 };
        if (corral_jail_config_set_argv(&zr->cfg, argv, ret_err) < 0 ||
            corral_jail_config_add_bind_at(&zr->cfg, bin, ZYGOTE_IN_JAIL, false, ret_err) < 0 ||
            corral_jail_config_add_bind_at(&zr->cfg, driver, ZYGOTE_DRIVER_DIR "/driver.py", false, ret_err) < 0)
                goto fail;
        /* A host uid of its own for each session (root: from the pool). */
        int lease = uidpool_use(zr->cfg.uid_base, zr->cfg.uid_count, ret_err);
        if (lease < 0)
                goto fail;
        for (Z.n_ids = 0; lease && Z.n_ids < ZYGOTE_SESSION_IDS; Z.n_ids++) {
                if (uidpool_acquire(zr->cfg.uid_base, zr->cfg.uid_count, &Z.leases[Z.n_ids], ret_err) < 0)
                        goto fail;
                Z.ids[Z.n_ids] = zr->ids[Z.n_ids] = Z.leases[Z.n_ids].uid;
        }
        zr->n_ids = Z.n_ids;
        memset(Z.used, 0, sizeof(Z.used));
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                corral_fail(ret_err, errno, "cannot create the zygote's socket");
                goto fail;
        }
        int one = 1;
        setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
        int cancel[2];
        if (pipe2(cancel, O_CLOEXEC) < 0) {
                corral_fail(ret_err, errno, "cannot create the zygote's pipes");
                goto fail;
        }
        Z.cancel_r = cancel[0];
        Z.cancel_w = cancel[1];
        Z.ctl = sv[0];
        zr->sock = sv[1];
        Z.failed = Z.stopping = Z.ready = false;
        free(Z.why);
        Z.why = NULL;
        Z.out.cap = 16u << 10;
        Z.pid = 0;
        int e = pthread_create(&Z.jail_thread, NULL, zygote_thread, zr);
        if (e != 0) {
                corral_fail(ret_err, e, "cannot start the zygote's thread");
                zr->sock = -1;
                goto fail_sock;
        }
        Z.running = true;

        /* Its filter, then its "ready" (with its host pid). */
        size_t len = 1 + sizeof(bpf->eperm) + bpf->len * sizeof(bpf->insns[0]);
        char *msg = malloc(len);
        if (msg == NULL) {
                corral_fail(ret_err, ENOMEM, "cannot start the zygote");
                goto fail_running;
        }
        msg[0] = ZYGOTE_MSG_BPF;
        memcpy(msg + 1, bpf->eperm, sizeof(bpf->eperm));
        memcpy(msg + 1 + sizeof(bpf->eperm), bpf->insns, bpf->len * sizeof(bpf->insns[0]));
        int r = unix_send_fds(Z.ctl, msg, len, NULL, 0);
        free(msg);
        if (r < 0) {
                corral_fail(ret_err, errno, "cannot send the zygote its filter");
                goto fail_running;
        }
        char buf[1024];
        struct ucred cred = { 0 };
        pthread_mutex_unlock(&Z.lock);
        ssize_t n = unix_recv_fds_until(Z.ctl, buf, sizeof(buf) - 1, NULL, 0, NULL, &cred,
                                   monotonic_ms() + ZYGOTE_START_TIMEOUT_MS);
        pthread_mutex_lock(&Z.lock);
        struct zygote_ready ready;
        if (n == (ssize_t)sizeof(ready) && buf[0] == ZYGOTE_MSG_READY) {
                Z.pid = cred.pid;
                Z.ready = true;
                Z.target = pool_size_from_env();
                if (pthread_create(&Z.pool_thread, NULL, pool_thread, NULL) == 0)
                        Z.pool_started = true;
                return 0;
        }
        if (n > 0 && buf[0] == ZYGOTE_MSG_FAILED) {
                buf[n] = '\0';
                corral_fail(ret_err, 0, "%s", buf + 1);
        } else {
                corral_fail(ret_err, n < 0 ? errno : EPROTO, "the zygote did not start%s%.*s",
                            Z.out.len ? ": " : "", (int)(Z.out.len > 600 ? 600 : Z.out.len),
                            Z.out.data ? Z.out.data : "");
        }
fail_running:
        Z.stopping = true;
        {
                ssize_t w = write(Z.cancel_w, "k", 1);
                (void)w;
        }
        pthread_mutex_unlock(&Z.lock);
        pthread_join(Z.jail_thread, NULL);
        pthread_mutex_lock(&Z.lock);
        Z.running = false;
        close(Z.ctl);
        close(Z.cancel_r);
        close(Z.cancel_w);
        Z.ctl = Z.cancel_r = Z.cancel_w = -1;
        release_ids();
        pthread_cond_broadcast(&Z.cond); /* wait_stopped() */
        return -1;
fail_sock:
        release_ids();
        close(sv[0]);
        close(sv[1]);
        close(Z.cancel_r);
        close(Z.cancel_w);
        Z.ctl = Z.cancel_r = Z.cancel_w = -1;
        corral_jail_config_release(&zr->cfg);
        free(zr);
        return -1;
fail:
        if (sv[0] >= 0)
                close(sv[0]);
        if (sv[1] >= 0)
                close(sv[1]);
        corral_jail_config_release(&zr->cfg);
        free(zr);
        release_ids();
        return -1;
}

/* Wait while another thread stops the zygote (it dropped Z.lock to join
 * its threads): only one may join them. */
static void wait_stopped(void)
{
        while (Z.running && Z.stopping)
                pthread_cond_wait(&Z.cond, &Z.lock);
}

/* Stop the zygote and empty the pool (Z.lock held). */
static void zygote_stop(void)
{
        if (Z.running && Z.stopping) {
                wait_stopped();
                return;
        }
        if (!Z.running)
                return;
        Z.stopping = true;
        pthread_cond_broadcast(&Z.cond);
        ssize_t w = write(Z.cancel_w, "k", 1);
        (void)w;
        /* The pool thread may be waiting for a fork the zygote will never
         * make: shutting its socket down wakes nothing there, so close the
         * zygote first (its jail's end), then join. */
        pthread_mutex_unlock(&Z.lock);
        pthread_join(Z.jail_thread, NULL);
        if (Z.pool_started)
                pthread_join(Z.pool_thread, NULL);
        pthread_mutex_lock(&Z.lock);
        Z.pool_started = false;
        for (int i = 0; i < Z.n_pool; i++)
                warm_free_locked(Z.pool[i], true);
        Z.n_pool = 0;
        release_ids();
        close(Z.ctl);
        close(Z.cancel_r);
        close(Z.cancel_w);
        Z.ctl = Z.cancel_r = Z.cancel_w = -1;
        Z.running = Z.ready = false;
        Z.pid = 0;
        capbuf_release(&Z.out);
        pthread_cond_broadcast(&Z.cond); /* wait_stopped() */
}

void warm_ref(void)
{
        pthread_mutex_lock(&Z.lock);
        Z.refs++;
        pthread_mutex_unlock(&Z.lock);
}

void warm_unref(void)
{
        pthread_mutex_lock(&Z.lock);
        if (--Z.refs <= 0) {
                Z.refs = 0;
                zygote_stop();
        }
        pthread_mutex_unlock(&Z.lock);
}

static void *prestart_main(void *arg)
{
        pthread_mutex_lock(&Z.lock);
        wait_stopped();
        if (Z.failed && Z.running)
                zygote_stop();
        if (!Z.running)
                (void)zygote_start(NULL);
        pthread_mutex_unlock(&Z.lock);
        return arg;
}

/* Several runs in one process may prestart at once: one thread starts the
 * zygote for all of them, each holds a reference, and the last
 * warm_prestart_end() joins that thread. */
void warm_prestart(void)
{
        pthread_mutex_lock(&Z.lock);
        Z.refs++;
        Z.prestarts++;
        if (!Z.prestart_live)
                Z.prestart_live = pthread_create(&Z.prestart_thread, NULL, prestart_main, NULL) == 0;
        pthread_mutex_unlock(&Z.lock);
}

void warm_prestart_end(void)
{
        pthread_mutex_lock(&Z.lock);
        if (Z.prestarts == 0) {
                pthread_mutex_unlock(&Z.lock);
                return;
        }
        bool join = --Z.prestarts == 0 && Z.prestart_live;
        pthread_t th = Z.prestart_thread;
        if (join) {
                Z.prestart_live = false;
                /* Still starting and nobody else wants it (the run ended
                 * before it needed the zygote): end its jail rather than
                 * wait for the imports; the start then fails and cleans up
                 * on its own thread. */
                if (Z.refs == 1 && Z.running && !Z.ready && !Z.stopping && Z.cancel_w >= 0) {
                        ssize_t k = write(Z.cancel_w, "k", 1);
                        (void)k;
                }
        }
        pthread_mutex_unlock(&Z.lock);
        if (join)
                pthread_join(th, NULL);
        warm_unref();
}

pid_t warm_zygote_pid(void)
{
        pthread_mutex_lock(&Z.lock);
        pid_t p = Z.ready ? Z.pid : 0;
        pthread_mutex_unlock(&Z.lock);
        return p;
}

int warm_pool_size(void)
{
        pthread_mutex_lock(&Z.lock);
        int n = Z.n_pool;
        pthread_mutex_unlock(&Z.lock);
        return n;
}

int warm_supported(const corral_jail_config *cfg, corral_error **ret_err)
{
        if (cfg->rootfs)
                return corral_usage_field(ret_err, "rootfs", "warm sessions run on the host's Python: a "
                                                    "root file system of its own needs a cold session");
        if (cfg->n_binds > ZYGOTE_MAX_BINDS)
                return corral_usage(ret_err, "warm sessions take at most %d binds: start a cold session",
                                    ZYGOTE_MAX_BINDS);
        size_t dests = 0;
        for (size_t i = 0; i < cfg->n_binds; i++) {
                /* The zygote's root is the host's, read-only: a session's
                 * binds go where it can make mount points, its workspace. */
                const char *rel = jail_bind_beneath_workspace(cfg->binds[i].dst);
                if (rel == NULL)
                        return corral_usage(ret_err, "warm sessions take binds only beneath /workspace (not '%s'): "
                                                     "start a cold session",
                                            cfg->binds[i].dst);
                dests += strlen(rel) + 1;
        }
        if (dests > ZYGOTE_MAX_DESTS)
                return corral_usage(ret_err, "the binds' destinations are too long for a warm session: start a "
                                             "cold session");
        if (cfg->workspace) {
                /* As plan.c refuses it to a cold jail: as root what the
                 * session writes there lands as the directory's owner. */
                cleanup_free char *real = realpath(cfg->workspace, NULL);
                if (real && jail_path_is_system(real))
                        return corral_usage(ret_err, "refusing to give the jail write access to the system "
                                                     "directory '%s'", real);
        }
        if (cfg->net == CORRAL_NET_HOST)
                return corral_usage(ret_err, "warm sessions have no host network: start a cold session");
        /* The zygote keeps corral's hard limits as its ceilings (spawn.c):
         * each session gets its caller's limits, up to them. */
        static const struct {
                int res;
                const char *what;
        } ceilings[] = { { RLIMIT_NOFILE, "open-file limit" }, { RLIMIT_FSIZE, "file-size (disk) limit" } };
        for (size_t i = 0; i < ARRAY_SIZE(ceilings); i++) {
                uint64_t want = ceilings[i].res == RLIMIT_NOFILE ? cfg->nofile : cfg->disk_bytes;
                struct rlimit rl;
                if (getrlimit(ceilings[i].res, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
                        return corral_usage(ret_err, "the %s of %" PRIu64 " is more than this host lets corral "
                                                     "grant (%" PRIu64 ", its hard limit): ask for less",
                                            ceilings[i].what, want, (uint64_t)rl.rlim_max);
        }
        return 0;
}


static atomic_uint warm_seq;

int warm_claim(const corral_jail_config *cfg, double timeout_s, struct warm **ret, corral_error **ret_err)
{
        if (warm_supported(cfg, ret_err) < 0)
                return -1;
        double deadline = monotonic_ms() + timeout_s * 1000;
        struct warm *w = NULL;
        pthread_mutex_lock(&Z.lock);
        /* Another thread stopping the zygote: let it finish first. */
        wait_stopped();
        if (Z.failed && Z.running) {
                /* A dead zygote: start a new one. */
                zygote_stop();
        }
        if (!Z.running && zygote_start(ret_err) < 0) {
                pthread_mutex_unlock(&Z.lock);
                return -1;
        }
        while (Z.n_pool == 0 && !Z.failed && !Z.stopping) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                double left = deadline - monotonic_ms();
                if (left <= 0)
                        break;
                long long ns = (long long)ts.tv_nsec + (long long)(left * 1e6);
                ts.tv_sec += (time_t)(ns / 1000000000LL);
                ts.tv_nsec = (long)(ns % 1000000000LL);
                pthread_cond_timedwait(&Z.cond, &Z.lock, &ts);
        }
        if (Z.n_pool == 0 && !Z.running && zygote_start(ret_err) < 0) {
                /* Its start on another thread (warm_prestart()) failed:
                 * ours says why. */
                pthread_mutex_unlock(&Z.lock);
                return -1;
        }
        while (Z.n_pool == 0 && Z.running && !Z.failed && !Z.stopping) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                double left = deadline - monotonic_ms();
                if (left <= 0)
                        break;
                long long ns = (long long)ts.tv_nsec + (long long)(left * 1e6);
                ts.tv_sec += (time_t)(ns / 1000000000LL);
                ts.tv_nsec = (long)(ns % 1000000000LL);
                pthread_cond_timedwait(&Z.cond, &Z.lock, &ts);
        }
        if (Z.n_pool > 0) {
                w = Z.pool[0];
                memmove(Z.pool, Z.pool + 1, (size_t)(Z.n_pool - 1) * sizeof(Z.pool[0]));
                Z.n_pool--;
                pthread_cond_broadcast(&Z.cond); /* refill */
        }
        uint32_t host_uid = __atomic_load_n(&Z.host_uid, __ATOMIC_ACQUIRE);
        bool no_slot = false;
        if (w != NULL && Z.n_ids > 0) {
                size_t i = 0;
                while (i < Z.n_ids && Z.used[i])
                        i++;
                if (i < Z.n_ids) {
                        Z.used[i] = true;
                        w->slot = (int)i + 1;
                        w->gen = Z.gen;
                        host_uid = Z.ids[i];
                } else {
                        no_slot = true;
                }
        }
        char *why = Z.why ? strdup(Z.why) : NULL;
        pthread_mutex_unlock(&Z.lock);
        if (w == NULL) {
                corral_fail(ret_err, ETIMEDOUT, "no warm session within %g s%s%s", timeout_s, why ? ": " : "",
                            why ? why : "");
                free(why);
                return -1;
        }
        free(why);
        if (no_slot) {
                warm_free(w);
                return corral_make_error(ret_err, CORRAL_ERR_LIMIT, 0,
                                         "too many warm sessions at once (%d per process)", ZYGOTE_SESSION_IDS);
        }

        /* Its cgroup first: the interpreter is forked into it. */
        const struct cgroup_layout *layout = cgroup_host_layout();
        struct cgroup_limits lim = { .memory_bytes = cfg->memory_bytes, .pids = cfg->pids, .cpus = cfg->cpus };
        char name[64];
        /* corral-<pid>-<n> like a jail's, so that a later corral sweeps it if
         * we are SIGKILLed; n counts from 2^31, clear of the jails' counter. */
        snprintf(name, sizeof(name), "corral-%d-%u", (int)getpid(), 0x80000000u + atomic_fetch_add(&warm_seq, 1));
        corral_error *cg_err = NULL;
        if ((layout->v2_dir || layout->v1_memory || layout->v1_pids) &&
            cgroup_create(layout, name, &lim, &w->cg, &cg_err) == 0) {
                w->have_cg = true;
                if (cgroup_attach_v1(&w->cg, w->pid, &cg_err) < 0) {
                        corral_error_free(cg_err);
                        cg_err = NULL;
                        cgroup_destroy(&w->cg);
                        w->have_cg = false;
                }
        }
        corral_error_free(cg_err);
        w->backend = !w->have_cg || w->cg.memory == CG_NONE ? CORRAL_BACKEND_RLIMIT
                     : w->cg.memory == CG_V2               ? CORRAL_BACKEND_CGROUP_V2
                                                           : CORRAL_BACKEND_CGROUP_V1;
        if (w->backend == CORRAL_BACKEND_RLIMIT && cfg->require_cgroups) {
                warm_free(w);
                return corral_make_error(ret_err, CORRAL_ERR_UNSUPPORTED, 0,
                                         "no usable cgroup for memory and process limits (see 'corral doctor')");
        }

        int trees[3 + ZYGOTE_MAX_BINDS];
        int ntrees = 1 + (int)cfg->n_binds;
        if (jail_trees_make(cfg, host_uid, w->slot > 0, trees, ret_err) < 0) {
                warm_free(w);
                return -1;
        }
        /* --net allow: the proxy runs here for the session's life (stopped
         * by warm_run() or warm_free()); the session's init makes its
         * listening socket and sends it over the socket pair's other end,
         * passed after the mounts. */
        bool proxy = cfg->net == CORRAL_NET_ALLOW;
        bool ca = proxy && cfg->n_net_secrets > 0;
        bool bundle = false; /* a bundle for /etc/ssl/certs follows the proxy's socket */
        if (proxy) {
                int sv[2];
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                        int e = errno;
                        for (int i = 0; i < ntrees; i++)
                                close(trees[i]);
                        warm_free(w);
                        return corral_fail(ret_err, e, "cannot start the network proxy");
                }
                trees[ntrees++] = sv[1];
                /* Brokered credentials: the session's own CA, and its bundle
                 * for init to put where a cold jail has it, /etc/ssl/certs (a
                 * tmpfs of the session's over the zygote's empty directory),
                 * so that programs find it as in a cold jail. */
                struct net_tls *tls = NULL;
                int ca_fd = -1;
                if (ca && jail_net_ca_new(cfg, &tls, &ca_fd, ret_err) < 0) {
                        close(sv[0]);
                        for (int i = 0; i < ntrees; i++)
                                close(trees[i]);
                        warm_free(w);
                        return -1;
                }
                /* No credential: the host's bundle itself (read-only, no CA
                 * of ours), copied by init the same way; none on the host,
                 * no trust store (docs/network.md). */
                if (!ca)
                        ca_fd = jail_trust_store_open(NULL);
                if (ca_fd >= 0)
                        trees[ntrees++] = ca_fd;
                bundle = ca_fd >= 0;
                if (net_proxy_start(cfg, tls, sv[0], &w->proxy, ret_err) < 0) {
                        for (int i = 0; i < ntrees; i++)
                                close(trees[i]);
                        warm_free(w);
                        return -1;
                }
        }
        /* The claim: limits, environment, then the binds' destinations;
         * the workspace and the binds as detached mounts. */
        struct zygote_claim c = { .type = ZYGOTE_MSG_CLAIM,
                                  .loopback = cfg->net == CORRAL_NET_NONE || proxy, .proxy = proxy, .ca = bundle,
                                  .uid = (uint32_t)w->slot, .nbinds = (uint32_t)cfg->n_binds,
                                  .disk_bytes = cfg->disk_bytes, .nofile = cfg->nofile,
                                  .cpu_time_s = cfg->cpu_time_s > 0 ? (uint64_t)ceil(cfg->cpu_time_s) : 0,
                                  .rlimit_as = w->backend != CORRAL_BACKEND_RLIMIT ? 0
                                               : cfg->address_space_bytes ? cfg->address_space_bytes
                                                                          : cfg->memory_bytes,
                                  .rlimit_nproc = w->have_cg && w->cg.pids != CG_NONE ? 0 : cfg->pids };
        struct capbuf msg = { .cap = sizeof(c) + ZYGOTE_MAX_ENV + ZYGOTE_MAX_DESTS };
        capbuf_append(&msg, (const char *)&c, sizeof(c));
        uint32_t envc = 0;
        /* The proxy's variables first: the zygote sets them in order, so
         * that the caller's own (cfg->env) win. */
        size_t n_proxy_env = 0;
        const char *const *proxy_env = proxy ? jail_net_allow_env(&n_proxy_env) : NULL;
        for (size_t i = 0; i < n_proxy_env; i++) {
                capbuf_append(&msg, proxy_env[i], strlen(proxy_env[i]) + 1);
                envc++;
        }
        size_t n_ca_env = 0;
        const char *const *ca_env = ca ? jail_net_ca_env(&n_ca_env) : NULL;
        for (size_t i = 0; i < n_ca_env; i++) {
                capbuf_append(&msg, ca_env[i], strlen(ca_env[i]) + 1);
                envc++;
        }
        for (size_t i = 0; cfg->env && cfg->env[i]; i++) {
                size_t len = strlen(cfg->env[i]) + 1;
                if (msg.len + len > sizeof(c) + ZYGOTE_MAX_ENV)
                        break;
                capbuf_append(&msg, cfg->env[i], len);
                envc++;
        }
        memcpy(msg.data + offsetof(struct zygote_claim, envc), &envc, sizeof(envc));
        for (size_t i = 0; i < cfg->n_binds; i++) {
                const char *rel = jail_bind_beneath_workspace(cfg->binds[i].dst); /* warm_supported() checked */
                capbuf_append(&msg, rel, strlen(rel) + 1);
        }
        int r = msg.truncated ? (errno = E2BIG, -1) : unix_send_fds(w->ctl, msg.data, msg.len, trees, ntrees);
        int e = errno;
        capbuf_release(&msg);
        for (int i = 0; i < ntrees; i++)
                close(trees[i]);
        if (r < 0) {
                warm_free(w);
                return corral_fail(ret_err, e, "cannot hand the warm session its workspace");
        }
        *ret = w;
        return 0;
}

int warm_frames_fd(struct warm *w)
{
        return w->frames;
}

void warm_release(struct warm *w)
{
        warm_free(w);
}

/* ---- supervising a claimed session ---- */

static void pump(int fd, const corral_jail_io *io, int stream, bool *eof)
{
        char buf[65536];
        for (int rounds = 0; rounds < 16; rounds++) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        *eof = true;
                        return;
                }
                if (io && io->on_output)
                        io->on_output(io->userdata, stream, buf, (size_t)n);
        }
}

/* What a session's init reported on its control socket. */
struct init_report {
        bool violation, exited, setup_failed;
        int nr;                  /* the forbidden system call */
        uint32_t arch;
        int status;              /* the interpreter's wait status */
        int step, err;           /* the set-up step that failed, its errno */
        struct jail_denied denied; /* calls answered with EPERM */
};

static void init_report_take(struct init_report *r, const struct init_msg *m)
{
        if (m->type == MSG_SECCOMP_VIOLATION && !r->violation) {
                r->violation = true;
                r->nr = m->a;
                r->arch = (uint32_t)m->b;
        } else if (m->type == MSG_SECCOMP_EPERM) {
                jail_denied_add(&r->denied, m->a, (uint32_t)m->b);
        } else if (m->type == MSG_EXITED) {
                r->exited = true;
                r->status = m->a;
        } else if (m->type == MSG_SETUP_FAILED) {
                r->setup_failed = true;
                r->step = m->a;
                r->err = m->b;
        }
}

int warm_run(struct warm *w, const corral_jail_config *cfg, const corral_jail_io *io, corral_jail_result *ret,
             corral_error **ret_err)
{
        memset(ret, 0, sizeof(*ret));
        double t0 = monotonic_ms();
        /* No connection before this: the caller sends no step before the
         * driver's "ready", which only this loop passes on. */
        if (io && io->on_net_conn)
                net_proxy_observe(w->proxy, io->on_net_conn, io->userdata);
        if (w->backend == CORRAL_BACKEND_RLIMIT && io && io->on_notice)
                io->on_notice(io->userdata, JAIL_NOTICE_RLIMITS);
        cleanup_close int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (tfd < 0) {
                warm_free(w);
                return corral_fail(ret_err, errno, "cannot arm the session's timer");
        }
        double t = cfg->timeout_s;
        struct itimerspec its = { .it_value = { .tv_sec = (time_t)t, .tv_nsec = (long)((t - floor(t)) * 1e9) } };
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
                its.it_value.tv_nsec = 1;
        timerfd_settime(tfd, 0, &its, NULL);

        bool frames_eof = false, diag_eof = false, ctl_eof = false, gone = false;
        bool timed_out = false, cancelled = false;
        struct init_report rep = { 0 };
        int cancel_fd = io && io->cancel_fd > 0 ? io->cancel_fd : -1;
        while (!gone) {
                struct pollfd p[6] = {
                        { .fd = frames_eof ? -1 : w->frames, .events = POLLIN },
                        { .fd = diag_eof ? -1 : w->diag, .events = POLLIN },
                        { .fd = ctl_eof ? -1 : w->ctl, .events = POLLIN },
                        { .fd = w->pidfd, .events = POLLIN },
                        { .fd = tfd, .events = POLLIN },
                        { .fd = cancel_fd, .events = POLLIN },
                };
                if (poll(p, 6, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[0].revents)
                        pump(w->frames, io, 1, &frames_eof);
                if (p[1].revents)
                        pump(w->diag, io, 2, &diag_eof);
                if (p[2].revents) {
                        struct init_msg m;
                        ssize_t n = recv(w->ctl, &m, sizeof(m), MSG_DONTWAIT);
                        if (n == (ssize_t)sizeof(m)) {
                                init_report_take(&rep, &m);
                        } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                                ctl_eof = true;
                        }
                }
                if (p[4].revents && !timed_out) {
                        timed_out = true;
                        syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
                }
                if (cancel_fd >= 0 && p[5].revents && !cancelled) {
                        cancelled = true;
                        syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
                }
                if (p[3].revents)
                        gone = true;
        }
        /* What was written before the end. */
        if (!frames_eof)
                pump(w->frames, io, 1, &frames_eof);
        if (!diag_eof)
                pump(w->diag, io, 2, &diag_eof);
        for (;;) {
                struct init_msg m;
                ssize_t n = recv(w->ctl, &m, sizeof(m), MSG_DONTWAIT);
                if (n != (ssize_t)sizeof(m))
                        break;
                init_report_take(&rep, &m);
        }
        struct cgroup_stats st = { 0 };
        if (w->have_cg) {
                cgroup_kill(&w->cg);
                cgroup_read_stats(&w->cg, &st);
        }
        ret->backend = w->backend;
        ret->wall_ms = monotonic_ms() - t0;
        ret->cpu_ms = st.have_cpu ? (double)st.cpu_usec / 1000.0 : 0;
        ret->memory_peak_bytes = st.memory_peak;
        int rc = 0;
        if (rep.setup_failed) {
                corral_fail(ret_err, rep.err, "cannot set up the warm session: could not %s", zstep_name(rep.step));
                rc = -1;
        } else {
                /* The same facts a cold jail gathers, classified alike;
                 * no tick watches the tree's CPU time here, no rusage
                 * reaches us (init is the zygote's child) and stderr is
                 * streamed, not kept. */
                struct jail_outcome o = {
                        .end = JAIL_END_NO_REPORT,
                        .violation = rep.violation,
                        .violation_nr = rep.nr,
                        .violation_arch = rep.arch,
                        .cancelled = cancelled,
                        .timed_out = timed_out,
                        .oom_kills = st.oom_kills,
                        .pids_max_hits = st.pids_max_hits,
                        .backend = w->backend,
                        .cpu_s = -1,
                };
                if (rep.exited)
                        jail_outcome_set_wait_status(&o, rep.status);
                jail_outcome_set_limits(&o, cfg);
                jail_outcome_classify(&o, ret);
        }
        jail_denied_to_result(&rep.denied, ret);
        /* The session is gone: its connections' log goes to the result. */
        net_proxy_stop(w->proxy, rc == 0 ? ret : NULL);
        w->proxy = NULL;
        warm_free(w);
        return rc;
}
