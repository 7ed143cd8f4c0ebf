/* agent.h: the agent loop: generate -> execute -> observe -> fix.
 *
 * agent_run() gives a model the task, the tools (tools.c) and a system
 * prompt that says what it has (prompt.c); it runs the code the model
 * writes in jails over the run's workspace, turns each result into an
 * observation (observe.c) and goes on until the model answers or a budget
 * (iterations, tokens, wall time) is used up.  Models without tool calling
 * get the same loop over a text protocol (textproto.c).  Every step is a
 * trace event (trace.h); nothing here prints.
 *
 * Uses the model, workspace, trace and jail modules through their headers;
 * knows nothing of how they work inside.
 *
 * Threads: agent_run() may run on several threads at once, each run with its own
 * model client, workspace and trace (none of them shared between runs).
 */
#ifndef CORRAL_AGENT_H
#define CORRAL_AGENT_H

#include <stdbool.h>
#include <stdint.h>

#include <corral/jail.h>
#include <jansson.h>

#include "../model/model.h"
#include "../trace/trace.h"
#include "../workspace/workspace.h"

struct review_policy;
struct approval_gate;

#define AGENT_MAX_STEP_IMAGES 8

struct tool_result;

/* Tools of someone else's beside the toolbox's: the tools of the MCP
 * servers of the config file (mcp/servers.h), offered to the model with
 * the built-in ones and called when it names one of them.  Not offered
 * under the text protocol (it has code blocks only). */
struct agent_tools {
        json_t *schemas;         /* OpenAI function tools (borrowed) */
        const char *prompt;      /* what the system prompt says of them, or NULL */
        json_t *describe;        /* the run_start event's "tools_extra" (borrowed), or NULL */
        bool (*owns)(void *userdata, const char *name);
        /* ret->name is set; fill ok and content (ret->args when parsed).
         * cancel_fd readable: stop; deadline_ms: CLOCK_MONOTONIC, 0 none. */
        void (*call)(void *userdata, const char *name, const char *arguments, int cancel_fd, double deadline_ms,
                     struct tool_result *ret);
        void *userdata;
};

/* How the loop works (docs/modes.md): plain, test-driven (tdd.c), or a team of a
 * writer (the run's model), a reviewer that approves or rejects each code
 * step before it runs, and an executor that runs it and summarises long
 * output for the writer (team.h). */
enum agent_mode {
        AGENT_MODE_PLAIN = 0,
        AGENT_MODE_TDD,
        AGENT_MODE_TEAM,
};
CORRAL_HIDDEN const char *agent_mode_to_string(enum agent_mode m);
/* "plain", "tdd", "team": 0 with *ret set, -1 for any other name. */
CORRAL_HIDDEN int agent_mode_from_string(const char *s, enum agent_mode *ret);

/* The longest task: it is sent with every model turn.  Longer text belongs
 * in an input file the task names. */
#define AGENT_TASK_MAX (64u << 10)

struct agent_config {
        const char *task;        /* at most AGENT_TASK_MAX bytes */
        model_client *model;
        struct workspace *ws;
        /* Limits, binds and environment for every execution; argv, program
         * text and workspace are set per step.  Borrowed. */
        const corral_jail_config *jail;
        trace *trace;                 /* may be NULL */
        json_t *run_info;             /* merged into the run_start event; borrowed */
        const char *workspace_note;   /* said in the prompt's workspace section (a restored
                                       * archive: corral run --from); may be NULL */

