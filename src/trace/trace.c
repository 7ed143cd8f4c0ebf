/* trace.c: the trace writer, subscribers and the reader.
 *
 * trace_open() makes the JSONL file safely (no symlinks, no FIFOs, no hard
 * links, mode 0600 whatever existed before), trace_emit() stamps, redacts
 * (lib/redact.c), writes and fans out one event under a mutex,
 * trace_read_file() reads a trace back strictly.  Knows nothing of what the
 * events mean: the renderer (render.c) and the exports (export.c) do.
 *
 * Subscribers: a synchronous one is called under the lock (it sees every
 * event, and slows the run if it is slow); a queued one has a ring of its
 * own, filled by the emitter and drained by a thread of its own, so the
 * emitter never waits for it.  A full ring drops the newest events for that
 * subscriber alone and remembers how many; the next event it does get is
 * preceded by a "subscriber_dropped" event with the count, so it knows
 * exactly where its gap is.  Dropping, not disconnecting: a live view that
 * fell behind a burst of output can go on with the rest of the run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../lib/redact.h"
#include "trace.h"

#define TRACE_MAX_LINE ((size_t)64 << 20)   /* trace_read_file: longest line accepted */

/* One slot of a queued subscriber's ring: an event, and the notice of the
 * events dropped just before it (NULL when none were). */
struct slot {
        json_t *dropped;
        json_t *ev;
};

struct subscriber {
        int id;
        trace_subscriber_fn fn;
        void *userdata;
        bool sync;
        /* Queued only.  lock guards the ring and the flags; the emitter holds
         * it for a push, the thread for a pop, neither while fn runs. */
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_t thread;
        struct slot *ring;
        size_t cap, head, len;
        unsigned long dropped; /* events dropped since the last one queued */
        double drop_t_ms;      /* the stamp of the last of them */
        char drop_ts[48];
        bool flush;            /* trace_close: deliver what is queued, then end */
        bool quit;             /* trace_unsubscribe: end now, deliver nothing more */
};

struct trace {
        pthread_mutex_t lock; /* serialises stamping, writing, sync subscribers and the list */
        char *path;           /* NULL: no file */
        int fd;
        struct secret_set secrets; /* owned copies, longest first, each >= REDACT_MIN_SECRET bytes */
        double t0;            /* monotonic_ms() at trace_open */
        struct subscriber **subs;
        size_t nsubs;
        size_t nqueued;       /* queued subscribers among subs */
        int next_id;
        char *write_error;    /* the first write error, then the file is no longer written */
};

/* ---- the writer ----------------------------------------------------------- */

/* mkdir -p of path's parent directories, each new one 0700. */
static const char *file_type_name(mode_t m)
{
        return S_ISLNK(m)    ? "a symbolic link"
               : S_ISDIR(m)  ? "a directory"
               : S_ISFIFO(m) ? "a FIFO"
               : S_ISSOCK(m) ? "a socket"
               : S_ISCHR(m) || S_ISBLK(m) ? "a device"
                                          : "not a regular file";
}

/* Open path for writing the trace: an existing entry must be a regular file
 * with one link (a symlink, FIFO, device or hard link could make corral
 * write, or chmod, somewhere the user did not mean); O_NOFOLLOW and
 * O_NONBLOCK close the race between the lstat and the open (a FIFO swapped
 * in fails with ENXIO instead of blocking), fstat confirms what was opened. */
