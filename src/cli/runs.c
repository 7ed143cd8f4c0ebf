/* runs.c: `corral runs`, and where `corral run` keeps its records.
 *
 * A run's trace and (without -o or -w) its output live in
 * $XDG_STATE_HOME/corral/runs/ID/ (~/.local/state/corral/runs/ID/ when the
 * variable is unset), never in the directory the run was started from: that
 * directory may be a workspace a jail wrote (`-w .`), where code could have
 * planted `.corral` as a link to anywhere.  The trace's run_start records
 * the directory the run started from ("cwd") and its workspace.
 *
 *   corral runs [-n N | --all] [--json]   the recent runs, newest first
 *
 * `corral trace show|export` take a run's ID, or `last`, for its trace.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/util.h"
#include "../agent/run.h"
#include "../trace/trace.h"
#include "cli.h"

#define EVENT_MAX (4u << 20) /* the first and last lines read of a trace */

static const char help_text[] =
        "usage: corral runs [-n N | --all] [--json]\n"
        "\n"
        "The runs of `corral run`, newest first: ID, when it started (UTC), its status, model\n"
        "turns, artifacts and task.  Their records (trace, output without -o or -w) are in\n"
        "$XDG_STATE_HOME/corral/runs/ID (default ~/.local/state/corral/runs/ID).  Give an ID,\n"
        "or `last`, to `corral trace show` and `corral trace export`.\n"
        "\n"
        "  -n N         at most N runs (default 20)\n"
        "      --all    every run\n"
        "      --json   one JSON array: [{\"run_id\", \"started\", \"status\", \"iterations\",\n"
        "               \"artifacts\", \"task\", \"model\", \"cwd\", \"workspace\", \"trace\",\n"
        "               \"output_dir\"}]\n"
        "  -h, --help   show this help\n"
        "\n"
        "exit statuses: 0 listed (also when there are none); 2 usage error.\n";

