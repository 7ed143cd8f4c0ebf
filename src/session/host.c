/* host.c: the session host, a registry of named sessions (host.h).
 *
 * Each session is an entry with a reference count and a step lock: a request
 * (a step, an archive, a stop) holds the lock for its length, so requests on
 * one session run one at a time while others' run freely.  What `list` and
 * `info` say is a snapshot kept under the host's lock and refreshed as each
 * request ends, so that they never wait for a step.  An entry leaves the
 * registry when its session ends; requests still waiting for its lock then
 * find it ended and say there is no such session.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../lib/util.h"
#include "../workspace/workspace.h"
#include "host.h"
#include "warm.h"

struct hosted {
        char id[SESSION_ID_LEN + 1];
        struct hosted *next;
        unsigned refs;           /* under the host's lock */
        pthread_mutex_t step;    /* held by the one request running */
        bool ready;              /* started: found and listed */
        bool ended;              /* stopped or expired: gone from the registry */
        bool busy;               /* a request holds step */
        int cancel;              /* eventfd: readable cancels the running step (the session is ending) */

        /* Under step: */
        struct session *s;
        struct workspace *ws;    /* a temporary workspace (removed at the end), or NULL */
        int ws_lock;             /* holds that workspace against sweeps, or -1 */
        corral_jail_config cfg;
        int *fds;                /* what cfg's binds borrow, closed at the end */
        size_t n_fds;
        double default_timeout;
        uint64_t default_output;

        /* The snapshot, under the host's lock: */
        time_t started;
        unsigned steps;
        bool alive;
        bool warm;
        double deadline_ms;
        const char *expires_by;
        json_t *from;
        /* Its steps' costs: CPU over all, the highest peak of memory, and
         * the last SESSION_RECENT_MAX steps (a ring, next at n_recent %). */
        double cpu_ms;
        uint64_t memory_peak;
        struct hosted_step {
                time_t at;
                unsigned step;
                const char *status; /* session_status_to_string()'s */
                int exit_code;
                double wall_ms, cpu_ms;
                uint64_t memory_peak;
        } recent[SESSION_RECENT_MAX];
        unsigned n_recent;
};

struct session_host {
        pthread_mutex_t lock;
        struct hosted *sessions; /* oldest first */
        int live;                /* sessions being started or alive */
        double idle_since_ms;    /* when live last became 0 */
        bool warm_held;          /* we hold warm_ref(): the zygote outlives sessions */
        bool prestarted;         /* warm_prestart(): the zygote is starting or up */
        bool closing;
        struct session_host_options opt;
};

