/* chat.c: the chat-completions wire format (see chat.h).
 *
 * Three directions: request bodies out (chat_request_build), a whole reply
 * in (chat_response_parse), and a streamed reply in, one SSE data payload at
 * a time (chat_stream_*).  Both reply paths end in the same normalised
 * assistant message (message_new), so the agent never sees which dialect an
 * endpoint spoke.  Everything that arrives is bounded (CHAT_MAX_*) and parsed
 * strictly; nothing here touches the network.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "chat.h"

/* Bytes of an endpoint's error message kept for ours. */
#define ERROR_TEXT_MAX 1000

#define refused(err, ...) corral_make_error(err, CORRAL_ERR_MODEL_REFUSED, 0, __VA_ARGS__)

static void cleanup_jsonp(json_t **p)
{
        json_decref(*p);
}
#define cleanup_json __attribute__((cleanup(cleanup_jsonp)))

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* A copy of an endpoint's text fit for one line of ours: control characters
 * become spaces, surrounding spaces go, and at most ERROR_TEXT_MAX bytes are
 * kept (cut at a character boundary, "..." marking the cut).  s is valid
 * UTF-8 (jansson guarantees it).  NULL when nothing is left. */
static char *one_line(const char *s)
{
        while (*s != '\0' && ((unsigned char)*s <= ' ' || *s == 0x7f))
                s++;
        size_t len = strlen(s);
        bool cut = false;
        if (len > ERROR_TEXT_MAX) {
                len = ERROR_TEXT_MAX;
                while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
                        len--;
                cut = true;
        }
        char *out = malloc(len + sizeof("..."));
        if (out == NULL)
                return NULL;
        for (size_t i = 0; i < len; i++)
                out[i] = (unsigned char)s[i] < ' ' || s[i] == 0x7f ? ' ' : s[i];
        while (len > 0 && out[len - 1] == ' ')
                len--;
        if (len == 0) {
                free(out);
                return NULL;
        }
        memcpy(out + len, cut ? "..." : "", cut ? sizeof("...") : 1);
        return out;
}

int chat_json_parse(const char *text, size_t len, const char *what, json_t **ret, corral_error **ret_err)
{
        json_error_t e;
        json_t *v = json_loadb(text ? text : "", len, JSON_REJECT_DUPLICATES, &e);
        if (v == NULL) {
                /* jansson quotes the offending token; keep the message on one line. */
                for (char *p = e.text; *p != '\0'; p++)
                        if ((unsigned char)*p < ' ' || *p == 0x7f)
                                *p = ' ';
                return refused(ret_err, "invalid JSON in %s at line %d, column %d: %s", what, e.line, e.column,
                               e.text);
        }
        *ret = v;
        return 0;
}

/* ---- error bodies ---- */

/* The message text of an error object in any of the shapes servers use:
 * {"error":{"message":...}} (OpenAI, Ollama, llama.cpp, newer vLLM),
 * {"error":"..."} (Ollama's native API), {"object":"error","message":...}
 * (older vLLM), {"message":...}, {"detail":"..."} or FastAPI's
 * {"detail":[{"msg":...}]}.  Borrowed from root; NULL when none. */
static const char *error_text_of(const json_t *root)
{
        const json_t *e = json_object_get(root, "error");
        const char *s = json_string_value(json_object_get(e, "message"));
        if (s != NULL && s[0] != '\0')
                return s;
        s = json_string_value(e);
        if (s != NULL && s[0] != '\0')
                return s;
        s = json_string_value(json_object_get(root, "message"));
        if (s != NULL && s[0] != '\0')
                return s;
        const json_t *d = json_object_get(root, "detail");
        s = json_is_array(d) ? json_string_value(json_object_get(json_array_get(d, 0), "msg")) : json_string_value(d);
        if (s != NULL && s[0] != '\0')
                return s;
        return NULL;
}

/* Is this reply an error object rather than a completion? */
static bool is_error_body(const json_t *root)
{
        const json_t *e = json_object_get(root, "error");
        const char *object = json_string_value(json_object_get(root, "object"));
        return (e != NULL && !json_is_null(e)) || (object != NULL && strcmp(object, "error") == 0);
}

/* Fail with the message an error object carries. */
static int reply_error(const json_t *root, corral_error **ret_err)
{
        const char *text = error_text_of(root);
        cleanup_free char *line = text ? one_line(text) : NULL;
        if (line == NULL)
                return refused(ret_err, "the endpoint reported an error without a message");
        return refused(ret_err, "the endpoint reported an error: %s", line);
}

