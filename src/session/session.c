/* session.c: a persistent Python interpreter in a jail (session.h).
 *
 * The interpreter (a "kernel") is one corral_jail_run() on a thread of its
 * own: the jail runs `python3 -u driver.py`, its stdin is a pipe we write
 * requests into and its stdout carries the driver's frames back (the
 * driver moves both off fds 0 and 1 before user code runs, see driver.py),
 * so the jail library is used exactly as `corral exec` uses it.  The jail's
 * output callback, on the kernel thread, appends those bytes to a buffer and
 * wakes the caller through an eventfd; session_exec() parses frames from it
 * and enforces the step's limits.  Frames are untrusted: user code runs in
 * the driver's process and can write anything to them.
 *
 * kernel_start() is the one place an interpreter comes from.  A warm
 * session's kernel is instead forked from the zygote (warm.h): its thread
 * runs warm_run() in place of corral_jail_run(), with the same callbacks and
 * the same result, and its requests go to the session's frame socket; the
 * rest of this file does not know the difference.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "session.h"
#include "warm.h"

#define DRIVER_IN_JAIL "/run/corral-session/driver.py"
#define FRAME_MAX (64u << 20)      /* one frame, either way */
#define PENDING_MAX (64u << 20)    /* frames not yet read: a flood ends the kernel */
#define DIAG_MAX (16u << 10)       /* the interpreter's last words (faulthandler) */
#define VALUE_MAX (1u << 20)       /* a value's text, an error's traceback */
#define RICH_MAX (1u << 20)        /* a value's html, markdown, json: whole or not at all */
#define FIGURE_PNG_MAX (8u << 20)  /* one figure's PNG bytes (figure_png) */

/* ---- the driver ---- */

