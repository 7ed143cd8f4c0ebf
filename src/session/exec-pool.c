/* exec-pool.c: pre-made one-shot jails kept by the session host
 * (exec-pool.h, docs/exec-pool.md).
 *
 * One thread makes jails while the pool is short of its target, oldest
 * first out; the lock is never held while a jail is made or torn down.  A
 * jail handed out is its taker's: the pool never sees it again (each jail
 * is used once).  Fallbacks are counted by reason, a fixed short list.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../lib/jail-internal.h"
#include "client.h"
#include "exec-pool.h"
#include "wire.h"

#define MAX_WHY 12

struct exec_pool {
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_t thread;
        bool stopping;
        int target;
        struct jail_premade *ready[EXEC_POOL_MAX]; /* oldest first */
        int n;
        /* Claims under way (the status shows them), and when the last
         * claim came: refills wait for quiet (refill_wait_ms()). */
        int running;
        double last_claim_ms; /* the last claim, taken or not */
        double quiet_ms;      /* a refill waits until no claim came for this long */
        unsigned long made, claimed, failed, replaced;
        struct {
                const char *why;
                unsigned long n;
        } fallbacks[MAX_WHY];
        char last_error[256];
};

/* An integer from lo to hi in the variable name, or def when it is unset;
 * -1 (error set) otherwise. */
static long env_number(const char *name, long def, long lo, long hi, const char *what, corral_error **ret_err)
{
        const char *v = getenv(name);
        if (v == NULL || v[0] == '\0')
                return def;
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || *end || end == v || n < lo || n > hi)
                return corral_usage(ret_err, "%s must be %s from %ld to %ld, not '%s'", name, what, lo, hi, v);
        return n;
}

int exec_pool_options_from_env(struct exec_pool_options *ret, corral_error **ret_err)
{
        long target = env_number("CORRAL_EXEC_POOL", EXEC_POOL_DEFAULT, 0, EXEC_POOL_MAX,
                                 "a number of jails (0: no pool)", ret_err);
        long quiet = target < 0 ? -1
                                : env_number("CORRAL_EXEC_POOL_QUIET_MS", (long)EXEC_POOL_REFILL_DEFER_MS, 0, 60000,
                                             "a number of milliseconds", ret_err);
        if (target < 0 || quiet < 0)
                return -1;
        ret->target = (int)target;
        ret->quiet_ms = (double)quiet;
        return 0;
}

/* The configuration every jail of the pool is made with: the library's
 * defaults; a claim brings its own limits, disk, workspace and binds. */
static int pool_config(corral_jail_config *cfg, corral_error **ret_err)
{
        char *argv[] = { (char *)"python3", NULL };
        corral_jail_config_init(cfg);
        return corral_jail_config_set_argv(cfg, argv, ret_err);
}

static void count_fallback(struct exec_pool *p, const char *why)
{
        for (int i = 0; i < MAX_WHY; i++) {
                if (p->fallbacks[i].why == NULL)
                        p->fallbacks[i].why = why;
                if (p->fallbacks[i].why == why || strcmp(p->fallbacks[i].why, why) == 0) {
                        p->fallbacks[i].n++;
                        return;
                }
        }
}

/* How long a refill waits, 0 for not at all.  Making a jail takes one
 * CPU for ~15 ms and the kernel's namespace and mount locks; on a small
 * host, made beside a claimed jail it took the CPU from that jail's set-up
 * and program (a pre-made jail's `corral exec -- /bin/true` was slower
 * than a direct one on 2 CPUs), and back to back a pre-made jail cost more
 * CPU than a direct one.  So a refill waits until no claim came for
 * quiet_ms (EXEC_POOL_REFILL_DEFER_MS unless the host's environment says
 * otherwise), even with the pool empty: jails are made while the host is
 * quiet, and under a steady stream of claims the pool steps aside (they
 * fall back to direct jails) instead of competing with them.  Lock held. */
static double refill_wait_ms(const struct exec_pool *p)
{
        double left = p->last_claim_ms + p->quiet_ms - monotonic_ms();
        return left > 0 ? left : 0;
}

