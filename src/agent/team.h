/* team.h: the writer/reviewer/executor team (mode team, docs/modes.md).
 * Internal to src/agent/.
 *
 * The loop's model is the writer: it proposes each step as before (a tool
 * call or a text-protocol block).  Before code runs, the static review and
 * then the reviewer (agent_config.reviewer, the model --reviewer-model
 * selects, else the run's) examine it: a rejection's reasons go back to the
 * writer as the step's observation and nothing runs.  The executor runs an
 * approved step in the jail as the toolbox always does; when the output is
 * long, a side call of the executor's model (agent_config.executor, else
 * the run's) summarises it for the writer, who then reads the summary and
 * the output's head and tail.  Each role's calls are counted apart (the
 * result's "team") and the trace's events say which role did what ("role").
 *
 * The reviewer's calls are side calls of purpose "review", the executor's of
 * purpose "summary" (model.h): recorded in a transcript, replayed from it.
 * Threads: one run's team, on the run's thread.
 */
#ifndef CORRAL_AGENT_TEAM_H
#define CORRAL_AGENT_TEAM_H

#include <stdbool.h>

#include <jansson.h>

#include "../review/llm.h"
#include "agent.h"

struct tool_result;
struct team;

/* NULL when out of memory.  cfg borrowed for the team's life. */
CORRAL_HIDDEN struct team *team_new(const struct agent_config *cfg);
CORRAL_HIDDEN void team_free(struct team *t);

/* What the writer's system prompt adds in team mode. */
CORRAL_HIDDEN const char *team_writer_prompt(void);
/* The team reviewer's system prompt (for tests and docs). */
CORRAL_HIDDEN const char *team_reviewer_prompt(void);

/* A writer's turn: its usage counts as the writer's. */
CORRAL_HIDDEN void team_count_writer(struct team *t, const struct chat_usage *u);

/* The reviewer's look at code (lang "python" or "bash") the static review
 * let through (stat): as review_llm_ask(), with the team's prompt and the
 * task; the verdict is counted.  -1 when the reviewer could not be asked
 * (ret_err): the caller lets the static verdict stand. */
CORRAL_HIDDEN int team_review(struct team *t, const char *lang, const char *code, const struct review_result *stat,
                              struct review_llm_verdict *ret, corral_error **ret_err);

/* After the executor ran code (s->exec set): a long observation is
 * summarised by the executor's model and s->content becomes the summary
 * and the output's head and tail; the "team_summary" event is emitted.
 * A failed side call leaves the observation as it was, said in the event. */
CORRAL_HIDDEN void team_report(struct team *t, unsigned iteration, const char *lang, const char *code,
                               struct tool_result *s);

/* The role behind an event of type (tool_call: writer; review: reviewer;
 * tool_result, team_summary: executor; model_*: writer), or NULL. */
CORRAL_HIDDEN const char *team_event_role(const char *type);

/* The result's "team" (docs/run-json.md).  NULL when out of memory. */
CORRAL_HIDDEN json_t *team_result_json(const struct team *t);

/* Bytes of a step's observation above which the executor summarises it. */
#define TEAM_SUMMARY_MIN_BYTES 2000

#endif
