/* fuzz-chat.c: the chat-completions wire format (src/model/chat.c) on a
 * reply body an endpoint sent.
 *
 * The input is parsed as a whole reply (chat_response_parse) and, separately,
 * as one streamed chunk (chat_stream_add, then chat_stream_finish); its
 * error message is extracted (chat_error_message).  Invariants: no crash or
 * leak; a failure has a message of kind CORRAL_ERR_MODEL_REFUSED and leaves
 * the reply empty; a success yields the normalised message (role
 * "assistant", content a string or null, null only beside tool calls,
 * "tool_calls" absent or 1..CHAT_MAX_TOOL_CALLS calls, each with a unique
 * non-empty id, type "function", string name and arguments).  Every reply
 * is then appended, with a tool result per call, to a conversation that
 * chat_request_build() must turn into a body that strict-parses and whose
 * tool-call arguments all strict-parse as JSON objects: whatever an endpoint
 * sends, the next request must be one it can accept.  An extracted error
 * message is valid UTF-8, one line and bounded. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/model/chat.h"
#include "fuzz.h"

static const char tools_json[] = "[{\"type\":\"function\",\"function\":{\"name\":\"sh\",\"description\":\"run\","
                                 "\"parameters\":{\"type\":\"object\",\"properties\":{\"cmd\":{\"type\":\"string\"}}}}}"
                                 "]";

static void check_failure(int rc, corral_error *err, const struct chat_reply *r)
{
        FUZZ_ASSERT(rc == -1, "returned %d", rc);
        FUZZ_ASSERT(err != NULL && err->msg != NULL && err->msg[0] != '\0', "no error message");
        FUZZ_ASSERT(err->kind == CORRAL_ERR_MODEL_REFUSED || (err->kind == CORRAL_ERR_INTERNAL && err->errnum != 0),
                    "error kind %d: %s", err->kind, err->msg);
        FUZZ_ASSERT(strchr(err->msg, '\n') == NULL, "a multi-line message: %s", err->msg);
        FUZZ_ASSERT(r->message == NULL && r->finish_reason == NULL && r->reasoning == NULL);
}

/* The normalised message's shape (see chat.h). */
static void check_message(const struct chat_reply *r)
{
        const json_t *m = r->message;
        FUZZ_ASSERT(json_is_object(m));
        FUZZ_ASSERT(strcmp(json_string_value(json_object_get(m, "role")), "assistant") == 0);
        const json_t *content = json_object_get(m, "content");
        const json_t *calls = json_object_get(m, "tool_calls");
        size_t n = chat_reply_tool_calls(r);
        FUZZ_ASSERT(json_is_string(content) || (json_is_null(content) && n > 0), "bad content");
        FUZZ_ASSERT(calls == NULL || (json_is_array(calls) && n > 0 && n <= CHAT_MAX_TOOL_CALLS), "bad tool_calls");
        for (size_t i = 0; i < n; i++) {
                const json_t *c = json_array_get(calls, i);
                const json_t *fn = json_object_get(c, "function");
                const char *id = json_string_value(json_object_get(c, "id"));
                FUZZ_ASSERT(id != NULL && id[0] != '\0', "call %zu has no id", i);
                for (size_t j = 0; j < i; j++)
                        FUZZ_ASSERT(strcmp(id, json_string_value(json_object_get(json_array_get(calls, j), "id"))) != 0,
                                    "calls %zu and %zu share id '%s'", j, i, id);
                FUZZ_ASSERT(strcmp(json_string_value(json_object_get(c, "type")), "function") == 0);
                FUZZ_ASSERT(json_is_string(json_object_get(fn, "name")));
                FUZZ_ASSERT(json_is_string(json_object_get(fn, "arguments")));
        }
        FUZZ_ASSERT(r->reasoning == NULL || r->reasoning[0] != '\0');
}

/* Append the reply and a tool result per call to a conversation, build a
 * request (streamed or not, with tools) and check what would be sent. */