static void *pool_thread(void *arg)
{
        struct exec_pool *p = arg;
        corral_jail_config cfg;
        corral_error *err = NULL;
        if (pool_config(&cfg, &err) < 0) {
                pthread_mutex_lock(&p->lock);
                snprintf(p->last_error, sizeof(p->last_error), "%s", err ? err->msg : "?");
                pthread_mutex_unlock(&p->lock);
                corral_error_free(err);
                return NULL;
        }
        unsigned failures = 0;
        pthread_mutex_lock(&p->lock);
        while (!p->stopping) {
                /* One idle too long: out first, made again below. */
                if (p->n > 0 && jail_premade_idle_ms(p->ready[0]) >= EXEC_POOL_IDLE_MS) {
                        struct jail_premade *old = p->ready[0];
                        memmove(p->ready, p->ready + 1, (size_t)(p->n - 1) * sizeof(p->ready[0]));
                        p->n--;
                        p->replaced++;
                        pthread_mutex_unlock(&p->lock);
                        jail_premade_free(old);
                        pthread_mutex_lock(&p->lock);
                        continue;
                }
                if (p->n < p->target && refill_wait_ms(p) == 0) {
                        pthread_mutex_unlock(&p->lock);
                        struct jail_premade *pm = NULL;
                        int r = jail_premade_make(&cfg, &pm, &err);
                        pthread_mutex_lock(&p->lock);
                        if (r == 0 && !p->stopping) {
                                p->ready[p->n++] = pm;
                                p->made++;
                                failures = 0;
                                continue;
                        }
                        if (r == 0) {
                                pthread_mutex_unlock(&p->lock);
                                jail_premade_free(pm);
                                pthread_mutex_lock(&p->lock);
                                break;
                        }
                        p->failed++;
                        snprintf(p->last_error, sizeof(p->last_error), "%s", err ? err->msg : "?");
                        corral_error_clear(&err);
                        failures++;
                }
                /* Wait for a take, the next idle deadline, or (after a
                 * failure) a while before trying again. */
                double wait_ms = p->n > 0 ? EXEC_POOL_IDLE_MS - jail_premade_idle_ms(p->ready[0]) : 1e9;
                if (p->n < p->target) {
                        double backoff = failures < 6 ? 100.0 * (1u << failures) : 5000.0;
                        wait_ms = wait_ms < backoff ? wait_ms : backoff;
                        double defer = refill_wait_ms(p);
                        if (defer > 0 && failures == 0)
                                wait_ms = defer;
                }
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                double ns = (double)ts.tv_nsec + (wait_ms > 1e9 ? 1e9 : wait_ms) * 1e6;
                ts.tv_sec += (time_t)(ns / 1e9);
                ts.tv_nsec = (long)(ns - (double)(time_t)(ns / 1e9) * 1e9);
                pthread_cond_timedwait(&p->wake, &p->lock, &ts);
        }
        pthread_mutex_unlock(&p->lock);
        corral_jail_config_release(&cfg);
        return NULL;
}