char *chat_error_message(const char *body, size_t len)
{
        if (body == NULL)
                return NULL;
        json_error_t e;
        cleanup_json json_t *root = json_loadb(body, len, 0, &e);
        if (!json_is_object(root))
                return NULL;
        const char *text = error_text_of(root);
        return text ? one_line(text) : NULL;
}

/* ---- requests ---- */

/* Is text a JSON object, parsed strictly? */
static bool is_json_object_text(const char *text, size_t len)
{
        json_t *v = NULL;
        if (chat_json_parse(text, len, "arguments", &v, NULL) < 0)
                return false;
        bool ok = json_is_object(v);
        json_decref(v);
        return ok;
}

/* Make the "arguments" of one tool call in a copied assistant message a
 * string holding a JSON object: a string that is not one becomes "{}", an
 * object value is serialised, anything else (missing, null, an array, a
 * number) becomes "{}".  Ollama, llama.cpp and older vLLM parse the
 * arguments of earlier calls again (chat templates expect a mapping) and
 * reject the whole request when that fails, on every later turn too: one
 * garbled call by the model must not end the conversation
 * (docs/providers.md).  Returns 0, or -1 when out of memory. */
static int sanitize_arguments(json_t *call)
{
        json_t *fn = json_object_get(call, "function");
        if (!json_is_object(fn))
                return 0;
        json_t *a = json_object_get(fn, "arguments");
        if (json_is_string(a) && is_json_object_text(json_string_value(a), json_string_length(a)))
                return 0;
        json_t *fixed = NULL;
        if (json_is_object(a)) {
                cleanup_free char *text = json_dumps(a, JSON_COMPACT);
                if (text != NULL && is_json_object_text(text, strlen(text)))
                        fixed = json_string(text);
        }
        if (fixed == NULL)
                fixed = json_string("{}");
        return json_object_set_new(fn, "arguments", fixed);
}

/* A deep copy of the conversation with every assistant tool call's
 * arguments sanitised (sanitize_arguments), or NULL when out of memory. */
static json_t *copy_messages(const json_t *messages)
{
        json_t *copy = json_deep_copy(messages);
        if (copy == NULL)
                return NULL;
        size_t i;
        json_t *m;
        json_array_foreach(copy, i, m)
        {
                const char *role = json_string_value(json_object_get(m, "role"));
                json_t *calls = json_object_get(m, "tool_calls");
                if (role == NULL || strcmp(role, "assistant") != 0 || !json_is_array(calls))
                        continue;
                size_t j;
                json_t *c;
                json_array_foreach(calls, j, c)
                {
                        if (sanitize_arguments(c) < 0) {
                                json_decref(copy);
                                return NULL;
                        }
                }
        }
        return copy;
}

/* Set key to v (stolen) in o; -1 when v is NULL or the set fails. */
static int set_new(json_t *o, const char *key, json_t *v)
{
        if (v == NULL)
                return -1;
        return json_object_set_new(o, key, v);
}

char *chat_request_build(const struct chat_request_opts *o, corral_error **ret_err)
{
        if (o->model == NULL || o->model[0] == '\0')
                return corral_usage(ret_err, "no model to send the request to"), NULL;
        if (!json_is_array(o->messages))
                return corral_usage(ret_err, "the conversation is not a JSON array"), NULL;
        if (o->tools != NULL && !json_is_array(o->tools))
                return corral_usage(ret_err, "the tool list is not a JSON array"), NULL;
        if (!utf8_valid(o->model, strlen(o->model)))
                return corral_usage(ret_err, "the model name is not valid UTF-8"), NULL;
        if (o->temperature >= 0 && !isfinite(o->temperature))
                return corral_usage(ret_err, "the temperature is not a finite number"), NULL;

        /* jansson (>= 2.8) keeps object keys in insertion order. */
        cleanup_json json_t *req = json_object();
        bool ok = req != NULL && set_new(req, "model", json_string(o->model)) == 0 &&
                  set_new(req, "messages", copy_messages(o->messages)) == 0 &&
                  set_new(req, "stream", json_boolean(o->stream)) == 0;
        if (ok && o->stream && !(o->quirks & CHAT_QUIRK_NO_STREAM_USAGE))
                ok = set_new(req, "stream_options", json_pack("{s:b}", "include_usage", 1)) == 0;
        if (ok && o->tools != NULL && json_array_size(o->tools) > 0) {
                ok = set_new(req, "tools", json_deep_copy(o->tools)) == 0;
                if (ok && !(o->quirks & CHAT_QUIRK_NO_TOOL_CHOICE))
                        ok = set_new(req, "tool_choice", json_string("auto")) == 0;
        }
        if (ok && o->temperature >= 0)
                ok = set_new(req, "temperature", json_real(o->temperature)) == 0;
        if (ok && o->max_tokens > 0) {
                json_int_t n = o->max_tokens > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)o->max_tokens;
                const char *key = o->quirks & CHAT_QUIRK_MAX_TOKENS_LEGACY ? "max_tokens" : "max_completion_tokens";
                ok = set_new(req, key, json_integer(n)) == 0;
        }
        char *text = ok ? json_dumps(req, JSON_COMPACT) : NULL;
        if (text == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot build the request"), NULL;
        return text;
}