static char *driver_path;
static int driver_errno;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static bool regular_file(const char *path)
{
        struct stat st;
        return path && path[0] && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void find_driver(void)
{
        const char *candidates[] = {
                getenv("CORRAL_SESSION_DRIVER"),
#ifdef CORRAL_LIBEXEC_DRIVER
                CORRAL_LIBEXEC_DRIVER,
#endif
#ifdef CORRAL_BUILD_DRIVER
                CORRAL_BUILD_DRIVER,
#endif
        };
        for (size_t i = 0; i < ARRAY_SIZE(candidates); i++) {
                if (regular_file(candidates[i])) {
                        driver_path = realpath(candidates[i], NULL);
                        if (driver_path)
                                return;
                }
        }
        driver_errno = ENOENT;
}

const char *session_driver_path(corral_error **ret_err)
{
        pthread_once(&driver_once, find_driver);
        if (driver_path == NULL)
                corral_fail(ret_err, driver_errno,
                            "cannot find corral's session driver (install it or set CORRAL_SESSION_DRIVER)");
        return driver_path;
}

/* ---- a kernel: one jail running the driver ---- */

struct kernel {
        corral_jail_config cfg;
        struct warm *warm;       /* a warm kernel until its thread takes it */
        pthread_t thread;
        bool thread_started;
        int req_r, req_w;        /* the jail's stdin: read by the jail's pump, written by us */
        bool req_socket;         /* warm: req_w is the session's frame socket */
        int cancel_r, cancel_w;  /* a byte here kills the jail */
        int wake;                /* eventfd: new bytes, or the jail ended */

        pthread_mutex_t lock;    /* guards everything below */
        char *in;                /* the jail's stdout not parsed yet */
        size_t in_len, in_alloc;
        bool overflow;           /* frames arrived faster than they were read */
        bool ended;              /* corral_jail_run() returned */
        int run_rc;
        corral_error *run_err;
        corral_jail_result res;
        struct capbuf diag;      /* the jail's stderr */
        /* session_options.on_notice, called on the kernel's thread */
        void (*on_notice)(void *userdata, const char *message);
        void *notice_userdata;
        /* --net allow: connections through the proxy that ended and no
         * step has reported yet (JSON objects), at most CORRAL_NET_LOG_MAX,
         * the rest counted */
        json_t *net;
        uint64_t net_dropped;
};

static void kernel_wake(struct kernel *k)
{
        uint64_t one = 1;
        ssize_t r = write(k->wake, &one, sizeof(one));
        (void)r;
}

static void kernel_kill(struct kernel *k)
{
        /* A pipe whose read end we hold too: no SIGPIPE. */
        ssize_t r = write(k->cancel_w, "k", 1);
        (void)r;
}

static void kernel_on_output(void *userdata, int stream, const char *data, size_t len)
{
        struct kernel *k = userdata;
        bool kill = false;
        pthread_mutex_lock(&k->lock);
        if (stream == 2) {
                capbuf_append(&k->diag, data, len);
        } else if (!k->overflow) {
                if (k->in_len + len > PENDING_MAX) {
                        k->overflow = kill = true;
                } else {
                        if (k->in_len + len + 1 > k->in_alloc) {
                                size_t a = k->in_alloc ? k->in_alloc : 65536;
                                while (a < k->in_len + len + 1)
                                        a *= 2;
                                char *b = realloc(k->in, a);
                                if (b == NULL) {
                                        k->overflow = kill = true;
                                        goto out;
                                }
                                k->in = b;
                                k->in_alloc = a;
                        }
                        memcpy(k->in + k->in_len, data, len);
                        k->in_len += len;
                }
        }
out:
        pthread_mutex_unlock(&k->lock);
        if (kill)
                kernel_kill(k);
        kernel_wake(k);
}

/* The jail's stdout cap (output_limit, at most 1 GiB) holds for the jail's
 * whole life; past it no frame can come: end this kernel. */
static void kernel_on_truncate(void *userdata, int stream)
{
        struct kernel *k = userdata;
        if (stream == 1) {
                pthread_mutex_lock(&k->lock);
                k->overflow = true;
                pthread_mutex_unlock(&k->lock);
                kernel_kill(k);
        }
}

static void kernel_on_notice(void *userdata, const char *message)
{
        struct kernel *k = userdata;
        if (k->on_notice)
                k->on_notice(k->notice_userdata, message);
}

/* A connection through the proxy ended (a proxy thread): keep it for the
 * step that reports it. */
static void kernel_on_net_conn(void *userdata, const struct corral_net_conn *c)
{
        struct kernel *k = userdata;
        cleanup_free char *text = corral_net_conn_to_json(c);
        json_t *o = text ? json_loads(text, 0, NULL) : NULL;
        pthread_mutex_lock(&k->lock);
        if (k->net == NULL)
                k->net = json_array();
        if (o && k->net && json_array_size(k->net) < CORRAL_NET_LOG_MAX)
                json_array_append(k->net, o);
        else
                k->net_dropped++;
        pthread_mutex_unlock(&k->lock);
        json_decref(o);
}

static void *kernel_thread(void *arg)
{
        struct kernel *k = arg;
        corral_jail_io io = { .stdin_fd = k->req_r, .on_output = kernel_on_output,
                              .on_truncate = kernel_on_truncate, .on_notice = kernel_on_notice, .userdata = k,
                              .capture = false, .cancel_fd = k->cancel_r, .on_net_conn = kernel_on_net_conn };
        corral_jail_result res;
        corral_error *err = NULL;
        int rc = k->warm ? warm_run(TAKE_PTR(k->warm), &k->cfg, &io, &res, &err)
                         : corral_jail_run(&k->cfg, &io, &res, &err);
        pthread_mutex_lock(&k->lock);
        k->run_rc = rc;
        k->run_err = err;
        if (rc == 0)
                k->res = res;
        k->ended = true;
        pthread_mutex_unlock(&k->lock);
        kernel_wake(k);
        return NULL;
}

static void kernel_free(struct kernel *k)
{
        if (k == NULL)
                return;
        if (k->thread_started) {
                kernel_kill(k);
                pthread_join(k->thread, NULL);
        }
        int fds[] = { k->req_r, k->req_w, k->cancel_r, k->cancel_w, k->wake };
        for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        warm_release(k->warm);
        pthread_mutex_destroy(&k->lock);
        free(k->in);
        capbuf_release(&k->diag);
        corral_error_free(k->run_err);
        json_decref(k->net);
        if (k->ended && k->run_rc == 0)
                corral_jail_result_release(&k->res);
        corral_jail_config_release(&k->cfg);
        free(k);
}

int session_frame_take(char *buf, size_t *len, json_t **ret)
{
        *ret = NULL;
        if (*len < 4)
                return 0;
        const unsigned char *p = (const unsigned char *)buf;
        uint32_t n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (n > FRAME_MAX)
                return -1;
        if (*len < 4 + (size_t)n)
                return 0;
        json_t *f = json_loadb(buf + 4, n, 0, NULL);
        memmove(buf, buf + 4 + n, *len - 4 - n);
        *len -= 4 + n;
        if (!json_is_object(f)) {
                json_decref(f);
                return -1;
        }
        *ret = f;
        return 1;
}

/* One frame off the kernel's buffer (session_frame_take under the lock). */
static int kernel_take_frame(struct kernel *k, json_t **ret)
{
        pthread_mutex_lock(&k->lock);
        int rc = session_frame_take(k->in, &k->in_len, ret);
        pthread_mutex_unlock(&k->lock);
        return rc;
}

static bool kernel_ended(struct kernel *k)
{
        pthread_mutex_lock(&k->lock);
        bool e = k->ended;
        pthread_mutex_unlock(&k->lock);
        return e;
}

/* Wait until there is news (a frame or the end) or deadline (monotonic ms,
 * <= 0: none), also watching cancel_fd and watch_fd (each -1: none).
 * Returns 1 when cancel_fd is readable, 2 when watch_fd is (readable or hung
 * up), else 0. */
static int kernel_wait(struct kernel *k, double deadline, int cancel_fd, int watch_fd)
{
        struct pollfd p[3] = { { .fd = k->wake, .events = POLLIN },
                               { .fd = cancel_fd, .events = POLLIN },
                               { .fd = watch_fd, .events = POLLIN } };
        int timeout = -1;
        if (deadline > 0) {
                double left = deadline - monotonic_ms();
                timeout = left <= 0 ? 0 : (int)left + 1;
        }
        int n = poll(p, 3, timeout); /* a negative fd is ignored */
        if (n > 0 && (p[0].revents & POLLIN)) {
                uint64_t v;
                ssize_t r = read(k->wake, &v, sizeof(v));
                (void)r;
        }
        if (n > 0 && cancel_fd >= 0 && (p[1].revents & POLLIN))
                return 1;
        if (n > 0 && watch_fd >= 0 && (p[2].revents & (POLLIN | POLLHUP | POLLERR)))
                return 2;
        return 0;
}

/* Frame a JSON object onto the jail's stdin, giving up at deadline or when
 * the jail ends (its stdin is not read any more). */
static int kernel_send(struct kernel *k, json_t *obj, double deadline)
{
        cleanup_free char *body = json_dumps(obj, JSON_COMPACT);
        if (body == NULL)
                return -1;
        size_t n = strlen(body);
        if (n > FRAME_MAX)
                return -1;
        unsigned char head[4] = { (unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                                  (unsigned char)n };
        struct iovec_part {
                const char *p;
                size_t len;
        } parts[2] = { { (const char *)head, 4 }, { body, n } };
        for (int i = 0; i < 2; i++) {
                while (parts[i].len > 0) {
                        /* Warm: the session's frame socket, whose peer may be
                         * gone.  Cold: a pipe whose read end (req_r) we hold
                         * until kernel_free(), so it cannot raise SIGPIPE. */
                        ssize_t w = k->req_socket ? send(k->req_w, parts[i].p, parts[i].len, MSG_NOSIGNAL)
                                                  : write(k->req_w, parts[i].p, parts[i].len);
                        if (w > 0) {
                                parts[i].p += w;
                                parts[i].len -= (size_t)w;
                                continue;
                        }
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0 && errno != EAGAIN)
                                return -1;
                        if (kernel_ended(k) || (deadline > 0 && monotonic_ms() >= deadline))
                                return -1;
                        struct pollfd pf = { .fd = k->req_w, .events = POLLOUT };
                        poll(&pf, 1, 50);
                }
        }
        return 0;
}

static int describe_loss(struct kernel *k, struct session_result *r);

/* What a session's environment has unless the caller set the name: pip
 * installs into the session (docs/network.md, "pip in a session").  Its own
 * user base, on the session's /tmp: the driver makes it and puts it on
 * sys.path before the first step (a running interpreter does not pick up a
 * user site made after it started, and a warm one started in the zygote);
 * Debian's pip refuses a user install without PIP_BREAK_SYSTEM_PACKAGES
 * (PEP 668: the system's packages stay untouched, the install lands in the
 * user base); no version check, which would ask pypi.org at every run. */
static int session_env_defaults(corral_jail_config *cfg, corral_error **ret_err)
{
        static const char *const defaults[] = { "PYTHONUSERBASE=/tmp/.local", "PIP_BREAK_SYSTEM_PACKAGES=1",
                                                "PIP_DISABLE_PIP_VERSION_CHECK=1" };
        for (size_t d = 0; d < ARRAY_SIZE(defaults); d++) {
                size_t n = (size_t)(strchr(defaults[d], '=') - defaults[d]) + 1;
                bool set = false;
                for (size_t i = 0; cfg->env && cfg->env[i] && !set; i++)
                        set = strncmp(cfg->env[i], defaults[d], n) == 0;
                if (!set && corral_jail_config_add_env(cfg, defaults[d], ret_err) < 0)
                        return -1;
        }
        return 0;
}

/* Start an interpreter: the jail with the driver, then its "ready" frame.
 * Part 2 replaces the inside of this function with a fork from a zygote. */
static int kernel_start(const corral_jail_config *base, double lifetime_left_s, const struct session_options *opt,
                        struct kernel **ret, corral_error **ret_err)
{
        double start_timeout_s = opt->start_timeout_s;
        bool warm = opt->warm;
        const char *driver = session_driver_path(ret_err);
        if (driver == NULL)
                return -1;
        struct kernel *k = calloc(1, sizeof(*k));
        if (k == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the session");
        k->req_r = k->req_w = k->cancel_r = k->cancel_w = k->wake = -1;
        k->on_notice = opt->on_notice;
        k->notice_userdata = opt->notice_userdata;
        pthread_mutex_init(&k->lock, NULL);
        k->diag.cap = DIAG_MAX;
        if (corral_jail_config_copy(&k->cfg, base, ret_err) < 0) {
                memset(&k->cfg, 0, sizeof(k->cfg));
                kernel_free(k);
                return -1;
        }
        if (session_env_defaults(&k->cfg, ret_err) < 0) {
                kernel_free(k);
                return -1;
        }
        char *argv[] = { "python3", "-u", DRIVER_IN_JAIL, NULL };
        free(k->cfg.script);
        free(k->cfg.script_name);
        k->cfg.script = k->cfg.script_name = NULL;
        k->cfg.script_len = 0;
        k->cfg.stdin_mode = CORRAL_STDIN_PIPE;
        /* The frame stream's cap for the jail's whole life; steps have
         * their own caps. */
        k->cfg.output_limit = 1ull << 30;
        /* The lifetime is enforced by the session; this is a backstop. */
        k->cfg.timeout_s = lifetime_left_s + 30;
        if (warm) {
                /* Forked from the zygote: requests go straight to the
                 * session's frame socket. */
                if (warm_claim(&k->cfg, start_timeout_s, &k->warm, ret_err) < 0) {
                        kernel_free(k);
                        return -1;
                }
                k->req_w = fcntl(warm_frames_fd(k->warm), F_DUPFD_CLOEXEC, 0);
                k->req_socket = true;
                if (k->req_w < 0) {
                        kernel_free(k);
                        return corral_fail(ret_err, errno, "cannot start the session");
                }
        } else if (corral_jail_config_set_argv(&k->cfg, argv, ret_err) < 0 ||
                   corral_jail_config_add_bind_at(&k->cfg, driver, DRIVER_IN_JAIL, false, ret_err) < 0) {
                kernel_free(k);
                return -1;
        }
        int req[2], cancel[2];
        if (!warm && pipe2(req, O_CLOEXEC) < 0) {
                kernel_free(k);
                return corral_fail(ret_err, errno, "cannot create the session's pipes");
        }
        if (!warm) {
                k->req_r = req[0];
                k->req_w = req[1];
        }
        if (pipe2(cancel, O_CLOEXEC) < 0) {
                kernel_free(k);
                return corral_fail(ret_err, errno, "cannot create the session's pipes");
        }
        k->cancel_r = cancel[0];
        k->cancel_w = cancel[1];
        k->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (k->wake < 0) {
                kernel_free(k);
                return corral_fail(ret_err, errno, "cannot create the session's eventfd");
        }
        fcntl(k->req_w, F_SETFL, O_NONBLOCK);
        int e = pthread_create(&k->thread, NULL, kernel_thread, k);
        if (e != 0) {
                kernel_free(k);
                return corral_fail(ret_err, e, "cannot start the session's thread");
        }
        k->thread_started = true;

        double deadline = monotonic_ms() + start_timeout_s * 1000;
        for (;;) {
                json_t *f = NULL;
                int r = kernel_take_frame(k, &f);
                if (r > 0) {
                        const char *t = json_string_value(json_object_get(f, "t"));
                        bool ready = t && strcmp(t, "ready") == 0;
                        json_decref(f);
                        if (ready) {
                                *ret = k;
                                return 0;
                        }
                        continue;
                }
                if (r < 0) {
                        kernel_free(k);
                        return corral_fail(ret_err, 0, "the session's interpreter sent a malformed frame");
                }
                if (kernel_ended(k)) {
                        if (k->run_rc < 0) {
                                corral_error *inner = TAKE_PTR(k->run_err);
                                kernel_free(k);
                                if (ret_err)
                                        *ret_err = inner;
                                else
                                        corral_error_free(inner);
                                return -1;
                        }
                        struct session_result why = { 0 };
                        describe_loss(k, &why);
                        corral_fail(ret_err, 0, "the session's interpreter ended before it was ready: %s",
                                    why.reason ? why.reason : "no reason given");
                        session_result_release(&why);
                        kernel_free(k);
                        return -1;
                }
                if (monotonic_ms() >= deadline) {
                        kernel_free(k);
                        return corral_fail(ret_err, 0, "the session's interpreter was not ready within %g s",
                                           start_timeout_s);
                }
                kernel_wait(k, deadline, -1, -1);
        }
}

/* ---- sessions ---- */

struct session {
        corral_jail_config cfg;
        struct session_options opt;
        struct kernel *k;
        unsigned steps;
        double t_start, t_last;
        double kernel_end;       /* when the interpreter's jail reaches its wall limit (less its margin) */
        bool lost_before;        /* the last kernel died: the next step says restarted */
        json_t *net;             /* --net allow: connections of ended kernels not reported yet */
        uint64_t net_dropped;
        time_t created;          /* wall clock, for session_archive() */
        json_t *from;            /* resumed from an archive: session_origin(), or NULL */
};

void session_prewarm(void)
{
        warm_prestart();
}

void session_prewarm_end(void)
{
        warm_prestart_end();
}

int session_warm_supported(const corral_jail_config *cfg, corral_error **ret_err)
{
        return warm_supported(cfg, ret_err);
}

void session_options_init(struct session_options *o)
{
        /* Every field, also those added later, starts at zero. */
        memset(o, 0, sizeof(*o));
        o->idle_timeout_s = 600;
        o->lifetime_s = 3600;
        o->grace_s = 2;
        o->start_timeout_s = 30;
}

const char *session_status_to_string(enum session_status s)
{
        switch (s) {
        case SESSION_STEP_OK:
                return "ok";
        case SESSION_STEP_ERROR:
                return "error";
        case SESSION_STEP_TIMEOUT:
                return "timeout";
        case SESSION_STEP_LOST:
                return "lost";
        case SESSION_STEP_CANCELLED:
                return "cancelled";
        case SESSION_STEP_INTERRUPTED:
                return "interrupted";
        default:
                return "unknown";
        }
}

static double lifetime_left_s(const struct session *s)
{
        double left = s->opt.lifetime_s - (monotonic_ms() - s->t_start) / 1000;
        return left > 1 ? left : 1;
}

int session_start(const corral_jail_config *cfg, const struct session_options *opt, struct session **ret,
                  corral_error **ret_err)
{
        struct session *s = calloc(1, sizeof(*s));
        if (s == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the session");
        if (opt)
                s->opt = *opt;
        else
                session_options_init(&s->opt);
        if (!(s->opt.lifetime_s > 0) || s->opt.idle_timeout_s < 0 || s->opt.grace_s < 0 ||
            !(s->opt.start_timeout_s > 0)) {
                free(s);
                return corral_usage(ret_err, "session limits must be positive (lifetime, idle timeout, grace)");
        }
        if (corral_jail_config_copy(&s->cfg, cfg, ret_err) < 0) {
                free(s);
                return -1;
        }
        if (s->opt.warm) {
                if (warm_supported(&s->cfg, ret_err) < 0) {
                        corral_jail_config_release(&s->cfg);
                        free(s);
                        return -1;
                }
                /* The zygote lives while a warm session does. */
                warm_ref();
        }
        s->t_start = s->t_last = monotonic_ms();
        s->created = time(NULL);
        /* Resume (pause.c): the files first, before any code runs. */
        bool restored = false, existed = true;
        if (s->opt.from) {
                const char *from = s->opt.from;
                s->opt.from = NULL; /* borrowed */
                if (s->cfg.workspace == NULL) {
                        session_free(s);
                        return corral_usage(ret_err, "resuming a session needs a workspace directory to extract "
                                                     "the archive into");
                }
                struct stat st;
                existed = lstat(s->cfg.workspace, &st) == 0;
                if (!s->opt.from_extracted && session_restore(from, s->cfg.workspace, NULL, ret_err) < 0) {
                        session_free(s);
                        return -1;
                }
                restored = !s->opt.from_extracted;
                s->from = session_origin(from, s->cfg.workspace);
        }
        s->kernel_end = monotonic_ms() + lifetime_left_s(s) * 1000;
        if (kernel_start(&s->cfg, lifetime_left_s(s), &s->opt, &s->k, ret_err) < 0) {
                if (restored)
                        session_restore_undo(s->cfg.workspace, existed);
                session_free(s);
                return -1;
        }
        /* Idle and lifetime count from when it is ready: a zygote may have
         * had to start first. */
        double ready = monotonic_ms();
        s->kernel_end += ready - s->t_start;
        s->t_start = s->t_last = ready;
        *ret = s;
        return 0;
}

double session_set_expiry(struct session *s, double seconds)
{
        double now = monotonic_ms();
        double end = now + seconds * 1000;
        if (end > s->kernel_end)
                end = s->kernel_end; /* past it the jail's own limit would end it */
        s->opt.lifetime_s = (end - s->t_start) / 1000;
        s->opt.idle_timeout_s = 0;
        return (end - now) / 1000;
}

double session_deadline_ms(const struct session *s, const char **ret_why)
{
        double life = s->t_start + s->opt.lifetime_s * 1000;
        double idle = s->opt.idle_timeout_s > 0 ? s->t_last + s->opt.idle_timeout_s * 1000 : life;
        if (ret_why)
                *ret_why = idle < life ? "idle timeout" : "lifetime limit";
        return idle < life ? idle : life;
}

unsigned session_steps(const struct session *s)
{
        return s->steps;
}

bool session_alive(const struct session *s)
{
        return s->k != NULL && !kernel_ended(s->k);
}

const char *session_workspace_dir(const struct session *s)
{
        return s->cfg.workspace;
}

const corral_jail_config *session_config(const struct session *s)
{
        return &s->cfg;
}

time_t session_created(const struct session *s)
{
        return s->created;
}

const json_t *session_from(const struct session *s)
{
        return s->from;
}

void session_free(struct session *s)
{
        if (s == NULL)
                return;
        kernel_free(s->k);
        json_decref(s->net);
        if (s->opt.warm)
                warm_unref();
        json_decref(s->from);
        corral_jail_config_release(&s->cfg);
        free(s);
}

void session_result_release(struct session_result *r)
{
        free(r->reason);
        free(r->syscall_name);
        free(r->jail_reason);
        free(r->stdout_buf);
        free(r->stderr_buf);
        json_decref(r->value);
        json_decref(r->error);
        json_decref(r->figures);
        json_decref(r->network);
        memset(r, 0, sizeof(*r));
}

static void set_reason(struct session_result *r, const char *fmt, ...) CORRAL_PRINTF(2, 3);
static void set_reason(struct session_result *r, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        str_vsetf(&r->reason, fmt, ap);
        va_end(ap);
}

/* Why the kernel is gone, from its jail's result; the exit status a step
 * that lost it reports. */
static int describe_loss(struct kernel *k, struct session_result *r)
{
        const corral_jail_result *j = &k->res;
        const char *diag = k->diag.data ? k->diag.data : "";
        size_t dl = strlen(diag);
        r->limit = j->limit;
        r->signal = j->signal;
        while (dl > 0 && (diag[dl - 1] == '\n' || diag[dl - 1] == ' '))
                dl--;
        /* faulthandler's report, when there is one, is the useful part. */
        const char *tail = dl > 600 ? diag + dl - 600 : diag;
        int tail_len = (int)(dl - (size_t)(tail - diag));
        if (k->run_rc < 0) {
                r->limit = CORRAL_LIMIT_NONE;
                set_reason(r, "the interpreter's jail failed: %s", k->run_err ? k->run_err->msg : "unknown error");
                return 125;
        }
        bool overflow;
        pthread_mutex_lock(&k->lock);
        overflow = k->overflow;
        pthread_mutex_unlock(&k->lock);
        if (overflow && j->limit == CORRAL_LIMIT_CANCELLED) {
                r->limit = CORRAL_LIMIT_NONE;
                set_reason(r, "the interpreter flooded its control channel and was stopped");
                return 125;
        }
        /* The jail's own words, as a cold run gives them; a stop the
         * supervisor made (cancel) is told by the step's reason instead. */
        if (j->reason && j->limit != CORRAL_LIMIT_CANCELLED)
                r->jail_reason = strdup(j->reason);
        if (j->limit == CORRAL_LIMIT_SECCOMP) {
                if (j->seccomp_syscall_name)
                        r->syscall_name = strdup(j->seccomp_syscall_name);
                set_reason(r, "the interpreter made a system call the sandbox forbids (%s) and was killed",
                           j->seccomp_syscall_name ? j->seccomp_syscall_name : "unknown");
                return j->exit_code > 0 ? j->exit_code : 159;
        }
        switch (j->status) {
        case CORRAL_STATUS_OOM:
                set_reason(r, "the interpreter was killed by the session's memory limit");
                return 137;
        case CORRAL_STATUS_ERROR:
                set_reason(r, "the interpreter exited with status %d%s%.*s", j->exit_code, tail_len ? ": " : "",
                           tail_len, tail);
                return j->exit_code > 0 ? j->exit_code : 1;
        case CORRAL_STATUS_OK:
                set_reason(r, "the interpreter exited (status 0)");
                return 1;
        case CORRAL_STATUS_TIMEOUT:
                set_reason(r, "the session's lifetime ran out");
                return 124;
        case CORRAL_STATUS_KILLED:
        default:
                if (j->signal > 0)
                        set_reason(r, "the interpreter was killed by signal %d (%s)%s%.*s", j->signal,
                                   strsignal(j->signal), tail_len ? ": " : "", tail_len, tail);
                else
                        set_reason(r, "the interpreter was stopped (%s)", j->reason ? j->reason : "killed");
                return j->exit_code > 0 ? j->exit_code : 137;
        }
}

struct step {
        struct session_result *r;
        const struct session_callbacks *cb;
        struct capbuf out, err;
        unsigned id;
        bool done;
};

static void step_output(struct step *st, json_t *f)
{
        const char *stream = json_string_value(json_object_get(f, "stream"));
        json_t *d = json_object_get(f, "data");
        if (stream == NULL || !json_is_string(d))
                return;
        bool err = strcmp(stream, "stderr") == 0;
        struct capbuf *b = err ? &st->err : &st->out;
        const char *data = json_string_value(d);
        size_t len = json_string_length(d);
        size_t kept = capbuf_append(b, data, len);
        if (kept != (size_t)-1 && kept > 0 && st->cb && st->cb->on_output)
                st->cb->on_output(st->cb->userdata, err ? 2 : 1, data, kept);
}

static double num(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);
        double d = json_is_number(v) ? json_number_value(v) : 0;
        return d > 0 && d < 1e15 ? d : 0; /* ms or bytes: anything else is a lie */
}

/* A string of the frame, at most max bytes (a cut sequence becomes U+FFFD). */
static json_t *capped_string(json_t *v, size_t max)
{
        if (!json_is_string(v))
                return NULL;
        size_t n = json_string_length(v);
        if (n <= max)
                return json_stringn(json_string_value(v), n);
        size_t len = 0;
        cleanup_free char *cut = utf8_sanitize(json_string_value(v), max, &len);
        return cut ? json_stringn(cut, len) : NULL;
}

/* The base64 text of one figure's rendering for the model, at most. */
#define PREVIEW_MAX (4u << 20)

/* Whether v is standard base64 (padded) of a PNG file of at most
 * FIGURE_PNG_MAX bytes: every PNG's base64 starts with its signature's. */
static bool png_base64(json_t *v)
{
        static const char sig[] = "iVBORw0KGgo"; /* \x89PNG\r\n\x1a\n */
        if (!json_is_string(v))
                return false;
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (n % 4 != 0 || n > (FIGURE_PNG_MAX + 2) / 3 * 4 || n < sizeof(sig) - 1 ||
            memcmp(s, sig, sizeof(sig) - 1) != 0)
                return false;
        size_t pad = n >= 1 && s[n - 1] == '=' ? (n >= 2 && s[n - 2] == '=' ? 2 : 1) : 0;
        for (size_t i = 0; i < n - pad; i++) {
                char c = s[i];
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
                      c == '/'))
                        return false;
        }
        return true;
}