struct exec_pool *exec_pool_new(const struct exec_pool_options *opt, corral_error **ret_err)
{
        if (opt->target <= 0)
                return NULL;
        struct exec_pool *p = calloc(1, sizeof(*p));
        if (p == NULL) {
                corral_fail(ret_err, ENOMEM, "cannot start the pool of jails made in advance");
                return NULL;
        }
        pthread_mutex_init(&p->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_cond_init(&p->wake, &ca);
        pthread_condattr_destroy(&ca);
        p->target = opt->target > EXEC_POOL_MAX ? EXEC_POOL_MAX : opt->target;
        p->quiet_ms = opt->quiet_ms;
        int e = pthread_create(&p->thread, NULL, pool_thread, p);
        if (e != 0) {
                corral_fail(ret_err, e, "cannot start the pool of jails made in advance");
                pthread_cond_destroy(&p->wake);
                pthread_mutex_destroy(&p->lock);
                free(p);
                return NULL;
        }
        return p;
}

struct jail_premade *exec_pool_take(struct exec_pool *p, const corral_jail_config *cfg, const char **ret_why)
{
        struct jail_premade *pm = NULL;
        const char *why = NULL;
        pthread_mutex_lock(&p->lock);
        p->last_claim_ms = monotonic_ms();
        if (p->n == 0) {
                why = "none ready";
        } else if ((why = jail_premade_misfit(p->ready[0], cfg)) == NULL) {
                pm = p->ready[0];
                memmove(p->ready, p->ready + 1, (size_t)(p->n - 1) * sizeof(p->ready[0]));
                p->n--;
                p->claimed++;
                p->running++;
                pthread_cond_signal(&p->wake);
        }
        if (why)
                count_fallback(p, why);
        pthread_mutex_unlock(&p->lock);
        if (ret_why)
                *ret_why = why;
        return pm;
}

/* A claim taken by exec_pool_take() has ended: the refill may go on. */
static void claim_ended(struct exec_pool *p)
{
        pthread_mutex_lock(&p->lock);
        p->running--;
        pthread_cond_signal(&p->wake);
        pthread_mutex_unlock(&p->lock);
}

json_t *exec_pool_status(struct exec_pool *p)
{
        pthread_mutex_lock(&p->lock);
        json_t *fb = json_object();
        for (int i = 0; i < MAX_WHY && p->fallbacks[i].why; i++)
                json_object_set_new(fb, p->fallbacks[i].why, json_integer((json_int_t)p->fallbacks[i].n));
        json_t *r = json_pack("{s:i,s:i,s:i,s:I,s:I,s:I,s:I,s:o}", "size", p->n, "target", p->target, "running",
                              p->running, "made", (json_int_t)p->made, "claimed", (json_int_t)p->claimed, "failed",
                              (json_int_t)p->failed, "replaced", (json_int_t)p->replaced, "fallbacks", fb);
        if (r && p->last_error[0])
                json_object_set_new(r, "last_error", json_string(p->last_error));
        pthread_mutex_unlock(&p->lock);
        return r;
}

void exec_pool_free(struct exec_pool *p)
{
        if (p == NULL)
                return;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_cond_signal(&p->wake);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
        for (int i = 0; i < p->n; i++)
                jail_premade_free(p->ready[i]);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p);
}

/* ---- the claim over host.sock ---- */

/* How long a claim's jail waits to be torn down after the answer, for
 * its client's hang-up. */
#define CLIENT_DONE_WAIT_MS 2000

/* Until fd's peer hangs up or timeout_ms passed; what it sends meanwhile
 * is dropped (a client says nothing after its claim). */
static void await_hangup(int fd, int timeout_ms)
{
        double end = monotonic_ms() + timeout_ms;
        for (;;) {
                double left = end - monotonic_ms();
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                if (left <= 0)
                        return;
                int n = poll(&pfd, 1, (int)left + 1);
                if (n < 0 && errno == EINTR)
                        continue;
                char buf[256];
                if (n <= 0 || read(fd, buf, sizeof(buf)) <= 0)
                        return;
        }
}

static void reply(int fd, json_t *r)
{
        if (r)
                wire_write(fd, r);
        json_decref(r);
}

/* A claim's ticket: a pipe the client made holding one byte, with its
 * write end closed.  Whoever reads the byte first owns the claim's
 * outcome: the host, which then runs the program, or a client that gave
 * up waiting, which then starts a direct jail.  So a program never runs
 * twice, and the host needs no second message to know the client still
 * wants its jail. */
static bool ticket_take(int fd)
{
        struct stat st;
        char b;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
                return false;
        ssize_t n;
        do
                n = read(fd, &b, 1);
        while (n < 0 && errno == EINTR);
        return n == 1;
}

/* fds[member's index] of the request, or -1. */
static int request_fd(const json_t *req, const char *member, const int *fds, size_t nfds)
{
        json_t *k = json_object_get(req, member);
        if (!json_is_integer(k) || json_integer_value(k) < 0 || (size_t)json_integer_value(k) >= nfds)
                return -1;
        return fds[json_integer_value(k)];
}