bool session_id_valid(const char *id)
{
        if (id == NULL || strlen(id) != SESSION_ID_LEN)
                return false;
        for (const char *p = id; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

int session_id_make(char *id, corral_error **ret_err)
{
        unsigned char rnd[SESSION_ID_LEN / 2];
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                return corral_fail(ret_err, errno, "cannot make a session ID");
        for (size_t i = 0; i < sizeof(rnd); i++)
                snprintf(id + 2 * i, 3, "%02x", rnd[i]);
        return 0;
}

int session_host_new(const struct session_host_options *opt, struct session_host **ret, corral_error **ret_err)
{
        struct session_host *h = calloc(1, sizeof(*h));
        if (h == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot make a session host");
        pthread_mutex_init(&h->lock, NULL);
        h->opt = *opt;
        h->idle_since_ms = monotonic_ms();
        *ret = h;
        return 0;
}

/* ---- entries ---- */

static void hosted_put(struct session_host *h, struct hosted *e)
{
        pthread_mutex_lock(&h->lock);
        bool last = --e->refs == 0;
        pthread_mutex_unlock(&h->lock);
        if (!last)
                return;
        pthread_mutex_destroy(&e->step);
        json_decref(e->from);
        if (e->cancel >= 0)
                close(e->cancel);
        free(e);
}

/* Refresh the snapshot from the session (under its step lock). */
static void hosted_snapshot(struct session_host *h, struct hosted *e)
{
        const char *why = NULL;
        double deadline = e->s ? session_deadline_ms(e->s, &why) : 0;
        unsigned steps = e->s ? session_steps(e->s) : 0;
        bool alive = e->s && session_alive(e->s);
        const json_t *from = e->s ? session_from(e->s) : NULL;
        pthread_mutex_lock(&h->lock);
        e->deadline_ms = deadline;
        e->expires_by = why;
        e->steps = steps;
        e->alive = alive;
        if (e->from == NULL && from)
                e->from = json_deep_copy(from);
        pthread_mutex_unlock(&h->lock);
}

/* Take session id for a request: its step lock held, a reference taken.
 * Usage error when there is none (or it ended while we waited). */
static int hosted_take(struct session_host *h, const char *id, struct hosted **ret, corral_error **ret_err)
{
        struct hosted *e = NULL;
        pthread_mutex_lock(&h->lock);
        for (e = h->sessions; e; e = e->next)
                if (e->ready && strcmp(e->id, id) == 0)
                        break;
        if (e)
                e->refs++;
        pthread_mutex_unlock(&h->lock);
        if (e == NULL)
                return corral_usage(ret_err, "no session '%s'", id);
        pthread_mutex_lock(&e->step);
        pthread_mutex_lock(&h->lock);
        bool ended = e->ended;
        if (!ended)
                e->busy = true;
        pthread_mutex_unlock(&h->lock);
        if (ended) {
                pthread_mutex_unlock(&e->step);
                hosted_put(h, e);
                return corral_usage(ret_err, "no session '%s': it has ended", id);
        }
        *ret = e;
        return 0;
}

static void hosted_give_back(struct session_host *h, struct hosted *e)
{
        hosted_snapshot(h, e);
        pthread_mutex_lock(&h->lock);
        e->busy = false;
        pthread_mutex_unlock(&h->lock);
        pthread_mutex_unlock(&e->step);
        hosted_put(h, e);
}

static void close_fds(struct hosted *e)
{
        for (size_t i = 0; i < e->n_fds; i++)
                close(e->fds[i]);
        free(e->fds);
        e->fds = NULL;
        e->n_fds = 0;
}

/* Tear the session down and take it out of the registry; under its step
 * lock, which is released, with the caller's reference. */
static void hosted_end(struct session_host *h, struct hosted *e)
{
        session_free(e->s);
        e->s = NULL;
        workspace_close(e->ws, true);
        e->ws = NULL;
        if (e->ws_lock >= 0)
                close(e->ws_lock);
        e->ws_lock = -1;
        close_fds(e);
        pthread_mutex_lock(&h->lock);
        bool was_ready = e->ready;
        e->ended = true;
        e->busy = false;
        for (struct hosted **p = &h->sessions; *p; p = &(*p)->next) {
                if (*p == e) {
                        *p = e->next;
                        e->refs--; /* the registry's */
                        break;
                }
        }
        if (--h->live == 0)
                h->idle_since_ms = monotonic_ms();
        pthread_mutex_unlock(&h->lock);
        /* Out of the registry first: session_host_info() reads it (its
         * workspace) under the host's lock, not the step lock. */
        corral_jail_config_release(&e->cfg);
        pthread_mutex_unlock(&e->step);
        if (was_ready && h->opt.on_session_end)
                h->opt.on_session_end(h->opt.userdata, e->id);
        hosted_put(h, e);
}

/* ---- start ---- */

/* Start the session of e (its step lock held): the workspace, the archive,
 * the interpreter, warm or (where warm was only the default) cold. */
static int hosted_start(struct session_host *h, struct hosted *e, struct session_spec *spec, char **ret_notice,
                        bool *ret_refused, corral_error **ret_err)
{
        corral_jail_config *cfg = &e->cfg;
        struct session_options sopt = spec->opt;
        bool ws_given = cfg->workspace != NULL, restored = false;
        if (!ws_given) {
                /* Where the client's TMPDIR says, held (flock) until it is
                 * removed; those a killed host left there go first. */
                workspace_sweep(spec->tmpdir);
                if (workspace_make_temporary(spec->tmpdir, &cfg->workspace, &e->ws_lock, ret_err) < 0)
                        return -1;
        }
        if (spec->from) {
                /* Extracted here, before the session, so that a refusal is
                 * told apart. */
                if (session_restore(spec->from, cfg->workspace, NULL, ret_err) < 0) {
                        *ret_refused = true;
                        /* Ours (temporary, or -w DIR made for it): the
                         * extraction left it as it was. */
                        if (!spec->ws_existed)
                                (void)rmdir(cfg->workspace);
                        return -1;
                }
                restored = true;
                sopt.from = spec->from;
                sopt.from_extracted = true;
                if (!ws_given)
                        (void)chmod(cfg->workspace, 0700); /* the archive's mode is not ours */
        }
        /* A temporary workspace is removed with the session. */
        if (!ws_given && workspace_open(cfg->workspace, &e->ws, ret_err) < 0) {
                if (!restored)
                        (void)rmdir(cfg->workspace);
                return -1;
        }
        corral_error *err = NULL;
        if (session_start(cfg, &sopt, &e->s, &err) < 0 && sopt.warm && !spec->warm_asked &&
            (err == NULL || err->kind != CORRAL_ERR_USAGE)) {
                /* Warm was only the default: a session that cannot start
                 * so (a memory limit under rlimits below what the zygote's
                 * imports map, a zygote that does not start) starts cold. */
                cleanup_free char *why = strdup(err ? err->msg : "?");
                if (asprintf(ret_notice, "no warm session (%s): a cold one instead", why ? why : "?") < 0)
                        *ret_notice = NULL;
                corral_error_clear(&err);
                sopt.warm = false;
                if (session_start(cfg, &sopt, &e->s, &err) < 0)
                        corral_error_prefix(&err, "no warm session (%s), and a cold one", why ? why : "?");
        }
        if (e->s == NULL) {
                if (restored && ws_given)
                        session_restore_undo(cfg->workspace, spec->ws_existed);
                if (ret_err)
                        *ret_err = err;
                else
                        corral_error_free(err);
                return -1;
        }
        e->warm = sopt.warm;
        return 0;
}

int session_host_start(struct session_host *h, const char *id, struct session_spec *spec, json_t **ret_started,
                       bool *ret_refused, corral_error **ret_err)
{
        *ret_refused = false;
        cleanup_free char *notice = NULL;
        struct hosted *e = calloc(1, sizeof(*e));
        if (e == NULL) {
                corral_jail_config_release(&spec->cfg);
                return corral_fail(ret_err, ENOMEM, "cannot start the session");
        }
        e->cfg = spec->cfg; /* ours now */
        corral_jail_config_init(&spec->cfg);
        if (spec->n_fds > 0 && (e->fds = malloc(spec->n_fds * sizeof(int))) != NULL) {
                for (size_t i = 0; i < spec->n_fds; i++) {
                        if (spec->fds[i] >= 0)
                                e->fds[e->n_fds++] = spec->fds[i];
                        spec->fds[i] = -1;
                }
        }
        e->ws_lock = -1;
        e->cancel = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        e->refs = 1; /* the caller's, until the end of this call */
        e->started = time(NULL);
        pthread_mutex_init(&e->step, NULL);
        if (e->cancel < 0) {
                corral_fail(ret_err, errno, "cannot start the session");
                goto free;
        }
        if (!session_id_valid(id)) {
                corral_usage(ret_err, "a session ID is %d hex digits", SESSION_ID_LEN);
                goto free;
        }
        memcpy(e->id, id, SESSION_ID_LEN + 1);
        if (spec->from && spec->from[0] != '/') {
                corral_usage(ret_err, "the archive to resume from must be an absolute path");
                goto free;
        }
        if (!(spec->opt.lifetime_s > 0) || spec->opt.idle_timeout_s < 0 || spec->opt.grace_s < 0) {
                corral_usage(ret_err, "a session's idle timeout, lifetime and grace must be positive");
                goto free;
        }
        if (corral_jail_config_validate(&e->cfg, ret_err) < 0 ||
            (spec->opt.warm && warm_supported(&e->cfg, ret_err) < 0))
                goto free;
        e->default_timeout = e->cfg.timeout_s;
        e->default_output = e->cfg.output_limit;

        pthread_mutex_lock(&h->lock);
        bool taken = false;
        for (struct hosted *o = h->sessions; o; o = o->next)
                taken |= strcmp(o->id, id) == 0;
        if (h->closing || taken) {
                pthread_mutex_unlock(&h->lock);
                if (taken)
                        corral_usage(ret_err, "session '%s' exists already", id);
                else
                        corral_fail(ret_err, 0, "the session host is ending");
                goto free;
        }
        /* In the registry (unlisted until ready) so that the host counts
         * it and does not end meanwhile. */
        struct hosted **tail = &h->sessions;
        while (*tail)
                tail = &(*tail)->next;
        *tail = e;
        e->refs++;
        h->live++;
        if (spec->opt.warm && !h->warm_held) {
                /* From now on the zygote outlives each session; released
                 * when the host is freed. */
                warm_ref();
                h->warm_held = true;
        }
        pthread_mutex_unlock(&h->lock);

        pthread_mutex_lock(&e->step);
        if (hosted_start(h, e, spec, &notice, ret_refused, ret_err) < 0) {
                hosted_end(h, e); /* releases step, the config and both references */
                return -1;
        }
        json_t *started = json_pack("{s:s,s:s,s:b,s:s?}", "id", e->id, "workspace", e->cfg.workspace, "warm",
                                    e->warm, "notice", notice);
        hosted_snapshot(h, e);
        pthread_mutex_lock(&h->lock);
        e->ready = true;
        json_object_set(started, "from", e->from ? e->from : json_null());
        pthread_mutex_unlock(&h->lock);
        pthread_mutex_unlock(&e->step);
        hosted_put(h, e);
        if (started == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot describe the session");
        *ret_started = started;
        return 0;
free:
        corral_jail_config_release(&e->cfg);
        close_fds(e);
        hosted_put(h, e);
        return -1;
}

/* ---- requests ---- */

/* Each figure's path on the host, beside its path in the jail. */
static void figures_host_paths(const char *ws_root, json_t *figures)
{
        size_t i;
        json_t *f;
        json_array_foreach(figures, i, f) {
                const char *p = json_string_value(json_object_get(f, "path"));
                if (ws_root && p && strncmp(p, "/workspace/", 11) == 0 && strstr(p, "..") == NULL) {
                        char *hp = NULL;
                        if (asprintf(&hp, "%s/%s", ws_root, p + 11) >= 0) {
                                json_object_set_new(f, "host_path", json_string(hp));
                                free(hp);
                        }
                }
        }
}

int session_host_exec(struct session_host *h, const char *id, const char *code, size_t len,
                      const struct session_step_limits *lim, const struct session_callbacks *cb,
                      bool (*on_begin)(void *userdata), json_t **ret_result, corral_error **ret_err)
{
        *ret_result = NULL;
        struct hosted *e;
        if (hosted_take(h, id, &e, ret_err) < 0)
                return -1;
        if (on_begin && !on_begin(cb ? cb->userdata : NULL)) {
                hosted_give_back(h, e);
                return 0;
        }
        struct session_step_limits l = *lim;
        if (!(l.timeout_s > 0))
                l.timeout_s = e->default_timeout;
        if (l.output_limit == 0)
                l.output_limit = e->default_output;
        l.cancel_fd = e->cancel;
        struct session_result res;
        time_t at = time(NULL);
        int rc = session_exec(e->s, code, len, &l, cb, &res, ret_err);
        if (rc == 0) {
                pthread_mutex_lock(&h->lock);
                e->recent[e->n_recent++ % SESSION_RECENT_MAX] = (struct hosted_step){
                        .at = at, .step = res.step, .status = session_status_to_string(res.status),
                        .exit_code = res.exit_code, .wall_ms = res.wall_ms, .cpu_ms = res.cpu_ms,
                        .memory_peak = res.peak_memory_bytes };
                e->cpu_ms += res.cpu_ms;
                if (res.peak_memory_bytes > e->memory_peak)
                        e->memory_peak = res.peak_memory_bytes;
                pthread_mutex_unlock(&h->lock);
                json_t *r = session_result_to_json(&res);
                session_result_release(&res);
                if (r == NULL) {
                        rc = corral_fail(ret_err, ENOMEM, "cannot describe the step's result");
                } else {
                        json_object_set_new(r, "session", json_string(e->id));
                        figures_host_paths(e->cfg.workspace, json_object_get(r, "figures"));
                        *ret_result = r;
                }
        }
        hosted_give_back(h, e);
        return rc;
}

int session_host_archive(struct session_host *h, const char *id, const char *path, bool stop,
                         bool (*confirm)(void *userdata), void *userdata, json_t **ret_report, corral_error **ret_err)
{
        *ret_report = NULL;
        if (path == NULL || path[0] != '/')
                return corral_usage(ret_err, "the archive's path must be absolute");
        struct hosted *e;
        if (hosted_take(h, id, &e, ret_err) < 0)
                return -1;
        if (confirm && !confirm(userdata)) {
                hosted_give_back(h, e);
                return 1;
        }
        /* A path inside the workspace (which stop would remove, and which
         * the jail can write) is refused by session_archive(). */
        json_t *report = NULL;
        if (session_archive(e->s, path, e->id, &report, ret_err) < 0) {
                hosted_give_back(h, e);
                return -1;
        }
        json_object_set_new(report, "session", json_string(e->id));
        json_object_set_new(report, "stopped", json_boolean(stop));
        *ret_report = report;
        if (stop)
                hosted_end(h, e);
        else
                hosted_give_back(h, e);
        return 0;
}

static void poke(int fd)
{
        uint64_t one = 1;
        ssize_t n = write(fd, &one, sizeof(one));
        (void)n;
}

int session_host_stop_now(struct session_host *h, const char *id, corral_error **ret_err)
{
        pthread_mutex_lock(&h->lock);
        for (struct hosted *e = h->sessions; e; e = e->next)
                if (e->ready && strcmp(e->id, id) == 0)
                        poke(e->cancel);
        pthread_mutex_unlock(&h->lock);
        return session_host_stop(h, id, ret_err);
}

void session_host_cancel_all(struct session_host *h)
{
        pthread_mutex_lock(&h->lock);
        h->closing = true; /* and no new session */
        for (struct hosted *e = h->sessions; e; e = e->next)
                poke(e->cancel);
        pthread_mutex_unlock(&h->lock);
}

int session_host_stop(struct session_host *h, const char *id, corral_error **ret_err)
{
        struct hosted *e;
        if (hosted_take(h, id, &e, ret_err) < 0)
                return -1;
        hosted_end(h, e);
        return 0;
}

int session_host_set_expiry(struct session_host *h, const char *id, double seconds, double *ret_granted,
                            corral_error **ret_err)
{
        struct hosted *e;
        if (hosted_take(h, id, &e, ret_err) < 0)
                return -1;
        double granted = e->s ? session_set_expiry(e->s, seconds) : 0;
        hosted_give_back(h, e);
        if (ret_granted)
                *ret_granted = granted;
        return 0;
}

/* ---- what the registry says ---- */

/* Its last steps, newest first: what they did and cost. */
static json_t *hosted_recent(const struct hosted *e)
{
        json_t *a = json_array();
        unsigned n = e->n_recent < SESSION_RECENT_MAX ? e->n_recent : SESSION_RECENT_MAX;
        for (unsigned k = 0; a && k < n; k++) {
                const struct hosted_step *st = &e->recent[(e->n_recent - 1 - k) % SESSION_RECENT_MAX];
                char when[32];
                struct tm tm;
                strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&st->at, &tm));
                json_array_append_new(a, json_pack("{s:I,s:s,s:s,s:i,s:f,s:f,s:I}", "step", (json_int_t)st->step,
                                                   "started_at", when, "status", st->status, "exit_code",
                                                   st->exit_code, "wall_ms", st->wall_ms, "cpu_ms", st->cpu_ms,
                                                   "memory_peak_bytes", (json_int_t)st->memory_peak));
        }
        return a;
}

static json_t *hosted_info(const struct hosted *e, double now)
{
        double left = (e->deadline_ms - now) / 1000;
        return json_pack("{s:s,s:I,s:s?,s:I,s:b,s:b,s:f,s:s?,s:o?,s:b,s:{s:f,s:I},s:o?}", "id", e->id, "started",
                         (json_int_t)e->started, "workspace", e->cfg.workspace, "steps", (json_int_t)e->steps,
                         "alive", e->alive, "busy", e->busy, "expires_in_s", left > 0 ? left : 0, "expires_by",
                         e->expires_by, "from", json_deep_copy(e->from), "warm", e->warm, "usage", "cpu_ms",
                         e->cpu_ms, "memory_peak_bytes", (json_int_t)e->memory_peak, "recent", hosted_recent(e));
}

json_t *session_host_info(struct session_host *h, const char *id, corral_error **ret_err)
{
        json_t *info = NULL;
        bool found = false;
        double now = monotonic_ms();
        pthread_mutex_lock(&h->lock);
        for (struct hosted *e = h->sessions; e; e = e->next) {
                if (e->ready && strcmp(e->id, id) == 0) {
                        found = true;
                        info = hosted_info(e, now);
                        break;
                }
        }
        pthread_mutex_unlock(&h->lock);
        if (!found)
                corral_usage(ret_err, "no session '%s'", id);
        else if (info == NULL)
                corral_fail(ret_err, ENOMEM, "cannot describe session '%s'", id);
        return info;
}

json_t *session_host_list(struct session_host *h)
{
        json_t *all = json_array();
        double now = monotonic_ms();
        pthread_mutex_lock(&h->lock);
        for (struct hosted *e = h->sessions; e && all; e = e->next)
                if (e->ready)
                        json_array_append_new(all, hosted_info(e, now));
        pthread_mutex_unlock(&h->lock);
        return all;
}

json_t *session_host_status(struct session_host *h)
{
        pthread_mutex_lock(&h->lock);
        int live = h->live;
        bool warm = h->warm_held || h->prestarted;
        pthread_mutex_unlock(&h->lock);
        return json_pack("{s:i,s:b,s:i,s:i}", "sessions", live, "warm", warm, "zygote_pid", (int)warm_zygote_pid(),
                         "pool", warm_pool_size());
}

void session_host_prewarm(struct session_host *h)
{
        pthread_mutex_lock(&h->lock);
        bool start = !h->prestarted && !h->closing;
        h->prestarted = true;
        pthread_mutex_unlock(&h->lock);
        if (start)
                warm_prestart();
}

int session_host_count(struct session_host *h, double *ret_idle_since_ms, bool *ret_warm)
{
        pthread_mutex_lock(&h->lock);
        int live = h->live;
        if (ret_idle_since_ms)
                *ret_idle_since_ms = h->idle_since_ms;
        if (ret_warm)
                *ret_warm = h->warm_held || h->prestarted;
        pthread_mutex_unlock(&h->lock);
        return live;
}

double session_host_expire(struct session_host *h)
{
        for (;;) {
                double now = monotonic_ms(), next = 1e18;
                struct hosted *due = NULL;
                pthread_mutex_lock(&h->lock);
                for (struct hosted *e = h->sessions; e; e = e->next) {
                        if (!e->ready || e->busy)
                                continue;
                        if (e->deadline_ms <= now && due == NULL) {
                                due = e;
                                e->refs++;
                        } else if (e->deadline_ms < next) {
                                next = e->deadline_ms;
                        }
                }
                pthread_mutex_unlock(&h->lock);
                if (due == NULL)
                        return next;
                /* A request that took it meanwhile runs first; the
                 * deadline is checked again afterwards. */
                if (pthread_mutex_trylock(&due->step) != 0) {
                        hosted_put(h, due);
                        return now + 100;
                }
                bool still = !due->ended && due->s && session_deadline_ms(due->s, NULL) <= monotonic_ms();
                if (still) {
                        hosted_end(h, due);
                } else {
                        pthread_mutex_unlock(&due->step);
                        hosted_snapshot(h, due);
                        hosted_put(h, due);
                }
        }
}

void session_host_free(struct session_host *h)
{
        if (h == NULL)
                return;
        pthread_mutex_lock(&h->lock);
        h->closing = true;
        pthread_mutex_unlock(&h->lock);
        for (;;) {
                pthread_mutex_lock(&h->lock);
                struct hosted *e = h->sessions;
                if (e)
                        e->refs++;
                pthread_mutex_unlock(&h->lock);
                if (e == NULL)
                        break;
                pthread_mutex_lock(&e->step);
                if (e->ended) {
                        pthread_mutex_unlock(&e->step);
                        hosted_put(h, e);
                        continue;
                }
                hosted_end(h, e);
        }
        if (h->warm_held)
                warm_unref();
        if (h->prestarted)
                warm_prestart_end();
        pthread_mutex_destroy(&h->lock);
        free(h);
}
