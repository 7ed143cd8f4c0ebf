/* session_start.c: how fast a new session is ready with the data libraries
 * imported, warm (forked from the zygote) and cold (docs/sessions.md).
 *
 *   session-start [N] [--json FILE]      (default 30 sessions of each kind)
 *
 * For each kind, N times, one after the other: session_start(), then a
 * first step `import pandas, matplotlib.pyplot; 1` (already imported in a
 * warm session, a real import in a cold one); the figure is the sum, "new
 * session ready with pandas + matplotlib imported", with p50, p90, p99 and
 * max; each session is freed off the clock.  The zygote is started (and its
 * start-up timed) before the warm runs and held by one idle session
 * throughout, as a process serving many sessions would.  Then memory: the
 * USS (Private_* of smaps_rollup) of 10 more idle warm sessions beyond the
 * zygote, per session (their init and interpreter: everything the zygote's
 * jail holds but the zygote and the pool), taken after 1, 5 and 10 of them.
 * --json FILE also writes every sample (bench/sessions.py reads it).
 * Figures, not pass/fail.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/session/session.h"
#include "../src/session/warm.h"
#include "stats.h"

static struct session *start(const corral_jail_config *cfg, bool warm)
{
        struct session_options opt = { 0 };
        session_options_init(&opt);
        opt.warm = warm;
        struct session *s = NULL;
        corral_error *err = NULL;
        if (session_start(cfg, &opt, &s, &err) < 0) {
                fprintf(stderr, "session-start: %s\n", err ? err->msg : "cannot start");
                corral_error_free(err);
                return NULL;
        }
        return s;
}

static int step(struct session *s, const char *code)
{
        struct session_result r;
        corral_error *err = NULL;
        struct session_step_limits lim = { .timeout_s = 60, .cancel_fd = -1 };
        if (session_exec(s, code, strlen(code), &lim, NULL, &r, &err) < 0) {
                fprintf(stderr, "session-start: %s\n", err ? err->msg : "?");
                corral_error_free(err);
                return -1;
        }
        int rc = r.status == SESSION_STEP_OK ? 0 : -1;
        if (rc < 0)
                fprintf(stderr, "session-start: the step failed: %s\n", r.reason ? r.reason : "?");
        session_result_release(&r);
        return rc;
}

/* The samples as a JSON array, for --json. */
static void json_samples(FILE *f, const char *name, const double *ms, int n)
{
        fprintf(f, "\"%s\": [", name);
        for (int i = 0; i < n; i++)
                fprintf(f, "%s%.3f", i ? ", " : "", ms[i]);
        fprintf(f, "]");
}

/* n sessions of one kind; *ret_ms gets the samples, in the order taken. */
static int run(const corral_jail_config *cfg, bool warm, int n, double **ret_ms)
{
        double *ms = calloc((size_t)n, sizeof(double));
        double *sorted = calloc((size_t)n, sizeof(double));
        if (ms == NULL || sorted == NULL) {
                free(ms);
                free(sorted);
                return -1;
        }
        for (int i = 0; i < n; i++) {
                double t0 = monotonic_ms();
                struct session *s = start(cfg, warm);
                if (s == NULL || step(s, "import pandas, matplotlib.pyplot\n1") < 0) {
                        session_free(s);
                        free(ms);
                        free(sorted);
                        return -1;
                }
                ms[i] = monotonic_ms() - t0;
                session_free(s);
        }
        memcpy(sorted, ms, (size_t)n * sizeof(double));
        qsort(sorted, (size_t)n, sizeof(double), cmp_double);
        printf("%-5s new session ready with pandas + matplotlib imported, %d sessions: p50 %.1f ms, p90 %.1f ms, "
               "p99 %.1f ms, max %.1f ms\n",
               warm ? "warm" : "cold", n, pct(sorted, (size_t)n, 50), pct(sorted, (size_t)n, 90),
               pct(sorted, (size_t)n, 99), sorted[n - 1]);
        free(sorted);
        *ret_ms = ms;
        return 0;
}

/* kB of the smaps_rollup lines of pid that start with prefix. */
static long rollup_kb(int pid, const char *prefix)
{
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
        FILE *f = fopen(path, "re");
        long kb = 0, v;
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, prefix, strlen(prefix)) == 0 && sscanf(strchr(line, ':') + 1, "%ld", &v) == 1)
                        kb += v;
        if (f)
                fclose(f);
        return kb;
}

static long uss_kb(int pid)
{
        return rollup_kb(pid, "Private_");
}

/* The parent of pid, or -1. */
static int parent_of(int pid)
{
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        FILE *f = fopen(path, "re");
        if (f == NULL)
                return -1;
        size_t len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = '\0';
        char *rp = strrchr(buf, ')'), st;
        int ppid;
        return rp && sscanf(rp + 1, " %c %d", &st, &ppid) == 2 ? ppid : -1;
}

