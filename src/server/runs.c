/* runs.c: agent runs over HTTP (docs/api.md, "Runs"): POST /v1/runs starts
 * one on a thread of its own (run_open() on the request's thread, so that
 * what the caller can fix is a 400; run_execute() and run_finish() on the
 * run's), GET lists and describes them, POST .../cancel cancels, and
 * .../events sends the run's trace as server-sent events: from the start
 * (or after Last-Event-ID), then live, to its run_end.
 *
 * Records: DATA/runs/ID/ (run.h's records: trace.jsonl, output/), with
 * serve.json (the owner, written when the run starts), result.json (what
 * GET answers, written when it ends) and workspace.tar.  The registry is
 * rebuilt from them at start; a run without result.json was going when a
 * server died: "interrupted".
 *
 * Events: while a run goes, every event it emits is kept in a log in memory
 * (a synchronous subscriber: one copy per event, never a wait on a client);
 * followers read the log at their own pace, each from a thread of its own.
 * A follower whose client has not taken RUN_BACKLOG bytes for
 * RUN_BACKLOG_WAIT_S is ended with an "event: dropped" (it reconnects with
 * Last-Event-ID); the run never waits for one.  A finished run's events come
 * from its trace file.
 *
 * The API key (the server's, or the request's X-Model-Api-Key) lives in the
 * model client in this process alone: it is one of the run's secrets
 * (redacted from the trace and the result), never in a record, an answer or
 * a jail's environment.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../agent/records.h"
#include "../agent/run.h"
#include "../lib/redact.h"
#include "../review/review.h"
#include "server-internal.h"

#define PREFIX "/v1/runs"
#define RUN_ID_MAX 64
#define RUN_BACKLOG (1u << 20)      /* bytes a follower may leave untaken */
#define RUN_BACKLOG_WAIT_S 5.0      /* ... for this long before it is dropped */
#define RUN_INPUTS_MAX 1000
#define RUN_API_KEY_MAX 4096

/* A live run's events, shared by the run and its followers. */
struct run_log {
        const struct server *s;  /* its data directory is masked in the events */
        pthread_mutex_t lock;
        pthread_cond_t more;
        char **text;             /* each event's compact JSON */
        char **type;
        size_t n, cap;
        bool ended;              /* no event will be added */
        unsigned refs;           /* under lock */
        int *wakes;              /* eventfds written at each event and the end (WebSocket followers') */
        size_t n_wakes, cap_wakes;
};

struct srv_run {
        struct srv_run *next;
        char id[RUN_ID_MAX];
        int owner;               /* principal; -1: one this server does not know */
        char *status;            /* "running", run_end's status, "interrupted" */
        json_t *info;            /* {task, model, created}: what GET shows while it goes */
        json_t *result;          /* result.json, once ended */
        struct run *r;           /* while its thread runs */
        bool finishing;          /* its loop has ended: r is about to go (no approval is asked) */
        int cancel_fd;           /* eventfd, or -1 */
        struct run_log *log;     /* while it runs; followers hold their own reference */
        pthread_t thread;
        bool thread_started, joined;
        bool server_stop;        /* cancelled by the server's stop */
        char *api_key;           /* the request's, until run_open(); zeroed */
        corral_jail_config jail;
        struct review_policy *review;
        char *manifest;          /* inputs, a file in the server's work dir until run_open() */
        char *archive;           /* the workspace's archive, in the server's work dir until the end */
        json_t *body;            /* the request: run_config's strings point into it */
        char *staging;           /* sandboxes' files for the inputs, until the run ends */
        char *desc_text;         /* an ended run's description as JSON text (it no longer changes) */
        char *ws_dir;            /* its workspace's host directory while it goes (under s->lock):
                                  * GET .../artifacts serves output/ from there */
        size_t n_staged;
        /* While it goes: model replies and their tokens so far, for the list
         * (the web view's); the result has the final counts. */
        _Atomic uint64_t live_iterations, live_prompt, live_completion;
};

struct runs {
        char *dir;               /* DATA/runs */
        struct srv_run *list;    /* newest first; under s->lock */
        unsigned running;
        unsigned *running_of;    /* per principal */
        size_t n_principals;
        pthread_t *zombies;      /* removed runs' threads, to join (under s->lock) */
        size_t n_zombies, cap_zombies;
};

/* CLOCK_REALTIME in seconds, to the millisecond: "created" and "ended". */
static double realtime_s(void)
{
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        return (double)t.tv_sec + (double)(t.tv_nsec / 1000000) / 1000;
}

/* ---- the log ---- */

static struct run_log *log_new(const struct server *s)
{
        struct run_log *l = calloc(1, sizeof(*l));
        if (l == NULL)
                return NULL;
        l->s = s;
        pthread_mutex_init(&l->lock, NULL);
        pthread_cond_init(&l->more, NULL);
        l->refs = 1;
        return l;
}

static void log_put(struct run_log *l)
{
        if (l == NULL)
                return;
        pthread_mutex_lock(&l->lock);
        bool last = --l->refs == 0;
        pthread_mutex_unlock(&l->lock);
        if (!last)
                return;
        for (size_t i = 0; i < l->n; i++) {
                free(l->text[i]);
                free(l->type[i]);
        }
        free(l->text);
        free(l->type);
        free(l->wakes);
        pthread_mutex_destroy(&l->lock);
        pthread_cond_destroy(&l->more);
        free(l);
}

/* Wake the followers that poll (l->lock held). */
static void log_wake_locked(struct run_log *l)
{
        uint64_t one = 1;
        for (size_t i = 0; i < l->n_wakes; i++)
                if (write(l->wakes[i], &one, sizeof(one)) < 0) {
                        /* EAGAIN: it is readable already */
                }
}

/* fd (an eventfd) written at each new event and at the end; false when
 * out of memory. */
static bool log_watch(struct run_log *l, int fd)
{
        pthread_mutex_lock(&l->lock);
        if (l->n_wakes == l->cap_wakes) {
                size_t cap = l->cap_wakes ? 2 * l->cap_wakes : 4;
                int *a = realloc(l->wakes, cap * sizeof(*a));
                if (a == NULL) {
                        pthread_mutex_unlock(&l->lock);
                        return false;
                }
                l->wakes = a;
                l->cap_wakes = cap;
        }
        l->wakes[l->n_wakes++] = fd;
        pthread_mutex_unlock(&l->lock);
        return true;
}

static void log_unwatch(struct run_log *l, int fd)
{
        pthread_mutex_lock(&l->lock);
        for (size_t i = 0; i < l->n_wakes; i++)
                if (l->wakes[i] == fd) {
                        l->wakes[i] = l->wakes[--l->n_wakes];
                        break;
                }
        pthread_mutex_unlock(&l->lock);
}

/* An event as a caller sees it, as compact JSON (malloc'd): the host's
 * paths left out (run_start's workspace and trace, run_end's output_dir),
 * and the server's data directory masked wherever a message names it (a
 * notice says where the workspace was archived, an error where a copy
 * failed): callers see the run, not the host's layout. */
static char *event_text(const struct server *s, const json_t *event)
{
        const char *type = json_string_value(json_object_get(event, "type"));
        json_t *pub;
        if (type != NULL && (strcmp(type, "run_start") == 0 || strcmp(type, "run_end") == 0)) {
                pub = json_copy((json_t *)event);
                if (pub) {
                        json_object_del(pub, "workspace");
                        json_object_del(pub, "trace");
                        json_object_del(pub, "output_dir");
                        json_object_del(pub, "cwd");
                }
        } else {
                pub = json_incref((json_t *)event);
        }
        char *text = pub ? json_dumps(pub, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
        if (text && s && s->data_dir_json && strstr(text, s->data_dir_json) != NULL) {
                json_t *copy = json_deep_copy(pub);
                const char *const hide[] = { s->data_dir, NULL };
                free(text);
                text = NULL;
                if (copy) {
                        redact_json(copy, hide);
                        text = json_dumps(copy, JSON_COMPACT | JSON_REAL_PRECISION(15));
                }
                json_decref(copy);
        }
        json_decref(pub);
        return text;
}

static void log_append(struct run_log *l, const json_t *event)
{
        const char *type = json_string_value(json_object_get(event, "type"));
        char *text = event_text(l->s, event);
        char *t = strdup(type ? type : "event");
        pthread_mutex_lock(&l->lock);
        if (text && t && l->n == l->cap) {
                size_t cap = l->cap ? 2 * l->cap : 64;
                char **a = realloc(l->text, cap * sizeof(*a));
                if (a)
                        l->text = a;
                char **b = a ? realloc(l->type, cap * sizeof(*b)) : NULL;
                if (b) {
                        l->type = b;
                        l->cap = cap;
                }
        }
        if (text && t && l->n < l->cap) {
                l->text[l->n] = TAKE_PTR(text);
                l->type[l->n] = TAKE_PTR(t);
                l->n++;
                pthread_cond_broadcast(&l->more);
                log_wake_locked(l);
        }
        pthread_mutex_unlock(&l->lock);
        free(text);
        free(t);
}

static void log_append_event(void *ud, const json_t *event)
{
        log_append(ud, event);
}

static void log_end(struct run_log *l)
{
        pthread_mutex_lock(&l->lock);
        l->ended = true;
        pthread_cond_broadcast(&l->more);
        log_wake_locked(l);
        pthread_mutex_unlock(&l->lock);
}

/* ---- records ---- */

/* DATA/runs/ID opened as a directory, not through a link. */
static int open_run_dir(struct runs *rs, const char *id)
{
        int dfd = open(rs->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0)
                return -1;
        int fd = openat(dfd, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        close(dfd);
        return fd;
}

/* A small JSON file of ours in the run's records (replaced whole). */
static void record_write(struct runs *rs, const char *id, const char *name, json_t *j)
{
        cleanup_close int dfd = open_run_dir(rs, id);
        cleanup_free char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15));
        char tmp[64];
        snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
        if (dfd < 0 || text == NULL)
                return;
        unlinkat(dfd, tmp, 0);
        int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return;
        bool ok = write_all(fd, text, strlen(text)) == 0 && write_all(fd, "\n", 1) == 0;
        close(fd);
        if (!ok || renameat(dfd, tmp, dfd, name) < 0)
                unlinkat(dfd, tmp, 0);
}

