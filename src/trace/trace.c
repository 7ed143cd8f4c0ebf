/* trace.c: the trace writer, subscribers and the reader.
 *
 * trace_open() makes the JSONL file safely (no symlinks, no FIFOs, no hard
 * links, mode 0600 whatever existed before), trace_emit() stamps, redacts
 * (lib/redact.c),
 * writes and fans out one event under a mutex, trace_read_file() reads a
 * trace back strictly.  Knows nothing of what the events mean: the
 * renderer (render.c) and the exports (export.c) do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../lib/redact.h"
#include "trace.h"

#define TRACE_MAX_LINE ((size_t)64 << 20)   /* trace_read_file: longest line accepted */

struct subscriber {
        trace_subscriber_fn fn;
        void *userdata;
};

struct trace {
        pthread_mutex_t lock; /* serialises stamping, writing and subscribers */
        char *path;           /* NULL: no file */
        int fd;
        struct secret_set secrets; /* owned copies, longest first, each >= REDACT_MIN_SECRET bytes */
        double t0;            /* monotonic_ms() at trace_open */
        struct subscriber *subs;
        size_t nsubs;
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

void trace_close(trace *t)
{
        if (t == NULL)
                return;
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

int trace_subscribe(trace *t, trace_subscriber_fn fn, void *userdata)
{
        if (t == NULL || fn == NULL)
                return -1;
        pthread_mutex_lock(&t->lock);
        struct subscriber *s = realloc(t->subs, (t->nsubs + 1) * sizeof(*s));
        if (s != NULL) {
                t->subs = s;
                t->subs[t->nsubs++] = (struct subscriber){ fn, userdata };
        }
        pthread_mutex_unlock(&t->lock);
        return s ? 0 : -1;
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
 * lock so that t_ms grows along the file.  Subscribers run under the lock
 * too (one at a time, in file order); they must not emit. */
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
        double t_ms = round((monotonic_ms() - t->t0) * 10.0) / 10.0;
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
                        /* Redaction works in place: never on values the caller still holds. */
                        if (t->secrets.n > 0)
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
        for (size_t i = 0; i < t->nsubs; i++)
                t->subs[i].fn(t->subs[i].userdata, ev);
        pthread_mutex_unlock(&t->lock);
        json_decref(ev);
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
