/* agent-internal.h: the parts of the loop, shared inside agent/.
 * Threads: one agent run at a time per run's state. */
#ifndef CORRAL_AGENT_INTERNAL_H
#define CORRAL_AGENT_INTERNAL_H

#include "agent.h"

/* prompt.c */
CORRAL_HIDDEN char *agent_system_prompt(const struct agent_config *cfg, bool text_protocol);
/* "Python 3.11 with numpy 1.24.2, pandas 1.5.3, ..." from the packages'
 * metadata under sysroot (no interpreter is started). */
CORRAL_HIDDEN char *agent_runtime_description(const char *sysroot);

/* observe.c */
/* Keep head and tail of text within limit bytes, marking what was cut. */
CORRAL_HIDDEN char *agent_cut_middle(const char *text, size_t len, size_t limit);
/* The observation for one execution result. */
CORRAL_HIDDEN char *agent_observe_exec(const corral_jail_result *res, const corral_jail_config *jail,
                                       const json_t *artifacts, size_t stream_limit);
CORRAL_HIDDEN json_t *agent_exec_to_json(const corral_jail_result *res, size_t stream_limit);
/* The newest n step outputs of messages (tool results, or text-protocol
 * results; the task is not one), oldest of them first, each cut to
 * max_bytes, onto f; none_text when there is none.  For the modes' side
 * calls. */
CORRAL_HIDDEN void agent_put_recent_outputs(FILE *f, const json_t *messages, size_t n, size_t max_bytes,
                                            const char *none_text);
/* output.c: a step's output as "output" trace events while it runs (at
 * most one per stream every STEP_OUTPUT_INTERVAL_MS, at most
 * STEP_OUTPUT_MAX bytes per step).  begin, feed (an on_output callback of
 * the jail or the session, userdata the struct) as often as output comes,
 * end (what waits is sent) before the step's tool_result. */
#define STEP_OUTPUT_MAX (64 * 1024)
#define STEP_OUTPUT_INTERVAL_MS 100
#define STEP_OUTPUT_CHUNK (8 * 1024)
struct step_output_stream {
        char buf[STEP_OUTPUT_CHUNK];
        size_t len;
        double last_ms; /* monotonic, of its last event */
};
struct step_output {
        trace *trace;   /* NULL: nothing is sent */
        unsigned iteration;
        size_t holdback; /* bytes a cut keeps back: the longest secret's, less one */
        uint64_t seq;    /* events so far */
        size_t sent;     /* bytes so far */
        bool capped;
        struct step_output_stream s[2]; /* stdout, stderr */
};
CORRAL_HIDDEN void step_output_begin(struct step_output *o, trace *t, unsigned iteration);
CORRAL_HIDDEN void step_output_feed(void *userdata, int stream, const char *data, size_t len);
CORRAL_HIDDEN void step_output_end(struct step_output *o);

/* A mode's side call (verify, plan, compact): the two-message request
 * (system, user) to m with purpose; its wait, and its error (and whether
 * it was cancelled) or usage recorded in ev, the usage added to *ret_usage
 * (may be NULL).  0 with *ret_reply to release, or -1. */
CORRAL_HIDDEN int agent_side_call(model_client *m, const char *purpose, const char *system, const char *user,
                                  json_t *ev, struct model_usage *ret_usage, struct chat_reply *ret_reply);

/* verify.c: the completion check.  The "verify" event for one check of
 * answer: {"round", "model", "complete": bool or null (no verdict),
 * "missing": [...], "usage", "wait_ms", "error"?}; the verifier's usage is
 * added to *ret_usage (may be NULL).  NULL only when out of memory. */
CORRAL_HIDDEN json_t *agent_verify(const struct agent_config *cfg, const json_t *messages, const char *answer,
                                   unsigned round, struct model_usage *ret_usage);
/* The user turn that sends an incomplete answer back. */
CORRAL_HIDDEN char *agent_verify_note(const json_t *verdict);

/* plan.c: planning and stuck detection. */
struct plan_state {
        char *plan;              /* the current plan, or NULL */
        unsigned plans;          /* plans written (the first and revisions) */
        unsigned steps_since_plan;
        unsigned stalled;        /* steps in a row with no new output or file */
        unsigned same_error;     /* failed steps in a row with last_error */
        char *last_error;
        char *stuck_reason;      /* set when a replan is due because the run looks stuck */
        uint64_t *seen;          /* fingerprints of the outputs seen */
        size_t n_seen, cap_seen;
};
CORRAL_HIDDEN void plan_state_init(struct plan_state *p);
CORRAL_HIDDEN void plan_state_release(struct plan_state *p);
/* After each tool call: count it, and set p->stuck_reason when the run
 * looks stuck (the same error three times in a row, or stall_steps steps
 * with no new output or file). */
struct tool_result;
CORRAL_HIDDEN void plan_observe_step(struct plan_state *p, const struct tool_result *s, unsigned stall_steps);
/* Write the plan (p->plan NULL) or revise it (why: what went wrong, or
 * NULL for a scheduled revision) with a side call of purpose "plan".  The
 * "plan" event: {"reason": "initial"|"scheduled"|"stuck", "stuck"?, "plan"?,
 * "usage", "wait_ms", "error"?}; p->plan replaced on success and the watch
 * restarted.  NULL when out of memory. */
CORRAL_HIDDEN json_t *agent_plan(const struct agent_config *cfg, struct plan_state *p, const json_t *messages,
                                 const char *why, struct model_usage *ret_usage);

/* compact.c: context compaction. */
/* Where the part to summarise ends (it starts at 2, after the system prompt
 * and the task): before an assistant message, keep_last messages or more
 * from the end; 0 when there is too little to summarise. */
CORRAL_HIDDEN size_t compact_cut(const json_t *messages, size_t keep_last);
/* Summarise messages[from, to) with a side call of purpose "compact";
 * earlier: the summary they follow, or NULL.  The "compact" event {"from",
 * "messages", "summary"?, "usage", "wait_ms", "error"?}, the summary in
 * *ret_summary (malloc'd) or NULL.  NULL only when out of memory. */
CORRAL_HIDDEN json_t *agent_compact(const struct agent_config *cfg, const json_t *messages, size_t from, size_t to,
                                    const char *earlier, char **ret_summary, struct model_usage *ret_usage);

/* reproduce.c: run the recorded steps (agent_result.steps) again through
 * a toolbox over cfg->ws (a fresh workspace with the run's inputs), then
 * compare the files of orig's output/ and look for the answer's numbers
 * (docs/run-json.md, "reproduction").  NULL with ret_err when no toolbox
 * could be made. */
CORRAL_HIDDEN json_t *agent_reproduce(const struct agent_config *cfg, struct workspace *orig, const json_t *steps,
                                      const char *answer, corral_error **ret_err);

/* textproto.c: the protocol for models without tool calling. */
struct text_block {
        char *lang;              /* "python" or "bash" */
        char *code;
        char *path;              /* "file=PATH" in the info string (the test-driven mode writes
                                  * the block there), or NULL */
};
/* The first fenced code block of a reply: 1 found, 0 none (final answer), -1 ENOMEM. */
CORRAL_HIDDEN int textproto_find_block(const char *reply, struct text_block *ret);
CORRAL_HIDDEN void text_block_release(struct text_block *b);

#endif