static json_t *record_read(struct runs *rs, const char *id, const char *name)
{
        cleanup_close int dfd = open_run_dir(rs, id);
        char *text = NULL;
        size_t len = 0;
        if (dfd < 0 || ws_read_beneath(dfd, name, 16u << 20, &text, &len) < 0)
                return NULL;
        json_t *j = json_loadb(text, len, 0, NULL);
        free(text);
        return json_is_object(j) ? j : (json_decref(j), NULL);
}

/* ---- the registry ---- */

/* Remove the staging directory and the files in it. */
static void staging_remove(struct srv_run *sr)
{
        if (sr->staging == NULL)
                return;
        int dfd = open(sr->staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        for (size_t i = 0; dfd >= 0 && i < sr->n_staged; i++) {
                char name[32];
                snprintf(name, sizeof(name), "%zu", i);
                unlinkat(dfd, name, 0);
        }
        if (dfd >= 0)
                close(dfd);
        rmdir(sr->staging);
        free(TAKE_PTR(sr->staging));
        sr->n_staged = 0;
}

static void srv_run_free(struct srv_run *sr)
{
        if (sr == NULL)
                return;
        staging_remove(sr);
        free(sr->status);
        json_decref(sr->info);
        json_decref(sr->result);
        json_decref(sr->body);
        free(sr->desc_text);
        free(sr->ws_dir);
        if (sr->cancel_fd >= 0)
                close(sr->cancel_fd);
        log_put(sr->log);
        if (sr->api_key) {
                explicit_bzero(sr->api_key, strlen(sr->api_key));
                free(sr->api_key);
        }
        corral_jail_config_release(&sr->jail);
        review_policy_free(sr->review);
        if (sr->manifest) {
                unlink(sr->manifest);
                free(sr->manifest);
        }
        if (sr->archive) {
                unlink(sr->archive);
                free(sr->archive);
        }
        free(sr);
}

static struct srv_run *srv_run_new(void)
{
        struct srv_run *sr = calloc(1, sizeof(*sr));
        if (sr == NULL)
                return NULL;
        sr->cancel_fd = -1;
        sr->owner = -1;
        corral_jail_config_init(&sr->jail);
        return sr;
}

static int principal_of(struct server *s, const char *name)
{
        for (size_t i = 0; name && i < auth_count(s->auth); i++)
                if (strcmp(auth_name(s->auth, (int)i), name) == 0)
                        return (int)i;
        return -1;
}

/* One recorded run: serve.json says it is ours (and whose). */
static void load_one(struct server *s, const char *id)
{
        struct runs *rs = s->runs;
        json_t *serve = record_read(rs, id, "serve.json");
        if (serve == NULL)
                return;
        struct srv_run *sr = srv_run_new();
        if (sr == NULL) {
                json_decref(serve);
                return;
        }
        snprintf(sr->id, sizeof(sr->id), "%s", id);
        sr->owner = principal_of(s, json_string_value(json_object_get(serve, "owner")));
        sr->info = json_pack("{s:O*,s:O*,s:O*}", "task", json_object_get(serve, "task"), "model",
                             json_object_get(serve, "model"), "created", json_object_get(serve, "created"));
        sr->result = record_read(rs, id, "result.json");
        const char *st = json_string_value(json_object_get(sr->result, "status"));
        sr->status = strdup(st ? st : "interrupted");
        json_decref(serve);
        if (sr->info == NULL || sr->status == NULL) {
                srv_run_free(sr);
                return;
        }
        /* records_list() is newest first: appended at the tail. */
        struct srv_run **tail = &rs->list;
        while (*tail)
                tail = &(*tail)->next;
        *tail = sr;
}

static int newer_first(const void *a, const void *b)
{
        const struct srv_run *x = *(struct srv_run *const *)a, *y = *(struct srv_run *const *)b;
        double cx = json_number_value(json_object_get(x->info, "created"));
        double cy = json_number_value(json_object_get(y->info, "created"));
        return cx > cy ? -1 : cx < cy ? 1 : -strcmp(x->id, y->id);
}

/* The loaded list in the order the runs were made, newest first: by
 * "created" (to the millisecond; whole seconds in older records, then by
 * ID). */
static void runs_sort(struct runs *rs)
{
        size_t n = 0;
        for (struct srv_run *sr = rs->list; sr; sr = sr->next)
                n++;
        struct srv_run **v = n ? calloc(n, sizeof(*v)) : NULL;
        if (v == NULL)
                return; /* as records_list() had them: by ID */
        n = 0;
        for (struct srv_run *sr = rs->list; sr; sr = sr->next)
                v[n++] = sr;
        qsort(v, n, sizeof(*v), newer_first);
        for (size_t i = 0; i < n; i++)
                v[i]->next = i + 1 < n ? v[i + 1] : NULL;
        rs->list = v[0];
        free(v);
}

/* The count of who's running runs (one more slot: a principal this
 * server does not know). */
static unsigned *running_of(struct runs *rs, int who)
{
        return &rs->running_of[who >= 0 && (size_t)who < rs->n_principals ? (size_t)who : rs->n_principals];
}

/* When a finished run ended (CLOCK_REALTIME s): its result's "ended", or
 * for an interrupted one, when it started (s->lock held). */
static double ended_at(const struct srv_run *sr)
{
        json_t *e = json_object_get(sr->result, "ended");
        return e ? json_number_value(e) : json_number_value(json_object_get(sr->info, "created"));
}

/* The retention: finished runs past the newest cfg.run_retention, or that
 * ended longer ago than cfg.run_retention_age_s, leave the list and their
 * records are removed (beneath DATA/runs, never through a link).  At start
 * and as each run ends.  A follower reading a removed run's trace reads on
 * (its file is open). */
void runs_prune(struct server *s)
{
        struct runs *rs = s->runs;
        unsigned keep = s->cfg.run_retention;
        double max_age = s->cfg.run_retention_age_s, now = realtime_s();
        if (rs == NULL || (keep == 0 && !(max_age > 0)))
                return;
        struct srv_run *gone = NULL;
        unsigned finished = 0;
        pthread_mutex_lock(&s->lock);
        /* The threads of runs removed before, once they have exited. */
        for (size_t i = 0; i < rs->n_zombies;)
                if (pthread_tryjoin_np(rs->zombies[i], NULL) == 0)
                        rs->zombies[i] = rs->zombies[--rs->n_zombies];
                else
                        i++;
        for (struct srv_run **p = &rs->list; *p;) {
                struct srv_run *sr = *p;
                bool old = false;
                if (sr->r == NULL) {
                        finished++;
                        old = (keep && finished > keep) || (max_age > 0 && now - ended_at(sr) > max_age);
                }
                /* A run's thread may still be on its way out: never joined
                 * here (two ending runs could each wait for the other), but
                 * kept for runs_end(), or for the next time here. */
                if (old && sr->thread_started && !sr->joined) {
                        if (rs->n_zombies == rs->cap_zombies) {
                                size_t cap = rs->cap_zombies ? 2 * rs->cap_zombies : 8;
                                pthread_t *z = realloc(rs->zombies, cap * sizeof(*z));
                                if (z) {
                                        rs->zombies = z;
                                        rs->cap_zombies = cap;
                                }
                        }
                        if (rs->n_zombies < rs->cap_zombies) {
                                rs->zombies[rs->n_zombies++] = sr->thread;
                                sr->joined = true;
                        } else {
                                old = false; /* out of memory: next time */
                        }
                }
                if (!old) {
                        p = &sr->next;
                        continue;
                }
                *p = sr->next;
                sr->next = gone;
                gone = sr;
        }
        pthread_mutex_unlock(&s->lock);
        /* Freed now: a run's thread touches its srv_run no more once it has
         * set sr->r to NULL. */
        while (gone) {
                struct srv_run *sr = gone;
                gone = sr->next;
                cleanup_free char *dir = NULL;
                struct workspace *ws = NULL;
                if (asprintf(&dir, "%s/%s", rs->dir, sr->id) >= 0 && workspace_attach(dir, &ws, NULL) == 0)
                        workspace_close(ws, true);
                srv_run_free(sr);
                metrics_add(s->metrics, "corral_runs_removed_total", NULL, 1);
        }
}

int runs_init(struct server *s, const char *data_dir, corral_error **ret_err)
{
        struct runs *rs = calloc(1, sizeof(*rs));
        if (rs == NULL || asprintf(&rs->dir, "%s/runs", data_dir) < 0) {
                free(rs);
                return corral_fail(ret_err, ENOMEM, "cannot start the server");
        }
        s->runs = rs;
        rs->n_principals = auth_count(s->auth);
        rs->running_of = calloc(rs->n_principals + 1, sizeof(*rs->running_of));
        if (rs->running_of == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the server");
        if (s->cfg.max_runs == 0)
                s->cfg.max_runs = 4;
        if (s->cfg.max_runs_per_token == 0)
                s->cfg.max_runs_per_token = 4;
        if (mkdir(rs->dir, 0700) < 0 && errno != EEXIST)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot make the runs' directory '%s'",
                                         rs->dir);
        json_t *list = records_list(rs->dir, -1, ret_err);
        if (list == NULL)
                return -1;
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
                const char *id = json_string_value(json_object_get(e, "run_id"));
                if (id && records_is_run_id(id))
                        load_one(s, id);
        }
        json_decref(list);
        runs_sort(rs);
        runs_prune(s);
        return 0;
}