/* ---- replies ---- */

void chat_reply_release(struct chat_reply *r)
{
        json_decref(r->message);
        free(r->finish_reason);
        free(r->reasoning);
        memset(r, 0, sizeof(*r));
}

size_t chat_reply_tool_calls(const struct chat_reply *r)
{
        return json_array_size(json_object_get(r->message, "tool_calls"));
}

/* A token count: a non-negative integer (or a real, from lax servers). */
static uint64_t get_count(const json_t *o, const char *key)
{
        const json_t *v = json_object_get(o, key);
        if (json_is_integer(v))
                return json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
        if (json_is_real(v) && json_real_value(v) > 0 && json_real_value(v) < 1e19)
                return (uint64_t)json_real_value(v);
        return 0;
}

/* Take a "usage" object when there is one; later ones replace earlier. */
static void read_usage(const json_t *u, struct chat_usage *usage)
{
        if (!json_is_object(u))
                return;
        usage->reported = true;
        usage->prompt_tokens = get_count(u, "prompt_tokens");
        usage->completion_tokens = get_count(u, "completion_tokens");
}

/* The reasoning text of a message or delta: "reasoning_content" (llama.cpp,
 * older vLLM) or else "reasoning" (Ollama, newer vLLM).  Never both: a
 * server that sent both would send the same text twice. */
static const json_t *reasoning_of(const json_t *m)
{
        const json_t *r = json_object_get(m, "reasoning_content");
        if (json_is_string(r) && json_string_length(r) > 0)
                return r;
        r = json_object_get(m, "reasoning");
        return json_is_string(r) && json_string_length(r) > 0 ? r : NULL;
}

/* One normalised tool call; id NULL is filled in by assign_ids(); empty
 * arguments become "{}" (a call without arguments). */
static json_t *tool_call_new(const char *id, const char *name, const char *args, size_t args_len)
{
        if (args_len == 0) {
                args = "{}";
                args_len = 2;
        }
        return json_pack("{s:s?, s:s, s:{s:s, s:s%}}", "id", id && id[0] ? id : NULL, "type", "function",
                         "function", "name", name ? name : "", "arguments", args, args_len);
}

/* Is id taken by a call other than calls[self]? */
static bool id_taken(const json_t *calls, size_t self, const char *id)
{
        size_t i;
        const json_t *c;
        json_array_foreach(calls, i, c)
        {
                const char *other = json_string_value(json_object_get(c, "id"));
                if (i != self && other != NULL && strcmp(other, id) == 0)
                        return true;
        }
        return false;
}

/* Give every call a unique id: a missing id, or one an earlier call already
 * has, becomes "call_<position>" ("call_<position>_<n>" if that is taken),
 * so that each tool result can name the call it answers. */
static int assign_ids(json_t *calls)
{
        size_t i;
        json_t *c;
        json_array_foreach(calls, i, c)
        {
                const char *id = json_string_value(json_object_get(c, "id"));
                bool repeated = false;
                for (size_t j = 0; id != NULL && j < i && !repeated; j++) {
                        const char *earlier = json_string_value(json_object_get(json_array_get(calls, j), "id"));
                        repeated = earlier != NULL && strcmp(id, earlier) == 0;
                }
                if (id != NULL && !repeated)
                        continue;
                char fresh[64];
                snprintf(fresh, sizeof(fresh), "call_%zu", i);
                for (unsigned n = 1; id_taken(calls, i, fresh); n++)
                        snprintf(fresh, sizeof(fresh), "call_%zu_%u", i, n);
                if (json_object_set_new(c, "id", json_string(fresh)) < 0)
                        return -1;
        }
        return 0;
}

/* The normalised assistant message.  content is NULL-or-empty for none; the
 * message then says "content": null when there are tool calls and "" when
 * there are none.  calls (stolen, may be NULL) is left out when empty. */
