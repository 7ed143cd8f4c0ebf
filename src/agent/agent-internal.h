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

/* verify.c: the completion check.  The "verify" event for one check of
 * answer: {"round", "model", "complete": bool or null (no verdict),
 * "missing": [...], "usage", "wait_ms", "error"?}; the verifier's usage is
 * added to *ret_usage (may be NULL).  NULL only when out of memory. */
CORRAL_HIDDEN json_t *agent_verify(const struct agent_config *cfg, const json_t *messages, const char *answer,
                                   unsigned round, struct model_usage *ret_usage);
/* The user turn that sends an incomplete answer back. */
CORRAL_HIDDEN char *agent_verify_note(const json_t *verdict);

/* textproto.c: the protocol for models without tool calling. */
struct text_block {
        char *lang;              /* "python" or "bash" */
        char *code;
};
/* The first fenced code block of a reply: 1 found, 0 none (final answer), -1 ENOMEM. */
CORRAL_HIDDEN int textproto_find_block(const char *reply, struct text_block *ret);
CORRAL_HIDDEN void text_block_release(struct text_block *b);

#endif
