/* replay.c: the replay backend (--model replay:FILE).
 *
 * Plays the replies of a transcript in order, one per chat turn, without a
 * network: for offline demos and tests.  A transcript is what --record
 * writes: JSONL, one exchange per line, {"request": {...}, "reply":
 * {"message": {...}, "finish_reason", "usage"}}; hand-written lines may
 * carry only "reply" (or only "reply":{"message":...}); a line that is
 * only {"comment": "..."} says where the transcript came from and is
 * skipped; a line {"run": {...}} (written by --record before the
 * exchanges) says what the run saw: its inputs with sizes and digests.
 * A replay answers whatever is asked, so a transcript replays also after
 * the prompt changed; but the tool results each recorded request carried
 * are compared with the new request's (what the program printed: see
 * comparable()), and the first turn that differs
 * is kept (replay_divergence()): the recorded text after it speaks of other
 * results than this run's.
 * A line with "purpose" (a mode's side call: model.h) is played only to a
 * request of the same purpose, in order; the agent's own turns skip them,
 * so a transcript recorded with a mode on replays with it off.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "model-internal.h"

#define MAX_TRANSCRIPT (16u << 20)

struct replay {
        json_t *replies;   /* array of reply objects */
        json_t *requests;  /* the recorded request of each reply, or null */
        json_t *purposes;  /* the purpose of each reply (string), or null */
        size_t next;       /* the agent's turns: where to look for the next reply */
        json_t *cursors;   /* {purpose: where to look for its next reply} */
        char *path;
        json_t *run;       /* the {"run"} line, or NULL */
        json_t *diverged;  /* the first differing turn, or NULL */
};

int replay_backend_open(model_client *c, corral_error **err)
{
        const char *path = c->model + strlen("replay:");
        if (*path == '\0')
                return corral_usage_field(err, "model", "the model replay:FILE needs a transcript file");
        errno = 0;
        cleanup_free char *text = read_whole_file_at(AT_FDCWD, path, MAX_TRANSCRIPT);
        if (text == NULL && errno == EFBIG)
                return corral_usage(err, "the transcript '%s' is larger than %u MiB", path, MAX_TRANSCRIPT >> 20);
        if (text == NULL)
                return corral_make_error(err, CORRAL_ERR_USAGE, errno ? errno : EIO, "cannot read the transcript '%s'",
                                         path);
        struct replay *r = calloc(1, sizeof(*r));
        if (r == NULL || (r->replies = json_array()) == NULL || (r->requests = json_array()) == NULL ||
            (r->purposes = json_array()) == NULL || (r->cursors = json_object()) == NULL ||
            (r->path = strdup(path)) == NULL) {
                if (r) {
                        json_decref(r->replies);
                        json_decref(r->requests);
                        json_decref(r->purposes);
                        json_decref(r->cursors);
                }
                free(r);
                return corral_fail(err, ENOMEM, "cannot load the transcript");
        }
        c->backend = r;
        unsigned lineno = 0;
        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                lineno++;
                if (line[strspn(line, " \t\r")] == '\0')
                        continue;
                json_t *doc = NULL;
                cleanup_free char *what = NULL;
                if (asprintf(&what, "the transcript '%s' line %u", path, lineno) < 0)
                        return corral_fail(err, ENOMEM, "cannot load the transcript");
                if (chat_json_parse(line, strlen(line), what, &doc, err) < 0) {
                        (*err)->kind = CORRAL_ERR_USAGE; /* the user's file: theirs to fix */
                        return -1;
                }
                if (json_object_size(doc) == 1 && json_is_string(json_object_get(doc, "comment"))) {
                        json_decref(doc);
                        continue;
                }
                if (json_object_size(doc) == 1 && json_is_object(json_object_get(doc, "run"))) {
                        if (r->run == NULL)
                                r->run = json_incref(json_object_get(doc, "run"));
                        json_decref(doc);
                        continue;
                }
                json_t *reply = json_object_get(doc, "reply");
                json_t *msg = json_object_get(reply, "message");
                if (!json_is_object(msg) || !json_is_string(json_object_get(msg, "role"))) {
                        json_decref(doc);
                        return corral_usage(err, "%s: expected {\"reply\": {\"message\": {\"role\": ...}}}", what);
                }
                json_array_append(r->replies, reply);
                json_t *req = json_object_get(json_object_get(doc, "request"), "messages");
                json_array_append(r->requests, json_is_array(req) ? req : json_null());
                json_t *purpose = json_object_get(doc, "purpose");
                json_array_append(r->purposes, json_is_string(purpose) ? purpose : json_null());
                json_decref(doc);
        }
        if (json_array_size(r->replies) == 0)
                return corral_usage(err, "the transcript '%s' holds no replies", path);
        return 0;
}

