/* compact.c: context compaction (docs/modes.md, "Context compaction").
 *
 * When the conversation nears the model's context, the older turns (after
 * the system prompt and the task, before the newest few) are summarised by
 * a side call of purpose "compact", and the summary takes their place,
 * said after the task.  The part summarised always ends before an
 * assistant message, so a tool call is never parted from its answers (nor
 * a text-protocol block from its result).  This file picks the part and
 * asks; the loop (agent.c) replaces the messages.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "agent-internal.h"

#define COMPACT_MESSAGE_BYTES 1500   /* each message, head and tail, in the request */
#define COMPACT_SUMMARY_BYTES 6000   /* a summary kept */

static const char compact_system[] =
        "You summarise the earlier part of an AI agent's work on a data task, so that the agent can go on "
        "without it. Keep what the rest of the work needs: the facts found about the input files (names, "
        "columns, types, sizes), the numbers computed, the files written to output/, the errors met and how "
        "they were fixed, and what was still to do. Be short and concrete; no code unless a line is needed to "
        "go on. Reply with the summary only.";

size_t compact_cut(const json_t *messages, size_t keep_last)
{
        size_t n = json_array_size(messages);
        if (n < 2 + keep_last + 2)
                return 0;
        size_t cut = n - keep_last;
        /* Back to an assistant message: what follows it (its tool answers,
         * a text-protocol result) stays with it. */
        while (cut > 2) {
                const char *role = json_string_value(json_object_get(json_array_get(messages, cut), "role"));
                if (role && strcmp(role, "assistant") == 0)
                        break;
                cut--;
        }
        return cut > 3 ? cut : 0; /* at least two messages to summarise */
}

/* One message as text for the summariser: role, text, tool calls. */
static void put_message(FILE *f, const json_t *m)
{
        const char *role = json_string_value(json_object_get(m, "role"));
        json_t *content = json_object_get(m, "content"), *tc, *part;
        size_t i;
        fprintf(f, "[%s]\n", role ? role : "?");
        if (json_is_string(content)) {
                cleanup_free char *cut = agent_cut_middle(json_string_value(content), json_string_length(content),
                                                          COMPACT_MESSAGE_BYTES);
                fprintf(f, "%s\n", cut ? cut : "");
        }
        json_array_foreach (content, i, part) {
                const char *t = json_string_value(json_object_get(part, "text"));
                if (t)
                        fprintf(f, "%s\n", t);
                else
                        fputs("(an image)\n", f);
        }
        json_array_foreach (json_object_get(m, "tool_calls"), i, tc) {
                json_t *fn = json_object_get(tc, "function");
                const char *name = json_string_value(json_object_get(fn, "name"));
                const char *args = json_string_value(json_object_get(fn, "arguments"));
                cleanup_free char *cut = args ? agent_cut_middle(args, strlen(args), COMPACT_MESSAGE_BYTES) : NULL;
                fprintf(f, "call %s %s\n", name ? name : "?", cut ? cut : "");
        }
}

json_t *agent_compact(const struct agent_config *cfg, const json_t *messages, size_t from, size_t to,
                      const char *earlier, char **ret_summary, struct model_usage *ret_usage)
{
        *ret_summary = NULL;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f == NULL)
                return NULL;
        fprintf(f, "The agent's task:\n%s\n\n", cfg->task);
        if (earlier)
                fprintf(f, "A summary of what came before:\n%s\n\n", earlier);
        fputs("The messages to summarise, oldest first:\n", f);
        /* Within half the context, at 4 bytes a token: the newest messages
         * of the part are the ones dropped from the request when it is
         * longer (the summary of what came before covers the oldest). */
        size_t cap = cfg->context_tokens * 2;
        for (size_t i = from; i < to; i++) {
                if ((size_t)ftell(f) > cap) {
                        fprintf(f, "(%zu more messages left out)\n", to - i);
                        break;
                }
                put_message(f, json_array_get(messages, i));
        }
        fputs(earlier ? "\nSummarise them together with the summary of what came before, in one summary."
                      : "\nSummarise them.", f);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        json_t *ev = json_pack("{s:i, s:i}", "from", (int)from, "messages", (int)(to - from));
        struct chat_reply reply;
        int rc = ev ? agent_side_call(cfg->model, "compact", compact_system, text, ev, ret_usage, &reply) : -1;
        free(text);
        if (rc < 0)
                return ev;
        const char *content = json_string_value(json_object_get(reply.message, "content"));
        if (content == NULL || content[strspn(content, " \t\r\n")] == '\0')
                json_object_set_new(ev, "error", json_string("the summary was empty"));
        else
                *ret_summary = agent_cut_middle(content, strlen(content), COMPACT_SUMMARY_BYTES);
        if (*ret_summary)
                json_object_set_new(ev, "summary", json_string(*ret_summary));
        chat_reply_release(&reply);
        return ev;
}