        enum agent_mode mode;         /* default AGENT_MODE_PLAIN */
        unsigned max_iterations;      /* model turns (default 10) */
        uint64_t token_budget;        /* prompt + completion tokens, 0: none */
        double wall_budget_s;         /* whole run, 0: none */
        uint64_t context_tokens;      /* the model's context, for trimming (default 32768) */
        bool text_protocol;           /* no tool calling: fenced code blocks */
        bool stateless;               /* run_python in a fresh process per step, not one session */
        bool cold;                    /* the session's interpreter started afresh, not forked warm
                                       * from a zygote (docs/sessions.md) */
        bool session_host;            /* a warm session from the user's session host (its zygote, kept
                                       * between runs: session/client.h), not this process's */
        size_t observation_bytes;     /* per stream in an observation (default 8 KiB) */
        size_t read_bytes;            /* read_file cap (default 64 KiB) */
        /* Figures for the model (docs/sessions.md): the figures of a
         * run_python step also go back as images, in a user message after
         * the tool results, within these budgets. */
        bool images;                  /* the model accepts images (default off) */
        /* The model's prices per million prompt and completion tokens (the
         * config file's "cost"): with priced, model_reply events and the
         * run's usage say what its tokens cost. */
        bool priced;
        double price_input, price_output;
        unsigned images_per_step;     /* default 2 (at most AGENT_MAX_STEP_IMAGES) */
        unsigned images_per_run;      /* default 8 */
        uint64_t image_bytes;         /* PNG bytes per image (default 300 KiB) */
        unsigned image_side;          /* long side in pixels (default 768) */
        int cancel_fd;                /* readable: stop (status cancelled); -1 none */
        bool cancel_interrupts;       /* the cancel interrupts a run_python step in this process's
                                       * session (KeyboardInterrupt, its state kept; killed after
                                       * the grace period) rather than stopping the interpreter, as
                                       * the session host's sessions do (MCP) */
        const char *const *secrets;   /* redacted from observations */
        /* The safety review of every run_python/run_shell step before it
         * runs (review/review.h); NULL: none.  Borrowed. */
        const struct review_policy *review;
        /* The LLM reviewer (review/llm.h) for steps the static review
         * warns about; NULL: none.  Borrowed. */
        model_client *reviewer;
        const char *reviewer_model;   /* its model id, for the trace */
        /* The team's executor (mode team): the model that summarises a
         * step's long output for the writer; NULL: model.  Borrowed. */
        model_client *executor;
        const char *executor_model;   /* its model id, for the trace */
        const char *writer_model;     /* the run's model id, for the team's result */
        /* The completion check (docs/modes.md): when the model offers a
         * final answer, a separate call of the verifier (NULL: the run's
         * model) judges it against the task; what is missing goes back as
         * the next user turn, at most verify_rounds times (default 2). */
        bool verify;
        unsigned verify_rounds;
        model_client *verifier;       /* borrowed; NULL: model */
        const char *verifier_model;   /* its model id, for the trace */
        /* Planning (docs/modes.md): a plan written by a side call before
         * the first turn, kept in the context, revised every replan_every
         * steps (0: only when stuck; default 5) and at once when the run
         * looks stuck. */
        bool plan;
        unsigned replan_every;
        /* Context compaction (docs/modes.md): when the conversation nears
         * the context, older turns are summarised by a side call, at most
         * compact_max times a run (default 4); shortening stays the
         * fallback. */
        bool compact;
        unsigned compact_max;
        /* Test-driven mode (tdd.c): a write to the frozen tests/ is
         * allowed when it says why (traced); default false: refused. */
        bool tdd_test_changes;
        /* Keep every step (agent_result.steps) for a reproduction. */
        bool record_steps;
        /* Human approval before a run_python/run_shell step runs
         * (approve.h, docs/modes.md); NULL: none.  Borrowed. */
        struct approval_gate *approve;
        /* More tools (MCP servers'); NULL: the toolbox's only.  Borrowed. */
        const struct agent_tools *tools;

        /* Streamed model text, for a live view; optional. */
        void (*on_content)(void *userdata, const char *delta, size_t len);
        void *userdata;
};
CORRAL_HIDDEN void agent_config_init(struct agent_config *c);

enum agent_status {
        AGENT_ANSWERED = 0,
        AGENT_GAVE_UP,       /* iterations, token or wall budget */
        AGENT_MODEL_ERROR,   /* the endpoint failed or refused */
        AGENT_JAIL_ERROR,    /* a jail could not be set up */
        AGENT_CANCELLED,
};
CORRAL_HIDDEN const char *agent_status_to_string(enum agent_status s);

struct agent_result {
        enum agent_status status;
        char *answer;            /* AGENT_ANSWERED */
        char *reason;            /* otherwise: what ended the run, settings named in words */
        const char *reason_field; /* the setting behind it (corral_error.field; static), or NULL */
        int error_kind;          /* corral_error kind behind a model or jail error */
        unsigned iterations;     /* model turns made */
        bool text_protocol;      /* the run used (or fell back to) the text protocol */
        /* With verify: {"complete": bool|null, "checks", "sent_back",
         * "verdicts": [the verify events], "usage"} (docs/run-json.md); else NULL. */
        json_t *verification;
        /* With plan: {"plans", "stuck", "plan", "events": [the plan events],
         * "usage"}; else NULL. */
        json_t *planning;
        /* With compact, when it happened: {"compactions", "events", "usage"}; else NULL. */
        json_t *compaction;
        /* With mode team: {"roles": {"writer", "reviewer", "executor"}, each
         * with its model, usage and counts} (docs/run-json.md); else NULL. */
        json_t *team;
        /* With mode tdd: {"phase", "frozen_at", "tests": [paths], "checks",
         * "passed": bool, "last": the last check, "code_ok", "refused",
         * "changes"} (docs/run-json.md); else NULL. */
        json_t *tdd;
        /* With record_steps: [{"tool", "ok", "ran", "lang"?, "code"?, "path"?,
         * "content"?, "changed": [paths]}], in order. */
        json_t *steps;
};
CORRAL_HIDDEN void agent_result_release(struct agent_result *r);

/* Run to the end.  Returns 0 whatever the agent's outcome (see ret); -1
 * only when the run could not start (ret_err). */
CORRAL_HIDDEN int agent_run(const struct agent_config *cfg, struct agent_result *ret, corral_error **ret_err);

/* Reproducible results (docs/modes.md): the steps of a finished run
 * (res->steps, record_steps) run again in order through a toolbox over
 * cfg->ws, a fresh workspace with the run's inputs; orig's output/ is
 * compared with what they make, and the answer's numbers are looked for.
 * The report of docs/run-json.md ("reproduction"), or NULL with ret_err. */
CORRAL_HIDDEN json_t *agent_reproduce_run(const struct agent_config *cfg, struct workspace *orig,
                                          const struct agent_result *res, corral_error **ret_err);

/* What tokens cost at cfg's prices (cfg->priced), to a millionth. */
CORRAL_HIDDEN double agent_cost(const struct agent_config *cfg, uint64_t prompt_tokens, uint64_t completion_tokens);

#endif