void runs_wait(struct server *s, double wait_s)
{
        struct runs *rs = s->runs;
        if (rs == NULL || !(wait_s > 0))
                return;
        double until = monotonic_ms() + wait_s * 1000;
        pthread_mutex_lock(&s->lock);
        while (rs->running > 0 && monotonic_ms() < until) {
                struct timespec t;
                clock_gettime(CLOCK_REALTIME, &t);
                t.tv_nsec += 100 * 1000 * 1000; /* a run's end broadcasts; look again anyway */
                if (t.tv_nsec >= 1000000000L) {
                        t.tv_sec++;
                        t.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&s->changed, &s->lock, &t);
        }
        pthread_mutex_unlock(&s->lock);
}

void runs_end(struct server *s)
{
        struct runs *rs = s->runs;
        if (rs == NULL)
                return;
        pthread_mutex_lock(&s->lock);
        for (struct srv_run *sr = rs->list; sr; sr = sr->next)
                if (sr->thread_started && !sr->joined && sr->cancel_fd >= 0) {
                        sr->server_stop = true;
                        uint64_t one = 1;
                        if (write(sr->cancel_fd, &one, sizeof(one)) < 0) {
                                /* an eventfd written once does not fail */
                        }
                }
        pthread_mutex_unlock(&s->lock);
        for (;;) {
                pthread_t t;
                bool found = false;
                pthread_mutex_lock(&s->lock);
                for (struct srv_run *sr = rs->list; sr && !found; sr = sr->next)
                        if (sr->thread_started && !sr->joined) {
                                sr->joined = found = true;
                                t = sr->thread;
                        }
                if (!found && s->runs->n_zombies) {
                        t = rs->zombies[--rs->n_zombies];
                        found = true;
                }
                pthread_mutex_unlock(&s->lock);
                if (!found)
                        break;
                pthread_join(t, NULL);
        }
}

void runs_free(struct server *s)
{
        struct runs *rs = s->runs;
        if (rs == NULL)
                return;
        runs_end(s);
        for (struct srv_run *sr = rs->list, *next; sr; sr = next) {
                next = sr->next;
                srv_run_free(sr);
        }
        free(rs->dir);
        free(rs->running_of);
        free(rs->zombies);
        free(rs);
        s->runs = NULL;
}

void runs_metrics(struct server *s)
{
        static const char *const statuses[] = { "running",   "answered",  "gave_up",    "model_error",
                                                "jail_error", "cancelled", "interrupted" };
        unsigned n[ARRAY_SIZE(statuses)] = { 0 };
        pthread_mutex_lock(&s->lock);
        for (struct srv_run *sr = s->runs ? s->runs->list : NULL; sr; sr = sr->next)
                for (size_t i = 0; i < ARRAY_SIZE(statuses); i++)
                        if (strcmp(sr->status, statuses[i]) == 0)
                                n[i]++;
        pthread_mutex_unlock(&s->lock);
        for (size_t i = 0; i < ARRAY_SIZE(statuses); i++)
                metrics_set(s->metrics, "corral_runs", statuses[i], n[i]);
}

/* id's run when who owns it (s->lock held); NULL with 404, or 403. */
static struct srv_run *find_locked(struct server *s, int who, const char *id, unsigned *ret_status)
{
        for (struct srv_run *sr = s->runs->list; sr; sr = sr->next)
                if (strcmp(sr->id, id) == 0) {
                        if (sr->owner != who) {
                                *ret_status = 403;
                                return NULL;
                        }
                        return sr;
                }
        *ret_status = 404;
        return NULL;
}

/* What GET shows of a run (s->lock held): never a host path. */
static json_t *describe_locked(struct srv_run *sr)
{
        json_t *d = json_pack("{s:s,s:s}", "id", sr->id, "status", sr->status);
        if (d == NULL)
                return NULL;
        json_object_update_missing(d, sr->info);
        if (sr->result)
                json_object_update_missing(d, sr->result);
        else if (strcmp(sr->status, "running") == 0)
                json_object_update_new(d, json_pack("{s:I,s:{s:I,s:I}}", "iterations",
                                                    (json_int_t)atomic_load(&sr->live_iterations), "usage",
                                                    "prompt_tokens", (json_int_t)atomic_load(&sr->live_prompt),
                                                    "completion_tokens",
                                                    (json_int_t)atomic_load(&sr->live_completion)));
        return d;
}

/* ---- a run's thread ---- */

struct run_thread {
        struct server *s;
        struct srv_run *sr;
};

/* The run's every event, on its thread, under the trace's lock: one copy
 * into the log, and the model's figures into /metrics. */
static void on_event(void *ud, const json_t *event)
{
        struct run_thread *rt = ud;
        log_append(rt->sr->log, event);
        const char *type = json_string_value(json_object_get(event, "type"));
        if (type && strcmp(type, "model_reply") == 0) {
                struct metrics *m = rt->s->metrics;
                json_t *u = json_object_get(event, "usage");
                metrics_observe(m, "corral_model_request_seconds", NULL,
                                json_number_value(json_object_get(event, "wait_ms")) / 1000);
                metrics_add(m, "corral_model_tokens_total", "prompt",
                            (double)json_integer_value(json_object_get(u, "prompt_tokens")));
                metrics_add(m, "corral_model_tokens_total", "completion",
                            (double)json_integer_value(json_object_get(u, "completion_tokens")));
                atomic_fetch_add(&rt->sr->live_iterations, 1);
                atomic_fetch_add(&rt->sr->live_prompt, (uint64_t)json_integer_value(json_object_get(u, "prompt_tokens")));
                atomic_fetch_add(&rt->sr->live_completion,
                                 (uint64_t)json_integer_value(json_object_get(u, "completion_tokens")));
        }
}

/* The result without what is the host's alone (its paths). */
static json_t *public_result(json_t *res)
{
        json_t *out = json_object();
        static const char *const keep[] = { "status",  "answer",     "reason",      "field",
                                            "iterations", "usage",   "artifacts", "wall_ms", "not_copied",
                                            "verification", "planning", "compaction", "reproduction",
                                            "approval",     "team",     "mode", "tdd" };
        for (size_t i = 0; out && res && i < ARRAY_SIZE(keep); i++) {
                json_t *v = json_object_get(res, keep[i]);
                if (v)
                        json_object_set(out, keep[i], v);
        }
        return out;
}

static void *run_thread_main(void *arg)
{
        struct run_thread *rt = arg;
        struct server *s = rt->s;
        struct srv_run *sr = rt->sr;
        corral_error *err = NULL;
        json_t *res = NULL;
        int executed = run_execute(sr->r, &err);
        pthread_mutex_lock(&s->lock);
        sr->finishing = true;
        pthread_mutex_unlock(&s->lock);
        if (executed == 0) {
                res = run_finish(sr->r);
        } else {
                res = json_pack("{s:s,s:s}", "status", "jail_error", "reason", err ? err->msg : "the run did not start");
                if (res)
                        redact_json(res, run_secrets(sr->r));
        }
        corral_error_free(err);
        json_t *pub = public_result(res);
        json_decref(res);
        if (pub)
                json_object_set_new(pub, "ended", json_real(realtime_s()));
        pthread_mutex_lock(&s->lock);
        bool server_stop = sr->server_stop;
        pthread_mutex_unlock(&s->lock);
        const char *status = json_string_value(json_object_get(pub, "status"));
        if (pub && server_stop && status && strcmp(status, "cancelled") == 0)
                json_object_set_new(pub, "reason", json_string("cancelled: server stopping"));
        if (pub)
                record_write(s->runs, sr->id, "result.json", pub);
        pthread_mutex_lock(&s->lock);
        free(TAKE_PTR(sr->ws_dir)); /* no more files from there */
        pthread_mutex_unlock(&s->lock);
        run_free(sr->r); /* the trace closed: its subscriber is done */
        /* The archive, written where run_open() could check it before the
         * ID was known, joins the records. */
        cleanup_close int rfd = open_run_dir(s->runs, sr->id);
        if (sr->archive && (rfd < 0 || renameat(AT_FDCWD, sr->archive, rfd, "workspace.tar") < 0))
                unlink(sr->archive);
        free(TAKE_PTR(sr->archive));
        json_decref(TAKE_PTR(sr->body)); /* the run's strings, borrowed until now */
        staging_remove(sr); /* read-only inputs may have been bound from there into its jails */
        const char *st = json_string_value(json_object_get(pub, "status"));
        metrics_add(s->metrics, "corral_runs_total", st ? st : "failed", 1);
        pthread_mutex_lock(&s->lock);
        sr->r = NULL;
        free(sr->status);
        sr->status = strdup(st ? st : "jail_error");
        sr->result = pub;
        struct run_log *l = TAKE_PTR(sr->log);
        s->runs->running--;
        (*running_of(s->runs, sr->owner))--;
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
        log_end(l);
        log_put(l);
        free(rt);
        runs_prune(s);
        return NULL;
}

/* ---- POST /v1/runs ---- */

/* inputs[i] {"sandbox", "path"}: that sandbox's file (who's own; opened
 * beneath its workspace, never through a link) copied into the run's
 * staging directory in the server's work directory; the manifest's source,
 * relative to that directory, in *ret_source. */
