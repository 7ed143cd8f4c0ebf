/* llm.h: the optional second stage of the review: a model call that judges
 * code the static review only warned about (docs/review.md, "The LLM
 * reviewer").  A separate conversation with its own prompt, through the
 * model client of src/model/ (the run's model or --reviewer-model).
 *
 * The reviewer sees the code and the static warnings and answers with
 * {"verdict":"allow"|"reject","reasons":[...]}.  It can only stop code the
 * static review let through; it never lets through what that rejected.
 *
 * Threads: one review at a time per model client.
 */
#ifndef CORRAL_REVIEW_LLM_H
#define CORRAL_REVIEW_LLM_H

#include "../model/model.h"
#include "review.h"

struct review_llm_verdict {
        bool reject;
        char *reasons;           /* one line per reason, or NULL */
        char *raw;               /* the reviewer's reply as sent (for the trace) */
        double ms;
        uint64_t prompt_tokens;  /* the call's usage */
        uint64_t completion_tokens;
};
CORRAL_HIDDEN void review_llm_verdict_release(struct review_llm_verdict *v);

/* Ask the reviewer about code (lang "python" or "bash") given the static
 * result.  -1 when the model could not be asked (ret_err); a reply that is
 * not a verdict is a verdict of allow with the reply kept in raw and the
 * reason "the reviewer's reply was not a verdict". */
CORRAL_HIDDEN int review_llm_judge(model_client *reviewer, const char *lang, const char *code,
                                   const struct review_result *stat, struct review_llm_verdict *ret,
                                   corral_error **ret_err);

/* A review of a caller's making (the team's reviewer, agent/team.c): its
 * own system prompt, text said before the code (the task), and the side
 * call's purpose (model_hooks.purpose: recorded, replayed).  The reply is
 * read as above; "approve" is taken for "allow". */
struct review_llm_request {
        const char *system;      /* NULL: review_llm_prompt() */
        const char *context;     /* or NULL */
        const char *purpose;     /* or NULL: an ordinary request */
};
CORRAL_HIDDEN int review_llm_ask(model_client *reviewer, const struct review_llm_request *rq, const char *lang,
                                 const char *code, const struct review_result *stat, struct review_llm_verdict *ret,
                                 corral_error **ret_err);

/* The reviewer's system prompt (for tests and docs). */
CORRAL_HIDDEN const char *review_llm_prompt(void);

#endif