static json_t *message_new(const char *content, size_t content_len, json_t *calls)
{
        bool has_calls = json_array_size(calls) > 0;
        json_t *m = json_object();
        json_t *c = content_len > 0 ? json_stringn(content, content_len) : has_calls ? json_null() : json_string("");
        bool ok = m != NULL && set_new(m, "role", json_string("assistant")) == 0 && set_new(m, "content", c) == 0;
        if (ok && has_calls)
                ok = assign_ids(calls) == 0 && json_object_set(m, "tool_calls", calls) == 0;
        json_decref(calls);
        if (!ok) {
                json_decref(m);
                return NULL;
        }
        return m;
}

/* The arguments value of a tool call as text: a string as is, any other
 * JSON value (Ollama's native object) serialised compactly, null or missing
 * as "".  *ret_owned is set when the text must be freed.  NULL: no memory. */
static const char *arguments_text(const json_t *a, size_t *ret_len, char **ret_owned)
{
        *ret_owned = NULL;
        if (a == NULL || json_is_null(a)) {
                *ret_len = 0;
                return "";
        }
        if (json_is_string(a)) {
                *ret_len = json_string_length(a);
                return json_string_value(a);
        }
        *ret_owned = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
        *ret_len = *ret_owned ? strlen(*ret_owned) : 0;
        return *ret_owned;
}