static int stage_from_sandbox(struct server *s, int who, struct srv_run *sr, size_t i, const char *sid,
                              const char *path, uint64_t *budget, char **ret_source, corral_error **ret_err)
{
        unsigned status;
        struct sandbox *sb = sandbox_get(s, who, sid, &status);
        if (sb == NULL)
                return corral_usage_field(ret_err, "inputs", "inputs[%zu]: %s", i,
                                          status == 403 ? "the sandbox belongs to another token" : "no such sandbox");
        struct workspace *ws = NULL;
        struct stat st;
        int in = -1, out = -1, rc = -1;
        char name[32];
        snprintf(name, sizeof(name), "%zu", sr->n_staged);
        if (sandbox_live(s, sb, ret_err) < 0 || workspace_attach(sb->workspace, &ws, ret_err) < 0 ||
            (in = workspace_open_file(ws, path, &st, ret_err)) < 0) {
                corral_error_prefix(ret_err, "inputs[%zu]", i);
                corral_error_set_field(ret_err, "inputs");
                goto out;
        }
        if ((uint64_t)st.st_size > *budget) {
                corral_make_error(ret_err, CORRAL_ERR_LIMIT, 0, "inputs[%zu]: the inputs from sandboxes are larger "
                                                                "than the %ju bytes a run may take", i,
                                  (uintmax_t)s->cfg.max_upload);
                corral_error_set_field(ret_err, "inputs");
                goto out;
        }
        if (sr->staging == NULL) {
                sr->staging = server_work_path(s, "run-staging-XXXXXX");
                if (sr->staging == NULL || mkdtemp(sr->staging) == NULL) {
                        free(TAKE_PTR(sr->staging));
                        corral_fail(ret_err, errno ? errno : ENOMEM, "cannot stage the inputs");
                        goto out;
                }
        }
        int dfd = open(sr->staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        out = dfd < 0 ? -1 : openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (dfd >= 0)
                close(dfd);
        if (out < 0) {
                corral_fail(ret_err, errno, "cannot stage the inputs");
                goto out;
        }
        sr->n_staged++;
        fcntl(in, F_SETFL, fcntl(in, F_GETFL) & ~O_NONBLOCK);
        char buf[65536];
        uint64_t total = 0;
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 || (n > 0 && write_all(out, buf, (size_t)n) < 0)) {
                        corral_fail(ret_err, errno, "inputs[%zu]: cannot copy '%s'", i, path);
                        goto out;
                }
                if (n == 0)
                        break;
                total += (uint64_t)n;
                if (total > *budget) {
                        corral_make_error(ret_err, CORRAL_ERR_LIMIT, 0, "inputs[%zu]: '%s' grew past the inputs' "
                                                                        "cap", i, path);
                        goto out;
                }
        }
        *budget -= total;
        if (asprintf(ret_source, "%s/%s", strrchr(sr->staging, '/') + 1, name) < 0) {
                *ret_source = NULL;
                corral_fail(ret_err, ENOMEM, "cannot stage the inputs");
                goto out;
        }
        rc = 0;
out:
        if (in >= 0)
                close(in);
        if (out >= 0)
                close(out);
        workspace_close(ws, false);
        sandbox_put(s, sb);
        return rc;
}

/* inputs: [{"path", "content_base64"} | {"sandbox", "path"}] as a manifest
 * at input/PATH (base64 entries, and files staged from sandboxes), in a
 * file of the server's (0600). */
static int inputs_manifest(struct server *s, int who, struct srv_run *sr, json_t *inputs, corral_error **ret_err)
{
        if (inputs == NULL)
                return 0;
        if (!json_is_array(inputs) || json_array_size(inputs) > RUN_INPUTS_MAX)
                return corral_usage_field(ret_err, "inputs", "inputs must be an array of at most %d "
                                                             "{\"path\", \"content_base64\"} or {\"sandbox\", \"path\"} "
                                                             "objects", RUN_INPUTS_MAX);
        json_t *entries = json_array();
        uint64_t budget = s->cfg.max_upload;
        size_t i;
        json_t *in;
        json_array_foreach(inputs, i, in) {
                static const char *const known[] = { "path", "content_base64", "sandbox" };
                if (fields_known(in, known, ARRAY_SIZE(known), "inputs[].", "a field of an input", "inputs", ret_err) <
                    0) {
                        json_decref(entries);
                        return -1;
                }
                const char *path = json_string_value(json_object_get(in, "path"));
                const char *b64 = json_string_value(json_object_get(in, "content_base64"));
                const char *sid = json_string_value(json_object_get(in, "sandbox"));
                if (path == NULL || (b64 == NULL) == (sid == NULL)) {
                        json_decref(entries);
                        return corral_usage_field(ret_err, "inputs", "inputs[%zu] needs \"path\" and either "
                                                                     "\"content_base64\" or \"sandbox\" (strings)", i);
                }
                cleanup_free char *dest = NULL, *source = NULL;
                /* The destination checked here, where the message can name
                 * the input (the manifest's would name a file of the
                 * server's). */
                char what[48];
                snprintf(what, sizeof(what), "inputs[%zu].path", i);
                if (asprintf(&dest, "input/%s", path) < 0) {
                        json_decref(entries);
                        return corral_fail(ret_err, ENOMEM, "cannot take the inputs");
                }
                if (ws_manifest_check_dest(dest, false, what, ret_err) < 0) {
                        json_decref(entries);
                        corral_error_set_field(ret_err, "inputs");
                        return -1;
                }
                if (sid && stage_from_sandbox(s, who, sr, i, sid, path, &budget, &source, ret_err) < 0) {
                        json_decref(entries);
                        return -1;
                }
                if (json_array_append_new(entries, json_pack("{s:s,s:s}", "dest", dest, sid ? "file" : "base64",
                                                             sid ? source : b64)) < 0) {
                        json_decref(entries);
                        return corral_fail(ret_err, ENOMEM, "cannot take the inputs");
                }
        }
        json_t *man = json_pack("{s:o}", "entries", entries);
        cleanup_free char *text = man ? json_dumps(man, JSON_COMPACT) : NULL;
        json_decref(man);
        sr->manifest = server_work_path(s, "run-inputs-XXXXXX");
        int fd = sr->manifest ? mkostemp(sr->manifest, O_CLOEXEC) : -1;
        if (fd < 0 || text == NULL || write_all(fd, text, strlen(text)) < 0) {
                if (fd >= 0)
                        close(fd);
                return corral_fail(ret_err, errno ? errno : ENOMEM, "cannot take the inputs");
        }
        close(fd);
        return 0;
}

static int get_count(json_t *body, const char *key, uint64_t max, uint64_t *ret, corral_error **ret_err)
{
        json_t *v = json_object_get(body, key);
        if (v == NULL)
                return 0;
        if (!json_is_integer(v) || json_integer_value(v) <= 0 || (uint64_t)json_integer_value(v) > max)
                return corral_usage_field(ret_err, key, "%s must be a whole number from 1 to %" PRIu64, key, max);
        *ret = (uint64_t)json_integer_value(v);
        return 0;
}

/* The request's settings onto c (and sr's jail, review, manifest). */

/* The same URL, give or take a trailing '/'. */
static bool same_url(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        while (la && a[la - 1] == '/')
                la--;
        while (lb && b[lb - 1] == '/')
                lb--;
        return la == lb && strncmp(a, b, la) == 0;
}

/* A caller's base_url: the server's own endpoint (what it resolves with
 * no base_url of the caller's), or one it was started to allow.  Else a
 * token holder could make the server post to any address it reaches (an
 * internal service, a cloud's metadata address): the jails have no
 * network, the server does. */
static bool model_url_allowed(struct server *s, const struct provider_request *req)
{
        for (const char *const *u = s->cfg.model_urls; u && *u; u++)
                if (strcmp(*u, "any") == 0 || same_url(*u, req->base_url))
                        return true;
        struct provider_request own = *req;
        own.base_url = NULL;
        own.provider = NULL;
        struct provider_choice mine;
        bool same = false;
        if (provider_resolve(&own, &mine, NULL) == 0) {
                same = mine.base_url && same_url(mine.base_url, req->base_url);
                provider_choice_release(&mine);
        }
        return same;
}

/* "approve": "never"|"risky"|"always", "approve_timeout": seconds,
 * "approve_default": "deny"|"approve" (docs/modes.md, "Human approval"). */
static int parse_approve(json_t *body, struct run_config *c, corral_error **ret_err)
{
        json_t *mode = json_object_get(body, "approve"), *to = json_object_get(body, "approve_timeout");
        json_t *dflt = json_object_get(body, "approve_default");
        if (mode && (!json_is_string(mode) || approve_mode_from_string(json_string_value(mode), &c->approve.mode) < 0))
                return corral_usage_field(ret_err, "approve", "approve must be \"never\", \"risky\" or \"always\"");
        if (to && (!json_is_number(to) || !(json_number_value(to) > 0) || json_number_value(to) > 86400))
                return corral_usage_field(ret_err, "approve_timeout", "approve_timeout must be a number of seconds "
                                                                      "from more than 0 to 86400");
        if (to)
                c->approve.timeout_s = json_number_value(to);
        const char *d = json_string_value(dflt);
        if (dflt && (d == NULL || (strcmp(d, "deny") != 0 && strcmp(d, "approve") != 0)))
                return corral_usage_field(ret_err, "approve_default", "approve_default must be \"deny\" or "
                                                                      "\"approve\"");
        if (d)
                c->approve.default_approve = strcmp(d, "approve") == 0;
        return 0;
}

/* A model of the run's endpoint named by FIELD (verifier_model and the
 * roles' models): a string, and not a replay, which reads a host file. */
static int get_model_id(json_t *body, const char *field, const char **ret, corral_error **ret_err)
{
        json_t *v = json_object_get(body, field);
        if (v == NULL)
                return 0;
        if (!json_is_string(v))
                return corral_usage_field(ret_err, field, "%s must be a string", field);
        if (strncmp(json_string_value(v), "replay:", 7) == 0)
                return corral_usage_field(ret_err, field, "a replay model cannot be asked for over HTTP");
        *ret = json_string_value(v);
        return 0;
}