/* The tool results at the end of messages (after the last assistant
 * message): {tool_call_id: content}. */
static json_t *last_tool_results(const json_t *messages)
{
        json_t *out = json_object();
        size_t n = json_array_size(messages);
        for (size_t i = n; out && i-- > 0;) {
                const json_t *m = json_array_get(messages, i);
                const char *role = json_string_value(json_object_get(m, "role"));
                if (role == NULL || strcmp(role, "tool") != 0)
                        break;
                const char *id = json_string_value(json_object_get(m, "tool_call_id"));
                json_t *content = json_object_get(m, "content");
                if (id && json_is_string(content))
                        json_object_set(out, id, content);
        }
        return out;
}

/* What of a tool result speaks of the data: a step's stdout (what the
 * program printed; observe.c writes it between "stdout:" and "stderr:"),
 * else the whole result without its "wall time:" line.  Status lines,
 * tracebacks and timings change with corral's version and the execution
 * mode, not with the data. */
static char *comparable(const char *text)
{
        const char *out = strncmp(text, "stdout:", 7) == 0 ? text : strstr(text, "\nstdout:");
        if (out) {
                out += *out == '\n' ? 1 : 0;
                const char *err = strstr(out, "\nstderr:");
                return strndup(out, err ? (size_t)(err - out) : strlen(out));
        }
        char *copy = malloc(strlen(text) + 1);
        if (copy == NULL)
                return NULL;
        size_t o = 0;
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
                if (strncmp(p, "wall time:", 10) != 0) {
                        memcpy(copy + o, p, len);
                        o += len;
                }
                p += len;
        }
        copy[o] = '\0';
        return copy;
}

/* The first 200 bytes of s where it differs from t, for the report. */
static json_t *excerpt_at(const char *s, size_t at)
{
        size_t start = at > 40 ? at - 40 : 0;
        size_t len = strlen(s + start);
        return json_stringn(s + start, len > 200 ? 200 : len);
}

/* Compare the tool results of this request with the recorded one's. */
static void compare_turn(struct replay *r, size_t turn, const json_t *messages)
{
        const json_t *recorded = json_array_get(r->requests, turn);
        if (r->diverged || !json_is_array(recorded))
                return;
        json_t *was = last_tool_results(recorded), *now = last_tool_results(messages);
        const char *id;
        json_t *v;
        json_object_foreach (was, id, v) {
                const char *then_text = json_string_value(v);
                const char *now_text = json_string_value(json_object_get(now, id));
                cleanup_free char *a = comparable(then_text);
                cleanup_free char *b = now_text ? comparable(now_text) : NULL;
                if (a == NULL || (b && strcmp(a, b) == 0))
                        continue;
                size_t at = 0;
                while (b && a[at] && a[at] == b[at])
                        at++;
                r->diverged = json_pack("{s:I, s:s, s:o, s:o}", "turn", (json_int_t)turn + 1, "tool_call_id", id,
                                        "recorded", excerpt_at(a, at), "now",
                                        b ? excerpt_at(b, at) : json_string("(no such tool result)"));
                break;
        }
        json_decref(was);
        json_decref(now);
}

