/* engine-threads: the engine as a server holds it, in one process: agent
 * runs (run.h) and session steps through a session host (host.h) from many
 * threads at once, some cancelled midway, then everything freed.  Driven by
 * tests/e2e/test_engine.py, built with ASan here and with ThreadSanitizer by
 * scripts/run-tests.sh.
 *
 *   engine-threads RECORDS_DIR SESSIONS STEPS_PER_SESSION BASE_URL...
 *
 * All of it twice (a model server answers both rounds' runs): the file
 * descriptors after the second round must be those after the first (what
 * the library caches once, such as corral-init's fd, is made in the first).
 * One run per BASE_URL (a scripted model server each: a run's turns are its
 * own), all started together; a URL given as "cancel:URL" is a run whose
 * step sleeps and which is cancelled (run_cancel()) from this thread after
 * a second.  SESSIONS sessions, each served by two threads sharing its
 * steps (a session takes one request at a time), every fifth step over its
 * time limit (interrupted, state kept).  Prints one JSON object per round:
 * {"runs": [{"status", "answer", "trace"}], "sessions": [{"steps", "errors",
 * "timeouts"}], "host_empty", "fds"}; exit 0 when every call returned, 1
 * otherwise.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/agent/run.h"
#include "../../src/session/host.h"

static int count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        int n = 0;
        while (d && readdir(d))
                n++;
        if (d)
                closedir(d);
        return n;
}

/* ---- runs ---- */

struct run_job {
        const char *base_url;
        bool cancel;
        const char *records;
        int index, round;
        struct run *r;
        pthread_mutex_t *lock;   /* guards r against the canceller */
        json_t *out;
};

static void *run_main(void *arg)
{
        struct run_job *j = arg;
        corral_jail_config jail;
        corral_jail_config_init(&jail);
        struct run_config c;
        run_config_init(&c);
        char task[64], trace_path[4096];
        snprintf(task, sizeof(task), "run %d: compute 6 * 7", j->index);
        snprintf(trace_path, sizeof(trace_path), "%s/trace-%d-%d.jsonl", j->records, j->round, j->index);
        c.task = task;
        c.jail = &jail;
        c.provider.base_url = j->base_url;
        c.provider.model = "gpt-test";
        c.provider.config_path = "";
        c.model.max_retries = 0;
        c.records_dir = j->records;
        c.trace_path = trace_path;
        corral_error *err = NULL;
        struct run *r = NULL;
        if (run_open(&c, &r, &err) < 0) {
                j->out = json_pack("{s:s}", "error", err ? err->msg : "run_open failed");
                corral_error_free(err);
                return NULL;
        }
        pthread_mutex_lock(j->lock);
        j->r = r;
        pthread_mutex_unlock(j->lock);
        if (run_execute(r, &err) < 0) {
                j->out = json_pack("{s:s}", "error", err ? err->msg : "run_execute failed");
                corral_error_free(err);
        } else {
                json_t *res = run_finish(r);
                j->out = json_pack("{s:O?, s:O?, s:s}", "status", json_object_get(res, "status"), "answer",
                                   json_object_get(res, "answer"), "trace", trace_path);
                json_decref(res);
        }
        pthread_mutex_lock(j->lock);
        j->r = NULL;
        pthread_mutex_unlock(j->lock);
        run_free(r);
        corral_jail_config_release(&jail);
        return NULL;
}

/* ---- sessions ---- */

struct session_job {
        struct session_host *h;
        char id[SESSION_ID_LEN + 1];
        int steps;               /* this thread's share */
        int first;               /* its first step number */
        pthread_mutex_t lock;    /* the counters, shared by the session's two threads */
        int done, errors, timeouts;
        char *last;
};

static void *session_main(void *arg)
{
        struct session_job *s = arg;
        for (int k = 0; k < s->steps; k++) {
                int n = s->first + k;
                char code[128];
                /* Every fifth step outlives its limit: interrupted, and
                 * the session's state is kept. */
                if (n % 5 == 4)
                        snprintf(code, sizeof(code), "import time\ntime.sleep(5)");
                else
                        snprintf(code, sizeof(code), "total = globals().get('total', 0) + %d\ntotal", n);
                struct session_step_limits lim = { .timeout_s = n % 5 == 4 ? 0.3 : 30 };
                json_t *r = NULL;
                corral_error *err = NULL;
                int rc = session_host_exec(s->h, s->id, code, strlen(code), &lim, NULL, NULL, &r, &err);
                const char *status = json_string_value(json_object_get(r, "status"));
                pthread_mutex_lock(&s->lock);
                s->done++;
                if (rc < 0 || r == NULL || (status && strcmp(status, "ok") != 0 && strcmp(status, "timeout") != 0))
                        s->errors++;
                if (status && strcmp(status, "timeout") == 0)
                        s->timeouts++;
                const char *text = json_string_value(json_object_get(json_object_get(r, "value"), "text"));
                if (text) {
                        free(s->last);
                        s->last = strdup(text);
                }
                pthread_mutex_unlock(&s->lock);
                corral_error_free(err);
                json_decref(r);
        }
        return NULL;
}

