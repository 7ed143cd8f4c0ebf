/* run.h: an agent run as a library object (docs/run-json.md): everything
 * `corral run` does between parsing its options and printing, for any front
 * end (the CLI, a server, MCP).
 *
 *   struct run_config c;
 *   run_config_init(&c);  c.task = ...; c.jail = &jail; ...
 *   run_open(&c, &r, &err);        destinations resolved, model opened,
 *                                  inputs staged, trace opened
 *   run_subscribe(r, fn, ud, sync);  follow its events (trace.h)
 *   run_execute(r, &err);          the agent loop, to its end
 *   result = run_finish(r);        output copied out, archive written,
 *                                  run_end emitted: the result object
 *   run_free(r);                   a temporary workspace removed
 *
 * Every place the run writes on the host (the output directory, the
 * archive, the trace, the transcript, the run's records) is resolved by
 * run_open() before the model is asked anything (workspace/dest.h).
 * Threads: one caller at a time per run, except run_cancel(), which any
 * thread may call; runs are independent of each other.
 */
#ifndef CORRAL_AGENT_RUN_H
#define CORRAL_AGENT_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include <corral/jail.h>
#include <jansson.h>

#include "../model/provider.h"
#include "../review/review.h"
#include "../trace/trace.h"
#include "agent.h"
#include "approve.h"

struct run_config {
        const char *task;                /* at most AGENT_TASK_MAX bytes of UTF-8 */
        struct provider_request provider; /* which model: settings > environment > config file */
        struct model_settings model;     /* streaming, timeouts, retries, the transcript (record_path) */
        /* The loop's settings (budgets, protocol, images, ...); the run
         * fills in the task, model, workspace, jail, trace, review and
         * cancel fd. */
        struct agent_config agent;
        bool context_given;              /* agent.context_tokens was set: the provider's does not apply */
        int images;                      /* send figures as images: 1 on, 0 off, -1 as the provider says */
        const corral_jail_config *jail;  /* limits, binds, environment of every step; borrowed */

        const char *const *inputs;       /* "SRC[:DEST]" each (workspace/manifest.h) */
        size_t n_inputs;
        const char *manifest;            /* a manifest file, or NULL */
        uint64_t input_limit;            /* bytes staged in all (default 2 GiB) */
        const char *workspace;           /* a host directory as /workspace; NULL: a temporary one */
        const char *from;                /* an archive of an earlier run to continue from, or NULL */

        const char *out_dir;             /* where output/ is copied; NULL: the run's records (temporary
                                          * workspace) or nowhere (the workspace is the caller's) */
        const char *archive;             /* write the workspace there at the end, or NULL */
        bool archive_inputs;             /* and input/ with it */
        const char *trace_path;          /* the trace; NULL: RECORDS/trace.jsonl */
        bool no_trace;
        const char *records_dir;         /* where runs keep their records; NULL: run_records_dir() */
        const char *cwd;                 /* where the run was started, for the records; may be NULL */

        struct review_policy *review;    /* borrowed; NULL: the standard policy */
        bool llm_review;                 /* warnings go to an LLM reviewer */
        const char *reviewer_model;      /* its model (default: the run's) */
        /* The completion check (agent.verify, docs/modes.md): 1 on, 0 off,
         * -1 (the default) on for a live model, off for a replay whose
         * transcript recorded no checks. */
        int verify;
        const char *verifier_model;      /* its model (default: the run's; same endpoint) */
        /* Planning (agent.plan): 1 on, 0 off, -1 (the default) off, but on
         * for a replay whose transcript recorded plans. */
        int plan;
        /* Context compaction (agent.compact): 1 on, 0 off, -1 (the default)
         * on for a live model, off for a replay whose transcript recorded
         * no compactions. */
        int compact;
        /* Reproducible results (docs/modes.md): at the end, the steps' code
         * runs again in a fresh workspace on the same inputs and output/ is
         * compared ("reproduction" in the result).  Not with from. */
        bool reproduce;
        int cancel_fd;                   /* readable: cancel (as run_cancel()); -1 none */
        /* Human approval (approve.h, docs/modes.md): mode never (the
         * default), risky or always; a front end answers the questions
         * with run_approval_answer().  A replay has no human: its questions
         * are answered at once (approve, by "replay"). */
        struct approve_settings approve;
};
CORRAL_HIDDEN void run_config_init(struct run_config *c);