/* The claim's program text (its "script"): the request's memfd, read
 * whole into cfg as corral exec set it.  0, or -1 with ret_err. */
static int claim_script(corral_jail_config *cfg, const json_t *script, const int *fds, size_t nfds,
                        corral_error **ret_err)
{
        const char *name = json_string_value(json_object_get(script, "name"));
        int mfd = request_fd(script, "fd", fds, nfds);
        if (name == NULL || mfd < 0)
                return corral_usage(ret_err, "an exec-claim's script needs a name and a descriptor");
        struct stat st;
        if (fstat(mfd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)JAIL_MAX_SCRIPT)
                return corral_usage(ret_err, "an exec-claim's script is not a program text");
        cleanup_free char *text = malloc((size_t)st.st_size + 1);
        if (text == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot read the program text");
        for (off_t off = 0; off < st.st_size;) {
                ssize_t r = pread(mfd, text + off, (size_t)(st.st_size - off), off);
                if (r <= 0)
                        return corral_fail(ret_err, r < 0 ? errno : EIO, "cannot read the program text");
                off += r;
        }
        return corral_jail_config_set_script(cfg, name, text, (size_t)st.st_size, ret_err);
}

void exec_pool_serve_claim(struct exec_pool *p, int fd, const json_t *req, const int *fds, size_t nfds)
{
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        corral_error *err = NULL;
        const json_t *profile = json_object_get(req, "profile");
        const json_t *jargv = json_object_get(req, "argv");
        size_t argc = json_is_array(jargv) ? json_array_size(jargv) : 0;
        char **argv = calloc(argc + 1, sizeof(*argv));
        bool ok = json_is_object(profile) && argv && argc > 0;
        for (size_t i = 0; ok && i < argc; i++)
                ok = (argv[i] = (char *)json_string_value(json_array_get(jargv, i))) != NULL;
        /* With "stdin": the client copies its caller's stdin into a pipe
         * of the host's, whose read end the jail's stdin pump reads (the
         * caller's descriptor never reaches the host). */
        int in[2] = { -1, -1 };
        bool with_stdin = json_is_true(json_object_get(req, "stdin"));
        /* A member this host does not know is a claim of a newer corral's
         * (one that lingered across an upgrade): run it directly rather
         * than without what it asked for. */
        static const char *const known[] = { "op", "profile", "argv", "stdin", "script", "ticket" };
        const char *key;
        json_t *v;
        json_object_foreach ((json_t *)req, key, v) {
                size_t i = 0;
                while (i < ARRAY_SIZE(known) && strcmp(key, known[i]) != 0)
                        i++;
                if (i == ARRAY_SIZE(known)) {
                        reply(fd, json_pack("{s:s,s:s}", "t", "fallback", "why", "a claim this host does not know"));
                        goto out;
                }
        }
        int ticket = request_fd(req, "ticket", fds, nfds);
        if (ticket < 0) {
                /* an older corral's, which would say go after "claimed" */
                reply(fd, json_pack("{s:s,s:s}", "t", "fallback", "why", "a claim without a ticket"));
                goto out;
        }
        if (!ok) {
                corral_usage(&err, "an exec-claim needs a profile (an object) and argv (strings)");
        } else if (with_stdin && pipe2(in, O_CLOEXEC) < 0) {
                corral_fail(&err, errno, "cannot make the jail's stdin");
        } else if (jail_config_apply_profile_object(&cfg, (json_t *)profile, "exec-claim", &err) == 0 &&
                   corral_jail_config_set_argv(&cfg, argv, &err) == 0 &&
                   (!json_is_object(json_object_get(req, "script")) ||
                    claim_script(&cfg, json_object_get(req, "script"), fds, nfds, &err) == 0) &&
                   corral_jail_config_validate(&cfg, &err) == 0) {
                if (with_stdin)
                        cfg.stdin_mode = CORRAL_STDIN_PIPE;
                const char *why = NULL;
                struct jail_premade *pm = p ? exec_pool_take(p, &cfg, &why) : NULL;
                if (pm == NULL) {
                        /* Nothing of the claim reached a jail: the client
                         * starts one directly. */
                        reply(fd, json_pack("{s:s,s:s}", "t", "fallback", "why", why ? why : "no pool"));
                        goto out;
                }
                if (!ticket_take(ticket)) {
                        /* The client gave up waiting and starts a direct
                         * jail: nothing of the claim reached this one. */
                        jail_premade_free(pm);
                        claim_ended(p);
                        goto out;
                }
                /* The connection is held for the jail's life: its hang-up
                 * (the client killed) is the jail's cancel, at once. */
                corral_jail_io io = { .stdin_fd = in[0], .cancel_fd = fd };
                corral_jail_result res;
                memset(&res, 0, sizeof(res));
                /* The program starts first; the client hears of it while
                 * it does. */
                int rc = jail_premade_claim(pm, &cfg, &io, &err);
                if (rc == 0) {
                        int out[3] = { -1, -1, in[1] };
                        jail_premade_take_output(pm, &out[0], &out[1]);
                        json_t *claimed = json_pack("{s:s}", "t", "claimed");
                        if (claimed && jail_premade_backend(pm) == CORRAL_BACKEND_RLIMIT)
                                /* what a direct jail's caller hears before its program runs */
                                json_object_set_new(claimed, "notice", json_string(JAIL_NOTICE_RLIMITS));
                        /* Not sent: the client is gone, and its hang-up
                         * cancels the jail. */
                        if (claimed)
                                wire_write_fds(fd, claimed, out, with_stdin ? 3 : 2);
                        json_decref(claimed);
                        close(out[0]);
                        close(out[1]);
                        if (in[1] >= 0)
                                close(in[1]);
                        in[1] = -1;
                        rc = jail_premade_finish(pm, &res, &err);
                }
                if (rc == 0) {
                        json_t *rj = jail_result_object(&res);
                        reply(fd, rj ? json_pack("{s:s,s:o}", "t", "result", "result", rj) : NULL);
                        corral_jail_result_release(&res);
                } else if (rc == JAIL_PREMADE_UNCLAIMED) {
                        reply(fd, json_pack("{s:s,s:s}", "t", "fallback", "why", err ? err->msg : "unclaimed"));
                } else {
                        reply(fd, json_pack("{s:s,s:s,s:i}", "t", "error", "message",
                                            err ? err->msg : "the jail failed", "kind",
                                            err ? err->kind : CORRAL_ERR_INTERNAL));
                }
                /* Torn down once the client is done with its answer: its
                 * hang-up (at its exit) or, from a client that keeps the
                 * connection, a while later.  So the teardown (init's exit,
                 * when it lingers, then the namespaces' and the cgroups')
                 * takes no CPU from the client's last steps or from the
                 * wake-up of whoever waits for it. */
                if (rc == 0)
                        await_hangup(fd, CLIENT_DONE_WAIT_MS);
                jail_premade_free(pm);
                claim_ended(p);
                goto out;
        }
        reply(fd, json_pack("{s:s,s:s,s:i}", "t", "error", "message", err ? err->msg : "bad exec-claim", "kind",
                            err ? err->kind : CORRAL_ERR_USAGE));
out:
        for (int i = 0; i < 2; i++)
                if (in[i] >= 0)
                        close(in[i]);
        corral_error_free(err);
        corral_jail_config_release(&cfg);
        free(argv);
}

/* ---- the client's side (corral exec) ---- */

/* How long the client waits for a pooled jail before it starts one itself
 * (a direct jail costs about that much). */
static int claim_wait_ms(void)
{
        const char *v = getenv("CORRAL_EXEC_POOL_WAIT_MS");
        long n = v && *v ? strtol(v, NULL, 10) : 50;
        return n > 0 && n < 60000 ? (int)n : 50;
}

/* Whether cfg could be served by the pool at all, known without asking:
 * what the profile the host gets cannot say (a bind by descriptor, a
 * relative path, the uid range, the address-space limit, a credential),
 * and what no pooled jail has (its own root, the host's network, a proxy).
 * A configuration a direct jail refuses is never sent: the direct jail
 * says why, in its words and with its exit status. */
static bool claimable(const corral_jail_config *cfg)
{
        corral_jail_config d;
        corral_jail_config_init(&d);
        bool ok = !cfg->rootfs && cfg->net != CORRAL_NET_HOST && cfg->net != CORRAL_NET_ALLOW &&
                  !cfg->no_timeout && !cfg->stream_unlimited && cfg->n_net_secrets == 0 && !cfg->net_upstream_ca &&
                  cfg->uid_base == d.uid_base && cfg->uid_count == d.uid_count &&
                  cfg->address_space_bytes == d.address_space_bytes &&
                  (cfg->workspace == NULL || cfg->workspace[0] == '/');
        for (size_t i = 0; ok && i < cfg->n_binds; i++)
                ok = cfg->binds[i].src_fd < 0 && cfg->binds[i].src[0] == '/';
        corral_jail_config_release(&d);
        return ok;
}

int exec_pool_claim(const corral_jail_config *cfg, const corral_jail_io *io, corral_jail_result *ret, int *ret_conn,
                    corral_error **ret_err)
{
        *ret_conn = -1;
        const char *env = getenv("CORRAL_EXEC_POOL");
        if ((env && strcmp(env, "0") == 0) || !claimable(cfg))
                return 1;
        /* A host whose pool is on listens beside host.sock: nothing to
         * connect to is the direct path, at once. */
        corral_error *e = NULL;
        cleanup_free char *dir = wire_runtime_dir(false, &e);
        corral_error_free(e);
        struct sockaddr_un sa;
        if (dir == NULL || wire_socket_path(dir, EXEC_POOL_SOCKET, &sa, NULL) < 0)
                return 1;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return 1;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                close(fd);
                return 1; /* no host, or no pool: the direct path, which validates cfg itself */
        }
        e = NULL;
        if (corral_jail_config_validate(cfg, &e) < 0) {
                corral_error_free(e);
                close(fd);
                return 1;
        }
        bool with_stdin = cfg->stdin_mode == CORRAL_STDIN_PIPE;
        int rc = 1, out[3] = { -1, -1, -1 }, ticket = -1;
        size_t nfds = 0;
        json_t *msg = NULL;
        json_t *req = json_pack("{s:s,s:o,s:[]}", "op", "exec-claim", "profile", jail_config_profile_object(cfg),
                                "argv");
        for (size_t i = 0; req && cfg->argv[i]; i++)
                json_array_append_new(json_object_get(req, "argv"), json_string(cfg->argv[i]));
        if (req && with_stdin)
                json_object_set_new(req, "stdin", json_true());
        /* The program text (-c, --code) goes as a sealed memfd: any bytes,
         * any size a direct jail takes, never through the JSON. */
        int text = -1;
        if (req && cfg->script) {
                text = memfd_create("corral-script", MFD_CLOEXEC | MFD_ALLOW_SEALING);
                if (text < 0 || write_all(text, cfg->script, cfg->script_len) < 0 ||
                    fcntl(text, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
                        if (text >= 0)
                                close(text);
                        goto out;
                }
                json_object_set_new(req, "script", json_pack("{s:s,s:i}", "name", cfg->script_name, "fd", 0));
        }
        /* The ticket (ticket_take()): one byte in a pipe, for the host or
         * for us, should we give up waiting. */
        int tp[2] = { -1, -1 };
        if (req && pipe2(tp, O_CLOEXEC | O_NONBLOCK) == 0) {
                bool put = write(tp[1], "t", 1) == 1;
                close(tp[1]);
                if (!put) {
                        close(tp[0]);
                        tp[0] = -1;
                }
        }
        ticket = tp[0];
        int sent_req = -1;
        if (req && ticket >= 0) {
                int sfds[2] = { text, ticket };
                json_object_set_new(req, "ticket", json_integer(text >= 0 ? 1 : 0));
                sent_req = wire_write_fds(fd, req, text >= 0 ? sfds : sfds + 1, text >= 0 ? 2 : 1);
        }
        if (text >= 0)
                close(text);
        if (sent_req < 0)
                goto out;
        size_t want = with_stdin ? 3 : 2;
        struct pollfd answer = { .fd = fd, .events = POLLIN };
        int ready;
        do
                ready = poll(&answer, 1, claim_wait_ms());
        while (ready < 0 && errno == EINTR);
        if (ready == 0 && ticket_take(ticket))
                goto out; /* no jail in time, and the host never took the claim: nothing ran */
        /* The host answers now: it took the claim, or it says why not. */
        msg = wire_read_fds(fd, -1, out, want, &nfds);
        const char *t = json_string_value(json_object_get(msg, "t"));
        if (t == NULL || strcmp(t, "claimed") != 0 || nfds != want) {
                /* A fallback: nothing ran.  Anything else, once the host
                 * took the claim, may have started the program. */
                if ((t && strcmp(t, "fallback") == 0) || ticket_take(ticket))
                        goto out;
                rc = -1;
                corral_fail(ret_err, 0, "the session host failed the claim of a jail made in advance");
                goto out;
        }
        /* From here the program runs: it is never started again. */
        rc = -1;
        const char *notice = json_string_value(json_object_get(msg, "notice"));
        if (notice && strcmp(notice, JAIL_NOTICE_RLIMITS) == 0 && io && io->on_notice)
                io->on_notice(io->userdata, JAIL_NOTICE_RLIMITS);
        corral_jail_result output;
        memset(&output, 0, sizeof(output));
        int stdin_w = out[2];
        out[2] = -1; /* the pump's now */
        if (jail_output_pump(out[0], out[1], stdin_w, cfg, io, fd, &output, ret_err) < 0)
                goto out;
        json_decref(msg);
        msg = wire_read(fd, -1);
        t = json_string_value(json_object_get(msg, "t"));
        if (t == NULL) {
                corral_jail_result_release(&output);
                corral_fail(ret_err, 0, "the session host ended while the program ran");
                goto out;
        }
        if (strcmp(t, "result") == 0 && jail_result_from_json(json_object_get(msg, "result"), ret) == 0) {
                ret->stdout_buf = output.stdout_buf;
                ret->stdout_len = output.stdout_len;
                ret->stderr_buf = output.stderr_buf;
                ret->stderr_len = output.stderr_len;
                ret->stdout_total = output.stdout_total;
                ret->stderr_total = output.stderr_total;
                ret->stdout_truncated = output.stdout_truncated;
                ret->stderr_truncated = output.stderr_truncated;
                /* The classifier's one rule that reads stderr, which the
                 * host did not see (outcome.c: an allocation that failed
                 * under RLIMIT_AS), applied here as a direct jail does. */
                if (ret->backend == CORRAL_BACKEND_RLIMIT && ret->status == CORRAL_STATUS_ERROR &&
                    !ret->stderr_truncated && jail_outcome_memory_error(ret->stderr_buf, ret->stderr_len)) {
                        ret->status = CORRAL_STATUS_OOM;
                        ret->limit = CORRAL_LIMIT_MEMORY;
                        free(ret->reason);
                        if (asprintf(&ret->reason, "memory limit of %" PRIu64 " MiB reached (allocation failed "
                                                   "under RLIMIT_AS)",
                                     cfg->memory_bytes >> 20) < 0)
                                ret->reason = NULL;
                }
                rc = 0;
        } else if (strcmp(t, "fallback") == 0) {
                corral_jail_result_release(&output);
                rc = 1; /* failed before the program started */
        } else {
                corral_jail_result_release(&output);
                const char *m = json_string_value(json_object_get(msg, "message"));
                corral_make_error(ret_err, (int)json_integer_value(json_object_get(msg, "kind")), 0, "%s",
                                  m ? m : "the session host could not run the jail");
                if (strcmp(t, "result") == 0)
                        corral_jail_result_release(ret);
        }
out:
        for (size_t i = 0; i < nfds && i < 3; i++)
                if (out[i] >= 0)
                        close(out[i]);
        if (ticket >= 0)
                close(ticket);
        json_decref(req);
        json_decref(msg);
        if (rc == 0)
                *ret_conn = fd;
        else
                close(fd);
        return rc;
}
