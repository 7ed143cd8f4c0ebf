/* warm-sessions: several sessions in one process, for tests that need two
 * sessions forked from one zygote (tests/e2e/test_zygote.py,
 * tests/attack/test_zygote.py).  `corral session start` runs one supervisor
 * (so one zygote) per session; this runs many over one.
 *
 * Reads one JSON request per line on stdin, answers one JSON line each:
 *   {"op": "start", "warm": true, "memory": BYTES, "pids": N, "workspace": DIR, "env": ["N=V"]}
 *                                                  -> {"ok": true, "s": INDEX}
 *   {"op": "exec", "s": INDEX, "code": "...", "timeout": S}
 *                                                  -> {"ok": true, "result": {...}}
 *   {"op": "stop", "s": INDEX}                     -> {"ok": true}
 *   {"op": "zygote"}                               -> {"ok": true, "pid": P, "pool": N}
 *   {"op": "threads", "n": N, "steps": K}          -> {"ok": true, "threads": [{"steps": [RESULT...]}
 *                                                      or {"error": "..."}], "zygote": P}
 *     N threads at once (tests/e2e/test_zygote.py; the TSan build): each
 *     prestarts the zygote, starts a warm session, runs K steps that
 *     build on each other (step k prints "T k SUM"), stops it and ends
 *     its prestart, as N runs in one server process would.
 * Errors: {"ok": false, "error": "..."}.  End of input stops everything.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/session/session.h"
#include "../../src/session/warm.h"

#define MAX_SESSIONS 64

static void reply(json_t *j)
{
        char *s = json_dumps(j, JSON_COMPACT);
        if (s) {
                puts(s);
                fflush(stdout);
        }
        free(s);
        json_decref(j);
}

static void reply_error(const char *msg)
{
        reply(json_pack("{s:b,s:s}", "ok", 0, "error", msg ? msg : "error"));
}

struct worker {
        int id, steps;
        pthread_barrier_t *go;
        json_t *out;             /* {"steps": [...]} or {"error": "..."} */
        pid_t zygote;            /* the zygote it saw, 0 none */
};

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        corral_error *err = NULL;
        struct session *s = NULL;
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        char *argv[] = { "python3", NULL };
        corral_jail_config_set_argv(&cfg, argv, NULL);
        struct session_options opt = { 0 };
        session_options_init(&opt);
        opt.warm = true;
        pthread_barrier_wait(w->go);
        session_prewarm();
        if (session_start(&cfg, &opt, &s, &err) < 0) {
                w->out = json_pack("{s:s}", "error", err ? err->msg : "cannot start");
                goto out;
        }
        w->zygote = warm_zygote_pid();
        json_t *steps = json_array();
        w->out = json_pack("{s:o}", "steps", steps);
        for (int k = 0; k < w->steps; k++) {
                char code[160];
                snprintf(code, sizeof(code), "acc = %s%d\nprint(%d, %d, acc)\n", k ? "acc + " : "", w->id * 1000 + k,
                         w->id, k);
                struct session_step_limits lim = { .timeout_s = 60, .cancel_fd = -1 };
                struct session_result r;
                if (session_exec(s, code, strlen(code), &lim, NULL, &r, &err) < 0) {
                        json_array_append_new(steps, json_pack("{s:s}", "error", err ? err->msg : "cannot run"));
                        corral_error_free(err);
                        err = NULL;
                        continue;
                }
                json_array_append_new(steps, session_result_to_json(&r));
                session_result_release(&r);
        }
        session_free(s);
out:
        session_prewarm_end();
        corral_error_free(err);
        corral_jail_config_release(&cfg);
        return NULL;
}

static json_t *run_threads(int n, int steps)
{
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, (unsigned)n);
        struct worker *w = calloc((size_t)n, sizeof(*w));
        pthread_t *th = calloc((size_t)n, sizeof(*th));
        json_t *threads = json_array();
        for (int i = 0; i < n; i++) {
                w[i] = (struct worker){ .id = i, .steps = steps, .go = &go };
                if (pthread_create(&th[i], NULL, worker_main, &w[i]) != 0)
                        abort(); /* the barrier waits for all n */
        }
        pid_t zygote = 0;
        for (int i = 0; i < n; i++) {
                pthread_join(th[i], NULL);
                json_array_append_new(threads, w[i].out ? w[i].out : json_pack("{s:s}", "error", "no result"));
                if (w[i].zygote)
                        zygote = w[i].zygote;
        }
        pthread_barrier_destroy(&go);
        free(w);
        free(th);
        return json_pack("{s:b,s:o,s:i,s:i}", "ok", 1, "threads", threads, "zygote", (int)zygote, "zygote_now",
                         (int)warm_zygote_pid());
}

