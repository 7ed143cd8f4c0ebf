/* approve.h: human approval of code before it runs (docs/modes.md,
 * "Human approval").
 *
 * A gate belongs to a run.  Before a run_python/run_shell step runs (after
 * the safety review let it through), the agent's thread asks the gate:
 * with mode always every step, with risky only a step the review warned
 * about.  The question becomes the gate's pending approval (its number n,
 * the code, its language, the review's verdict and findings) and an
 * "approval_request" trace event; the thread then waits until a front end
 * answers it with approval_gate_answer() (approve, deny with a reason, or
 * edit with new code), the timeout passes (the default answer, deny unless
 * set otherwise) or the run is cancelled.  The answer is traced as an
 * "approval" event (who, the decision, how long it waited).
 *
 * Knows nothing of terminals or HTTP: the CLI and the server answer
 * through run.h.  Threads: approval_gate_pending() and
 * approval_gate_answer() from any thread; approval_gate_ask() from the
 * run's thread only.
 */
#ifndef CORRAL_AGENT_APPROVE_H
#define CORRAL_AGENT_APPROVE_H

#include <stdbool.h>

#include <jansson.h>

#include "../lib/util.h"
#include "../trace/trace.h"

enum approve_mode {
        APPROVE_NEVER = 0,
        APPROVE_RISKY,           /* only steps the static review warned about */
        APPROVE_ALWAYS,
};
CORRAL_HIDDEN const char *approve_mode_to_string(enum approve_mode m);
/* "never", "risky" or "always"; -1 otherwise. */
CORRAL_HIDDEN int approve_mode_from_string(const char *s, enum approve_mode *ret);

#define APPROVE_TIMEOUT_DEFAULT_S 600.0
#define APPROVE_REASON_MAX 4096
#define APPROVE_CODE_MAX (256u << 10)

struct approve_settings {
        enum approve_mode mode;
        double timeout_s;        /* how long a question waits (default APPROVE_TIMEOUT_DEFAULT_S) */
        bool default_approve;    /* the answer after the timeout: approve (default: deny) */
        /* No human (a replay): every question is answered at once with
         * approve, by "replay". */
        bool unattended;
};
CORRAL_HIDDEN void approve_settings_init(struct approve_settings *s);

enum approval_decision {
        APPROVAL_APPROVE = 0,
        APPROVAL_DENY,
        APPROVAL_EDIT,
};
CORRAL_HIDDEN const char *approval_decision_to_string(enum approval_decision d);
CORRAL_HIDDEN int approval_decision_from_string(const char *s, enum approval_decision *ret);

struct approval_gate;

/* tr: where approval_request and approval go (may be NULL); cancel_fd:
 * readable ends a wait (the run's). */
CORRAL_HIDDEN int approval_gate_new(const struct approve_settings *s, trace *tr, int cancel_fd,
                                    struct approval_gate **ret, corral_error **ret_err);
CORRAL_HIDDEN void approval_gate_free(struct approval_gate *g);
CORRAL_HIDDEN enum approve_mode approval_gate_mode(const struct approval_gate *g);
/* {"mode", "timeout_s", "default"} for run_start and the result. */
CORRAL_HIDDEN json_t *approval_gate_describe(const struct approval_gate *g);
/* {"requests", "approved", "denied", "edited", "timed_out"} so far. */
CORRAL_HIDDEN json_t *approval_gate_summary(const struct approval_gate *g);

/* Whether a step with this review verdict ("allow", "warn"; NULL when no
 * review ran) is to be asked about. */
CORRAL_HIDDEN bool approval_gate_wants(const struct approval_gate *g, const char *verdict);

struct approval_answer {
        enum approval_decision decision;
        char *reason;            /* deny: why (may be NULL) */
        char *code;              /* edit: the code to run instead */
        char who[32];            /* "cli", "api", "timeout", "replay" ... */
        bool cancelled;          /* the run was cancelled while it waited */
};
CORRAL_HIDDEN void approval_answer_release(struct approval_answer *a);

/* Ask and wait (the run's thread).  review: the review event of the step
 * (borrowed; may be NULL).  0 with *ret filled; -1 only when out of memory
 * (ret says deny). */
CORRAL_HIDDEN int approval_gate_ask(struct approval_gate *g, unsigned iteration, const char *lang, const char *code,
                                    const json_t *review, struct approval_answer *ret);

/* For the toolbox: ask about one step and say what comes of it.  0: run
 * it (*ret_code, when set, is the user's edit to review and run instead);
 * 1: denied, *ret_note the observation for the model (the reason in it);
 * 2: the run was cancelled while it waited (*ret_note says so). */
CORRAL_HIDDEN int approval_gate_step(struct approval_gate *g, unsigned iteration, const char *lang,
                                     const char *code, const json_t *review, char **ret_code, char **ret_note);
/* What the model is told of an edit, put before the step's observation
 * *content (replaced). */
CORRAL_HIDDEN void approval_note_edit(const char *lang, const char *edited, char **content);

/* The question waiting for an answer ({"n", "iteration", "lang", "code",
 * "review", "timeout_s", "waited_ms"}), a new reference, or NULL. */
CORRAL_HIDDEN json_t *approval_gate_pending(struct approval_gate *g);
/* Answer question n: decision "approve", "deny" (reason optional) or
 * "edit" (code required, UTF-8, at most APPROVE_CODE_MAX bytes).  who
 * names the front end for the trace.  Errors: not_found (no question n
 * was asked), busy (n was answered already or timed out), usage. */
CORRAL_HIDDEN int approval_gate_answer(struct approval_gate *g, unsigned n, const char *decision,
                                       const char *reason, const char *code, const char *who,
                                       corral_error **ret_err);

#endif