/* A run's ID as make_run_id() makes it: 20261129-164512-3fa9c1. */
static bool is_run_id(const char *s)
{
        static const char shape[] = "dddddddd-dddddd-xxxxxx";
        if (strlen(s) != sizeof(shape) - 1)
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

/* The IDs of the recorded runs, newest first (NULL-terminated, malloc'd). */
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
                if (!is_run_id(e->d_name))
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

char *cli_trace_path(const char *arg, corral_error **err)
{
        struct stat st;
        char *path = NULL;
        if (stat(arg, &st) == 0 || (strcmp(arg, "last") != 0 && !is_run_id(arg))) {
                path = strdup(arg);
                if (path == NULL)
                        corral_fail(err, ENOMEM, "out of memory");
                return path;
        }
        cleanup_free char *dir = run_records_dir();
        if (dir == NULL) {
                corral_usage(err, "cannot tell where the runs are kept: set $XDG_STATE_HOME or $HOME");
                return NULL;
        }
        if (strcmp(arg, "last") != 0) {
                if (asprintf(&path, "%s/%s/trace.jsonl", dir, arg) < 0)
                        corral_fail(err, ENOMEM, "out of memory");
                return path;
        }
        size_t n;
        char **ids = run_ids(dir, &n);
        /* The newest run that has a trace (a --no-trace run has none). */
        for (size_t i = 0; ids && i < n && path == NULL; i++) {
                if (asprintf(&path, "%s/%s/trace.jsonl", dir, ids[i]) < 0) {
                        path = NULL;
                } else if (access(path, F_OK) < 0) {
                        free(path);
                        path = NULL;
                }
        }
        free_ids(ids);
        if (path == NULL)
                corral_usage(err, "no run with a trace in '%s' (see 'corral runs')", dir);
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

/* What a listing says of one run, from its trace's first and last events. */
static json_t *describe_run(const char *dir, const char *id)
{
        cleanup_free char *path = NULL;
        if (asprintf(&path, "%s/%s/trace.jsonl", dir, id) < 0)
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

/* A cell of the table: the text on one line, cut to width columns. */
static void cell(const char *s, int width)
{
        cleanup_free char *clean = term_sanitize(s ? s : "-", strlen(s ? s : "-"), NULL);
        for (char *p = clean; p && *p; p++)
                if (*p == '\n' || *p == '\t')
                        *p = ' ';
        int cols = 0;
        const char *p = clean ? clean : "";
        for (; *p && (width <= 0 || cols < width); p++) {
                if (((unsigned char)*p & 0xc0) != 0x80)
                        cols++;
                fputc(*p, stdout);
        }
        while (*p && ((unsigned char)*p & 0xc0) == 0x80)
                fputc(*p++, stdout);
        if (*p)
                fputs("…", stdout);
}

int cmd_runs(int argc, char **argv)
{
        static const struct option opts[] = {
                { "all", no_argument, NULL, 'a' }, { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
        };
        long max = 20;
        bool json = false;
        int c;
        opterr = 0;
        optind = 1;
        while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
                switch (c) {
                case 'n': {
                        char *end = NULL;
                        errno = 0;
                        max = strtol(optarg, &end, 10);
                        if (errno || end == optarg || *end || max < 1)
                                return cli_usage_error("runs", EXIT_USAGE_SUBCOMMAND, "-n takes a count of 1 or more, not '%s'",
                                                       optarg);
                        break;
                }
                case 'a':
                        max = -1;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        fputs(help_text, stdout);
                        return EXIT_OK;
                default:
                        return cli_usage_error("runs", EXIT_USAGE_SUBCOMMAND, "unknown option or missing value '%s'",
                                               argv[optind - 1]);
                }
        }
        if (optind < argc)
                return cli_usage_error("runs", EXIT_USAGE_SUBCOMMAND, "unexpected argument '%s'", argv[optind]);
        cleanup_free char *dir = run_records_dir();
        if (dir == NULL) {
                cli_error("runs", "cannot tell where the runs are kept: set $XDG_STATE_HOME or $HOME");
                return EXIT_USAGE_SUBCOMMAND;
        }
        size_t n;
        char **ids = run_ids(dir, &n);
        json_t *rows = json_array();
        for (size_t i = 0; ids && rows && i < n && (max < 0 || (long)i < max); i++) {
                json_t *row = describe_run(dir, ids[i]);
                if (row)
                        json_array_append_new(rows, row);
        }
        free_ids(ids);
        if (json) {
                char *text = rows ? json_dumps(rows, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) : NULL;
                if (text)
                        puts(text);
                free(text);
        } else if (json_array_size(rows) == 0) {
                printf("no runs recorded in '%s'\n", dir);
        } else {
                printf("%-22s  %-19s  %-10s  %5s  %9s  %s\n", "ID", "STARTED (UTC)", "STATUS", "TURNS", "ARTIFACTS",
                       "TASK");
                size_t i;
                json_t *row;
                json_array_foreach (rows, i, row) {
                        /* "2026-12-01T16:12:00.123Z" -> "2026-12-01 16:12:00" */
                        char when[20] = "-";
                        const char *ts = json_string_value(json_object_get(row, "started"));
                        if (ts && strlen(ts) >= 19 && strspn(ts, "0123456789-:T") >= 19)
                                snprintf(when, sizeof(when), "%.10s %.8s", ts, ts + 11);
                        printf("%-22s  %-19s  ", json_string_value(json_object_get(row, "run_id")), when);
                        const char *status = json_string_value(json_object_get(row, "status"));
                        printf("%-10.10s  ", status ? status : "-");
                        json_t *it = json_object_get(row, "iterations");
                        if (json_is_integer(it))
                                printf("%5" JSON_INTEGER_FORMAT "  ", json_integer_value(it));
                        else
                                printf("%5s  ", "-");
                        printf("%9zu  ", json_array_size(json_object_get(row, "artifacts")));
                        cell(json_string_value(json_object_get(row, "task")), 60);
                        fputc('\n', stdout);
                }
        }
        json_decref(rows);
        return EXIT_OK;
}
