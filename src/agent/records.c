/* records.c: the runs' records read back (records.h).
 *
 * The directory holds one directory per run, named by its ID; anything else
 * there is ignored.  A run's summary comes from its trace's first and last
 * lines, read with pread() and opened with O_NOFOLLOW: the records are
 * corral's, but a run's trace may be being written while it is read.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "records.h"
#include "run.h"

#define EVENT_MAX (4u << 20) /* the first and last lines read of a trace */

bool records_is_run_id(const char *s)
{
        static const char shape[] = "dddddddd-dddddd-xxxxxx";
        if (s == NULL || strlen(s) != sizeof(shape) - 1)
                return false;
        for (size_t i = 0; shape[i]; i++) {
                char c = s[i];
                if (shape[i] == '-' ? c != '-'
                    : shape[i] == 'd' ? !(c >= '0' && c <= '9')
                                      : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                        return false;
        }
        return true;
}

static int cmp_desc(const void *a, const void *b)
{
        return -strcmp(*(char *const *)a, *(char *const *)b);
}

/* The IDs of the recorded runs, newest first (NULL-terminated, malloc'd;
 * none when the directory does not exist). */
static char **run_ids(const char *dir, size_t *ret_n)
{
        *ret_n = 0;
        DIR *d = opendir(dir);
        if (d == NULL)
                return calloc(1, sizeof(char *));
        size_t n = 0, cap = 16;
        char **v = malloc(cap * sizeof(char *));
        struct dirent *e;
        while (v && (e = readdir(d)) != NULL) {
                if (!records_is_run_id(e->d_name))
                        continue;
                if (n + 1 >= cap) {
                        char **nv = realloc(v, (cap *= 2) * sizeof(char *));
                        if (nv == NULL)
                                break;
                        v = nv;
                }
                v[n] = strdup(e->d_name);
                if (v[n])
                        n++;
        }
        closedir(d);
        if (v == NULL)
                return NULL;
        qsort(v, n, sizeof(char *), cmp_desc);
        v[n] = NULL;
        *ret_n = n;
        return v;
}

static void free_ids(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

/* dir, or run_records_dir() when NULL (malloc'd), or NULL with *err. */
static char *records_dir(const char *dir, corral_error **err)
{
        char *d = dir ? strdup(dir) : run_records_dir();
        if (d == NULL && dir)
                corral_fail(err, ENOMEM, "out of memory");
        else if (d == NULL)
                corral_usage(err, "cannot tell where the runs are kept: set $XDG_STATE_HOME or $HOME");
        return d;
}

char *records_trace_path(const char *dir, const char *id, corral_error **err)
{
        if (strcmp(id, "last") != 0 && !records_is_run_id(id)) {
                corral_usage(err, "'%s' is not a run's ID (see 'corral runs')", id);
                return NULL;
        }
        cleanup_free char *d = records_dir(dir, err);
        if (d == NULL)
                return NULL;
        char *path = NULL;
        if (strcmp(id, "last") != 0) {
                if (asprintf(&path, "%s/%s/trace.jsonl", d, id) < 0) {
                        corral_fail(err, ENOMEM, "out of memory");
                        return NULL;
                }
                return path;
        }
        size_t n;
        char **ids = run_ids(d, &n);
        /* The newest run that has a trace (a run without one has none). */
        for (size_t i = 0; ids && i < n && path == NULL; i++) {
                if (asprintf(&path, "%s/%s/trace.jsonl", d, ids[i]) < 0) {
                        path = NULL;
                } else if (access(path, F_OK) < 0) {
                        free(path);
                        path = NULL;
                }
        }
        free_ids(ids);
        if (path == NULL)
                corral_usage(err, "no run with a trace in '%s' (see 'corral runs')", d);
        return path;
}

/* One line of a trace as JSON: the first (from the start), or the last
 * complete one (from the end); NULL when there is none. */
static json_t *trace_line(int fd, bool last)
{
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_size == 0)
                return NULL;
        size_t want = (uint64_t)st.st_size < EVENT_MAX ? (size_t)st.st_size : EVENT_MAX;
        off_t at = last ? st.st_size - (off_t)want : 0;
        cleanup_free char *buf = malloc(want + 1);
        if (buf == NULL)
                return NULL;
        ssize_t n = pread(fd, buf, want, at);
        if (n <= 0)
                return NULL;
        buf[n] = '\0';
        char *line = buf;
        if (last) {
                while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                        buf[--n] = '\0';
                char *nl = strrchr(buf, '\n');
                line = nl ? nl + 1 : buf;
        } else {
                char *nl = strchr(buf, '\n');
                if (nl)
                        *nl = '\0';
        }
        return json_loads(line, JSON_REJECT_DUPLICATES, NULL);
}

json_t *records_describe(const char *dir, const char *id)
{
        cleanup_free char *d = records_dir(dir, NULL);
        cleanup_free char *path = NULL;
        if (d == NULL || asprintf(&path, "%s/%s/trace.jsonl", d, id) < 0)
                return NULL;
        json_t *row = json_pack("{s:s}", "run_id", id);
        cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (row == NULL || fd < 0)
                return row;
        json_object_set_new(row, "trace", json_string(path));
        json_t *start = trace_line(fd, false), *end = trace_line(fd, true);
        static const char *const start_keys[] = { "ts", "task", "model", "cwd", "workspace", NULL };
        for (size_t i = 0; start && start_keys[i]; i++) {
                json_t *v = json_object_get(start, start_keys[i]);
                if (json_is_string(v))
                        json_object_set(row, strcmp(start_keys[i], "ts") == 0 ? "started" : start_keys[i], v);
        }
        const char *type = json_string_value(json_object_get(end, "type"));
        if (type && strcmp(type, "run_end") == 0) {
                json_object_set(row, "status", json_object_get(end, "status"));
                json_object_set(row, "iterations", json_object_get(end, "iterations"));
                json_object_set(row, "output_dir", json_object_get(end, "output_dir"));
                json_t *arts = json_array(), *a;
                size_t i;
                json_array_foreach (json_object_get(end, "artifacts"), i, a)
                        if (json_is_string(json_object_get(a, "path")))
                                json_array_append(arts, json_object_get(a, "path"));
                json_object_set_new(row, "artifacts", arts);
        } else {
                /* running, or ended without its last event (killed) */
                json_object_set_new(row, "status", json_string("unfinished"));
        }
        json_decref(start);
        json_decref(end);
        return row;
}

json_t *records_list(const char *dir, long max, corral_error **err)
{
        cleanup_free char *d = records_dir(dir, err);
        if (d == NULL)
                return NULL;
        size_t n;
        char **ids = run_ids(d, &n);
        json_t *rows = ids ? json_array() : NULL;
        for (size_t i = 0; rows && i < n && (max < 0 || (long)i < max); i++) {
                json_t *row = records_describe(d, ids[i]);
                if (row)
                        json_array_append_new(rows, row);
        }
        free_ids(ids);
        if (rows == NULL)
                corral_fail(err, ENOMEM, "out of memory");
        return rows;
}