/* Whether pid descends from this process: other users of the machine may
 * run zygotes of their own, which must not be counted. */
static bool ours(int pid)
{
        int self = getpid();
        for (int hops = 0; hops < 64 && pid > 1; hops++)
                if ((pid = parent_of(pid)) == self)
                        return true;
        return false;
}

/* USS of every process of ours named like the zygote but the zygote itself. */
static long sessions_uss_kb(int zygote, int *ret_n)
{
        DIR *d = opendir("/proc");
        struct dirent *e;
        long kb = 0;
        *ret_n = 0;
        while (d && (e = readdir(d)) != NULL) {
                int pid = (int)strtol(e->d_name, NULL, 10);
                if (pid <= 0 || pid == zygote)
                        continue;
                char path[64], comm[64] = "";
                snprintf(path, sizeof(path), "/proc/%d/comm", pid);
                FILE *f = fopen(path, "re");
                if (f && fgets(comm, sizeof(comm), f) && strncmp(comm, "python3-zygote", 14) == 0 && ours(pid)) {
                        kb += uss_kb(pid);
                        (*ret_n)++;
                }
                if (f)
                        fclose(f);
        }
        if (d)
                closedir(d);
        return kb;
}

int main(int argc, char **argv)
{
        int n = 30;
        const char *json_path = NULL;
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
                        json_path = argv[++i];
                else if ((n = (int)strtol(argv[i], NULL, 10)) < 1) {
                        fprintf(stderr, "usage: session-start [N] [--json FILE]\n");
                        return 2;
                }
        }
        int rc = 1;
        struct session *anchor = NULL, *idle[10] = { NULL };
        double *warm_ms = NULL, *cold_ms = NULL;
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        char *pyargv[] = { "python3", NULL };
        if (corral_jail_config_set_argv(&cfg, pyargv, NULL) < 0)
                goto out;

        double t0 = monotonic_ms();
        if ((anchor = start(&cfg, true)) == NULL)
                goto out;
        double zygote_ms = monotonic_ms() - t0;
        printf("zygote start (jail, imports of numpy, pandas, matplotlib, scipy) + first session: %.0f ms\n",
               zygote_ms);
        if (run(&cfg, true, n, &warm_ms) < 0 || run(&cfg, false, n, &cold_ms) < 0)
                goto out;

        /* Memory: 10 more idle warm sessions, measured after 1, 5 and 10,
         * each time once the pool has refilled. */
        static const int at[] = { 1, 5, 10 };
        double per_mib[3];
        int procs[3];
        int zpid = (int)warm_zygote_pid();
        for (int i = 0; i < 200 && warm_pool_size() < 2; i++)
                usleep(10000);
        int before_n, after_n;
        long before = sessions_uss_kb(zpid, &before_n);
        for (int i = 0, k = 0; i < 10; i++) {
                idle[i] = start(&cfg, true);
                if (idle[i] == NULL || step(idle[i], "x = 1") < 0)
                        goto out;
                if (i + 1 != at[k])
                        continue;
                for (int w = 0; w < 200 && warm_pool_size() < 2; w++)
                        usleep(10000);
                long after = sessions_uss_kb(zpid, &after_n);
                per_mib[k] = (double)(after - before) / at[k] / 1024;
                procs[k] = after_n - before_n;
                printf("USS per idle warm session beyond the zygote: %.1f MiB (%d sessions, %d processes)\n",
                       per_mib[k], at[k], procs[k]);
                k++;
        }
        /* Its RSS: most of its pages are shared with the sessions by now,
         * which takes them out of its USS. */
        double zygote_mib = (double)rollup_kb(zpid, "Rss:") / 1024;
        printf("the zygote's RSS (shared with the sessions forked from it): %.1f MiB\n", zygote_mib);
        if (json_path) {
                FILE *f = fopen(json_path, "we");
                if (f == NULL) {
                        perror(json_path);
                        goto out;
                }
                fprintf(f, "{\"n\": %d, \"zygote_start_ms\": %.1f, \"zygote_rss_mib\": %.2f, ", n, zygote_ms,
                        zygote_mib);
                json_samples(f, "warm_ms", warm_ms, n);
                fprintf(f, ", ");
                json_samples(f, "cold_ms", cold_ms, n);
                fprintf(f, ", \"uss\": [");
                for (int k = 0; k < 3; k++)
                        fprintf(f, "%s{\"sessions\": %d, \"per_session_mib\": %.2f, \"processes\": %d}",
                                k ? ", " : "", at[k], per_mib[k], procs[k]);
                fprintf(f, "]}\n");
                if (fclose(f) != 0) {
                        perror(json_path);
                        goto out;
                }
        }
        rc = 0;
out:
        for (int i = 0; i < 10; i++)
                session_free(idle[i]);
        free(warm_ms);
        free(cold_ms);
        session_free(anchor);
        corral_jail_config_release(&cfg);
        return rc;
}