struct run;

/* Set the run up (nothing runs yet).  Errors: usage for what the caller can
 * fix (a destination, an input, the model's settings: err->field names
 * it), model kinds for an endpoint that refused, others for corral. */
CORRAL_HIDDEN int run_open(const struct run_config *cfg, struct run **ret, corral_error **ret_err);
/* Follow the run's events (trace.h: sync subscribers see every event on the
 * run's thread; queued ones never slow it).  The id for trace_unsubscribe(),
 * or -1. */
CORRAL_HIDDEN int run_subscribe(struct run *r, trace_subscriber_fn fn, void *userdata, bool sync);
/* More tools for the agent (agent_config.tools: MCP servers'), borrowed
 * until run_free(); before run_execute(). */
CORRAL_HIDDEN void run_set_tools(struct run *r, const struct agent_tools *tools);
/* Streamed model text (a live view); before run_execute(). */
CORRAL_HIDDEN void run_on_content(struct run *r, void (*fn)(void *userdata, const char *delta, size_t len),
                                  void *userdata);
/* The agent loop, to its end: 0 whatever the outcome (run_result()), -1
 * when it could not start. */
CORRAL_HIDDEN int run_execute(struct run *r, corral_error **ret_err);
/* Stop the run as soon as it can (status cancelled); any thread. */
CORRAL_HIDDEN void run_cancel(struct run *r);
/* Copy output/ out (whatever the outcome; a failure is a notice and the
 * output is kept with the records), write the archive, emit run_end, and
 * return the result object of docs/run-json.md ("reason" in words, "field"
 * the setting behind it), secrets redacted; NULL when out of memory.
 * Notices are "notice" events ("severity": "error" for what the caller
 * should be told even without a view). */
CORRAL_HIDDEN json_t *run_finish(struct run *r);
/* Human approval (approve.h), any thread: the question the run waits on
 * ({"n", "iteration", "lang", "code", "review": {"verdict", "findings"},
 * "timeout_s", "default", "waited_ms"}; a new reference), or NULL; and
 * its answer (approval_gate_answer(): not_found, busy when answered or
 * timed out, usage).  who names the front end in the trace. */
CORRAL_HIDDEN json_t *run_approval_pending(struct run *r);
/* Whether the run asks someone (an approval mode, and not a replay). */
CORRAL_HIDDEN bool run_approval_asks(const struct run *r);
CORRAL_HIDDEN int run_approval_answer(struct run *r, unsigned n, const char *decision, const char *reason,
                                      const char *code, const char *who, corral_error **ret_err);
/* Remove a temporary workspace and release everything; accepts NULL. */
CORRAL_HIDDEN void run_free(struct run *r);

CORRAL_HIDDEN const char *run_id(const struct run *r);
CORRAL_HIDDEN const struct agent_result *run_result(const struct run *r);
/* The workspace's host directory, and whether the run made it (removed by
 * run_free()). */
CORRAL_HIDDEN const char *run_workspace_dir(const struct run *r, bool *ret_temporary);
/* The values redacted from everything the run writes (the API key, -e
 * values), NULL-terminated. */
CORRAL_HIDDEN const char *const *run_secrets(const struct run *r);
/* A replay's answer recorded on other data, in words (after run_finish()),
 * or NULL. */
CORRAL_HIDDEN const char *run_stale_note(const struct run *r);
/* Whether the trace was written whole; else the first write error. */
CORRAL_HIDDEN const char *run_trace_error(const struct run *r);

/* $XDG_STATE_HOME/corral/runs, else ~/.local/state/corral/runs; malloc'd,
 * NULL when neither is known. */
CORRAL_HIDDEN char *run_records_dir(void);

#endif