static int parse_run(struct server *s, struct request *rq, json_t *body, struct srv_run *sr, struct run_config *c,
                     corral_error **ret_err)
{
        static const char *const known[] = { "task",         "model",          "inputs",       "limits",
                                             "review",       "max_iterations", "token_budget", "wall_budget",
                                             "verify",       "verifier_model", "verify_rounds",
                                             "plan",         "replan_every",   "compact",
                                             "reproduce",    "approve",        "approve_timeout",
                                             "approve_default", "mode",
                                             "tdd_test_changes", "llm_review", "reviewer_model",
                                             "executor_model" };
        if (!json_is_object(body))
                return corral_usage(ret_err, "the body must be a JSON object");
        if (fields_known(body, known, ARRAY_SIZE(known), "", "a field of a run", "body", ret_err) < 0)
                return -1;
        c->task = json_string_value(json_object_get(body, "task"));
        if (c->task == NULL)
                return corral_usage_field(ret_err, "task", "task must be a string");
        json_t *m = json_object_get(body, "model");
        if (m) {
                static const char *const mk[] = { "base_url", "model", "provider" };
                if (!json_is_object(m))
                        return corral_usage_field(ret_err, "model", "model must be an object {base_url, model, "
                                                                    "provider}");
                if (fields_known(m, mk, ARRAY_SIZE(mk), "model.", "a model setting", "model", ret_err) < 0)
                        return -1;
                for (size_t i = 0; i < ARRAY_SIZE(mk); i++) {
                        json_t *v = json_object_get(m, mk[i]);
                        if (v && !json_is_string(v))
                                return corral_usage_field(ret_err, "model", "model.%s must be a string", mk[i]);
                }
                c->provider.base_url = json_string_value(json_object_get(m, "base_url"));
                c->provider.model = json_string_value(json_object_get(m, "model"));
                c->provider.provider = json_string_value(json_object_get(m, "provider"));
        }
        /* A replay reads a file of the host's: not a caller's to name. */
        if (c->provider.model && strncmp(c->provider.model, "replay:", 7) == 0)
                return corral_usage_field(ret_err, "model", "a replay model cannot be asked for over HTTP");
        if (c->provider.base_url && !model_url_allowed(rq->s, &c->provider))
                return corral_usage_field(ret_err, "model",
                                          "model.base_url '%.200s' is not an endpoint this server may call: it calls "
                                          "its own model endpoint and the model URLs it was started to allow "
                                          "(docs/api.md, \"Runs\")",
                                          c->provider.base_url);
        const char *key = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "X-Model-Api-Key");
        if (key && (strlen(key) > RUN_API_KEY_MAX || (sr->api_key = strdup(key)) == NULL))
                return corral_usage_field(ret_err, "api_key", "the X-Model-Api-Key header is too long");
        c->provider.api_key = sr->api_key;
        /* The server's key goes to the server's own endpoint only: a
         * base_url of the caller's (one the server would not pick by
         * itself) gets the caller's key, or none. */
        if (sr->api_key == NULL && c->provider.base_url) {
                struct provider_request own = c->provider;
                own.base_url = NULL;
                struct provider_choice mine, theirs;
                bool same = false;
                if (provider_resolve(&own, &mine, NULL) == 0) {
                        if (provider_resolve(&c->provider, &theirs, NULL) == 0) {
                                same = mine.base_url && theirs.base_url && strcmp(mine.base_url, theirs.base_url) == 0;
                                provider_choice_release(&theirs);
                        }
                        provider_choice_release(&mine);
                }
                if (!same)
                        c->provider.api_key = "";
        }
        uint64_t iters = c->agent.max_iterations, tokens = c->agent.token_budget, wall = 0;
        if (get_count(body, "max_iterations", 1000, &iters, ret_err) < 0 ||
            get_count(body, "token_budget", UINT64_C(1) << 40, &tokens, ret_err) < 0 ||
            get_count(body, "wall_budget", 86400, &wall, ret_err) < 0)
                return -1;
        c->agent.max_iterations = (unsigned)iters;
        c->agent.token_budget = tokens;
        /* The modes (docs/modes.md). */
        json_t *verify = json_object_get(body, "verify");
        json_t *vr = json_object_get(body, "verify_rounds");
        if (verify && !json_is_boolean(verify))
                return corral_usage_field(ret_err, "verify", "verify must be true or false");
        if (verify)
                c->verify = json_is_true(verify);
        if (get_model_id(body, "verifier_model", &c->verifier_model, ret_err) < 0 ||
            get_model_id(body, "reviewer_model", &c->reviewer_model, ret_err) < 0 ||
            get_model_id(body, "executor_model", &c->executor_model, ret_err) < 0)
                return -1;
        json_t *llm = json_object_get(body, "llm_review");
        if (llm && !json_is_boolean(llm))
                return corral_usage_field(ret_err, "llm_review", "llm_review must be true or false");
        c->llm_review = json_is_true(llm) || (c->reviewer_model && llm == NULL);
        if (vr && (!json_is_integer(vr) || json_integer_value(vr) < 0 || json_integer_value(vr) > 20))
                return corral_usage_field(ret_err, "verify_rounds", "verify_rounds must be a whole number from 0 "
                                                                    "to 20");
        if (vr)
                c->agent.verify_rounds = (unsigned)json_integer_value(vr);
        if (parse_approve(body, c, ret_err) < 0)
                return -1;
        json_t *reproduce = json_object_get(body, "reproduce");
        if (reproduce && !json_is_boolean(reproduce))
                return corral_usage_field(ret_err, "reproduce", "reproduce must be true or false");
        c->reproduce = json_is_true(reproduce);
        json_t *compact = json_object_get(body, "compact");
        if (compact && !json_is_boolean(compact))
                return corral_usage_field(ret_err, "compact", "compact must be true or false");
        if (compact)
                c->compact = json_is_true(compact);
        json_t *plan = json_object_get(body, "plan"), *re = json_object_get(body, "replan_every");
        if (plan && !json_is_boolean(plan))
                return corral_usage_field(ret_err, "plan", "plan must be true or false");
        if (plan)
                c->plan = json_is_true(plan);
        if (re && (!json_is_integer(re) || json_integer_value(re) < 0 || json_integer_value(re) > 1000))
                return corral_usage_field(ret_err, "replan_every", "replan_every must be a whole number from 0 "
                                                                   "to 1000");
        if (re) {
                c->agent.replan_every = (unsigned)json_integer_value(re);
                if (plan == NULL)
                        c->plan = 1;
        }
        json_t *mode = json_object_get(body, "mode"), *tc = json_object_get(body, "tdd_test_changes");
        if (mode && (!json_is_string(mode) || agent_mode_from_string(json_string_value(mode), &c->agent.mode) < 0))
                return corral_usage_field(ret_err, "mode", "mode must be \"plain\", \"tdd\" or \"team\"");
        if (tc && !json_is_boolean(tc))
                return corral_usage_field(ret_err, "tdd_test_changes", "tdd_test_changes must be true or false");
        if (tc)
                c->agent.tdd_test_changes = json_is_true(tc);
        if (wall)
                c->agent.wall_budget_s = (double)wall;
        if (corral_jail_config_copy(&sr->jail, &s->limits, ret_err) < 0 ||
            sandbox_apply_limits(s, &sr->jail, json_object_get(body, "limits"), ret_err) < 0)
                return -1;
        c->jail = &sr->jail;
        json_t *rv = json_object_get(body, "review");
        if (json_is_string(rv)) {
                const char *l = json_string_value(rv);
                enum review_level level = strcmp(l, "strict") == 0     ? REVIEW_LEVEL_STRICT
                                          : strcmp(l, "standard") == 0 ? REVIEW_LEVEL_STANDARD
                                          : strcmp(l, "off") == 0      ? REVIEW_LEVEL_OFF
                                                                       : (enum review_level)-1;
                if ((int)level < 0)
                        return corral_usage_field(ret_err, "review", "review must be \"strict\", \"standard\", "
                                                                     "\"off\" or a policy object");
                sr->review = review_policy_new(level);
        } else if (json_is_object(rv)) {
                cleanup_free char *text = json_dumps(rv, JSON_COMPACT);
                if (text == NULL || review_policy_parse(text, strlen(text), "review", &sr->review, ret_err) < 0)
                        return text ? corral_error_set_field(ret_err, "review") : corral_fail(ret_err, ENOMEM, "review");
        } else if (rv) {
                return corral_usage_field(ret_err, "review", "review must be \"strict\", \"standard\", \"off\" or "
                                                             "a policy object");
        }
        c->review = sr->review;
        if (inputs_manifest(s, rq->who, sr, json_object_get(body, "inputs"), ret_err) < 0)
                return -1;
        c->manifest = sr->manifest;
        return 0;
}

static enum MHD_Result reply_err_free(struct request *rq, corral_error *err)
{
        enum MHD_Result r = reply_corral_error(rq, err);
        corral_error_free(err);
        return r;
}