/* A figure as the driver describes it, keeping only the documented keys. */
static json_t *figure_from_frame(json_t *fig)
{
        json_t *out = json_object();
        const char *ints[] = { "width", "height", "bytes" };
        for (size_t i = 0; out && i < ARRAY_SIZE(ints); i++) {
                json_t *v = json_object_get(fig, ints[i]);
                if (json_is_integer(v) && json_integer_value(v) >= 0)
                        json_object_set(out, ints[i], v);
        }
        const char *strs[] = { "path", "error", "preview_error", "png_error", "repr" };
        for (size_t i = 0; out && i < ARRAY_SIZE(strs); i++) {
                json_t *v = capped_string(json_object_get(fig, strs[i]), 4096);
                if (v)
                        json_object_set_new(out, strs[i], v);
        }
        if (out && json_is_true(json_object_get(fig, "saved_by_code")))
                json_object_set_new(out, "saved_by_code", json_true());
        /* The file's bytes (asked for with figure_png), whole or not at all. */
        json_t *png = json_object_get(fig, "png");
        if (out && png_base64(png)) {
                json_object_set(out, "png", png);
                json_object_del(out, "png_error");
        } else if (out && png != NULL) {
                json_object_set_new(out, "png_error", json_string("not the base64 of a PNG file of at most 8 MiB"));
        }
        /* A rendering for the model (asked for with preview_count): kept
         * whole or not at all, since a cut one would not decode; the
         * caller checks what it decodes to. */
        json_t *preview = json_object_get(fig, "preview");
        if (out && json_is_string(preview) && json_string_length(preview) <= PREVIEW_MAX) {
                json_object_set(out, "preview", preview);
                const char *pints[] = { "preview_width", "preview_height", "preview_bytes" };
                for (size_t i = 0; i < ARRAY_SIZE(pints); i++) {
                        json_t *v = json_object_get(fig, pints[i]);
                        if (json_is_integer(v) && json_integer_value(v) >= 0)
                                json_object_set(out, pints[i], v);
                }
        } else if (out && preview != NULL) {
                json_object_set_new(out, "preview_error", json_string("the rendering is too large"));
        }
        return out;
}