static void check_round_trip(const struct chat_reply *r, bool stream)
{
        json_t *conv = json_pack("[{s:s, s:s}]", "role", "user", "content", "go");
        FUZZ_ASSERT(conv != NULL);
        FUZZ_ASSERT(json_array_append(conv, r->message) == 0);
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(r->message, "tool_calls"), i, c)
        {
                json_t *res = json_pack("{s:s, s:O, s:s}", "role", "tool", "tool_call_id", json_object_get(c, "id"),
                                        "content", "ok");
                FUZZ_ASSERT(res != NULL && json_array_append_new(conv, res) == 0);
        }
        json_t *tools = json_loads(tools_json, 0, NULL);
        FUZZ_ASSERT(tools != NULL);
        struct chat_request_opts o = { .model = "m", .messages = conv, .tools = tools, .stream = stream,
                                       .temperature = stream ? 0.2 : -1, .max_tokens = stream ? 0 : 512 };
        corral_error *err = NULL;
        char *body = chat_request_build(&o, &err);
        FUZZ_ASSERT(body != NULL, "chat_request_build failed: %s", err ? err->msg : "?");
        json_t *req = NULL;
        FUZZ_ASSERT(chat_json_parse(body, strlen(body), "the request", &req, &err) == 0, "%s\n%s",
                    err ? err->msg : "?", body);
        const json_t *sent = json_array_get(json_object_get(req, "messages"), 1);
        json_array_foreach(json_object_get(sent, "tool_calls"), i, c)
        {
                const json_t *a = json_object_get(json_object_get(c, "function"), "arguments");
                FUZZ_ASSERT(json_is_string(a), "call %zu: arguments not a string", i);
                json_t *args = NULL;
                FUZZ_ASSERT(chat_json_parse(json_string_value(a), json_string_length(a), "arguments", &args, &err) == 0,
                            "call %zu: arguments do not parse: %s", i, err ? err->msg : "?");
                FUZZ_ASSERT(json_is_object(args), "call %zu: arguments are not an object", i);
                json_decref(args);
        }
        json_decref(req);
        free(body);
        json_decref(tools);
        json_decref(conv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *text = (const char *)data;
        struct chat_reply r;
        corral_error *err = NULL;

        int rc = chat_response_parse(text, size, &r, &err);
        if (rc == 0) {
                FUZZ_ASSERT(err == NULL, "error set on success: %s", err->msg);
                check_message(&r);
                check_round_trip(&r, size % 2 == 0);
                chat_reply_release(&r);
        } else {
                check_failure(rc, err, &r);
        }
        corral_error_clear(&err);

        struct chat_stream s;
        chat_stream_init(&s);
        rc = chat_stream_add(&s, text, size, &err);
        if (rc < 0) {
                FUZZ_ASSERT(err != NULL && err->msg != NULL && err->msg[0] != '\0', "no error message");
                corral_error_clear(&err);
        } else {
                FUZZ_ASSERT(rc == 0 && err == NULL);
        }
        rc = chat_stream_finish(&s, &r, &err);
        if (rc == 0) {
                check_message(&r);
                check_round_trip(&r, size % 2 == 1);
                chat_reply_release(&r);
        } else {
                check_failure(rc, err, &r);
        }
        corral_error_clear(&err);
        chat_stream_release(&s);

        char *m = chat_error_message(text, size);
        if (m != NULL) {
                size_t len = strlen(m);
                FUZZ_ASSERT(len > 0 && len <= 1003, "message of %zu bytes", len);
                FUZZ_ASSERT(utf8_valid(m, len), "message not UTF-8");
                for (size_t i = 0; i < len; i++)
                        FUZZ_ASSERT((unsigned char)m[i] >= ' ' && m[i] != 0x7f, "control character in message");
                FUZZ_ASSERT(m[0] != ' ' && m[len - 1] != ' ');
                free(m);
        }
        return 0;
}