static int open_trace_file(int dirfd, const char *name, const char *path, corral_error **err)
{
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (!S_ISREG(st.st_mode))
                        return corral_usage(err, "refusing to write the trace to '%s': it is %s", path,
                                            file_type_name(st.st_mode));
                if (st.st_nlink > 1)
                        return corral_usage(err, "refusing to write the trace to '%s': it has %lu hard links", path,
                                            (unsigned long)st.st_nlink);
        } else if (errno != ENOENT) {
                return corral_fail(err, errno, "cannot check '%s'", path);
        }
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_TRUNC | O_NONBLOCK, 0600);
        if (fd < 0) {
                if (errno == ELOOP || errno == ENXIO)
                        return corral_usage(err, "refusing to write the trace to '%s': it is not a regular file",
                                            path);
                return corral_fail(err, errno, "cannot create the trace '%s'", path);
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
                close(fd);
                return corral_usage(err, "refusing to write the trace to '%s': it is not a regular file", path);
        }
        if (fchmod(fd, 0600) < 0) {
                int e = errno;
                close(fd);
                return corral_fail(err, e, "cannot set the mode of the trace '%s'", path);
        }
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
                fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        return fd;
}

int trace_open(const char *path, const char *const *secrets, trace **ret, corral_error **ret_err)
{
        return trace_open_at(AT_FDCWD, path, path, secrets, ret, ret_err);
}

int trace_open_at(int dirfd, const char *name, const char *path, const char *const *secrets, trace **ret,
                  corral_error **ret_err)
{
        trace *t = calloc(1, sizeof(*t));
        if (t == NULL)
                return corral_fail(ret_err, ENOMEM, "out of memory");
        t->fd = -1;
        pthread_mutex_init(&t->lock, NULL);
        t->t0 = monotonic_ms();

        /* Own copies of the secrets, already filtered and sorted. */
        struct secret_set set;
        if (secret_set_init(&set, secrets) < 0)
                goto oom;
        t->secrets.s = calloc(set.n + 1, sizeof(*t->secrets.s));
        t->secrets.len = calloc(set.n + 1, sizeof(*t->secrets.len));
        if (t->secrets.s == NULL || t->secrets.len == NULL) {
                secret_set_release(&set);
                goto oom;
        }
        for (size_t i = 0; i < set.n; i++) {
                t->secrets.s[i] = strdup(set.s[i]);
                if (t->secrets.s[i] == NULL) {
                        secret_set_release(&set);
                        goto oom;
                }
                t->secrets.len[i] = set.len[i];
                t->secrets.n++;
        }
        secret_set_release(&set);

        if (path != NULL) {
                t->path = strdup(path);
                if (t->path == NULL)
                        goto oom;
                t->fd = open_trace_file(dirfd, name, path, ret_err);
                if (t->fd < 0) {
                        trace_close(t);
                        return -1;
                }
        }
        *ret = t;
        return 0;
oom:
        trace_close(t);
        return corral_fail(ret_err, ENOMEM, "out of memory");
}

/* ---- subscribers ---------------------------------------------------------- */

static json_t *dropped_notice(unsigned long count, double t_ms, const char *ts)
{
        return json_pack("{s:i, s:s, s:f, s:s, s:I}", "v", TRACE_SCHEMA_VERSION, "type", "subscriber_dropped",
                         "t_ms", t_ms, "ts", ts, "count", (json_int_t)count);
}

static void sub_free(struct subscriber *s)
{
        if (s == NULL)
                return;
        for (size_t i = 0; i < s->len; i++) {
                struct slot *sl = &s->ring[(s->head + i) % s->cap];
                json_decref(sl->dropped);
                json_decref(sl->ev);
        }
        if (!s->sync) {
                pthread_mutex_destroy(&s->lock);
                pthread_cond_destroy(&s->cond);
        }
        free(s->ring);
        free(s);
}