/* One round: the runs and the sessions at once; its JSON line printed. */
static bool one_round(int round, const char *records, int n_sessions, int steps, char **urls, int n_runs)
{
        bool ok = true;

        struct session_host *h = NULL;
        corral_error *err = NULL;
        struct session_host_options hopt = { 0 };
        if (session_host_new(&hopt, &h, &err) < 0) {
                fprintf(stderr, "engine-threads: %s\n", err ? err->msg : "no host");
                return false;
        }
        struct session_job *sj = calloc((size_t)n_sessions, sizeof(*sj));
        for (int i = 0; i < n_sessions; i++) {
                sj[i].h = h;
                pthread_mutex_init(&sj[i].lock, NULL);
                struct session_spec spec = { 0 };
                corral_jail_config_init(&spec.cfg);
                char *argv0[] = { "python3", NULL };
                corral_jail_config_set_argv(&spec.cfg, argv0, NULL);
                session_options_init(&spec.opt);
                spec.opt.warm = true;
                spec.tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
                json_t *started = NULL;
                bool refused = false;
                if (session_id_make(sj[i].id, &err) < 0 ||
                    session_host_start(h, sj[i].id, &spec, &started, &refused, &err) < 0) {
                        fprintf(stderr, "engine-threads: session %d: %s\n", i, err ? err->msg : "?");
                        corral_error_clear(&err);
                        ok = false;
                        sj[i].id[0] = '\0';
                }
                json_decref(started);
        }

        pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;
        struct run_job *rj = calloc((size_t)n_runs, sizeof(*rj));
        pthread_t *rt = calloc((size_t)n_runs, sizeof(*rt));
        pthread_t *st = calloc((size_t)n_sessions * 2, sizeof(*st));
        struct session_job *halves = calloc((size_t)n_sessions * 2, sizeof(*halves));
        for (int i = 0; i < n_runs; i++) {
                const char *url = urls[i];
                rj[i].cancel = strncmp(url, "cancel:", 7) == 0;
                rj[i].base_url = rj[i].cancel ? url + 7 : url;
                rj[i].records = records;
                rj[i].index = i;
                rj[i].round = round;
                rj[i].lock = &run_lock;
                pthread_create(&rt[i], NULL, run_main, &rj[i]);
        }
        /* Two threads per session, each with half of its steps: the host
         * serialises them. */
        for (int i = 0; i < n_sessions; i++) {
                for (int k = 0; k < 2; k++) {
                        struct session_job *half = &halves[2 * i + k];
                        *half = sj[i];
                        half->steps = steps / 2 + (k == 0 ? steps % 2 : 0);
                        half->first = k == 0 ? 0 : steps / 2 + steps % 2;
                        pthread_mutex_init(&half->lock, NULL);
                        half->last = NULL;
                        if (sj[i].id[0])
                                pthread_create(&st[2 * i + k], NULL, session_main, half);
                }
        }
        /* The cancelled runs: once they are under way. */
        sleep(1);
        for (int tries = 0; tries < 100; tries++) {
                int pending = 0;
                pthread_mutex_lock(&run_lock);
                for (int i = 0; i < n_runs; i++) {
                        if (!rj[i].cancel)
                                continue;
                        if (rj[i].r)
                                run_cancel(rj[i].r);
                        else if (rj[i].out == NULL)
                                pending++;
                }
                pthread_mutex_unlock(&run_lock);
                if (pending == 0)
                        break;
                usleep(100 * 1000);
        }
        for (int i = 0; i < n_runs; i++)
                pthread_join(rt[i], NULL);
        json_t *sessions = json_array();
        for (int i = 0; i < n_sessions; i++) {
                json_t *o = json_object();
                if (sj[i].id[0]) {
                        pthread_join(st[2 * i], NULL);
                        pthread_join(st[2 * i + 1], NULL);
                        json_t *info = session_host_info(h, sj[i].id, NULL);
                        json_object_set(o, "steps", json_object_get(info, "steps"));
                        json_decref(info);
                        int errors = halves[2 * i].errors + halves[2 * i + 1].errors;
                        json_object_set_new(o, "errors", json_integer(errors));
                        json_object_set_new(o, "timeouts",
                                            json_integer(halves[2 * i].timeouts + halves[2 * i + 1].timeouts));
                        /* The second half ran after or between the first's:
                         * the last value either thread saw is the sum so far. */
                        ok = ok && errors == 0;
                        if (session_host_stop(h, sj[i].id, &err) < 0) {
                                corral_error_clear(&err);
                                ok = false;
                        }
                }
                json_array_append_new(sessions, o);
                for (int k = 0; k < 2; k++) {
                        free(halves[2 * i + k].last);
                        pthread_mutex_destroy(&halves[2 * i + k].lock);
                }
                pthread_mutex_destroy(&sj[i].lock);
        }
        json_t *final = session_host_list(h);
        bool empty = json_array_size(final) == 0;
        json_decref(final);
        session_host_free(h);
        json_t *runs = json_array();
        for (int i = 0; i < n_runs; i++) {
                if (rj[i].out == NULL || json_object_get(rj[i].out, "error"))
                        ok = false;
                json_object_set_new(rj[i].out ? rj[i].out : (rj[i].out = json_object()), "cancelled_by_test",
                                    json_boolean(rj[i].cancel));
                json_array_append_new(runs, rj[i].out);
        }
        json_t *out = json_pack("{s:i, s:o, s:o, s:i, s:b}", "round", round, "runs", runs, "sessions", sessions,
                                "fds", count_fds(), "host_empty", empty);
        char *text = json_dumps(out, JSON_COMPACT);
        puts(text ? text : "null");
        free(text);
        json_decref(out);
        free(rj);
        free(rt);
        free(st);
        free(halves);
        free(sj);
        return ok && empty;
}

int main(int argc, char **argv)
{
        if (argc < 4) {
                fprintf(stderr, "usage: engine-threads RECORDS_DIR SESSIONS STEPS_PER_SESSION BASE_URL...\n");
                return 2;
        }
        int n_sessions = (int)strtol(argv[2], NULL, 10), steps = (int)strtol(argv[3], NULL, 10);
        bool ok = true;
        for (int round = 0; round < 2; round++)
                ok = one_round(round, argv[1], n_sessions, steps, argv + 4, argc - 4) && ok;
        return ok ? 0 : 1;
}