/* What a notebook would show of a value besides its text (the object's
 * _repr_html_, _repr_markdown_, _repr_json_), from the frame's value_html,
 * value_markdown and value_json into value's html, markdown and json: each
 * whole when well-typed and at most RICH_MAX bytes, else left out. */
static void value_rich(json_t *value, json_t *f)
{
        const char *strs[][2] = { { "value_html", "html" }, { "value_markdown", "markdown" } };
        for (size_t i = 0; value && i < ARRAY_SIZE(strs); i++) {
                json_t *v = json_object_get(f, strs[i][0]);
                if (json_is_string(v) && json_string_length(v) <= RICH_MAX)
                        json_object_set(value, strs[i][1], v);
        }
        json_t *j = json_object_get(f, "value_json");
        size_t size = json_is_object(j) || json_is_array(j) ? json_dumpb(j, NULL, 0, JSON_COMPACT) : 0;
        if (value && size > 0 && size <= RICH_MAX)
                json_object_set(value, "json", j);
}

void session_result_from_frame(struct session_result *r, json_t *f)
{
        json_decref(r->value);
        json_decref(r->error);
        r->value = r->error = NULL;
        const char *status = json_string_value(json_object_get(f, "status"));
        if (status && strcmp(status, "ok") == 0) {
                r->status = SESSION_STEP_OK;
                r->exit_code = 0;
        } else if (status && strcmp(status, "interrupted") == 0) {
                r->status = SESSION_STEP_TIMEOUT;
                r->exit_code = 124;
        } else {
                r->status = SESSION_STEP_ERROR;
                r->exit_code = 1;
                /* A shell step's own status (1 to 255). */
                json_int_t code = json_integer_value(json_object_get(f, "exit_code"));
                if (code > 0 && code < 256)
                        r->exit_code = (int)code;
        }
        json_t *text = capped_string(json_object_get(f, "value"), VALUE_MAX);
        if (text) {
                json_t *type = capped_string(json_object_get(f, "value_type"), 256);
                r->value = json_pack("{s:o,s:o}", "text", text, "type", type ? type : json_string(""));
                value_rich(r->value, f);
        }
        /* A named context's process ended during the step (driver.py):
         * its state is lost, and the next step in it says restarted. */
        if (json_is_string(json_object_get(f, "context_lost")))
                r->state_lost = true;
        r->restarted |= json_is_true(json_object_get(f, "context_restarted"));
        json_t *e = json_object_get(f, "error");
        if (json_is_object(e)) {
                r->error = json_object();
                const char *keys[] = { "type", "message", "traceback" };
                for (size_t i = 0; r->error && i < ARRAY_SIZE(keys); i++) {
                        json_t *x = capped_string(json_object_get(e, keys[i]), VALUE_MAX);
                        json_object_set_new(r->error, keys[i], x ? x : json_string(""));
                }
                /* The same strings under Jupyter's and E2B's names. */
                if (r->error) {
                        json_object_set(r->error, "name", json_object_get(r->error, "type"));
                        json_object_set(r->error, "value", json_object_get(r->error, "message"));
                }
                const char *type = json_string_value(json_object_get(r->error, "type"));
                if (r->status == SESSION_STEP_ERROR)
                        set_reason(r, "the step raised %s", type && *type ? type : "an exception");
        }
        json_t *figs = json_object_get(f, "figures");
        json_t *keep = json_array();
        size_t i;
        json_t *fig;
        json_array_foreach(json_is_array(figs) ? figs : NULL, i, fig) {
                if (i >= 256 || !json_is_object(fig))
                        break;
                json_array_append_new(keep, figure_from_frame(fig));
        }
        json_decref(r->figures);
        r->figures = keep;
        r->exec_ms = num(f, "wall_ms");
        r->cpu_ms = num(f, "cpu_ms");
        r->peak_memory_bytes = (uint64_t)num(f, "peak_memory_bytes");
        uint64_t total = (uint64_t)num(f, "stdout_bytes");
        if (total > r->stdout_total)
                r->stdout_total = total;
        total = (uint64_t)num(f, "stderr_bytes");
        if (total > r->stderr_total)
                r->stderr_total = total;
        r->stdout_truncated = json_is_true(json_object_get(f, "stdout_truncated"));
        r->stderr_truncated = json_is_true(json_object_get(f, "stderr_truncated"));
}