int main(void)
{
        struct session *sessions[MAX_SESSIONS] = { 0 };
        int n = 0;
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, stdin) > 0) {
                json_t *req = json_loads(line, 0, NULL);
                const char *op = json_string_value(json_object_get(req, "op"));
                json_t *si = json_object_get(req, "s");
                int idx = json_is_integer(si) ? (int)json_integer_value(si) : -1;
                corral_error *err = NULL;
                if (op == NULL) {
                        reply_error("bad request");
                } else if (strcmp(op, "start") == 0) {
                        corral_jail_config cfg;
                        corral_jail_config_init(&cfg);
                        char *argv[] = { "python3", NULL };
                        corral_jail_config_set_argv(&cfg, argv, NULL);
                        json_t *mem = json_object_get(req, "memory");
                        if (json_is_integer(mem))
                                cfg.memory_bytes = (uint64_t)json_integer_value(mem);
                        json_t *pids = json_object_get(req, "pids");
                        if (json_is_integer(pids))
                                cfg.pids = (uint64_t)json_integer_value(pids);
                        const char *ws = json_string_value(json_object_get(req, "workspace"));
                        if (ws)
                                cfg.workspace = strdup(ws);
                        size_t i;
                        json_t *e;
                        json_array_foreach(json_object_get(req, "env"), i, e)
                                corral_jail_config_add_env(&cfg, json_string_value(e), NULL);
                        struct session_options opt = { 0 };
                        session_options_init(&opt);
                        opt.warm = json_is_true(json_object_get(req, "warm"));
                        struct session *s = NULL;
                        if (n >= MAX_SESSIONS)
                                reply_error("too many sessions");
                        else if (session_start(&cfg, &opt, &s, &err) < 0)
                                reply_error(err ? err->msg : "cannot start");
                        else {
                                sessions[n] = s;
                                reply(json_pack("{s:b,s:i}", "ok", 1, "s", n++));
                        }
                        corral_jail_config_release(&cfg);
                } else if (strcmp(op, "exec") == 0 && idx >= 0 && idx < n && sessions[idx]) {
                        const char *code = json_string_value(json_object_get(req, "code"));
                        json_t *t = json_object_get(req, "timeout");
                        struct session_step_limits lim = { .timeout_s = json_is_number(t) ? json_number_value(t) : 30,
                                                           .cancel_fd = -1 };
                        struct session_result r;
                        if (code == NULL) {
                                reply_error("no code");
                        } else if (session_exec(sessions[idx], code, strlen(code), &lim, NULL, &r, &err) < 0) {
                                reply_error(err ? err->msg : "cannot run");
                        } else {
                                reply(json_pack("{s:b,s:o}", "ok", 1, "result", session_result_to_json(&r)));
                                session_result_release(&r);
                        }
                } else if (strcmp(op, "stop") == 0 && idx >= 0 && idx < n && sessions[idx]) {
                        session_free(sessions[idx]);
                        sessions[idx] = NULL;
                        reply(json_pack("{s:b}", "ok", 1));
                } else if (strcmp(op, "threads") == 0) {
                        json_t *jn = json_object_get(req, "n"), *jk = json_object_get(req, "steps");
                        int tn = json_is_integer(jn) ? (int)json_integer_value(jn) : 0;
                        int tk = json_is_integer(jk) ? (int)json_integer_value(jk) : 0;
                        if (tn < 1 || tn > MAX_SESSIONS || tk < 1 || tk > 100)
                                reply_error("bad thread or step count");
                        else
                                reply(run_threads(tn, tk));
                } else if (strcmp(op, "zygote") == 0) {
                        reply(json_pack("{s:b,s:i,s:i}", "ok", 1, "pid", (int)warm_zygote_pid(), "pool",
                                        warm_pool_size()));
                } else {
                        reply_error("unknown request or session");
                }
                corral_error_free(err);
                json_decref(req);
        }
        for (int i = 0; i < n; i++)
                session_free(sessions[i]);
        free(line);
        return 0;
}