static enum MHD_Result run_create(struct request *rq)
{
        struct server *s = rq->s;
        struct runs *rs = s->runs;
        corral_error *err = NULL;
        json_error_t je;
        json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
        if (body == NULL)
                return reply_error(rq, 400, "usage", "the body is not JSON: %s (line %d, column %d)", je.text,
                                   je.line, je.column);
        /* Both caps taken now (given back below on failure): the
         * server's, and the token's so that one cannot take them all. */
        unsigned *mine = running_of(rs, rq->who);
        pthread_mutex_lock(&s->lock);
        bool full = rs->running >= s->cfg.max_runs;
        bool token_full = !full && *mine >= s->cfg.max_runs_per_token;
        if (!full && !token_full) {
                rs->running++;
                (*mine)++;
        }
        pthread_mutex_unlock(&s->lock);
        if (full || token_full) {
                json_decref(body);
                count_rejected(s, full ? "runs" : "runs_per_token");
                if (token_full)
                        return reply_error(rq, MHD_HTTP_TOO_MANY_REQUESTS, "limit",
                                           "this token has its most runs going at once (%u): wait for one to end "
                                           "(or cancel one)",
                                           s->cfg.max_runs_per_token);
                return reply_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "limit",
                                   "the server runs its most runs at once (%u): try again later", s->cfg.max_runs);
        }
        cleanup_free char *trace_path = NULL, *task = NULL;
        struct srv_run *sr = srv_run_new();
        struct run_config c;
        run_config_init(&c);
        c.records_dir = rs->dir;
        c.no_trace = false;
        struct run_thread *rt = calloc(1, sizeof(*rt));
        if (sr == NULL || rt == NULL || (sr->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
            (sr->log = log_new(s)) == NULL) {
                corral_fail(&err, ENOMEM, "cannot start the run");
                goto fail;
        }
        c.cancel_fd = sr->cancel_fd;
        if (parse_run(s, rq, body, sr, &c, &err) < 0)
                goto fail;
        /* The workspace's archive: in the server's work directory (the ID
         * is not known before run_open()), moved to the records at the end. */
        static atomic_uint archives;
        char name[64];
        snprintf(name, sizeof(name), "run-archive-%u.tar", atomic_fetch_add(&archives, 1));
        if ((sr->archive = server_work_path(s, name)) == NULL) {
                corral_fail(&err, ENOMEM, "cannot start the run");
                goto fail;
        }
        c.archive = sr->archive;
        if (run_open(&c, &sr->r, &err) < 0)
                goto fail;
        if (sr->api_key) {
                explicit_bzero(sr->api_key, strlen(sr->api_key));
                free(TAKE_PTR(sr->api_key));
        }
        if (sr->manifest) {
                unlink(sr->manifest);
                free(TAKE_PTR(sr->manifest));
        }
        snprintf(sr->id, sizeof(sr->id), "%s", run_id(sr->r));
        const char *wsd = run_workspace_dir(sr->r, NULL);
        sr->ws_dir = wsd ? strdup(wsd) : NULL;
        sr->owner = rq->who;
        sr->status = strdup("running");
        /* Events emitted so far (by run_open) from the trace, then every
         * one as it comes: no event is missed or seen twice (nothing emits
         * in between, this thread being the run's only one now). */
        trace_path = records_trace_path(rs->dir, sr->id, NULL);
        if (trace_path)
                trace_read_file(trace_path, log_append_event, sr->log, NULL);
        rt->s = s;
        rt->sr = sr;
        run_subscribe(sr->r, on_event, rt, true);
        task = redact_text(c.task, run_secrets(sr->r));
        /* To the millisecond: the list's order after a restart (runs of
         * one second have IDs in no order). */
        double created = realtime_s();
        sr->info = json_pack("{s:s?,s:s?,s:f}", "task", task, "model", c.provider.model, "created",
                             created);
        json_t *serve = json_pack("{s:s,s:s?,s:s?,s:f}", "owner", auth_name(s->auth, rq->who), "task", task, "model",
                                  c.provider.model, "created", created);
        sr->body = TAKE_PTR(body);
        if (sr->status == NULL || sr->info == NULL || serve == NULL) {
                json_decref(serve);
                corral_fail(&err, ENOMEM, "cannot start the run");
                goto fail;
        }
        record_write(rs, sr->id, "serve.json", serve);
        json_decref(serve);
        pthread_mutex_lock(&s->lock);
        sr->next = rs->list;
        rs->list = sr;
        sr->thread_started = pthread_create(&sr->thread, NULL, run_thread_main, rt) == 0;
        if (!sr->thread_started) {
                rs->list = sr->next;
                pthread_mutex_unlock(&s->lock);
                corral_fail(&err, errno, "cannot start the run's thread");
                goto fail;
        }
        json_t *d = describe_locked(sr);
        pthread_mutex_unlock(&s->lock);
        metrics_add(s->metrics, "corral_runs_started_total", NULL, 1);
        return reply_json(rq, MHD_HTTP_CREATED, d);
fail:
        pthread_mutex_lock(&s->lock);
        rs->running--;
        (*mine)--;
        pthread_mutex_unlock(&s->lock);
        json_decref(body);
        if (sr) {
                run_free(TAKE_PTR(sr->r));
                srv_run_free(sr);
        }
        free(rt);
        return reply_err_free(rq, err);
}

/* ---- events ---- */

/* A follower: one client reading the events, over server-sent events (bs)
 * or a WebSocket (ws).  The same rules for both: replay after `after`,
 * then live; a client that leaves RUN_BACKLOG bytes untaken for
 * RUN_BACKLOG_WAIT_S gets a final "dropped" message and no more. */
struct follower {
        struct ws_io io;         /* first: a WebSocket's wslay user_data */
        struct server *s;
        struct run_log *log;     /* a live run's, or NULL: its trace file */
        char *trace;
        uint64_t after;          /* the last event the client has */
        uint64_t seq;
        bool dropped;
        struct body_stream *bs;  /* server-sent events */
        wslay_event_context_ptr ws; /* a WebSocket, or NULL */
        int wake;                /* a WebSocket's eventfd, in the log's watch list; else -1 */
        bool ws_gone;            /* the WebSocket's client has closed or failed */
};

/* ---- the WebSocket's side (the connection's thread only: wslay is not
 * thread-safe) ---- */

/* One round of the WebSocket's I/O: wait at most timeout_ms for the
 * socket, the log's wake or the server's stop, then read (answering pings,
 * taking a close) and write what wslay has queued. */
static void ws_pump(struct follower *f, int timeout_ms)
{
        if (f->ws_gone)
                return;
        if (!http_lib.wslay_event_want_read(f->ws) && !http_lib.wslay_event_want_write(f->ws)) {
                f->ws_gone = true;
                return;
        }
        struct pollfd p[3] = {
                { .fd = f->io.sock, .events = (short)((http_lib.wslay_event_want_read(f->ws) ? POLLIN : 0) |
                                                      (http_lib.wslay_event_want_write(f->ws) ? POLLOUT : 0)) },
                { .fd = f->wake, .events = POLLIN },
                /* Readable for good once set: watched until then. */
                { .fd = f->s->stop_fd, .events = atomic_load(&f->s->stopping) ? 0 : POLLIN },
        };
        if (f->io.n_extra)
                timeout_ms = 0;
        if (poll(p, 3, timeout_ms) < 0 && errno != EINTR) {
                f->ws_gone = true;
                return;
        }
        uint64_t n;
        if ((p[1].revents & POLLIN) && read(f->wake, &n, sizeof(n)) < 0) {
                /* EAGAIN: taken already */
        }
        if (((p[0].revents & (POLLIN | POLLHUP | POLLERR)) || f->io.n_extra) && http_lib.wslay_event_recv(f->ws) != 0)
                f->ws_gone = true;
        if (!f->ws_gone && http_lib.wslay_event_want_write(f->ws) && http_lib.wslay_event_send(f->ws) != 0)
                f->ws_gone = true;
}

static void ws_queue(struct follower *f, const char *text, size_t len)
{
        struct wslay_event_msg m = { .opcode = WSLAY_TEXT_FRAME, .msg = (const uint8_t *)text, .msg_length = len };
        if (!f->ws_gone && http_lib.wslay_event_queue_msg(f->ws, &m) != 0) /* copies the bytes */
                f->ws_gone = true;
        ws_pump(f, 0);
}

/* Messages from the client mean nothing here (wslay answers pings). */
static void ws_ignore(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg, void *user_data)
{
        (void)ctx;
        (void)arg;
        (void)user_data;
}

/* ---- both transports ---- */

static bool follower_gone(struct follower *f)
{
        return f->ws ? f->ws_gone : body_stream_gone(f->bs);
}

static size_t follower_pending(struct follower *f)
{
        return f->ws ? http_lib.wslay_event_get_queued_msg_length(f->ws) : body_stream_pending(f->bs);
}

/* Wait until the client has taken what is buffered (to RUN_BACKLOG), at
 * most RUN_BACKLOG_WAIT_S; false: it is too slow (or gone). */
static bool wait_for_client(struct follower *f)
{
        double until = monotonic_ms() + RUN_BACKLOG_WAIT_S * 1000;
        while (follower_pending(f) > RUN_BACKLOG) {
                if (follower_gone(f) || atomic_load(&f->s->stopping) || monotonic_ms() > until)
                        return false;
                if (f->ws) {
                        ws_pump(f, 50);
                } else {
                        struct timespec ts = { 0, 10 * 1000 * 1000 };
                        nanosleep(&ts, NULL);
                }
        }
        return !follower_gone(f);
}

#define DROPPED_MESSAGE "this client fell behind the run: reconnect with Last-Event-ID (or ?after=) to resume"

static void follower_send(struct follower *f, const char *type, const char *text)
{
        /* A type goes into an SSE line and a JSON string unquoted: ours
         * are [a-z_]; anything else (a damaged trace) is "event". */
        if (type[0] == '\0' || type[strspn(type, "abcdefghijklmnopqrstuvwxyz0123456789_")] != '\0')
                type = "event";
        f->seq++;
        if (f->dropped || f->seq <= f->after)
                return;
        char *line = NULL;
        int n;
        if (!wait_for_client(f)) {
                f->dropped = true;
                if (follower_gone(f))
                        return;
                if (f->ws)
                        n = asprintf(&line, "{\"type\":\"dropped\",\"data\":{\"type\":\"dropped\","
                                            "\"last_event_id\":%" PRIu64 ",\"message\":\"" DROPPED_MESSAGE "\"}}",
                                     f->seq - 1);
                else
                        n = asprintf(&line, "event: dropped\ndata: {\"type\":\"dropped\",\"last_event_id\":%" PRIu64
                                            ",\"message\":\"" DROPPED_MESSAGE "\"}\n\n",
                                     f->seq - 1);
        } else if (f->ws) {
                /* The SSE fields as JSON: {"id", "type", "data": the event}. */
                n = asprintf(&line, "{\"id\":%" PRIu64 ",\"type\":\"%s\",\"data\":%s}", f->seq, type, text);
        } else {
                n = asprintf(&line, "id: %" PRIu64 "\nevent: %s\ndata: %s\n\n", f->seq, type, text);
        }
        if (n > 0 && f->ws)
                ws_queue(f, line, (size_t)n);
        else if (n > 0)
                body_stream_write(f->bs, line, (size_t)n);
        free(line);
}