/* A queued subscriber's thread: pop one slot, call fn outside the lock. */
static void *sub_main(void *arg)
{
        struct subscriber *s = arg;
        pthread_mutex_lock(&s->lock);
        for (;;) {
                while (s->len == 0 && !s->flush && !s->quit)
                        pthread_cond_wait(&s->cond, &s->lock);
                if (s->quit)
                        break;
                struct slot sl = { 0 };
                if (s->len > 0) {
                        sl = s->ring[s->head];
                        s->head = (s->head + 1) % s->cap;
                        s->len--;
                } else if (s->dropped > 0) {
                        /* Flushing, and the last events were dropped: say so. */
                        sl.dropped = dropped_notice(s->dropped, s->drop_t_ms, s->drop_ts);
                        s->dropped = 0;
                } else {
                        break; /* flushed */
                }
                pthread_mutex_unlock(&s->lock);
                if (sl.dropped)
                        s->fn(s->userdata, sl.dropped);
                if (sl.ev)
                        s->fn(s->userdata, sl.ev);
                json_decref(sl.dropped);
                json_decref(sl.ev);
                pthread_mutex_lock(&s->lock);
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/* Hand ev to a queued subscriber (the trace's lock held): never waits for
 * its thread beyond a push. */
static void sub_push(struct subscriber *s, json_t *ev)
{
        pthread_mutex_lock(&s->lock);
        if (s->len == s->cap) {
                s->dropped++;
                s->drop_t_ms = json_real_value(json_object_get(ev, "t_ms"));
                snprintf(s->drop_ts, sizeof(s->drop_ts), "%s", json_string_value(json_object_get(ev, "ts")));
        } else {
                struct slot *sl = &s->ring[(s->head + s->len) % s->cap];
                sl->dropped = s->dropped ? dropped_notice(s->dropped, s->drop_t_ms, s->drop_ts) : NULL;
                s->dropped = 0;
                sl->ev = json_incref(ev);
                s->len++;
                pthread_cond_signal(&s->cond);
        }
        pthread_mutex_unlock(&s->lock);
}

/* End a queued subscriber's thread: flush (deliver what is queued) or quit
 * (deliver nothing more), then join it. */
static void sub_stop(struct subscriber *s, bool flush)
{
        if (s->sync)
                return;
        pthread_mutex_lock(&s->lock);
        if (flush)
                s->flush = true;
        else
                s->quit = true;
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
}

static int subscribe(trace *t, trace_subscriber_fn fn, void *userdata, bool sync, size_t queue_max)
{
        if (t == NULL || fn == NULL)
                return -1;
        struct subscriber *s = calloc(1, sizeof(*s));
        if (s == NULL)
                return -1;
        s->fn = fn;
        s->userdata = userdata;
        s->sync = sync;
        if (!sync) {
                s->cap = queue_max ? queue_max : TRACE_QUEUE_DEFAULT;
                s->ring = calloc(s->cap, sizeof(*s->ring));
                if (s->ring == NULL) {
                        free(s);
                        return -1;
                }
                pthread_mutex_init(&s->lock, NULL);
                pthread_cond_init(&s->cond, NULL);
                /* Signals go to the caller's threads, never to ours. */
                sigset_t all, old;
                sigfillset(&all);
                pthread_sigmask(SIG_SETMASK, &all, &old);
                int e = pthread_create(&s->thread, NULL, sub_main, s);
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                if (e != 0) {
                        sub_free(s);
                        return -1;
                }
        }
        pthread_mutex_lock(&t->lock);
        struct subscriber **subs = realloc(t->subs, (t->nsubs + 1) * sizeof(*subs));
        if (subs != NULL) {
                t->subs = subs;
                t->subs[t->nsubs++] = s;
                s->id = ++t->next_id;
                t->nqueued += !sync;
        }
        pthread_mutex_unlock(&t->lock);
        if (subs == NULL) {
                sub_stop(s, false);
                sub_free(s);
                return -1;
        }
        return s->id;
}

int trace_subscribe(trace *t, trace_subscriber_fn fn, void *userdata, size_t queue_max)
{
        return subscribe(t, fn, userdata, false, queue_max);
}

int trace_subscribe_sync(trace *t, trace_subscriber_fn fn, void *userdata)
{
        return subscribe(t, fn, userdata, true, 0);
}

int trace_unsubscribe(trace *t, int id)
{
        if (t == NULL)
                return -1;
        struct subscriber *s = NULL;
        pthread_mutex_lock(&t->lock);
        for (size_t i = 0; i < t->nsubs; i++) {
                if (t->subs[i]->id != id)
                        continue;
                s = t->subs[i];
                memmove(t->subs + i, t->subs + i + 1, (t->nsubs - i - 1) * sizeof(*t->subs));
                t->nsubs--;
                t->nqueued -= !s->sync;
                break;
        }
        pthread_mutex_unlock(&t->lock);
        if (s == NULL)
                return -1;
        /* Out of the list under the lock: a sync one is not running now and
         * never will again; a queued one's thread ends after its current call. */
        sub_stop(s, false);
        sub_free(s);
        return 0;
}

void trace_close(trace *t)
{
        if (t == NULL)
                return;
        /* Every queued subscriber gets what was emitted before the close. */
        for (size_t i = 0; i < t->nsubs; i++) {
                sub_stop(t->subs[i], true);
                sub_free(t->subs[i]);
        }
        if (t->fd >= 0)
                close(t->fd);
        for (size_t i = 0; i < t->secrets.n; i++)
                free((char *)t->secrets.s[i]);
        secret_set_release(&t->secrets);
        free(t->subs);
        free(t->path);
        free(t->write_error);
        pthread_mutex_destroy(&t->lock);
        free(t);
}

/* "2025-01-31T12:34:56.789Z" */
static void format_utc(char *buf, size_t size)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, size - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

static void remember_write_error(trace *t, int errnum)
{
        if (t->write_error != NULL)
                return;
        if (asprintf(&t->write_error, "cannot write the trace '%s': %s", t->path, strerror(errnum)) < 0)
                t->write_error = NULL;
        if (t->write_error == NULL)
                t->write_error = strdup("cannot write the trace: out of memory");
}

/* Stamp, redact, write and hand out one event.  The stamp is taken under the
 * lock so that t_ms grows along the file.  Sync subscribers run under the
 * lock too (one at a time, in file order; they must not emit); queued ones
 * get the event pushed onto their rings in the same order. */
void trace_emit(trace *t, const char *type, json_t *fields)
{
        if (t == NULL || type == NULL) {
                json_decref(fields);
                return;
        }
        pthread_mutex_lock(&t->lock);
        json_t *ev = json_object();
        char ts[48];
        format_utc(ts, sizeof(ts));
        double t_ms = round_half_away((monotonic_ms() - t->t0) * 10.0) / 10.0;
        if (ev != NULL) {
                json_object_set_new(ev, "v", json_integer(TRACE_SCHEMA_VERSION));
                json_object_set_new(ev, "type", json_string(type));
                json_object_set_new(ev, "t_ms", json_real(t_ms));
                json_object_set_new(ev, "ts", json_string(ts));
        }
        if (ev != NULL && json_is_object(fields)) {
                const char *key;
                json_t *v;
                json_object_foreach (fields, key, v) {
                        if (strcmp(key, "v") == 0 || strcmp(key, "type") == 0 || strcmp(key, "t_ms") == 0 ||
                            strcmp(key, "ts") == 0)
                                continue;
                        /* Redaction works in place: never on values the caller
                         * still holds.  Queued subscribers read the event on
                         * their threads after we return: it must share nothing
                         * the caller may change. */
                        if (t->secrets.n > 0 || t->nqueued > 0)
                                json_object_set_new(ev, key, json_deep_copy(v));
                        else
                                json_object_set(ev, key, v);
                }
        }
        json_decref(fields);
        if (ev == NULL) {
                if (t->fd >= 0)
                        remember_write_error(t, ENOMEM);
                pthread_mutex_unlock(&t->lock);
                return;
        }
        redact_json_set(ev, &t->secrets);
        if (t->fd >= 0 && t->write_error == NULL) {
                char *line = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
                if (line == NULL) {
                        remember_write_error(t, ENOMEM);
                } else {
                        size_t n = strlen(line);
                        /* One write for the line and its newline: a reader never sees half an event. */
                        char *nl = realloc(line, n + 2);
                        if (nl == NULL) {
                                free(line);
                                remember_write_error(t, ENOMEM);
                        } else {
                                nl[n] = '\n';
                                nl[n + 1] = '\0';
                                if (write_all(t->fd, nl, n + 1) < 0)
                                        remember_write_error(t, errno);
                                free(nl);
                        }
                }
        }
        for (size_t i = 0; i < t->nsubs; i++) {
                if (t->subs[i]->sync)
                        t->subs[i]->fn(t->subs[i]->userdata, ev);
                else
                        sub_push(t->subs[i], ev);
        }
        pthread_mutex_unlock(&t->lock);
        json_decref(ev);
}

size_t trace_longest_secret(const trace *t)
{
        return t && t->secrets.n ? t->secrets.len[0] : 0; /* longest first */
}

const char *trace_write_error(const trace *t)
{
        return t ? t->write_error : NULL;
}

/* ---- the reader ----------------------------------------------------------- */

/* Parse one line (without its newline); blank lines are skipped. */
static int read_line(const char *path, unsigned long lineno, const char *line, size_t len, trace_subscriber_fn fn,
                     void *userdata, corral_error **err)
{
        size_t i = 0;
        while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
                i++;
        if (i == len)
                return 0;
        json_error_t jerr;
        json_t *ev = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (ev == NULL)
                return corral_usage(err, "trace '%s' line %lu: %s (column %d)", path, lineno, jerr.text,
                                    jerr.column);
        if (!json_is_object(ev)) {
                json_decref(ev);
                return corral_usage(err, "trace '%s' line %lu: not a JSON object", path, lineno);
        }
        if (!json_is_string(json_object_get(ev, "type"))) {
                json_decref(ev);
                return corral_usage(err, "trace '%s' line %lu: the event has no \"type\"", path, lineno);
        }
        if (fn != NULL)
                fn(userdata, ev);
        json_decref(ev);
        return 0;
}

int trace_read_file(const char *path, trace_subscriber_fn fn, void *userdata, corral_error **ret_err)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot open the trace '%s'", path);
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
                close(fd);
                return corral_usage(ret_err, "cannot read the trace '%s': it is a directory", path);
        }
        size_t alloc = 1 << 16, len = 0, start = 0;
        char *buf = malloc(alloc);
        unsigned long lineno = 0;
        int r = 0;
        bool eof = false;
        if (buf == NULL) {
                close(fd);
                return corral_fail(ret_err, ENOMEM, "out of memory");
        }
        while (r == 0) {
                /* Hand out every complete line in buf[start..len). */
                char *nl;
                while (r == 0 && (nl = memchr(buf + start, '\n', len - start)) != NULL) {
                        lineno++;
                        r = read_line(path, lineno, buf + start, (size_t)(nl - (buf + start)), fn, userdata, ret_err);
                        start = (size_t)(nl - buf) + 1;
                }
                if (r != 0)
                        break;
                if (eof) {
                        if (start < len)
                                r = read_line(path, ++lineno, buf + start, len - start, fn, userdata, ret_err);
                        break;
                }
                if (len - start > TRACE_MAX_LINE) {
                        r = corral_usage(ret_err, "trace '%s' line %lu: longer than %zu MiB", path, lineno + 1,
                                         TRACE_MAX_LINE >> 20);
                        break;
                }
                /* Keep the partial line, make room, read more. */
                memmove(buf, buf + start, len - start);
                len -= start;
                start = 0;
                if (alloc - len < (1 << 16)) {
                        char *nb = realloc(buf, alloc * 2);
                        if (nb == NULL) {
                                r = corral_fail(ret_err, ENOMEM, "out of memory");
                                break;
                        }
                        buf = nb;
                        alloc *= 2;
                }
                ssize_t n = read(fd, buf + len, alloc - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = corral_fail(ret_err, errno, "cannot read the trace '%s'", path);
                        break;
                }
                if (n == 0)
                        eof = true;
                len += (size_t)n;
        }
        free(buf);
        close(fd);
        return r < 0 ? -1 : 0;
}
