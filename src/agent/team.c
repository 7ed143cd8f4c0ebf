/* team.c: the writer/reviewer/executor team (team.h, docs/modes.md "Team").
 *
 * This file holds the roles' prompts, asks the reviewer and the executor's
 * summariser, and counts each role's calls.  The loop (agent.c) stays the
 * writer's; the toolbox (tools.c) calls team_review() as the review's
 * second stage and team_report() after a step ran.  Nothing here decides
 * whether code may run beyond the reviewer's verdict: the static review
 * and the jail stay in charge.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "agent-internal.h"
#include "team.h"
#include "toolbox.h"

#define TEAM_TASK_BYTES 4000       /* the task as the reviewer and executor read it */
#define TEAM_OUTPUT_BYTES 16000    /* the observation the executor summarises */
#define TEAM_CODE_BYTES 4000       /* the code it is told about */
#define TEAM_KEEP_BYTES 1200       /* the output's head and tail kept beside the summary */
#define TEAM_SUMMARY_BYTES 3000    /* a summary kept */

static const char writer_prompt[] =
        "You are the writer in a team of three. A reviewer reads every piece of code you send before it runs and "
        "approves it or rejects it with reasons; a rejected step does not run, and its reasons come back to you "
        "as the step's result: fix what they name and send the code again. An executor runs approved code and, "
        "when its output is long, gives you a summary with the output's beginning and end. Send one focused "
        "step at a time, so that each can be reviewed on its own.";

static const char reviewer_prompt[] =
        "You are the reviewer in a team that solves a data task in a sandbox: a writer sends code one step at a "
        "time, you examine each step before it runs, an executor runs what you approve. Python steps run in one "
        "session: names, imports and data from earlier steps still exist. Approve a step that is a sound move "
        "toward the task and safe to run. Reject it when it is wrong for the task (the wrong file, column or "
        "computation, results written where the task did not ask, numbers made up instead of computed), when it "
        "cannot work as written, or when it tries to escape or abuse the sandbox (the network, other programs, "
        "native code, secrets, files outside /workspace and /tmp, resources exhausted on purpose). Do not reject "
        "for style or for extras that do no harm.\n"
        "Answer with one JSON object and nothing else: {\"verdict\": \"approve\" or \"reject\", \"reasons\": "
        "[short sentences for the writer, saying what is wrong and what to do instead]}.";

static const char executor_prompt[] =
        "You are the executor in a team that solves a data task in a sandbox: you ran the writer's code and "
        "summarise what came of it for the writer, who sees your summary and only the beginning and end of the "
        "output. Say whether the step succeeded; for an error, its exact type, message and line; the numbers, "
        "values and table rows that matter for the task, copied exactly; the files written. Invent nothing and "
        "do not suggest code. At most 12 short lines, plain text.";

struct role_count {
        uint64_t prompt_tokens, completion_tokens;
        unsigned requests;
};

struct team {
        const struct agent_config *cfg;
        struct role_count writer, reviewer, executor;
        unsigned approved, rejected, review_errors;
        unsigned runs, summaries, summary_errors;
};

const char *team_writer_prompt(void)
{
        return writer_prompt;
}

const char *team_reviewer_prompt(void)
{
        return reviewer_prompt;
}

struct team *team_new(const struct agent_config *cfg)
{
        struct team *t = calloc(1, sizeof(*t));
        if (t)
                t->cfg = cfg;
        return t;
}

void team_free(struct team *t)
{
        free(t);
}

void team_count_writer(struct team *t, const struct chat_usage *u)
{
        t->writer.prompt_tokens += u->prompt_tokens;
        t->writer.completion_tokens += u->completion_tokens;
        t->writer.requests++;
}

/* "Task:\n...\n" cut to TEAM_TASK_BYTES, malloc'd. */
static char *task_text(const struct team *t)
{
        const char *task = t->cfg->task ? t->cfg->task : "";
        cleanup_free char *cut = agent_cut_middle(task, strlen(task), TEAM_TASK_BYTES);
        char *out = NULL;
        if (asprintf(&out, "Task:\n%s", cut ? cut : task) < 0)
                return NULL;
        return out;
}

int team_review(struct team *t, const char *lang, const char *code, const struct review_result *stat,
                struct review_llm_verdict *ret, corral_error **ret_err)
{
        cleanup_free char *context = task_text(t);
        struct review_llm_request rq = { .system = reviewer_prompt, .context = context, .purpose = "review" };
        model_client *m = t->cfg->reviewer ? t->cfg->reviewer : t->cfg->model;
        if (review_llm_ask(m, &rq, lang, code, stat, ret, ret_err) < 0) {
                t->review_errors++;
                return -1;
        }
        t->reviewer.prompt_tokens += ret->prompt_tokens;
        t->reviewer.completion_tokens += ret->completion_tokens;
        t->reviewer.requests++;
        if (ret->reject)
                t->rejected++;
        else
                t->approved++;
        return 0;
}

