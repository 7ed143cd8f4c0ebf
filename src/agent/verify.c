/* verify.c: the completion check (docs/modes.md, "Completion check").
 *
 * When the model offers a final answer, a separate model call (the run's
 * model, or the verifier's) is given the task, the answer, the files under
 * output/ with what they are (artifact.h), and the last outputs of the
 * steps, and asked for {"complete": bool, "missing": [what]}.  The loop
 * (agent.c) sends what is missing back as the next user turn.  This file
 * asks and parses; it decides nothing about the run.  The call is a side
 * call of purpose "verify" (model.h): a replay answers it from the
 * transcript's recorded verdicts.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "../workspace/artifact.h"
#include "agent-internal.h"

#define VERIFY_FILES_MAX 40        /* files listed to the verifier */
#define VERIFY_OUTPUTS 3           /* the newest step outputs shown */
#define VERIFY_OUTPUT_BYTES 1500   /* each, head and tail */
#define VERIFY_ANSWER_BYTES 8000
#define VERIFY_MISSING_MAX 10      /* items kept of a verdict */
#define VERIFY_ITEM_BYTES 400

static const char verify_system[] =
        "You check whether an AI agent's work completes a user's task. You get the task, the agent's final "
        "answer, the files it left in output/ with what they are, and the last outputs of its steps. Judge only "
        "against what the task asks: every result, number, file or figure it asks for must be in the answer or "
        "in the files, and the answer must not state results the outputs do not support. Do not ask for extras "
        "the task does not ask for. Reply with only a JSON object, no other text: {\"complete\": true, "
        "\"missing\": []} when the task is done, else {\"complete\": false, \"missing\": [\"...\"]}, each item "
        "one concrete thing that is missing or wrong, said so that the agent can act on it.";

/* The files under output/, one line each: "- output/a.csv (1.2 KB, CSV 10 rows × 3 columns)". */
static void describe_files(FILE *f, struct workspace *ws)
{
        json_t *list = NULL, *e;
        size_t i, n = 0;
        if (ws == NULL || workspace_list_files(ws, "output", 16, 10000, &list, NULL) < 0) {
                fputs("(cannot list output/)\n", f);
                return;
        }
        json_array_foreach (list, i, e) {
                const char *type = json_string_value(json_object_get(e, "type"));
                const char *path = json_string_value(json_object_get(e, "path"));
                if (type == NULL || strcmp(type, "file") != 0 || path == NULL)
                        continue;
                if (++n > VERIFY_FILES_MAX) {
                        fprintf(f, "- ... (more files)\n");
                        break;
                }
                char size[32], what[160] = "";
                artifact_format_size((uint64_t)json_integer_value(json_object_get(e, "size")), size, sizeof(size));
                if (artifact_detect_at(ws->root_fd, path, ARTIFACT_SCAN_MAX, e) == 0)
                        artifact_describe(e, what, sizeof(what));
                fprintf(f, "- %s (%s%s%s)\n", path, size, what[0] ? ", " : "", what);
        }
        if (n == 0)
                fputs("(none)\n", f);
        json_decref(list);
}

static char *verify_request_text(const struct agent_config *cfg, const json_t *messages, const char *answer)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (f == NULL)
                return NULL;
        cleanup_free char *a = agent_cut_middle(answer, strlen(answer), VERIFY_ANSWER_BYTES);
        fprintf(f, "Task:\n%s\n\nFinal answer:\n%s\n\nFiles in output/:\n", cfg->task, a ? a : answer);
        describe_files(f, cfg->ws);
        fputs("\nLast outputs of the agent's steps:\n", f);
        agent_put_recent_outputs(f, messages, VERIFY_OUTPUTS, VERIFY_OUTPUT_BYTES, "(no step ran)");
        fputs("\nReply with the JSON object only.", f);
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}

/* {"complete", "missing"} out of the reply's text: the first '{' to the
 * last '}' (models wrap JSON in prose or fences).  -1: not a verdict. */
static int parse_verdict(const char *text, bool *ret_complete, json_t *ret_missing)
{
        const char *open = text ? strchr(text, '{') : NULL, *close = text ? strrchr(text, '}') : NULL;
        if (open == NULL || close == NULL || close < open)
                return -1;
        json_t *v = json_loadb(open, (size_t)(close - open) + 1, 0, NULL);
        json_t *complete = json_object_get(v, "complete"), *missing = json_object_get(v, "missing"), *item;
        if (!json_is_boolean(complete)) {
                json_decref(v);
                return -1;
        }
        *ret_complete = json_is_true(complete);
        size_t i;
        json_array_foreach (missing, i, item) {
                if (json_array_size(ret_missing) >= VERIFY_MISSING_MAX)
                        break;
                const char *s = json_string_value(item);
                if (s == NULL || s[strspn(s, " \t\r\n")] == '\0')
                        continue;
                size_t n = strlen(s);
                if (n > VERIFY_ITEM_BYTES) {
                        n = VERIFY_ITEM_BYTES;
                        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
                                n--; /* not inside a UTF-8 sequence */
                }
                json_array_append_new(ret_missing, json_stringn(s, n));
        }
        /* "complete": false with nothing named: the agent is told to check
         * its work against the task. */
        json_decref(v);
        return 0;
}

json_t *agent_verify(const struct agent_config *cfg, const json_t *messages, const char *answer, unsigned round,
                     struct model_usage *ret_usage)
{
        model_client *m = cfg->verifier ? cfg->verifier : cfg->model;
        json_t *ev = json_pack("{s:i, s:s?, s:n, s:[]}", "round", (int)round, "model", cfg->verifier_model,
                               "complete", "missing");
        cleanup_free char *text = verify_request_text(cfg, messages, answer ? answer : "");
        if (ev == NULL || text == NULL) {
                if (ev)
                        json_object_set_new(ev, "error", json_string("out of memory"));
                return ev;
        }
        struct chat_reply reply;
        if (agent_side_call(m, "verify", verify_system, text, ev, ret_usage, &reply) < 0)
                return ev;
        const char *content = json_string_value(json_object_get(reply.message, "content"));
        bool complete = false;
        if (parse_verdict(content, &complete, json_object_get(ev, "missing")) < 0) {
                cleanup_free char *cut = content ? agent_cut_middle(content, strlen(content), 300) : NULL;
                json_object_set_new(ev, "error", json_string("the verifier's reply is not a JSON object "
                                                             "{\"complete\": true|false, \"missing\": [...]}"));
                json_object_set_new(ev, "reply", json_string(cut ? cut : ""));
        } else {
                json_object_set_new(ev, "complete", json_boolean(complete));
        }
        chat_reply_release(&reply);
        return ev;
}

char *agent_verify_note(const json_t *verdict)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (f == NULL)
                return NULL;
        json_t *missing = json_object_get(verdict, "missing"), *item;
        size_t i;
        fputs("A check of your final answer against the task found it not complete yet.", f);
        if (json_array_size(missing) > 0) {
                fputs(" Missing or wrong:\n", f);
                json_array_foreach (missing, i, item)
                        fprintf(f, "- %s\n", json_string_value(item));
        } else {
                fputs(" Compare every part of the task with your answer and your files.\n", f);
        }
        fputs("Do what is missing, then give your final answer again (the whole answer, not only the "
              "changes).", f);
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}