const json_t *replay_recorded_run(const model_client *c)
{
        const struct replay *r = c->backend;
        return r ? r->run : NULL;
}

const json_t *replay_divergence(const model_client *c)
{
        const struct replay *r = c->backend;
        return r ? r->diverged : NULL;
}

/* Whether reply i answers a request of this purpose (NULL: the agent's). */
static bool reply_is_for(const struct replay *r, size_t i, const char *purpose)
{
        const char *p = json_string_value(json_array_get(r->purposes, i));
        return purpose ? p && strcmp(p, purpose) == 0 : p == NULL;
}

bool replay_has_purpose(const model_client *c, const char *purpose)
{
        const struct replay *r = c->backend;
        for (size_t i = 0; r && purpose && i < json_array_size(r->replies); i++)
                if (reply_is_for(r, i, purpose))
                        return true;
        return false;
}

static int replay_chat(model_client *c, const json_t *messages, const json_t *tools, const struct model_hooks *hooks,
                       struct chat_reply *ret, corral_error **err)
{
        struct replay *r = c->backend;
        const char *purpose = hooks ? hooks->purpose : NULL;
        c->usage.requests++;
        size_t at = purpose ? (size_t)json_integer_value(json_object_get(r->cursors, purpose)) : r->next;
        while (at < json_array_size(r->replies) && !reply_is_for(r, at, purpose))
                at++;
        if (at >= json_array_size(r->replies))
                return corral_make_error(err, CORRAL_ERR_MODEL_REFUSED, 0, "the transcript '%s' has no %s%sreply "
                                         "left (it holds %zu)", r->path, purpose ? purpose : "",
                                         purpose ? " " : "", json_array_size(r->replies));
        if (purpose == NULL)
                compare_turn(r, at, messages);
        if (purpose)
                json_object_set_new(r->cursors, purpose, json_integer((json_int_t)at + 1));
        else
                r->next = at + 1;
        json_t *reply = json_array_get(r->replies, at);
        /* Through the same normaliser as a live reply: ids, arguments, caps. */
        json_t *wire = json_pack("{s:[{s:i, s:O, s:O?}], s:O?}", "choices", "index", 0, "message",
                                 json_object_get(reply, "message"), "finish_reason",
                                 json_object_get(reply, "finish_reason"), "usage", json_object_get(reply, "usage"));
        cleanup_free char *text = wire ? json_dumps(wire, JSON_COMPACT) : NULL;
        json_decref(wire);
        if (text == NULL)
                return corral_fail(err, ENOMEM, "cannot replay the transcript");
        if (chat_response_parse(text, strlen(text), ret, err) < 0)
                return corral_error_prefix(err, "the transcript '%s' reply %zu", r->path, at + 1);
        json_t *reasoning = json_object_get(reply, "reasoning");
        if (json_is_string(reasoning) && ret->reasoning == NULL)
                ret->reasoning = strdup(json_string_value(reasoning));
        json_t *usage = json_object_get(reply, "usage");
        if (json_is_object(usage) && json_is_false(json_object_get(usage, "reported")))
                ret->usage.reported = false; /* recorded from an estimate: estimate again */
        json_t *content = json_object_get(ret->message, "content");
        if (hooks && hooks->on_content && json_is_string(content))
                hooks->on_content(hooks->userdata, json_string_value(content), json_string_length(content));
        return 0;
}

static void replay_release(model_client *c)
{
        struct replay *r = c->backend;
        if (r == NULL)
                return;
        json_decref(r->replies);
        json_decref(r->requests);
        json_decref(r->purposes);
        json_decref(r->cursors);
        json_decref(r->run);
        json_decref(r->diverged);
        free(r->path);
        free(r);
        c->backend = NULL;
}

const struct model_backend_ops replay_backend_ops = {
        .name = "replay",
        .chat = replay_chat,
        .release = replay_release,
};