/* Handle the frames there are; -1 on a malformed stream. */
static int step_frames(struct session *s, struct step *st)
{
        json_t *f;
        int rc;
        while (!st->done && (rc = kernel_take_frame(s->k, &f)) != 0) {
                if (rc < 0)
                        return -1;
                json_t *id = json_object_get(f, "id");
                const char *t = json_string_value(json_object_get(f, "t"));
                if (t && json_is_integer(id) && json_integer_value(id) == (json_int_t)st->id) {
                        if (strcmp(t, "out") == 0) {
                                step_output(st, f);
                        } else if (strcmp(t, "result") == 0) {
                                session_result_from_frame(st->r, f);
                                st->done = true;
                        }
                }
                /* Anything else: stray output of an earlier step's threads. */
                json_decref(f);
        }
        return 0;
}

/* Drop the whole frames earlier steps left in the buffer (a late result
 * of an interrupted step, say); a frame still arriving stays, or the
 * stream would lose its framing. */
static int kernel_discard(struct kernel *k)
{
        json_t *f;
        int rc;
        while ((rc = kernel_take_frame(k, &f)) > 0)
                json_decref(f);
        return rc;
}

/* Move the kernel's unreported connections to the session's (a kernel
 * may end before the step that reports them). */
static void kernel_take_net(struct kernel *k, struct session *s)
{
        if (k == NULL)
                return;
        pthread_mutex_lock(&k->lock);
        json_t *net = k->net;
        k->net = NULL;
        s->net_dropped += k->net_dropped;
        k->net_dropped = 0;
        pthread_mutex_unlock(&k->lock);
        if (net == NULL)
                return;
        if (s->net == NULL)
                s->net = json_array();
        size_t i;
        json_t *c;
        json_array_foreach(net, i, c) {
                if (s->net && json_array_size(s->net) < CORRAL_NET_LOG_MAX)
                        json_array_append(s->net, c);
                else
                        s->net_dropped++;
        }
        json_decref(net);
}

