/* session_step.c: how fast a live session answers (docs/sessions.md).
 *
 *   session-step [STEPS] [--json FILE]      (default 2000)
 *
 * Prints, for sessions started through the library (src/session/session.h)
 * with the default jail limits:
 *   - start: session_start() until the interpreter is ready (cold: no
 *     zygote yet), over 10 sessions;
 *   - round trip of a trivial step (`x + 1`) in a live session: p50, p90,
 *     p99, max, after 50 warm-up steps;
 *   - throughput: trivial steps per second, one session, then two sessions
 *     driven from two threads at once (this machine has 2 cores);
 *   - memory: the USS (Private_* of smaps_rollup) of one idle session's
 *     processes (corral-init and the interpreter).
 * --json FILE also writes the figures and every step's round trip
 * (bench/sessions.py reads it).  Figures, not pass/fail.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/session/session.h"
#include "stats.h"

static int step(struct session *s, const char *code, double *ret_ms)
{
        struct session_result r;
        corral_error *err = NULL;
        struct session_step_limits lim = { .timeout_s = 30, .cancel_fd = -1 };
        double t0 = monotonic_ms();
        if (session_exec(s, code, strlen(code), &lim, NULL, &r, &err) < 0) {
                fprintf(stderr, "session-step: %s\n", err->msg);
                corral_error_free(err);
                return -1;
        }
        double ms = monotonic_ms() - t0;
        int ok = r.status == SESSION_STEP_OK ? 0 : -1;
        if (ok < 0)
                fprintf(stderr, "session-step: the step failed: %s\n", r.reason ? r.reason : "?");
        session_result_release(&r);
        if (ret_ms)
                *ret_ms = ms;
        return ok;
}

struct worker {
        struct session *s;
        int steps;
        double ms;
        int rc;
};

static void *drive(void *arg)
{
        struct worker *w = arg;
        double t0 = monotonic_ms();
        for (int i = 0; i < w->steps && w->rc == 0; i++)
                w->rc = step(w->s, "x + 1", NULL);
        w->ms = monotonic_ms() - t0;
        return NULL;
}

/* kB of Private_Clean + Private_Dirty (+ Private_Hugetlb) of one pid. */
static long uss_kb(int pid)
{
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
        FILE *f = fopen(path, "r");
        if (f == NULL)
                return -1;
        long kb = 0, v;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "Private_", 8) == 0 && sscanf(strchr(line, ':') + 1, "%ld", &v) == 1)
                        kb += v;
        fclose(f);
        return kb;
}

/* The USS of every process whose parent chain reaches us. */
static long tree_uss_kb(void)
{
        int self = getpid(), n = 0;
        int pids[4096], ppids[4096];
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d)) && n < 4096) {
                int pid = (int)strtol(e->d_name, NULL, 10);
                if (pid <= 0)
                        continue;
                char path[64], buf[512];
                snprintf(path, sizeof(path), "/proc/%d/stat", pid);
                FILE *f = fopen(path, "r");
                if (f == NULL)
                        continue;
                size_t len = fread(buf, 1, sizeof(buf) - 1, f);
                fclose(f);
                buf[len] = '\0';
                char *rp = strrchr(buf, ')');
                int ppid;
                char st;
                if (rp && sscanf(rp + 1, " %c %d", &st, &ppid) == 2) {
                        pids[n] = pid;
                        ppids[n++] = ppid;
                }
        }
        if (d)
                closedir(d);
        long total = 0;
        for (int i = 0; i < n; i++) {
                int q = ppids[i];
                for (int hops = 0; hops < 64 && q > 1 && q != self; hops++) {
                        int j;
                        for (j = 0; j < n && pids[j] != q; j++)
                                ;
                        q = j < n ? ppids[j] : 0;
                }
                if (q == self) {
                        long kb = uss_kb(pids[i]);
                        if (kb > 0)
                                total += kb;
                }
        }
        return total;
}

