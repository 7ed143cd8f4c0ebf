/* plan.c: planning and stuck detection (docs/modes.md, "Planning").
 *
 * With --plan, a side call of purpose "plan" writes a short plan before the
 * first turn; the plan is kept in the context (after the task, which is
 * never shortened) and revised by the same kind of call every N steps, or
 * at once when the run looks stuck: the same error three times, or no new
 * output and no new or changed file for N steps.  A forced replan says what
 * went wrong.  This file watches steps and asks; the loop (agent.c) decides
 * when and puts the plan into the conversation.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "agent-internal.h"
#include "toolbox.h"

#define PLAN_BYTES 4000          /* a plan kept in the context */
#define PLAN_OUTPUTS 4           /* the newest step outputs shown to a replan */
#define PLAN_OUTPUT_BYTES 1200
#define STUCK_SAME_ERROR 3
#define ERROR_SIG_BYTES 200

static const char plan_system[] =
        "You plan the work of an AI agent that solves a data task by running Python and shell code in a sandbox "
        "with the task's input files under input/ and writes results to output/. Write a short plan: at most 7 "
        "numbered steps, one line each, concrete (which file, which computation, which output), no code. When "
        "you revise a plan, keep the steps that are done (mark them [done]), and when told the agent is stuck, "
        "change the approach for the step that fails. Reply with the plan only.";

/* FNV-1a: a step output's fingerprint, to tell new output from repeated. */
static uint64_t fnv(const char *s, size_t n)
{
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < n; i++) {
                h ^= (unsigned char)s[i];
                h *= 1099511628211ull;
        }
        return h;
}

void plan_state_init(struct plan_state *p)
{
        memset(p, 0, sizeof(*p));
}

void plan_state_release(struct plan_state *p)
{
        free(p->plan);
        free(p->last_error);
        free(p->stuck_reason);
        free(p->seen);
        memset(p, 0, sizeof(*p));
}

/* The error of a failed step in one line: the last non-blank line of its
 * stderr ("KeyError: 'product_name'"), else of the observation. */
static char *error_signature(const struct tool_result *s)
{
        const char *text = json_string_value(json_object_get(s->exec, "stderr"));
        if (text == NULL || text[strspn(text, " \t\r\n")] == '\0')
                text = s->content ? s->content : "";
        const char *end = text + strlen(text);
        while (end > text && strchr(" \t\r\n", end[-1]))
                end--;
        const char *start = end;
        while (start > text && start[-1] != '\n')
                start--;
        size_t n = (size_t)(end - start);
        return strndup(start, n > ERROR_SIG_BYTES ? ERROR_SIG_BYTES : n);
}

/* Whether the step showed something new: a created or modified file, or
 * output (stdout, else the observation) not seen before in the run. */
static bool step_progressed(struct plan_state *p, const struct tool_result *s)
{
        json_t *a;
        size_t i;
        json_array_foreach (s->artifacts, i, a) {
                const char *change = json_string_value(json_object_get(a, "change"));
                if (change && strcmp(change, "deleted") != 0)
                        return true;
        }
        const char *out = json_string_value(json_object_get(s->exec, "stdout"));
        if (out == NULL)
                out = s->content ? s->content : "";
        if (out[strspn(out, " \t\r\n")] == '\0')
                return false;
        uint64_t h = fnv(out, strlen(out));
        for (size_t k = 0; k < p->n_seen; k++)
                if (p->seen[k] == h)
                        return false;
        if (p->n_seen == p->cap_seen) {
                size_t cap = p->cap_seen ? p->cap_seen * 2 : 16;
                uint64_t *v = realloc(p->seen, cap * sizeof(*v));
                if (v == NULL)
                        return true;
                p->seen = v;
                p->cap_seen = cap;
        }
        p->seen[p->n_seen++] = h;
        return true;
}

void plan_observe_step(struct plan_state *p, const struct tool_result *s, unsigned stall_steps)
{
        if (s->name == NULL || strcmp(s->name, "final_answer") == 0)
                return;
        p->steps_since_plan++;
        bool failed = !s->ok;
        if (failed) {
                cleanup_free char *sig = error_signature(s);
                if (sig && p->last_error && strcmp(sig, p->last_error) == 0) {
                        p->same_error++;
                } else {
                        free(p->last_error);
                        p->last_error = TAKE_PTR(sig);
                        p->same_error = 1;
                }
        }
        p->stalled = step_progressed(p, s) ? 0 : p->stalled + 1;
        if (p->stuck_reason)
                return;
        if (failed && p->same_error >= STUCK_SAME_ERROR) {
                if (asprintf(&p->stuck_reason, "the same error %u times in a row: %s", p->same_error,
                             p->last_error ? p->last_error : "?") < 0)
                        p->stuck_reason = NULL;
        } else if (stall_steps && p->stalled >= stall_steps) {
                if (asprintf(&p->stuck_reason, "%u steps in a row made no new output and no new or changed file",
                             p->stalled) < 0)
                        p->stuck_reason = NULL;
        }
}

/* After a plan: the next revision is due in replan_every steps.  Only a
 * replan for being stuck restarts the stuck watch: a scheduled revision
 * does not make a stalled run any less stalled. */
static void plan_watch_restart(struct plan_state *p, bool stuck)
{
        p->steps_since_plan = 0;
        if (!stuck)
                return;
        p->stalled = 0;
        p->same_error = 0;
        free(p->stuck_reason);
        p->stuck_reason = NULL;
}

json_t *agent_plan(const struct agent_config *cfg, struct plan_state *p, const json_t *messages, const char *why,
                   struct model_usage *ret_usage)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f == NULL)
                return NULL;
        cleanup_free char *inputs = cfg->ws ? workspace_describe_inputs(cfg->ws, 20, 2) : NULL;
        fprintf(f, "Task:\n%s\n\nInput files:\n%s\n", cfg->task, inputs && *inputs ? inputs : "(none)\n");
        if (p->plan) {
                fprintf(f, "\nThe current plan:\n%s\n\nRecent outputs of the agent's steps:\n", p->plan);
                agent_put_recent_outputs(f, messages, PLAN_OUTPUTS, PLAN_OUTPUT_BYTES, "(no step has run yet)");
                if (why)
                        fprintf(f, "\nThe agent is stuck: %s. Revise the plan so that it gets past this.\n", why);
                else
                        fputs("\nRevise the plan: mark what is done, keep what is left.\n", f);
        } else {
                fputs("\nWrite the plan.\n", f);
        }
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        json_t *ev = json_pack("{s:s, s:s?}", "reason", why ? "stuck" : p->plan ? "scheduled" : "initial", "stuck", why);
        if (ev == NULL) {
                free(text);
                return NULL;
        }
        struct chat_reply reply;
        int rc = agent_side_call(cfg->model, "plan", plan_system, text, ev, ret_usage, &reply);
        free(text);
        if (rc < 0) {
                /* No plan this time: the next is due after as many steps. */
                plan_watch_restart(p, why != NULL);
                return ev;
        }
        const char *content = json_string_value(json_object_get(reply.message, "content"));
        if (content == NULL || content[strspn(content, " \t\r\n")] == '\0') {
                json_object_set_new(ev, "error", json_string("the planner's reply was empty"));
        } else {
                free(p->plan);
                p->plan = agent_cut_middle(content, strlen(content), PLAN_BYTES);
                json_object_set_new(ev, "plan", json_string(p->plan ? p->plan : ""));
                p->plans++;
        }
        chat_reply_release(&reply);
        plan_watch_restart(p, why != NULL);
        return ev;
}