static char *summary_request(const struct team *t, const char *lang, const char *code, const struct tool_result *s)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (f == NULL)
                return NULL;
        cleanup_free char *task = task_text(t);
        cleanup_free char *c = code ? agent_cut_middle(code, strlen(code), TEAM_CODE_BYTES) : NULL;
        cleanup_free char *obs = agent_cut_middle(s->content, strlen(s->content), TEAM_OUTPUT_BYTES);
        fprintf(f, "%s\n\n", task ? task : "");
        if (c)
                fprintf(f, "The step's code (%s):\n```%s\n%s\n```\n\n", lang, lang, c);
        fprintf(f, "What running it gave (%zu bytes):\n%s\n\nReply with the summary only.", strlen(s->content),
                obs ? obs : "");
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}

void team_report(struct team *t, unsigned iteration, const char *lang, const char *code, struct tool_result *s)
{
        const struct agent_config *cfg = t->cfg;
        t->runs++;
        /* Short output goes to the writer as it is: a summary would cost a
         * call and could only lose what the writer needs. */
        if (s->content == NULL || strlen(s->content) < TEAM_SUMMARY_MIN_BYTES)
                return;
        model_client *m = cfg->executor ? cfg->executor : cfg->model;
        json_t *ev = json_pack("{s:i, s:s, s:s?, s:I}", "iteration", (int)iteration, "role", "executor", "model",
                               cfg->executor_model, "bytes", (json_int_t)strlen(s->content));
        cleanup_free char *text = summary_request(t, lang, code, s);
        if (ev == NULL || text == NULL) {
                json_decref(ev);
                return;
        }
        struct model_usage u = { 0 };
        struct chat_reply reply;
        if (agent_side_call(m, "summary", executor_prompt, text, ev, &u, &reply) < 0) {
                t->summary_errors++;
                if (cfg->trace)
                        trace_emit(cfg->trace, "team_summary", ev);
                else
                        json_decref(ev);
                return;
        }
        t->executor.prompt_tokens += u.prompt_tokens;
        t->executor.completion_tokens += u.completion_tokens;
        t->executor.requests += u.requests;
        const char *content = json_string_value(json_object_get(reply.message, "content"));
        if (content && content[strspn(content, " \t\r\n")]) {
                cleanup_free char *summary = agent_cut_middle(content, strlen(content), TEAM_SUMMARY_BYTES);
                cleanup_free char *kept = agent_cut_middle(s->content, strlen(s->content), TEAM_KEEP_BYTES);
                char *joined = NULL;
                if (summary && kept &&
                    asprintf(&joined, "The executor ran this step; its output was %zu bytes. The executor's "
                                      "summary:\n%s\n\nThe output's beginning and end:\n%s",
                             strlen(s->content), summary, kept) >= 0) {
                        free(s->content);
                        s->content = joined;
                        t->summaries++;
                }
                json_object_set_new(ev, "summary", json_string(summary ? summary : content));
        } else {
                t->summary_errors++;
                json_object_set_new(ev, "error", json_string("the executor's reply was empty; the output was "
                                                             "passed on as it was"));
        }
        chat_reply_release(&reply);
        if (cfg->trace)
                trace_emit(cfg->trace, "team_summary", ev);
        else
                json_decref(ev);
}

const char *team_event_role(const char *type)
{
        if (strcmp(type, "model_request") == 0 || strcmp(type, "model_reply") == 0 ||
            strcmp(type, "model_retry") == 0 || strcmp(type, "tool_call") == 0)
                return "writer";
        if (strcmp(type, "review") == 0)
                return "reviewer";
        if (strcmp(type, "tool_result") == 0 || strcmp(type, "team_summary") == 0 || strcmp(type, "images") == 0)
                return "executor";
        return NULL;
}

static json_t *usage_json(const struct role_count *c)
{
        return json_pack("{s:I, s:I, s:i}", "prompt_tokens", (json_int_t)c->prompt_tokens, "completion_tokens",
                         (json_int_t)c->completion_tokens, "requests", (int)c->requests);
}

json_t *team_result_json(const struct team *t)
{
        const struct agent_config *cfg = t->cfg;
        return json_pack("{s:{s:{s:s?, s:o}, s:{s:s?, s:o, s:i, s:i, s:i}, s:{s:s?, s:o, s:i, s:i, s:i}}}", "roles",
                         "writer", "model", cfg->writer_model, "usage", usage_json(&t->writer), "reviewer", "model",
                         cfg->reviewer_model, "usage", usage_json(&t->reviewer), "approved", (int)t->approved,
                         "rejected", (int)t->rejected, "errors", (int)t->review_errors, "executor", "model",
                         cfg->executor_model, "usage", usage_json(&t->executor), "runs", (int)t->runs, "summaries",
                         (int)t->summaries, "errors", (int)t->summary_errors);
}