/* Fill ret from the decoded body of a non-streamed reply. */
static int parse_reply(const json_t *root, struct chat_reply *ret, corral_error **ret_err)
{
        if (!json_is_object(root))
                return refused(ret_err, "the endpoint's reply is not a JSON object");
        if (is_error_body(root))
                return reply_error(root, ret_err);
        const json_t *choices = json_object_get(root, "choices");
        if (json_array_size(choices) == 0)
                return refused(ret_err, "the endpoint's reply has no choices");
        const json_t *choice = json_array_get(choices, 0);
        const json_t *msg = json_object_get(choice, "message");
        if (!json_is_object(msg))
                return refused(ret_err, "the endpoint's reply has no message in choices[0]");

        const json_t *content = json_object_get(msg, "content");
        if (content != NULL && !json_is_null(content) && !json_is_string(content))
                return refused(ret_err, "the endpoint's reply: message content is not a string");
        size_t bytes = json_string_length(content);

        const json_t *tcs = json_object_get(msg, "tool_calls");
        if (tcs != NULL && !json_is_null(tcs) && !json_is_array(tcs))
                return refused(ret_err, "the endpoint's reply: tool_calls is not an array");
        if (json_array_size(tcs) > CHAT_MAX_TOOL_CALLS)
                return refused(ret_err, "the endpoint's reply has %zu tool calls, more than %d", json_array_size(tcs),
                               CHAT_MAX_TOOL_CALLS);
        cleanup_json json_t *calls = json_array();
        if (calls == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot read the endpoint's reply");
        size_t i;
        const json_t *tc;
        json_array_foreach(tcs, i, tc)
        {
                const json_t *fn = json_object_get(tc, "function");
                if (!json_is_object(fn))
                        return refused(ret_err, "the endpoint's reply: tool call %zu has no function", i);
                const char *id = json_string_value(json_object_get(tc, "id"));
                const char *name = json_string_value(json_object_get(fn, "name"));
                cleanup_free char *owned = NULL;
                size_t args_len;
                const char *args = arguments_text(json_object_get(fn, "arguments"), &args_len, &owned);
                if (args == NULL)
                        return corral_fail(ret_err, ENOMEM, "cannot read the endpoint's reply");
                bytes += args_len + (name ? strlen(name) : 0) + (id ? strlen(id) : 0);
                if (bytes > CHAT_MAX_REPLY_BYTES)
                        break;
                if (json_array_append_new(calls, tool_call_new(id, name, args, args_len)) < 0)
                        return corral_fail(ret_err, ENOMEM, "cannot read the endpoint's reply");
        }
        const json_t *reasoning = reasoning_of(msg);
        bytes += json_string_length(reasoning);
        if (bytes > CHAT_MAX_REPLY_BYTES)
                return refused(ret_err, "the endpoint's reply is longer than %u bytes", CHAT_MAX_REPLY_BYTES);

        ret->message = message_new(json_string_value(content), json_string_length(content), TAKE_PTR(calls));
        const char *finish = json_string_value(json_object_get(choice, "finish_reason"));
        ret->finish_reason = finish ? strdup(finish) : NULL;
        ret->reasoning = reasoning ? strdup(json_string_value(reasoning)) : NULL;
        if (ret->message == NULL || (finish && !ret->finish_reason) || (reasoning && !ret->reasoning))
                return corral_fail(ret_err, ENOMEM, "cannot read the endpoint's reply");
        read_usage(json_object_get(root, "usage"), &ret->usage);
        return 0;
}

int chat_response_parse(const char *body, size_t len, struct chat_reply *ret, corral_error **ret_err)
{
        memset(ret, 0, sizeof(*ret));
        cleanup_json json_t *root = NULL;
        if (chat_json_parse(body, len, "the endpoint's reply", &root, ret_err) < 0)
                return -1;
        if (parse_reply(root, ret, ret_err) < 0) {
                chat_reply_release(ret);
                return -1;
        }
        return 0;
}

/* ---- streamed replies ---- */

void chat_stream_init(struct chat_stream *s)
{
        memset(s, 0, sizeof(*s));
        s->content.cap = CHAT_MAX_REPLY_BYTES;
        s->reasoning.cap = CHAT_MAX_REPLY_BYTES;
        for (size_t i = 0; i < CHAT_MAX_TOOL_CALLS; i++)
                s->calls[i].arguments.cap = CHAT_MAX_REPLY_BYTES;
}

void chat_stream_release(struct chat_stream *s)
{
        capbuf_release(&s->content);
        capbuf_release(&s->reasoning);
        for (size_t i = 0; i < CHAT_MAX_TOOL_CALLS; i++) {
                free(s->calls[i].id);
                free(s->calls[i].name);
                capbuf_release(&s->calls[i].arguments);
        }
        free(s->finish_reason);
        chat_stream_init(s);
}

/* Count n more bytes kept against CHAT_MAX_REPLY_BYTES. */
static int stream_keep(struct chat_stream *s, size_t n, corral_error **ret_err)
{
        if (n > CHAT_MAX_REPLY_BYTES - s->bytes)
                return refused(ret_err, "the endpoint's streamed reply is longer than %u bytes", CHAT_MAX_REPLY_BYTES);
        s->bytes += n;
        return 0;
}

static int stream_append(struct chat_stream *s, struct capbuf *b, const char *data, size_t len,
                         corral_error **ret_err)
{
        if (len == 0)
                return 0;
        if (stream_keep(s, len, ret_err) < 0)
                return -1;
        if (capbuf_append(b, data, len) == (size_t)-1)
                return corral_fail(ret_err, ENOMEM, "cannot read the endpoint's streamed reply");
        return 0;
}

/* The call a tool-call fragment belongs to.  With an "index", that slot.
 * Without one (some servers omit it), a fragment starts a new call when
 * there is none yet or when it carries an id other than the last call's,
 * and otherwise continues the last call. */
static int fragment_slot(struct chat_stream *s, const json_t *frag, const char *id, size_t *ret,
                         corral_error **ret_err)
{
        const json_t *ix = json_object_get(frag, "index");
        if (json_is_integer(ix)) {
                json_int_t v = json_integer_value(ix);
                if (v < 0 || v >= CHAT_MAX_TOOL_CALLS)
                        return refused(ret_err, "the endpoint's streamed reply has tool call index %" PRId64
                                                " (0 to %d allowed)",
                                       (int64_t)v, CHAT_MAX_TOOL_CALLS - 1);
                *ret = (size_t)v;
                return 0;
        }
        if (ix != NULL && !json_is_null(ix))
                return refused(ret_err, "the endpoint's streamed reply has a tool call index that is not a number");
        const char *last = s->n_calls > 0 ? s->calls[s->n_calls - 1].id : NULL;
        if (s->n_calls > 0 && (id == NULL || (last != NULL && strcmp(id, last) == 0))) {
                *ret = s->n_calls - 1;
                return 0;
        }
        if (s->n_calls >= CHAT_MAX_TOOL_CALLS)
                return refused(ret_err, "the endpoint's streamed reply has more than %d tool calls",
                               CHAT_MAX_TOOL_CALLS);
        *ret = s->n_calls;
        return 0;
}

/* One element of delta.tool_calls.  The id is taken once (a later,
 * different id for the same call is ignored: the first one is what the
 * server knows the call by).  The name is taken from the first fragment
 * that has one.  A later name equal to the name so far is ignored, one that
 * extends it replaces it (llama.cpp sends the whole name again whenever the
 * id or the name of a call changed), any other is appended (a server that
 * sends the name in pieces, as it does the arguments).  Arguments are appended; an
 * object instead of a string is serialised first. */
static int add_fragment(struct chat_stream *s, const json_t *frag, corral_error **ret_err)
{
        if (!json_is_object(frag))
                return refused(ret_err, "the endpoint's streamed reply has a tool call that is not an object");
        const json_t *fn = json_object_get(frag, "function");
        if (fn != NULL && !json_is_null(fn) && !json_is_object(fn))
                return refused(ret_err, "the endpoint's streamed reply has a tool call function that is not an "
                                        "object");
        const char *id = json_string_value(json_object_get(frag, "id"));
        if (id != NULL && id[0] == '\0')
                id = NULL;
        size_t slot = 0;
        if (fragment_slot(s, frag, id, &slot, ret_err) < 0)
                return -1;
        if (slot >= s->n_calls)
                s->n_calls = slot + 1;
        struct chat_stream_call *c = &s->calls[slot];

        if (id != NULL && c->id == NULL) {
                if (stream_keep(s, strlen(id), ret_err) < 0)
                        return -1;
                if ((c->id = strdup(id)) == NULL)
                        return corral_fail(ret_err, ENOMEM, "cannot read the endpoint's streamed reply");
        }
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (name != NULL && name[0] != '\0' && (c->name == NULL || strcmp(c->name, name) != 0)) {
                size_t have = c->name ? strlen(c->name) : 0, add = strlen(name);
                if (have > 0 && strncmp(name, c->name, have) == 0) {
                        /* The whole name so far, grown: keep only what is new. */
                        name += have;
                        add -= have;
                }
                if (stream_keep(s, add, ret_err) < 0)
                        return -1;
                char *joined = realloc(c->name, have + add + 1);
                if (joined == NULL)
                        return corral_fail(ret_err, ENOMEM, "cannot read the endpoint's streamed reply");
                memcpy(joined + have, name, add + 1);
                c->name = joined;
        }
        cleanup_free char *owned = NULL;
        size_t args_len;
        const char *args = arguments_text(json_object_get(fn, "arguments"), &args_len, &owned);
        if (args == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot read the endpoint's streamed reply");
        return stream_append(s, &c->arguments, args, args_len, ret_err);
}

/* choices[0] of a chunk: its delta and finish_reason. */
static int add_choice(struct chat_stream *s, const json_t *choice, corral_error **ret_err)
{
        s->saw_choice = true;
        const json_t *delta = json_object_get(choice, "delta");
        if (delta != NULL && !json_is_null(delta) && !json_is_object(delta))
                return refused(ret_err, "the endpoint's streamed reply has a delta that is not an object");
        const json_t *content = json_object_get(delta, "content");
        if (content != NULL && !json_is_null(content) && !json_is_string(content))
                return refused(ret_err, "the endpoint's streamed reply has content that is not a string");
        if (stream_append(s, &s->content, json_string_value(content), json_string_length(content), ret_err) < 0)
                return -1;
        const json_t *reasoning = reasoning_of(delta);
        if (stream_append(s, &s->reasoning, json_string_value(reasoning), json_string_length(reasoning), ret_err) <
            0)
                return -1;
        const json_t *tcs = json_object_get(delta, "tool_calls");
        if (tcs != NULL && !json_is_null(tcs) && !json_is_array(tcs))
                return refused(ret_err, "the endpoint's streamed reply has tool_calls that is not an array");
        size_t i;
        const json_t *frag;
        json_array_foreach(tcs, i, frag)
        {
                if (add_fragment(s, frag, ret_err) < 0)
                        return -1;
        }
        const char *finish = json_string_value(json_object_get(choice, "finish_reason"));
        if (finish != NULL) {
                char *f = strdup(finish);
                if (f == NULL)
                        return corral_fail(ret_err, ENOMEM, "cannot read the endpoint's streamed reply");
                free(s->finish_reason);
                s->finish_reason = f;
        }
        return 0;
}

/* One SSE data payload: "[DONE]" (whitespace around it allowed), nothing
 * but whitespace (ignored), or a chunk object.  Of the choices only the one
 * with index 0 (or, without "index", the first) is read: corral asks for
 * one.  "usage" may come in any chunk; the last one wins. */
int chat_stream_add(struct chat_stream *s, const char *data, size_t len, corral_error **ret_err)
{
        const char *t = data ? data : "";
        size_t n = data ? len : 0;
        while (n > 0 && is_space(t[0]))
                t++, n--;
        while (n > 0 && is_space(t[n - 1]))
                n--;
        if (n == 0)
                return 0;
        if (n == 6 && memcmp(t, "[DONE]", 6) == 0) {
                s->done = true;
                return 0;
        }
        cleanup_json json_t *chunk = NULL;
        if (chat_json_parse(t, n, "a streamed chunk", &chunk, ret_err) < 0)
                return -1;
        if (!json_is_object(chunk))
                return refused(ret_err, "the endpoint's streamed reply has a chunk that is not a JSON object");
        if (is_error_body(chunk))
                return reply_error(chunk, ret_err);
        const json_t *choices = json_object_get(chunk, "choices");
        if (choices != NULL && !json_is_null(choices) && !json_is_array(choices))
                return refused(ret_err, "the endpoint's streamed reply has choices that is not an array");
        size_t i;
        const json_t *choice;
        json_array_foreach(choices, i, choice)
        {
                const json_t *ix = json_object_get(choice, "index");
                if (!json_is_object(choice))
                        return refused(ret_err, "the endpoint's streamed reply has a choice that is not an object");
                if (json_is_integer(ix) ? json_integer_value(ix) != 0 : i != 0)
                        continue;
                if (add_choice(s, choice, ret_err) < 0)
                        return -1;
        }
        read_usage(json_object_get(chunk, "usage"), &s->usage);
        return 0;
}

/* Calls are taken in index order; a slot no fragment gave an id, a name or
 * arguments (a gap in the indices) is skipped.  The stream is only read. */
int chat_stream_finish(struct chat_stream *s, struct chat_reply *ret, corral_error **ret_err)
{
        memset(ret, 0, sizeof(*ret));
        if (!s->saw_choice)
                return refused(ret_err, "the endpoint's streamed reply ended without any message");
        json_t *calls = json_array();
        for (size_t i = 0; calls != NULL && i < s->n_calls; i++) {
                const struct chat_stream_call *c = &s->calls[i];
                if (c->id == NULL && c->name == NULL && c->arguments.len == 0)
                        continue;
                if (json_array_append_new(calls, tool_call_new(c->id, c->name, c->arguments.data, c->arguments.len)) <
                    0) {
                        json_decref(calls);
                        calls = NULL;
                }
        }
        if (calls == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot read the endpoint's streamed reply");
        ret->message = message_new(s->content.data, s->content.len, calls);
        ret->finish_reason = s->finish_reason ? strdup(s->finish_reason) : NULL;
        ret->reasoning = s->reasoning.len > 0 ? strndup(s->reasoning.data, s->reasoning.len) : NULL;
        ret->usage = s->usage;
        if (ret->message == NULL || (s->finish_reason && !ret->finish_reason) ||
            (s->reasoning.len > 0 && !ret->reasoning)) {
                chat_reply_release(ret);
                return corral_fail(ret_err, ENOMEM, "cannot read the endpoint's streamed reply");
        }
        return 0;
}

/* ---- images for the model ---- */

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* "data:image/png;base64,..." for len bytes; NULL when out of memory. */
static char *png_data_url(const unsigned char *p, size_t len)
{
        static const char prefix[] = "data:image/png;base64,";
        if (len > SIZE_MAX / 2)
                return NULL;
        size_t n = sizeof(prefix) - 1 + (len + 2) / 3 * 4;
        char *out = malloc(n + 1), *o;
        if (out == NULL)
                return NULL;
        memcpy(out, prefix, sizeof(prefix) - 1);
        o = out + sizeof(prefix) - 1;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)p[i] << 16;
                if (i + 1 < len)
                        v |= (uint32_t)p[i + 1] << 8;
                if (i + 2 < len)
                        v |= p[i + 2];
                *o++ = b64_alphabet[v >> 18 & 63];
                *o++ = b64_alphabet[v >> 12 & 63];
                *o++ = i + 1 < len ? b64_alphabet[v >> 6 & 63] : '=';
                *o++ = i + 2 < len ? b64_alphabet[v & 63] : '=';
        }
        *o = '\0';
        return out;
}

json_t *chat_image_message_new(const char *text, const struct chat_image *images, size_t n)
{
        cleanup_json json_t *parts = json_array();
        if (parts == NULL || json_array_append_new(parts, json_pack("{s:s, s:s}", "type", "text", "text",
                                                                    text ? text : "")) < 0)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                cleanup_free char *url = png_data_url(images[i].png, images[i].len);
                json_t *iu = url ? json_pack("{s:s}", "url", url) : NULL;
                if (iu && images[i].detail)
                        json_object_set_new(iu, "detail", json_string(images[i].detail));
                if (iu == NULL || json_array_append_new(parts, json_pack("{s:s, s:o}", "type", "image_url",
                                                                         "image_url", iu)) < 0)
                        return NULL;
        }
        return json_pack("{s:s, s:O}", "role", "user", "content", parts);
}

