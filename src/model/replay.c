/* replay.c: the replay backend (--model replay:FILE).
 *
 * Plays the replies of a transcript in order, one per chat turn, without a
 * network: for offline demos and tests.  A transcript is what --record
 * writes: JSONL, one exchange per line, {"request": {...}, "reply":
 * {"message": {...}, "finish_reason", "usage"}}; hand-written lines may
 * carry only "reply" (or only "reply":{"message":...}); a line that is
 * only {"comment": "..."} says where the transcript came from and is
 * skipped.  The recorded
 * requests are not compared with the new ones: a replay answers whatever is
 * asked, so a transcript replays also after the prompt changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "model-internal.h"

#define MAX_TRANSCRIPT (16u << 20)

struct replay {
        json_t *replies; /* array of reply objects */
        size_t next;
        char *path;
};

int replay_backend_open(model_client *c, corral_error **err)
{
        const char *path = c->model + strlen("replay:");
        if (*path == '\0')
                return corral_usage(err, "--model replay:FILE needs a transcript file");
        errno = 0;
        cleanup_free char *text = read_whole_file_at(AT_FDCWD, path, MAX_TRANSCRIPT);
        if (text == NULL && errno == EFBIG)
                return corral_usage(err, "the transcript '%s' is larger than %u MiB", path, MAX_TRANSCRIPT >> 20);
        if (text == NULL)
                return corral_make_error(err, CORRAL_ERR_USAGE, errno ? errno : EIO, "cannot read the transcript '%s'",
                                         path);
        struct replay *r = calloc(1, sizeof(*r));
        if (r == NULL || (r->replies = json_array()) == NULL || (r->path = strdup(path)) == NULL) {
                if (r)
                        json_decref(r->replies);
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
                json_t *reply = json_object_get(doc, "reply");
                json_t *msg = json_object_get(reply, "message");
                if (!json_is_object(msg) || !json_is_string(json_object_get(msg, "role"))) {
                        json_decref(doc);
                        return corral_usage(err, "%s: expected {\"reply\": {\"message\": {\"role\": ...}}}", what);
                }
                json_array_append(r->replies, reply);
                json_decref(doc);
        }
        if (json_array_size(r->replies) == 0)
                return corral_usage(err, "the transcript '%s' holds no replies", path);
        return 0;
}

static int replay_chat(model_client *c, const json_t *messages, const json_t *tools, const struct model_hooks *hooks,
                       struct chat_reply *ret, corral_error **err)
{
        struct replay *r = c->backend;
        c->usage.requests++;
        if (r->next >= json_array_size(r->replies))
                return corral_make_error(err, CORRAL_ERR_MODEL_REFUSED, 0, "the transcript '%s' has no reply left "
                                         "(it holds %zu)", r->path, json_array_size(r->replies));
        json_t *reply = json_array_get(r->replies, r->next++);
        /* Through the same normaliser as a live reply: ids, arguments, caps. */
        json_t *wire = json_pack("{s:[{s:i, s:O, s:O?}], s:O?}", "choices", "index", 0, "message",
                                 json_object_get(reply, "message"), "finish_reason",
                                 json_object_get(reply, "finish_reason"), "usage", json_object_get(reply, "usage"));
        cleanup_free char *text = wire ? json_dumps(wire, JSON_COMPACT) : NULL;
        json_decref(wire);
        if (text == NULL)
                return corral_fail(err, ENOMEM, "cannot replay the transcript");
        if (chat_response_parse(text, strlen(text), ret, err) < 0)
                return corral_error_prefix(err, "the transcript '%s' reply %zu", r->path, r->next);
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
        free(r->path);
        free(r);
        c->backend = NULL;
}

const struct model_backend_ops replay_backend_ops = {
        .name = "replay",
        .chat = replay_chat,
        .release = replay_release,
};
