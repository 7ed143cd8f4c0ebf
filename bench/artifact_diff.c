/* artifact_diff.c: what telling a step's artifacts costs on a large workspace.
 *
 *   build/bench/artifact-diff [--files N] [--dirs N] [--runs N] [--md FILE]
 *
 * Makes a workspace of N files (default 10,000) in D directories under
 * output/ (default 100), then, --runs times (default 200), changes one file
 * (a CSV rewritten with one more row, outside the timing) and times what
 * the agent does after every step: the snapshot (workspace_snapshot_next,
 * which stats only what inotify saw change), the diff, and typing the
 * changed file by content.  The same is timed with a full walk
 * (workspace_snapshot) for comparison.  Prints p50, p99, mean and max in
 * ms; --md writes the table as markdown.  A figure, not a pass/fail test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../src/workspace/artifact.h"
#include "stats.h"

struct series {
        const char *name;
        double *v;
        size_t n;
};

static void summarize(struct series *s, FILE *md)
{
        qsort(s->v, s->n, sizeof(*s->v), cmp_double);
        double sum = 0;
        for (size_t i = 0; i < s->n; i++)
                sum += s->v[i];
        printf("%-44s p50 %7.3f  p99 %7.3f  mean %7.3f  max %7.3f ms\n", s->name, pct(s->v, s->n, 50),
               pct(s->v, s->n, 99), sum / (double)s->n, s->v[s->n - 1]);
        if (md)
                fprintf(md, "| %s | %.3f | %.3f | %.3f | %.3f |\n", s->name, pct(s->v, s->n, 50),
                        pct(s->v, s->n, 99), sum / (double)s->n, s->v[s->n - 1]);
}

static int write_text(int dirfd, const char *path, const char *text, size_t len)
{
        int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -1;
        ssize_t n = write(fd, text, len);
        close(fd);
        return n == (ssize_t)len ? 0 : -1;
}

static void usage(void)
{
        fprintf(stderr, "usage: artifact-diff [--files N] [--dirs N] [--runs N] [--md FILE]\n");
        exit(2);
}

int main(int argc, char **argv)
{
        size_t files = 10000, dirs = 100, runs = 200;
        const char *md_path = NULL;
        for (int i = 1; i < argc; i++) {
                if (i + 1 >= argc)
                        usage();
                if (strcmp(argv[i], "--files") == 0)
                        files = strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--dirs") == 0)
                        dirs = strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--runs") == 0)
                        runs = strtoul(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--md") == 0)
                        md_path = argv[++i];
                else
                        usage();
        }
        if (files == 0 || dirs == 0 || runs == 0)
                usage();

        struct workspace *ws = NULL;
        corral_error *err = NULL;
        if (workspace_open(NULL, &ws, &err) < 0) {
                fprintf(stderr, "artifact-diff: %s\n", err->msg);
                return 1;
        }
        char path[256];
        for (size_t d = 0; d < dirs; d++) {
                snprintf(path, sizeof(path), "output/d%04zu", d);
                mkdirat(ws->root_fd, path, 0755);
        }
        for (size_t f = 0; f < files; f++) {
                snprintf(path, sizeof(path), "output/d%04zu/f%05zu.csv", f % dirs, f);
                if (write_text(ws->root_fd, path, "a,b\n1,2\n", 8) < 0) {
                        fprintf(stderr, "artifact-diff: cannot write %s/%s: %s\n", ws->root, path, strerror(errno));
                        workspace_close(ws, true);
                        return 1;
                }
        }

        struct series inc = { "snapshot (inotify) + diff + typing", calloc(runs, sizeof(double)), runs };
        struct series snap = { "of which: the snapshot", calloc(runs, sizeof(double)), runs };
        struct series typing = { "of which: typing", calloc(runs, sizeof(double)), runs };
        struct series cpu = { "all three, thread CPU time", calloc(runs, sizeof(double)), runs };
        struct series full = { "full walk + diff + typing", calloc(runs, sizeof(double)), runs };
        if (!inc.v || !snap.v || !typing.v || !cpu.v || !full.v)
                return 1;
        size_t bad = 0, walked = 0;
        char *csv = malloc(32 * (runs + 3));
        if (csv == NULL)
                return 1;
        for (int mode = 0; mode < 2; mode++) {
                struct ws_snapshot *before = NULL;
                if (workspace_snapshot(ws, &before, &err) < 0) {
                        fprintf(stderr, "artifact-diff: %s\n", err->msg);
                        return 1;
                }
                if (mode == 0 && !ws_snapshot_tracking(before))
                        fprintf(stderr, "artifact-diff: note: inotify is not available; every snapshot walks\n");
                size_t len = (size_t)snprintf(csv, 32, "a,b\n");
                for (size_t r = 0; r < runs; r++) {
                        len += (size_t)snprintf(csv + len, 32, "%zu,%zu\n", r, r * 2);
                        snprintf(path, sizeof(path), "output/d%04zu/f%05zu.csv", (r * 37) % dirs,
                                 ((r * 37) % dirs) + dirs * (r % (files / dirs ? files / dirs : 1)));
                        if (write_text(ws->root_fd, path, csv, len) < 0)
                                return 1;
                        double c0 = cpu_ms(), t0 = now_ms();
                        struct ws_snapshot *after = NULL;
                        int rc = mode == 0 ? workspace_snapshot_next(ws, before, &after, &err)
                                           : workspace_snapshot(ws, &after, &err);
                        if (rc < 0) {
                                fprintf(stderr, "artifact-diff: %s\n", err->msg);
                                return 1;
                        }
                        double t1 = now_ms();
                        if (mode == 0 && !ws_snapshot_incremental(after))
                                walked++; /* events lost: a full walk */
                        json_t *d = workspace_diff(before, after);
                        double t2 = now_ms();
                        size_t typed = workspace_type_artifacts(ws, d);
                        double t3 = now_ms(), c3 = cpu_ms();
                        /* The one change, typed as the CSV it is. */
                        json_t *e = json_array_get(d, 0);
                        if (json_array_size(d) != 1 || typed != 1 ||
                            json_integer_value(json_object_get(e, "rows")) != (json_int_t)r + 1)
                                bad++;
                        json_decref(d);
                        ws_snapshot_free(before);
                        before = after;
                        if (mode == 0) {
                                inc.v[r] = t3 - t0;
                                snap.v[r] = t1 - t0;
                                typing.v[r] = t3 - t2;
                                cpu.v[r] = c3 - c0;
                        } else {
                                full.v[r] = t3 - t0;
                        }
                }
                ws_snapshot_free(before);
        }

        FILE *md = md_path ? fopen(md_path, "w") : NULL;
        if (md_path && md == NULL) {
                fprintf(stderr, "artifact-diff: cannot write '%s': %s\n", md_path, strerror(errno));
                return 1;
        }
        printf("artifact diff after a step: %zu files in %zu directories, one file changed per step, %zu runs\n",
               files, dirs, runs);
        if (md) {
                fprintf(md, "### Artifact diff after a step (%zu files, %zu runs)\n\n", files, runs);
                fprintf(md, "One CSV file rewritten per step in a workspace of %zu files in %zu directories; "
                            "timed: the snapshot, the diff against the previous one and typing the changed "
                            "file by content (`bench/artifact_diff.c`). Target: 5 ms.\n\n",
                        files, dirs);
                fprintf(md, "| what | p50 ms | p99 ms | mean ms | max ms |\n| --- | ---: | ---: | ---: | ---: |\n");
        }
        summarize(&inc, md);
        summarize(&snap, md);
        summarize(&typing, md);
        summarize(&cpu, md);
        summarize(&full, md);
        if (walked)
                printf("note: %zu of the inotify runs fell back to a full walk\n", walked);
        if (bad)
                printf("warning: %zu runs did not report exactly the one changed file\n", bad);
        if (md)
                fclose(md);
        free(csv);
        free(inc.v);
        free(snap.v);
        free(typing.v);
        free(cpu.v);
        free(full.v);
        workspace_close(ws, true);
        return bad ? 1 : 0;
}