int main(int argc, char **argv)
{
        int steps = 2000;
        const char *json_path = NULL;
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
                        json_path = argv[++i];
                else if ((steps = (int)strtol(argv[i], NULL, 10)) <= 0) {
                        fprintf(stderr, "usage: session-step [STEPS] [--json FILE]\n");
                        return 2;
                }
        }
        if (steps < 100)
                steps = 100;
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        char *placeholder[] = { "python3", NULL };
        corral_error *err = NULL;
        if (corral_jail_config_set_argv(&cfg, placeholder, &err) < 0)
                goto fail;

        /* Start-up, cold. */
        double starts[10];
        for (int i = 0; i < 10; i++) {
                struct session *s;
                double t0 = monotonic_ms();
                if (session_start(&cfg, NULL, &s, &err) < 0)
                        goto fail;
                starts[i] = monotonic_ms() - t0;
                session_free(s);
        }
        qsort(starts, 10, sizeof(double), cmp_double);
        printf("session start (cold, no zygote): p50 %.1f ms, min %.1f ms, max %.1f ms (10 sessions)\n",
               pct(starts, 10, 50), starts[0], starts[9]);

        struct session *a, *b;
        if (session_start(&cfg, NULL, &a, &err) < 0)
                goto fail;
        if (step(a, "x = 1", NULL) < 0)
                return 1;
        for (int i = 0; i < 50; i++)
                if (step(a, "x + 1", NULL) < 0)
                        return 1;
        long uss = tree_uss_kb();
        double *ms = calloc((size_t)steps, sizeof(double));
        if (ms == NULL)
                return 1;
        double t0 = monotonic_ms();
        for (int i = 0; i < steps; i++)
                if (step(a, "x + 1", &ms[i]) < 0)
                        return 1;
        double total = monotonic_ms() - t0;
        double one_per_s = steps / (total / 1000);
        qsort(ms, (size_t)steps, sizeof(double), cmp_double);
        printf("trivial step `x + 1`, round trip: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms (%d steps)\n",
               pct(ms, (size_t)steps, 50), pct(ms, (size_t)steps, 90), pct(ms, (size_t)steps, 99), ms[steps - 1],
               steps);
        printf("throughput, one session: %.0f steps/s\n", one_per_s);

        if (session_start(&cfg, NULL, &b, &err) < 0)
                goto fail;
        if (step(b, "x = 1", NULL) < 0)
                return 1;
        struct worker w[2] = { { .s = a, .steps = steps }, { .s = b, .steps = steps } };
        pthread_t th[2];
        t0 = monotonic_ms();
        for (int i = 0; i < 2; i++)
                pthread_create(&th[i], NULL, drive, &w[i]);
        for (int i = 0; i < 2; i++)
                pthread_join(th[i], NULL);
        total = monotonic_ms() - t0;
        if (w[0].rc < 0 || w[1].rc < 0)
                return 1;
        double two_per_s = 2 * steps / (total / 1000);
        printf("throughput, two sessions from two threads: %.0f steps/s in all\n", two_per_s);
        printf("memory of one idle session (corral-init + interpreter, USS): %.1f MiB\n", uss / 1024.0);
        if (json_path) {
                /* The step samples sorted: their order carries nothing here. */
                FILE *f = fopen(json_path, "we");
                if (f == NULL) {
                        perror(json_path);
                        return 1;
                }
                fprintf(f, "{\"steps\": %d, \"start_cold_p50_ms\": %.2f, \"one_session_per_s\": %.1f, "
                           "\"two_sessions_per_s\": %.1f, \"idle_uss_mib\": %.2f, \"step_ms\": [",
                        steps, pct(starts, 10, 50), one_per_s, two_per_s, uss / 1024.0);
                for (int i = 0; i < steps; i++)
                        fprintf(f, "%s%.4f", i ? ", " : "", ms[i]);
                fprintf(f, "]}\n");
                if (fclose(f) != 0) {
                        perror(json_path);
                        return 1;
                }
        }
        free(ms);
        session_free(a);
        session_free(b);
        corral_jail_config_release(&cfg);
        return 0;
fail:
        fprintf(stderr, "session-step: %s\n", err ? err->msg : "failed");
        corral_error_free(err);
        corral_jail_config_release(&cfg);
        return 1;
}