/* The kernel ended or was stopped during the step: make it a loss. */
static void step_lost(struct session *s, struct step *st, enum session_status status, int exit_code)
{
        struct session_result *r = st->r;
        kernel_kill(s->k);
        pthread_join(s->k->thread, NULL);
        s->k->thread_started = false;
        int code = describe_loss(s->k, r);
        r->status = status;
        r->exit_code = exit_code ? exit_code : code;
        r->state_lost = true;
        kernel_take_net(s->k, s);
        kernel_free(s->k);
        s->k = NULL;
        s->lost_before = true;
}

/* KeyboardInterrupt in the step.  A step of a named context runs in a
 * process of its own, which the driver kills halfway through the grace
 * period if it goes on: the context is lost, not the interpreter. */
static void send_interrupt(struct session *s, unsigned id)
{
        json_t *intr = json_pack("{s:s,s:I,s:I}", "op", "interrupt", "id", (json_int_t)id, "kill_after_ms",
                                 (json_int_t)(s->opt.grace_s * 500));
        if (intr)
                kernel_send(s->k, intr, monotonic_ms() + 1000);
        json_decref(intr);
}

int session_exec(struct session *s, const char *code, size_t len, const struct session_step_limits *lim,
                 const struct session_callbacks *cb, struct session_result *ret, corral_error **ret_err)
{
        memset(ret, 0, sizeof(*ret));
        double t0 = monotonic_ms();
        double timeout_s = lim && lim->timeout_s > 0 ? lim->timeout_s : 30;
        uint64_t cap = lim && lim->output_limit > 0 ? lim->output_limit : s->cfg.output_limit;
        int cancel_fd = lim ? lim->cancel_fd : -1;
        struct step st = { .r = ret, .cb = cb, .out = { .cap = (size_t)cap }, .err = { .cap = (size_t)cap } };
        int rc = -1;

        if (s->k && kernel_ended(s->k)) {
                /* It died between steps (e.g. a thread of user code): gone. */
                kernel_take_net(s->k, s);
                kernel_free(s->k);
                s->k = NULL;
                s->lost_before = true;
        }
        if (s->k == NULL) {
                s->kernel_end = monotonic_ms() + lifetime_left_s(s) * 1000;
                if (kernel_start(&s->cfg, lifetime_left_s(s), &s->opt, &s->k,
                                 ret_err) < 0)
                        return -1;
                ret->restarted = s->lost_before;
                s->lost_before = false;
        }
        s->steps++;
        st.id = ret->step = s->steps;
        if (kernel_discard(s->k) < 0) {
                step_lost(s, &st, SESSION_STEP_LOST, 125);
                ret->limit = CORRAL_LIMIT_NONE;
                free(ret->reason);
                ret->reason = strdup("the interpreter had sent a malformed frame and was stopped");
                rc = 0;
                goto finish;
        }

        json_t *req = json_pack("{s:s,s:I,s:s%,s:I}", "op", "exec", "id", (json_int_t)st.id, "code", code, len,
                                "output_limit", (json_int_t)cap);
        if (req && lim && lim->preview_count > 0)
                json_object_set_new(req, "preview", json_pack("{s:i,s:i,s:I}", "count", (int)lim->preview_count,
                                                              "side", (int)lim->preview_side, "bytes",
                                                              (json_int_t)lim->preview_bytes));
        if (req && lim && lim->figure_png)
                json_object_set_new(req, "figure_png", json_true());
        if (req && lim && lim->language)
                json_object_set_new(req, "language", json_string(lim->language));
        if (req && lim && lim->background)
                json_object_set_new(req, "background", json_true());
        if (req && lim && lim->env)
                json_object_set(req, "env", (json_t *)lim->env);
        if (req && lim && lim->context)
                json_object_set_new(req, "context", json_string(lim->context));
        if (req && lim && lim->ipython)
                json_object_set_new(req, "ipython", json_true());
        if (req && lim && lim->end_context)
                json_object_set_new(req, "end_context", json_true());
        double deadline = t0 + timeout_s * 1000;
        if (req == NULL) {
                corral_fail(ret_err, ENOMEM, "cannot send the step");
                goto out;
        }
        if (kernel_send(s->k, req, deadline) < 0) {
                json_decref(req);
                bool ended = kernel_ended(s->k);
                step_lost(s, &st, SESSION_STEP_LOST, ended ? 0 : 125);
                if (!ended) {
                        ret->limit = CORRAL_LIMIT_NONE;
                        free(ret->reason);
                        ret->reason = strdup("the interpreter did not take the step in time and was stopped");
                }
                rc = 0;
                goto finish;
        }
        json_decref(req);

        bool interrupted = false, asked = false; /* asked: on request, not by the time limit */
        double hard_deadline = 0;
        int watch_fd = cb && cb->on_interrupt_fd ? cb->interrupt_fd : -1;
        for (;;) {
                if (step_frames(s, &st) < 0) {
                        step_lost(s, &st, SESSION_STEP_LOST, 125);
                        ret->limit = CORRAL_LIMIT_NONE;
                        free(ret->reason);
                        ret->reason = strdup("the interpreter sent a malformed frame and was stopped");
                        break;
                }
                if (st.done) {
                        const char *lost = json_string_value(json_object_get(ret->error, "message"));
                        if (ret->state_lost && ret->status == SESSION_STEP_TIMEOUT) {
                                /* A context killed after the interrupt: its state
                                 * is gone, the interpreter's is kept. */
                                ret->status = asked ? SESSION_STEP_INTERRUPTED : SESSION_STEP_TIMEOUT;
                                ret->exit_code = asked ? 130 : 124;
                                ret->limit = asked ? CORRAL_LIMIT_CANCELLED : CORRAL_LIMIT_WALL_TIME;
                                if (asked)
                                        set_reason(ret, "the step was interrupted on request: %s", lost ? lost : "");
                                else
                                        set_reason(ret, "the step's time limit of %g s was reached: %s", timeout_s,
                                                   lost ? lost : "");
                        } else if (ret->state_lost) {
                                set_reason(ret, "%s", lost ? lost : "the step's context ended");
                        } else if (!interrupted && ret->status == SESSION_STEP_TIMEOUT) {
                                /* The code raised KeyboardInterrupt itself. */
                                ret->status = SESSION_STEP_ERROR;
                                ret->exit_code = 1;
                                set_reason(ret, "the step raised KeyboardInterrupt");
                        } else if (asked && ret->status == SESSION_STEP_TIMEOUT) {
                                ret->status = SESSION_STEP_INTERRUPTED;
                                ret->exit_code = 130;
                                ret->limit = CORRAL_LIMIT_CANCELLED;
                                set_reason(ret, "the step was interrupted (KeyboardInterrupt) on request; the "
                                                "session's state is kept");
                        } else if (interrupted && ret->status == SESSION_STEP_TIMEOUT) {
                                ret->limit = CORRAL_LIMIT_WALL_TIME;
                                set_reason(ret, "the step's time limit of %g s was reached; it was interrupted "
                                                "(KeyboardInterrupt) and the session's state is kept",
                                           timeout_s);
                        }
                        break;
                }
                if (kernel_ended(s->k)) {
                        /* Read what it wrote before it died. */
                        if (step_frames(s, &st) == 0 && st.done)
                                break;
                        step_lost(s, &st, SESSION_STEP_LOST, 0);
                        break;
                }
                double now = monotonic_ms();
                if (!interrupted && now >= deadline) {
                        send_interrupt(s, st.id);
                        interrupted = true;
                        hard_deadline = now + s->opt.grace_s * 1000;
                        continue;
                }
                if (interrupted && now >= hard_deadline) {
                        step_lost(s, &st, asked ? SESSION_STEP_INTERRUPTED : SESSION_STEP_TIMEOUT, asked ? 130 : 124);
                        ret->limit = asked ? CORRAL_LIMIT_CANCELLED : CORRAL_LIMIT_WALL_TIME;
                        ret->signal = 0;
                        free(ret->reason);
                        ret->reason = NULL;
                        if (asked)
                                set_reason(ret, "the step did not stop within the %g s grace period after it was "
                                                "interrupted: the interpreter was killed",
                                           s->opt.grace_s);
                        else
                                set_reason(ret, "the step's time limit of %g s was reached and it did not stop "
                                                "within the %g s grace period after the interrupt: the "
                                                "interpreter was killed",
                                           timeout_s, s->opt.grace_s);
                        break;
                }
                int woke = kernel_wait(s->k, interrupted ? hard_deadline : deadline, cancel_fd, watch_fd);
                if (woke == 2) {
                        if (!cb->on_interrupt_fd(cb->userdata)) {
                                watch_fd = -1;
                        } else if (!interrupted) {
                                send_interrupt(s, st.id);
                                interrupted = asked = true;
                                hard_deadline = monotonic_ms() + s->opt.grace_s * 1000;
                        }
                        continue;
                }
                if (woke == 1) {
                        step_lost(s, &st, SESSION_STEP_CANCELLED, 130);
                        ret->limit = CORRAL_LIMIT_CANCELLED;
                        ret->signal = 0;
                        free(ret->reason);
                        ret->reason = strdup("the step was cancelled; the interpreter was stopped");
                        break;
                }
        }
        rc = 0;
finish:
        ret->stdout_buf = capbuf_detach(&st.out, &ret->stdout_len);
        ret->stderr_buf = capbuf_detach(&st.err, &ret->stderr_len);
        ret->stdout_truncated |= st.out.truncated;
        ret->stderr_truncated |= st.err.truncated;
        if (st.out.total > ret->stdout_total)
                ret->stdout_total = st.out.total;
        if (st.err.total > ret->stderr_total)
                ret->stderr_total = st.err.total;
        if (ret->figures == NULL)
                ret->figures = json_array();
        /* --net allow: the connections that ended since the last step's
         * report (one still open shows in the step it ends in). */
        if (s->cfg.net == CORRAL_NET_ALLOW) {
                kernel_take_net(s->k, s);
                ret->network = s->net ? s->net : json_array();
                ret->network_dropped = s->net_dropped;
                s->net = NULL;
                s->net_dropped = 0;
        }
        ret->wall_ms = monotonic_ms() - t0;
        s->t_last = monotonic_ms();
out:
        capbuf_release(&st.out);
        capbuf_release(&st.err);
        return rc;
}