static void follow_file_event(void *ud, const json_t *event)
{
        struct follower *f = ud;
        const char *type = json_string_value(json_object_get(event, "type"));
        cleanup_free char *text = event_text(f->s, event);
        if (text)
                follower_send(f, type ? type : "event", text);
}

/* Until there is more in the log, it has ended, the client is gone or the
 * server stops (l->lock held; a WebSocket's I/O goes on meanwhile). */
static void follower_idle_locked(struct follower *f, struct run_log *l, size_t next)
{
        while (next == l->n && !l->ended && !atomic_load(&f->s->stopping) && !follower_gone(f)) {
                if (f->ws) {
                        /* The log wakes f->wake at its next event. */
                        pthread_mutex_unlock(&l->lock);
                        ws_pump(f, 1000);
                        pthread_mutex_lock(&l->lock);
                        continue;
                }
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += 200 * 1000 * 1000;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&l->more, &l->lock, &until);
        }
}

/* Every event after f->after, then the live ones to the run's end. */
static void follow(struct follower *f)
{
        if (f->log == NULL) {
                trace_read_file(f->trace, follow_file_event, f, NULL);
                return;
        }
        struct run_log *l = f->log;
        size_t next = 0;
        for (;;) {
                pthread_mutex_lock(&l->lock);
                follower_idle_locked(f, l, next);
                size_t n = l->n;
                bool ended = l->ended;
                pthread_mutex_unlock(&l->lock);
                /* Entries below n never change: read without the lock
                 * (the arrays may move: each pointer is taken under it). */
                while (next < n && !f->dropped && !follower_gone(f)) {
                        pthread_mutex_lock(&l->lock);
                        const char *type = l->type[next], *text = l->text[next];
                        pthread_mutex_unlock(&l->lock);
                        follower_send(f, type, text);
                        next++;
                }
                if (f->dropped || follower_gone(f) || atomic_load(&f->s->stopping) || (ended && next == n))
                        return;
        }
}

static void follow_run(struct body_stream *bs, void *ud)
{
        struct follower *f = ud;
        f->bs = bs;
        follow(f);
}

/* The WebSocket: the events, then a close frame: 1000 at the run's end,
 * 1008 when dropped as slow, 1001 when the server stops.  What is queued
 * gets the server's request timeout to go out (a slow client reads its
 * backlog, then the "dropped" message). */
static void follow_ws(void *ud, const struct ws_io *io)
{
        struct follower *f = ud;
        f->io = *io;
        struct wslay_event_callbacks cb = { .recv_callback = ws_io_recv, .send_callback = ws_io_send,
                                            .on_msg_recv_callback = ws_ignore };
        if (http_lib.wslay_event_context_server_init(&f->ws, &cb, f) != 0) {
                f->ws = NULL;
                return;
        }
        http_lib.wslay_event_config_set_max_recv_msg_length(f->ws, 4096);
        follow(f);
        /* What is queued first (wslay would send a queued close before
         * it), then the close, then until the client's close: within the
         * request timeout (a moment only when the server stops). */
        bool stop = atomic_load(&f->s->stopping);
        double until = monotonic_ms() + (stop ? 2.0 : f->s->cfg.request_timeout_s) * 1000;
        while (!f->ws_gone && http_lib.wslay_event_get_queued_msg_count(f->ws) > 0 && monotonic_ms() < until &&
               (stop || !atomic_load(&f->s->stopping)))
                ws_pump(f, 200);
        stop = atomic_load(&f->s->stopping);
        if (!f->ws_gone && http_lib.wslay_event_get_queued_msg_count(f->ws) == 0) {
                const char *why = f->dropped ? "fell behind the run" : stop ? "server stopping" : "run ended";
                http_lib.wslay_event_queue_close(f->ws,
                                                 f->dropped ? WSLAY_CODE_POLICY_VIOLATION
                                                 : stop     ? WSLAY_CODE_GOING_AWAY
                                                            : WSLAY_CODE_NORMAL_CLOSURE,
                                                 (const uint8_t *)why, strlen(why));
                until = monotonic_ms() + 2000;
                while (!f->ws_gone && monotonic_ms() < until)
                        ws_pump(f, 200);
        }
        http_lib.wslay_event_context_free(f->ws);
        f->ws = NULL;
}

static void follow_release(void *ud)
{
        struct follower *f = ud;
        if (f->wake >= 0) {
                if (f->log)
                        log_unwatch(f->log, f->wake);
                close(f->wake);
        }
        log_put(f->log);
        free(f->trace);
        free(f);
}

static enum MHD_Result run_events(struct request *rq, struct srv_run *sr)
{
        struct server *s = rq->s;
        const char *last = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Last-Event-ID");
        if (last == NULL)
                last = http_lib.MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, "after");
        uint64_t after = 0;
        if (last) {
                char *end;
                errno = 0;
                unsigned long long v = strtoull(last, &end, 10);
                if (!*last || *end || errno || last[0] == '-') {
                        pthread_mutex_unlock(&s->lock);
                        return reply_error(rq, 400, "usage", "Last-Event-ID (or after) must be an event's number");
                }
                after = v;
        }
        bool ws = websocket_requested(rq);
        struct follower *f = calloc(1, sizeof(*f));
        if (f == NULL) {
                pthread_mutex_unlock(&s->lock);
                return MHD_NO;
        }
        f->s = s;
        f->after = after;
        f->wake = -1;
        /* s->lock held by the caller: the log's reference taken under it. */
        if (sr->log) {
                pthread_mutex_lock(&sr->log->lock);
                sr->log->refs++;
                pthread_mutex_unlock(&sr->log->lock);
                f->log = sr->log;
        }
        f->trace = records_trace_path(s->runs->dir, sr->id, NULL);
        pthread_mutex_unlock(&s->lock);
        if (f->trace == NULL) {
                follow_release(f);
                return reply_error(rq, 500, "internal", "cannot tell where the run's trace is");
        }
        if (ws) {
                f->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                if (f->wake < 0 || (f->log && !log_watch(f->log, f->wake))) {
                        if (f->wake >= 0)
                                close(TAKE_FD(f->wake));
                        follow_release(f);
                        return MHD_NO;
                }
                static const struct ws_upgrade_hooks ws_hooks = { .run = follow_ws, .release = follow_release };
                return websocket_upgrade(rq, &ws_hooks, f);
        }
        static const struct body_stream_hooks hooks = { .run = follow_run, .release = follow_release };
        return body_stream_reply(rq, MHD_HTTP_OK, "text/event-stream", &hooks, f);
}

/* ---- artifacts and the archive ---- */

static enum MHD_Result reply_fd(struct request *rq, int fd, uint64_t size, const char *type)
{
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        struct MHD_Response *r = http_lib.MHD_create_response_from_fd64(size, fd);
        if (r == NULL) {
                close(fd);
                return MHD_NO;
        }
        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        return reply(rq, MHD_HTTP_OK, r);
}

/* GET .../artifacts and .../artifacts/PATH: the run's output/ as kept with
 * its records, or, while it goes (live_ws: its workspace's host directory),
 * the output/ its steps have written so far: the web view shows figures as
 * they are made.  Either way opened beneath the directory, never through a
 * link; a file being written may be seen half-written (a figure that fails
 * to show is fetched again at the next step). */
static enum MHD_Result run_artifacts(struct request *rq, const char *id, const char *live_ws, const char *rel)
{
        corral_error *err = NULL;
        struct workspace *ws = NULL;
        cleanup_free char *kept = NULL;
        struct stat st;
        /* A going run's output/ may be swapped for a link by its jail while
         * we look: opened beneath the workspace (or the run's records),
         * never through a link. */
        if (live_ws == NULL && asprintf(&kept, "%s/%s", rq->s->runs->dir, id) < 0)
                return MHD_NO;
        if (workspace_attach_beneath(live_ws ? live_ws : kept, "output", &ws, NULL) < 0)
                return reply_error(rq, 404, "not_found", live_ws ? "run %s has no output yet" : "run %s kept no output",
                                   id);
        enum MHD_Result ret;
        if (rel[0] == '\0') {
                json_t *list = NULL;
                if (workspace_list_files(ws, "", 0, 0, &list, &err) < 0)
                        ret = reply_err_free(rq, err);
                else
                        ret = reply_json(rq, MHD_HTTP_OK, json_pack("{s:o}", "artifacts", list));
        } else {
                int fd = workspace_open_file(ws, rel, &st, &err);
                ret = fd < 0 ? reply_err_free(rq, err) : reply_fd(rq, fd, (uint64_t)st.st_size, "application/octet-stream");
        }
        workspace_close(ws, false);
        return ret;
}

static enum MHD_Result run_archive(struct request *rq, const char *id)
{
        cleanup_close int rfd = open_run_dir(rq->s->runs, id);
        int fd = rfd < 0 ? -1 : openat(rfd, "workspace.tar", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                if (fd >= 0)
                        close(fd);
                return reply_error(rq, 404, "not_found", "run %s has no workspace archive", id);
        }
        return reply_fd(rq, fd, (uint64_t)st.st_size, "application/x-tar");
}