static bool is_image_part(const json_t *part)
{
        const char *type = json_string_value(json_object_get(part, "type"));
        return type && strcmp(type, "image_url") == 0;
}

size_t chat_messages_count_images(const json_t *messages, size_t end, size_t *ret_url_bytes)
{
        size_t n = 0, bytes = 0;
        for (size_t i = 0; i < end && i < json_array_size(messages); i++) {
                size_t j;
                const json_t *part;
                json_array_foreach(json_object_get(json_array_get(messages, i), "content"), j, part) {
                        if (!is_image_part(part))
                                continue;
                        n++;
                        bytes += json_string_length(json_object_get(json_object_get(part, "image_url"), "url"));
                }
        }
        if (ret_url_bytes)
                *ret_url_bytes = bytes;
        return n;
}

/* A content array of text parts only, joined into one string (parts
 * separated by a blank line); NULL when another kind of part is left. */
static json_t *joined_text(const json_t *parts)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (f == NULL)
                return NULL;
        size_t j;
        const json_t *part;
        bool ok = true;
        json_array_foreach(parts, j, part) {
                const char *type = json_string_value(json_object_get(part, "type"));
                if (type == NULL || strcmp(type, "text") != 0) {
                        ok = false;
                        break;
                }
                const char *t = json_string_value(json_object_get(part, "text"));
                fprintf(f, "%s%s", j ? "\n\n" : "", t ? t : "");
        }
        if (fclose(f) != 0 || !ok) {
                free(out);
                return NULL;
        }
        json_t *s = json_stringn(out, len);
        free(out);
        return s;
}