json_t *session_result_to_json(const struct session_result *r)
{
        size_t ol = 0, el = 0;
        cleanup_free char *o = utf8_sanitize(r->stdout_buf ? r->stdout_buf : "", r->stdout_len, &ol);
        cleanup_free char *e = utf8_sanitize(r->stderr_buf ? r->stderr_buf : "", r->stderr_len, &el);
        if (o == NULL || e == NULL)
                return NULL;
        json_t *j = json_pack("{s:i,s:I,s:s,s:b,s:b,s:i,s:s%,s:s%,s:b,s:b,s:I,s:I,s:f,s:f,s:f,s:I}", "schema", 1,
                              "step", (json_int_t)r->step, "status", session_status_to_string(r->status),
                              "state_lost", r->state_lost, "restarted", r->restarted, "exit_code", r->exit_code,
                              "stdout", o, ol, "stderr", e, el, "stdout_truncated", r->stdout_truncated,
                              "stderr_truncated", r->stderr_truncated, "stdout_bytes", (json_int_t)r->stdout_total,
                              "stderr_bytes", (json_int_t)r->stderr_total, "wall_ms", round_ms(r->wall_ms), "exec_ms",
                              round_ms(r->exec_ms), "cpu_ms", round_ms(r->cpu_ms), "peak_memory_bytes",
                              (json_int_t)r->peak_memory_bytes);
        if (j == NULL)
                return NULL;
        /* The reason may quote the interpreter's last words: any bytes. */
        cleanup_free char *reason = r->reason ? utf8_sanitize(r->reason, strlen(r->reason), NULL) : NULL;
        json_object_set_new(j, "reason", reason ? json_string(reason) : json_null());
        json_object_set_new(j, "limit", r->limit != CORRAL_LIMIT_NONE ? json_string(corral_limit_to_string(r->limit))
                                                                       : json_null());
        if (r->syscall_name)
                json_object_set_new(j, "syscall", json_string(r->syscall_name));
        if (r->jail_reason)
                json_object_set_new(j, "jail_reason", json_string(r->jail_reason));
        json_object_set(j, "value", r->value ? r->value : json_null());
        json_object_set(j, "error", r->error ? r->error : json_null());
        json_object_set_new(j, "figures", r->figures ? json_incref(r->figures) : json_array());
        if (r->network) {
                json_object_set(j, "network", r->network);
                if (r->network_dropped)
                        json_object_set_new(j, "network_dropped", json_integer((json_int_t)r->network_dropped));
        }
        return j;
}