#define RUN_LIST_DEFAULT 100
#define RUN_LIST_MAX 1000

/* GET /v1/runs[?limit=N&after=ID]: the caller's runs, newest first, a page
 * of at most limit (default RUN_LIST_DEFAULT); "next" names the last one
 * when more follow (the next page's after=), absent on the last page.  A
 * cursor whose run has been removed meanwhile (the retention) still works:
 * the page starts at the first run that started in an earlier second (an
 * ID carries its start to the second; runs of the cursor's own second are
 * skipped, never shown twice).  The text is joined from each run's (an
 * ended run's made once), so that a long list costs copies, not JSON work. */
static enum MHD_Result run_list(struct request *rq)
{
        struct server *s = rq->s;
        const char *lim = http_lib.MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, "limit");
        const char *after = http_lib.MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, "after");
        unsigned long limit = RUN_LIST_DEFAULT;
        if (lim) {
                char *end;
                errno = 0;
                limit = strtoul(lim, &end, 10);
                if (!isdigit((unsigned char)lim[0]) || *end || errno || limit == 0 || limit > RUN_LIST_MAX)
                        return reply_error(rq, 400, "usage", "limit must be a whole number from 1 to %d, not '%.40s'",
                                           RUN_LIST_MAX, lim);
        }
        if (after && !records_is_run_id(after))
                return reply_error(rq, 400, "usage",
                                   "after must be a run's id (the \"next\" of the page before), not '%.80s'", after);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f == NULL)
                return MHD_NO;
        fputs("{\"runs\":[", f);
        bool first = true, ok = true;
        unsigned long n = 0;
        const char *last = NULL;
        char next[RUN_ID_MAX] = "";
        pthread_mutex_lock(&s->lock);
        struct srv_run *sr = s->runs->list;
        if (after) {
                struct srv_run *at = sr;
                while (at && strcmp(at->id, after) != 0)
                        at = at->next;
                if (at) {
                        sr = at->next;
                } else {
                        /* "YYYYMMDD-HHMMSS-": the second it started */
                        while (sr && strncmp(sr->id, after, 15) >= 0)
                                sr = sr->next;
                }
        }
        for (; sr && ok; sr = sr->next) {
                if (sr->owner != rq->who)
                        continue;
                if (n == limit) {
                        snprintf(next, sizeof(next), "%s", last); /* one more follows */
                        break;
                }
                char *text = sr->desc_text;
                bool going = sr->r != NULL;
                if (text == NULL) {
                        json_t *d = describe_locked(sr);
                        text = d ? json_dumps(d, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
                        json_decref(d);
                        if (!going)
                                sr->desc_text = text;
                }
                ok = text != NULL;
                if (ok) {
                        if (!first)
                                fputc(',', f);
                        fputs(text, f);
                        first = false;
                        n++;
                        last = sr->id;
                }
                if (going)
                        free(text);
        }
        pthread_mutex_unlock(&s->lock);
        if (next[0])
                fprintf(f, "],\"next\":\"%s\"}\n", next);
        else
                fputs("]}\n", f);
        if (fclose(f) != 0 || !ok) {
                free(buf);
                return MHD_NO;
        }
        struct MHD_Response *r = http_lib.MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
        if (r == NULL) {
                free(buf);
                return MHD_NO;
        }
        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        return reply(rq, MHD_HTTP_OK, r);
}

/* ---- human approval (docs/api.md, "Approvals") ---- */

/* POST /v1/runs/{id}/approvals/{n}: {"decision": "approve"|"deny"|"edit",
 * "reason"?, "code"?} answers the run's question n (s->lock held; unlocks).
 * GET /v1/runs/{id}/approvals: {"mode", "pending": the question or null}. */
static enum MHD_Result run_approvals(struct request *rq, struct srv_run *sr, const char *method, const char *rest)
{
        struct server *s = rq->s;
        bool going = sr->r != NULL && !sr->finishing;
        if (strcmp(rest, "/approvals") == 0 && strcmp(method, "GET") == 0) {
                json_t *p = going ? run_approval_pending(sr->r) : NULL;
                pthread_mutex_unlock(&s->lock);
                return reply_json(rq, MHD_HTTP_OK, json_pack("{s:o}", "pending", p ? p : json_null()));
        }
        const char *num = rest + strlen("/approvals/");
        char *end = NULL;
        errno = 0;
        unsigned long n = strtoul(num, &end, 10);
        if (strcmp(method, "POST") != 0 || *num < '1' || *num > '9' || *end || errno || n > UINT32_MAX) {
                pthread_mutex_unlock(&s->lock);
                return reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage", "answer an approval with POST "
                                   "/v1/runs/{id}/approvals/{n}, n its request's number (1, 2, ...)");
        }
        json_error_t je;
        json_t *body = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
        corral_error *err = NULL;
        static const char *const known[] = { "decision", "reason", "code" };
        json_t *reason = json_object_get(body, "reason"), *code = json_object_get(body, "code");
        if (body == NULL)
                corral_usage(&err, "the body is not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
        else if (!json_is_object(body))
                corral_usage(&err, "the body must be a JSON object");
        else if (fields_known(body, known, ARRAY_SIZE(known), "", "a field of an answer", "body", &err) < 0)
                ;
        else if (!json_is_string(json_object_get(body, "decision")))
                corral_usage(&err, "decision must be a string: approve, deny or edit");
        else if ((reason && !json_is_string(reason) && !json_is_null(reason)) ||
                 (code && !json_is_string(code) && !json_is_null(code)))
                corral_usage(&err, "reason and code must be strings");
        else if (!going)
                corral_make_error(&err, CORRAL_ERR_BUSY, 0, "run '%s' has ended: approval %lu can no longer be "
                                  "answered", sr->id, n);
        else
                run_approval_answer(sr->r, (unsigned)n, json_string_value(json_object_get(body, "decision")),
                                    json_string_value(reason), json_string_value(code), "api", &err);
        json_decref(body);
        pthread_mutex_unlock(&s->lock);
        if (err)
                return reply_err_free(rq, err);
        return reply_json(rq, MHD_HTTP_OK, json_pack("{s:i, s:s}", "n", (int)n, "status", "answered"));
}

/* ---- the table ---- */

enum MHD_Result runs_route(struct request *rq, const char *method, const char *path)
{
        struct server *s = rq->s;
        if (strcmp(path, PREFIX) == 0) {
                if (strcmp(method, "POST") == 0)
                        return run_create(rq);
                if (strcmp(method, "GET") != 0)
                        return reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage", "%s takes GET and POST", PREFIX);
                return run_list(rq);
        }
        const char *p = path + sizeof(PREFIX);
        size_t n = strcspn(p, "/");
        char id[RUN_ID_MAX];
        if (n >= sizeof(id))
                return reply_error(rq, 404, "not_found", "no such run");
        memcpy(id, p, n);
        id[n] = '\0';
        const char *rest = p + n;
        if (!records_is_run_id(id))
                return reply_error(rq, 404, "not_found", "no run '%s' (an id looks like 20261129-164512-3fa9c1)", id);
        unsigned status;
        pthread_mutex_lock(&s->lock);
        struct srv_run *sr = find_locked(s, rq->who, id, &status);
        if (sr == NULL) {
                pthread_mutex_unlock(&s->lock);
                if (status == 403) {
                        count_rejected(s, "not_yours");
                        return reply_error(rq, 403, "forbidden", "run '%s' belongs to another token", id);
                }
                return reply_error(rq, 404, "not_found", "no run '%s' (see GET /v1/runs)", id);
        }
        bool get = strcmp(method, "GET") == 0;
        if (rest[0] == '\0' && get) {
                json_t *d = describe_locked(sr);
                pthread_mutex_unlock(&s->lock);
                return reply_json(rq, MHD_HTTP_OK, d);
        }
        if ((strcmp(rest, "/cancel") == 0 && strcmp(method, "POST") == 0) ||
            (rest[0] == '\0' && strcmp(method, "DELETE") == 0)) {
                bool going = sr->r != NULL;
                if (going) {
                        uint64_t one = 1;
                        if (write(sr->cancel_fd, &one, sizeof(one)) < 0) {
                                /* an eventfd written once does not fail */
                        }
                }
                json_t *d = describe_locked(sr);
                pthread_mutex_unlock(&s->lock);
                if (!going) {
                        json_decref(d);
                        return reply_error(rq, 409, "busy", "run '%s' has already ended", id);
                }
                return reply_json(rq, MHD_HTTP_ACCEPTED, d);
        }
        if (strcmp(rest, "/events") == 0 && get)
                return run_events(rq, sr); /* unlocks */
        if (strcmp(rest, "/approvals") == 0 || strncmp(rest, "/approvals/", 11) == 0)
                return run_approvals(rq, sr, method, rest); /* unlocks */
        bool ended = sr->r == NULL;
        /* A going run's workspace, copied under the lock (the run may end
         * and remove it meanwhile: then nothing is found there). */
        cleanup_free char *live_ws = !ended && sr->ws_dir ? strdup(sr->ws_dir) : NULL;
        pthread_mutex_unlock(&s->lock);
        bool artifacts = strcmp(rest, "/artifacts") == 0 || strncmp(rest, "/artifacts/", 11) == 0;
        if (((artifacts && live_ws == NULL) || strcmp(rest, "/archive") == 0) && get && !ended)
                return reply_error(rq, 409, "busy", "run '%s' is still going: its archive is there once it ends", id);
        if (artifacts && get)
                return run_artifacts(rq, id, live_ws, rest[10] ? rest + 11 : "");
        if (strcmp(rest, "/archive") == 0 && get)
                return run_archive(rq, id);
        return reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage", "%s %s is not a route (see docs/api.md)", method,
                           path);
}