long chat_messages_drop_images(json_t *messages, size_t end, const char *note)
{
        long n = 0;
        cleanup_free char *omitted = NULL;
        if (asprintf(&omitted, "[image omitted: %s]", note ? note : "not sent") < 0)
                return -1;
        for (size_t i = 0; i < end && i < json_array_size(messages); i++) {
                json_t *m = json_array_get(messages, i);
                json_t *parts = json_object_get(m, "content");
                size_t j;
                json_t *part;
                bool changed = false;
                json_array_foreach(parts, j, part) {
                        if (!is_image_part(part))
                                continue;
                        if (json_array_set_new(parts, j, json_pack("{s:s, s:s}", "type", "text", "text",
                                                                  omitted)) < 0)
                                return -1;
                        n++;
                        changed = true;
                }
                json_t *text = changed ? joined_text(parts) : NULL;
                if (text && json_object_set_new(m, "content", text) < 0)
                        return -1;
        }
        return n;
}

int chat_base64_decode(const char *s, size_t len, size_t max, unsigned char **ret, size_t *ret_len)
{
        *ret = NULL;
        *ret_len = 0;
        while (len > 0 && s[len - 1] == '=')
                len--;
        if (len % 4 == 1 || len / 4 * 3 + len % 4 > max + 3)
                return -1;
        size_t cap = len / 4 * 3 + 3;
        unsigned char *out = malloc(cap ? cap : 1);
        if (out == NULL)
                return -1;
        uint32_t acc = 0;
        size_t bits = 0, o = 0;
        for (size_t i = 0; i < len; i++) {
                const char *p = s[i] ? strchr(b64_alphabet, s[i]) : NULL;
                if (p == NULL) {
                        free(out);
                        return -1;
                }
                acc = acc << 6 | (uint32_t)(p - b64_alphabet);
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[o++] = (unsigned char)(acc >> bits);
                }
        }
        if (o > max) {
                free(out);
                return -1;
        }
        *ret = out;
        *ret_len = o;
        return 0;
}

int chat_png_dimensions(const void *data, size_t len, uint32_t *ret_w, uint32_t *ret_h)
{
        static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
        const unsigned char *p = data;
        /* The signature, then IHDR: length 13, "IHDR", width, height. */
        if (len < 24 || memcmp(p, sig, 8) != 0 || memcmp(p + 12, "IHDR", 4) != 0)
                return -1;
        uint32_t w = (uint32_t)p[16] << 24 | (uint32_t)p[17] << 16 | (uint32_t)p[18] << 8 | p[19];
        uint32_t h = (uint32_t)p[20] << 24 | (uint32_t)p[21] << 16 | (uint32_t)p[22] << 8 | p[23];
        if (w == 0 || h == 0)
                return -1;
        *ret_w = w;
        *ret_h = h;
        return 0;
}