/* The text of a JSON string member, copied, or NULL. */
static char *dup_member(const json_t *o, const char *key, size_t *ret_len)
{
        const json_t *v = json_object_get(o, key);
        if (!json_is_string(v))
                return NULL;
        if (ret_len)
                *ret_len = json_string_length(v);
        char *s = malloc(json_string_length(v) + 1);
        if (s) {
                memcpy(s, json_string_value(v), json_string_length(v));
                s[json_string_length(v)] = '\0';
        }
        return s;
}

int session_result_from_json(const json_t *j, struct session_result *r)
{
        memset(r, 0, sizeof(*r));
        const char *status = json_string_value(json_object_get(j, "status"));
        if (!json_is_object(j) || status == NULL)
                return -1;
        for (int s = SESSION_STEP_OK; s <= SESSION_STEP_INTERRUPTED; s++)
                if (strcmp(status, session_status_to_string((enum session_status)s)) == 0)
                        r->status = (enum session_status)s;
        const char *limit = json_string_value(json_object_get(j, "limit"));
        for (int l = CORRAL_LIMIT_NONE; limit && l <= CORRAL_LIMIT_CANCELLED; l++) {
                const char *name = corral_limit_to_string((enum corral_limit)l);
                if (name && strcmp(limit, name) == 0)
                        r->limit = (enum corral_limit)l;
        }
        r->state_lost = json_is_true(json_object_get(j, "state_lost"));
        r->restarted = json_is_true(json_object_get(j, "restarted"));
        r->step = (unsigned)json_integer_value(json_object_get(j, "step"));
        r->exit_code = (int)json_integer_value(json_object_get(j, "exit_code"));
        r->signal = r->exit_code > 128 && r->status == SESSION_STEP_LOST ? r->exit_code - 128 : 0;
        r->reason = dup_member(j, "reason", NULL);
        r->syscall_name = dup_member(j, "syscall", NULL);
        r->jail_reason = dup_member(j, "jail_reason", NULL);
        r->stdout_buf = dup_member(j, "stdout", &r->stdout_len);
        r->stderr_buf = dup_member(j, "stderr", &r->stderr_len);
        r->stdout_truncated = json_is_true(json_object_get(j, "stdout_truncated"));
        r->stderr_truncated = json_is_true(json_object_get(j, "stderr_truncated"));
        r->stdout_total = (uint64_t)json_integer_value(json_object_get(j, "stdout_bytes"));
        r->stderr_total = (uint64_t)json_integer_value(json_object_get(j, "stderr_bytes"));
        r->wall_ms = json_number_value(json_object_get(j, "wall_ms"));
        r->exec_ms = json_number_value(json_object_get(j, "exec_ms"));
        r->cpu_ms = json_number_value(json_object_get(j, "cpu_ms"));
        r->peak_memory_bytes = (uint64_t)json_integer_value(json_object_get(j, "peak_memory_bytes"));
        json_t *v = json_object_get(j, "value"), *e = json_object_get(j, "error"), *f = json_object_get(j, "figures");
        r->value = json_is_object(v) ? json_deep_copy(v) : NULL;
        r->error = json_is_object(e) ? json_deep_copy(e) : NULL;
        r->figures = json_is_array(f) ? json_deep_copy(f) : json_array();
        json_t *net = json_object_get(j, "network");
        r->network = json_is_array(net) ? json_deep_copy(net) : NULL;
        r->network_dropped = (uint64_t)json_integer_value(json_object_get(j, "network_dropped"));
        return 0;
}
