/* test-chat.c: the chat-completions wire format (src/model/chat.c).
 *
 * Request bodies (with and without tools, each quirk, the repair of bad
 * tool-call arguments), non-streamed replies (OpenAI, Ollama's object
 * arguments, llama.cpp's reasoning_content, missing and repeated ids, error
 * bodies of every shape, strict JSON), error-body messages, and streamed
 * replies assembled from real-looking chunk sequences of OpenAI (arguments
 * split over many chunks, two calls interleaved), Ollama (whole calls, role
 * in every chunk), llama.cpp (reasoning_content) and vLLM, plus the caps.
 * Messages are compared as compact JSON text. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/model/chat.h"
#include "harness.h"

/* Under UBSan the first report ends the test, so it fails it. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

static json_t *J(const char *text)
{
        json_error_t e;
        json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, &e);
        if (v == NULL)
                printf("# bad test JSON: %s: %s\n", e.text, text);
        return v;
}

/* The message of a reply as compact JSON (static buffer). */
static const char *msg_text(const struct chat_reply *r)
{
        static char buf[16384];
        char *s = r->message ? json_dumps(r->message, JSON_COMPACT) : NULL;
        snprintf(buf, sizeof(buf), "%s", s ? s : "(null)");
        free(s);
        return buf;
}

/* ---- requests ---- */

static char *build(const char *messages, const char *tools, bool stream, unsigned quirks, double temp,
                   uint64_t max_tokens, corral_error **err)
{
        json_t *m = J(messages);
        json_t *t = tools ? J(tools) : NULL;
        struct chat_request_opts o = { .model = "m", .messages = m, .tools = t, .stream = stream, .quirks = quirks,
                                       .temperature = temp, .max_tokens = max_tokens };
        char *body = chat_request_build(&o, err);
        json_decref(m);
        json_decref(t);
        return body;
}

#define USER "[{\"role\":\"user\",\"content\":\"hi\"}]"
#define TOOLS "[{\"type\":\"function\",\"function\":{\"name\":\"sh\",\"parameters\":{\"type\":\"object\"}}}]"

TEST(request_plain)
{
        char *b = build(USER, NULL, false, 0, -1, 0, NULL);
        CHECK_STR(b, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":false}");
        free(b);
        b = build(USER, "[]", true, 0, -1, 0, NULL); /* empty tools: none sent */
        CHECK_STR(b, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true,"
                     "\"stream_options\":{\"include_usage\":true}}");
        free(b);
}

TEST(request_tools_and_options)
{
        char *b = build(USER, TOOLS, true, 0, 0.5, 100, NULL);
        CHECK_STR(b, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true,"
                     "\"stream_options\":{\"include_usage\":true},\"tools\":" TOOLS ",\"tool_choice\":\"auto\","
                     "\"temperature\":0.5,\"max_completion_tokens\":100}");
        free(b);
        b = build(USER, TOOLS, false, 0, 0, 1, NULL); /* temperature 0 is sent */
        CHECK_STR(b, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":false,"
                     "\"tools\":" TOOLS ",\"tool_choice\":\"auto\",\"temperature\":0.0,\"max_completion_tokens\":1}");
        free(b);
}

TEST(request_quirks)
{
        char *b = build(USER, TOOLS, true,
                        CHAT_QUIRK_NO_TOOL_CHOICE | CHAT_QUIRK_NO_STREAM_USAGE | CHAT_QUIRK_MAX_TOKENS_LEGACY, -1, 7,
                        NULL);
        CHECK_STR(b, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true,"
                     "\"tools\":" TOOLS ",\"max_tokens\":7}");
        free(b);
        b = build(USER, TOOLS, true, CHAT_QUIRK_NO_STREAM_USAGE, -1, 0, NULL);
        CHECK(b && strstr(b, "stream_options") == NULL && strstr(b, "\"tool_choice\":\"auto\"") != NULL);
        free(b);
        b = build(USER, TOOLS, true, CHAT_QUIRK_NO_TOOL_CHOICE, -1, 0, NULL);
        CHECK(b && strstr(b, "\"stream_options\":{\"include_usage\":true}") && strstr(b, "tool_choice") == NULL);
        free(b);
}

TEST(request_arguments_sanitised)
{
        const char *conv = "[{\"role\":\"user\",\"content\":\"go\"},"
                           "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
                           "{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"sh\",\"arguments\":\"{\\\"x\\"
                           "\":1}\"}},"
                           "{\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"sh\",\"arguments\":\"{\\\"x\\"
                           "\":\"}},"
                           "{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"sh\",\"arguments\":{\"y\":[1,2"
                           "]}}},"
                           "{\"id\":\"d\",\"type\":\"function\",\"function\":{\"name\":\"sh\"}},"
                           "{\"id\":\"e\",\"type\":\"function\",\"function\":{\"name\":\"sh\",\"arguments\":\"{\\\"k\\"
                           "\":1,\\\"k\\\":2}\"}},"
                           "{\"id\":\"f\",\"type\":\"function\",\"function\":{\"name\":\"sh\",\"arguments\":\"[1]\"}},"
                           "{\"id\":\"g\",\"type\":\"function\",\"function\":{\"name\":\"sh\",\"arguments\":7}},"
                           "{\"id\":\"h\",\"type\":\"function\",\"function\":{\"name\":\"sh\",\"arguments\":\"\"}},"
                           "{\"id\":\"i\",\"type\":\"function\",\"function\":{\"name\":\"sh\",\"arguments\":\" {} \"}}]"
                           "},"
                           "{\"role\":\"tool\",\"tool_call_id\":\"a\",\"content\":\"ok\"},"
                           "{\"role\":\"user\",\"tool_calls\":[{\"function\":{\"arguments\":\"bad\"}}]}]";
        json_t *m = J(conv);
        struct chat_request_opts o = { .model = "qwen", .messages = m, .temperature = -1 };
        char *b = chat_request_build(&o, NULL);
        CHECK(b != NULL);
        json_t *req = b ? J(b) : NULL;
        json_t *calls = json_object_get(json_array_get(json_object_get(req, "messages"), 1), "tool_calls");
        const char *want[] = { "{\"x\":1}", "{}", "{\"y\":[1,2]}", "{}", "{}", "{}", "{}", "{}", " {} " };
        CHECK_INT(json_array_size(calls), 9);
        for (size_t i = 0; i < 9; i++)
                CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(calls, i), "function"),
                                                            "arguments")),
                          want[i]);
        /* Only assistant messages are touched, and the caller's copy never. */
        CHECK(b && strstr(b, "\"arguments\":\"bad\"") != NULL);
        json_t *orig = json_object_get(json_object_get(json_array_get(json_object_get(json_array_get(m, 1),
                                                                                       "tool_calls"), 1),
                                                       "function"),
                                       "arguments");
        CHECK_STR(json_string_value(orig), "{\"x\":");
        json_decref(req);
        json_decref(m);
        free(b);
}

TEST(request_errors)
{
        corral_error *err = NULL;
        json_t *m = J(USER);
        struct chat_request_opts o = { .model = NULL, .messages = m, .temperature = -1 };
        CHECK(chat_request_build(&o, &err) == NULL && err && err->kind == CORRAL_ERR_USAGE);
        corral_error_clear(&err);
        o.model = "m";
        o.messages = json_object_get(json_array_get(m, 0), "role");
        CHECK(chat_request_build(&o, &err) == NULL && err && err->kind == CORRAL_ERR_USAGE);
        corral_error_clear(&err);
        o.messages = m;
        o.temperature = 1.0 / 0.0;
        CHECK(chat_request_build(&o, &err) == NULL && err && err->kind == CORRAL_ERR_USAGE);
        corral_error_clear(&err);
        o.temperature = -1;
        o.model = "bad\xff";
        CHECK(chat_request_build(&o, &err) == NULL && err && err->kind == CORRAL_ERR_USAGE);
        corral_error_clear(&err);
        json_decref(m);
}

/* ---- non-streamed replies ---- */

static int parse(const char *body, struct chat_reply *r, corral_error **err)
{
        return chat_response_parse(body, strlen(body), r, err);
}

TEST(reply_openai_text)
{
        struct chat_reply r;
        corral_error *err = NULL;
        CHECK_INT(parse("{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"gpt-4o\","
                        "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hello!\","
                        "\"refusal\":null},\"logprobs\":null,\"finish_reason\":\"stop\"}],"
                        "\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"total_tokens\":12}}",
                        &r, &err),
                  0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":\"Hello!\"}");
        CHECK_STR(r.finish_reason, "stop");
        CHECK(r.reasoning == NULL);
        CHECK(r.usage.reported && r.usage.prompt_tokens == 9 && r.usage.completion_tokens == 3);
        CHECK_INT(chat_reply_tool_calls(&r), 0);
        chat_reply_release(&r);

        /* No usage object: not reported.  No content at all: "". */
        CHECK_INT(parse("{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":null}}]}", &r, &err), 0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":\"\"}");
        CHECK(!r.usage.reported && r.finish_reason == NULL);
        chat_reply_release(&r);
        CHECK(err == NULL);
}

TEST(reply_openai_tool_calls)
{
        struct chat_reply r;
        CHECK_INT(parse("{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,"
                        "\"tool_calls\":[{\"id\":\"call_abc\",\"type\":\"function\",\"function\":{\"name\":\"sh\","
                        "\"arguments\":\"{\\\"cmd\\\":\\\"ls\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}",
                        &r, NULL),
                  0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_abc\","
                                "\"type\":\"function\",\"function\":{\"name\":\"sh\","
                                "\"arguments\":\"{\\\"cmd\\\":\\\"ls\\\"}\"}}]}");
        CHECK_STR(r.finish_reason, "tool_calls");
        CHECK_INT(chat_reply_tool_calls(&r), 1);
        chat_reply_release(&r);
        /* An empty tool_calls array and "" content. */
        CHECK_INT(parse("{\"choices\":[{\"message\":{\"content\":\"\",\"tool_calls\":[]}}]}", &r, NULL), 0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":\"\"}");
        chat_reply_release(&r);
}

TEST(reply_ollama_object_arguments)
{
        /* Ollama's native shape: arguments as an object, no ids, reasoning. */
        struct chat_reply r;
        CHECK_INT(parse("{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion\",\"system_fingerprint\":\"fp_ollama\","
                        "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"\","
                        "\"reasoning\":\"need ls\",\"tool_calls\":["
                        "{\"function\":{\"name\":\"sh\",\"arguments\":{\"cmd\":\"ls\",\"n\":1}}},"
                        "{\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":{}}}]},"
                        "\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}",
                        &r, NULL),
                  0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
                                "{\"id\":\"call_0\",\"type\":\"function\",\"function\":{\"name\":\"sh\","
                                "\"arguments\":\"{\\\"cmd\\\":\\\"ls\\\",\\\"n\\\":1}\"}},"
                                "{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"read\","
                                "\"arguments\":\"{}\"}}]}");
        CHECK_STR(r.reasoning, "need ls");
        chat_reply_release(&r);
}

TEST(reply_ids_and_names)
{
        /* Missing, empty and repeated ids become unique call_N; a generated
         * id never collides with a given one; a missing name stays "";
         * missing arguments become "{}". */
        struct chat_reply r;
        CHECK_INT(parse("{\"choices\":[{\"message\":{\"content\":\"x\",\"tool_calls\":["
                        "{\"id\":\"call_1\",\"function\":{\"name\":\"a\",\"arguments\":\"{}\"}},"
                        "{\"id\":\"\",\"function\":{\"name\":\"b\",\"arguments\":\"{}\"}},"
                        "{\"id\":\"call_1\",\"function\":{\"arguments\":\"{}\"}},"
                        "{\"id\":7,\"function\":{\"name\":\"d\"}}]}}]}",
                        &r, NULL),
                  0);
        json_t *calls = json_object_get(r.message, "tool_calls");
        CHECK_INT(json_array_size(calls), 4);
        const char *ids[4];
        for (size_t i = 0; i < 4; i++)
                ids[i] = json_string_value(json_object_get(json_array_get(calls, i), "id"));
        CHECK_STR(ids[0], "call_1");
        CHECK_STR(ids[1], "call_1_1");
        CHECK_STR(ids[2], "call_2");
        CHECK_STR(ids[3], "call_3");
        CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(calls, 2), "function"), "name")),
                  "");
        CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(calls, 3), "function"),
                                                    "arguments")),
                  "{}");
        CHECK_STR(json_string_value(json_object_get(r.message, "content")), "x");
        chat_reply_release(&r);
}

TEST(reply_llamacpp_reasoning)
{
        struct chat_reply r;
        CHECK_INT(parse("{\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"message\":{\"role\":\"assistant\","
                        "\"content\":\"4\",\"reasoning_content\":\"2+2=4\"}}],\"created\":1,\"model\":\"q\","
                        "\"object\":\"chat.completion\",\"usage\":{\"completion_tokens\":10,\"prompt_tokens\":20,"
                        "\"total_tokens\":30},\"timings\":{\"predicted_ms\":1.5}}",
                        &r, NULL),
                  0);
        CHECK_STR(r.reasoning, "2+2=4");
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":\"4\"}");
        CHECK(r.usage.prompt_tokens == 20 && r.usage.completion_tokens == 10);
        chat_reply_release(&r);
        /* Both fields: one is taken, not both. */
        CHECK_INT(parse("{\"choices\":[{\"message\":{\"content\":\"a\",\"reasoning\":\"r\","
                        "\"reasoning_content\":\"r\"}}]}",
                        &r, NULL),
                  0);
        CHECK_STR(r.reasoning, "r");
        chat_reply_release(&r);
}

/* Parse body; it must fail with kind REFUSED and a message containing want. */
static void expect_fail(const char *body, size_t len, const char *want)
{
        struct chat_reply r;
        corral_error *err = NULL;
        int rc = chat_response_parse(body, len, &r, &err);
        CHECK_INT(rc, -1);
        CHECK(err != NULL && err->kind == CORRAL_ERR_MODEL_REFUSED);
        CHECK(err != NULL && strstr(err->msg, want) != NULL);
        if (err && !strstr(err->msg, want))
                printf("#   '%s' lacks '%s'\n", err->msg, want);
        CHECK(r.message == NULL && r.finish_reason == NULL && r.reasoning == NULL);
        corral_error_free(err);
}

#define FAIL(body, want) expect_fail(body, strlen(body), want)

TEST(reply_errors)
{
        FAIL("{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":\"invalid_request_error\","
             "\"param\":null,\"code\":\"invalid_api_key\"}}",
             "the endpoint reported an error: Incorrect API key provided");
        FAIL("{\"error\":\"model \\\"x\\\" not found, try pulling it first\"}", "model \"x\" not found");
        FAIL("{\"object\":\"error\",\"message\":\"The model `q` does not exist.\",\"type\":\"NotFoundError\","
             "\"param\":null,\"code\":404}",
             "The model `q` does not exist.");
        FAIL("{\"error\":{\"code\":500,\"message\":\"tools param requires --jinja flag\",\"type\":\"server_error\"}}",
             "tools param requires --jinja flag");
        FAIL("{\"error\":{\"code\":400}}", "the endpoint reported an error without a message");
        FAIL("{\"error\":{\"message\":\"line one\\nline two\"}}", "line one line two");
        FAIL("{\"id\":\"x\"}", "the endpoint's reply has no choices");
        FAIL("{\"choices\":[]}", "the endpoint's reply has no choices");
        FAIL("{\"choices\":{}}", "the endpoint's reply has no choices");
        FAIL("{\"choices\":[{\"text\":\"hi\"}]}", "no message");
        FAIL("{\"choices\":[{\"message\":{\"content\":5}}]}", "content is not a string");
        FAIL("{\"choices\":[{\"message\":{\"tool_calls\":{}}}]}", "tool_calls is not an array");
        FAIL("{\"choices\":[{\"message\":{\"tool_calls\":[{\"id\":\"a\"}]}}]}", "has no function");
        FAIL("[1,2]", "not a JSON object");
        FAIL("", "invalid JSON in the endpoint's reply at line");
        FAIL("<html>502 Bad Gateway</html>", "invalid JSON in the endpoint's reply at line 1");
        FAIL("{\"choices\":[]} x", "invalid JSON");
}

TEST(reply_strict_json)
{
        /* Duplicate keys: rejected with line and column. */
        const char *dup = "{\"choices\":[{\"message\":{\n  \"content\":\"a\",\n  \"content\":\"b\"}}]}";
        expect_fail(dup, strlen(dup), "invalid JSON in the endpoint's reply at line 3, column");
        expect_fail(dup, strlen(dup), "duplicate");
        /* Invalid UTF-8 and NUL. */
        FAIL("{\"choices\":[{\"message\":{\"content\":\"\xff\"}}]}", "invalid JSON");
        FAIL("{\"choices\":[{\"message\":{\"content\":\"\xc3\"}}]}", "invalid JSON");
        FAIL("{\"choices\":[{\"message\":{\"content\":\"a\\u0000b\"}}]}", "invalid JSON");
        static const char nul[] = "{\"choices\":[{\"message\":{\"content\":\"a\0\"}}]}";
        expect_fail(nul, sizeof(nul) - 1, "invalid JSON");
        /* chat_json_parse's own message. */
        json_t *v = NULL;
        corral_error *err = NULL;
        CHECK_INT(chat_json_parse("{\"a\":1,\n\"a\":2}", 14, "the test", &v, &err), -1);
        CHECK(v == NULL && err && err->kind == CORRAL_ERR_MODEL_REFUSED);
        CHECK(err && strncmp(err->msg, "invalid JSON in the test at line 2, column ", 43) == 0);
        if (err)
                printf("#   %s\n", err->msg);
        corral_error_clear(&err);
        CHECK_INT(chat_json_parse("{\"a\":\"\xe2\x82\xac\"}", 11, "x", &v, &err), 0);
        CHECK(json_is_object(v) && err == NULL);
        json_decref(v);
}

TEST(reply_caps)
{
        /* 65 tool calls. */
        size_t cap = 65 * 64 + 64;
        char *body = malloc(cap);
        size_t n = (size_t)snprintf(body, cap, "{\"choices\":[{\"message\":{\"tool_calls\":[");
        for (int i = 0; i < 65; i++)
                n += (size_t)snprintf(body + n, cap - n, "%s{\"function\":{\"name\":\"f\"}}", i ? "," : "");
        snprintf(body + n, cap - n, "]}}]}");
        FAIL(body, "more than 64");
        /* 64 is fine. */
        const char *one = ",{\"function\":{\"name\":\"f\"}}";
        char *last = strstr(body, ",{\"function\":{\"name\":\"f\"}}]");
        memmove(last, last + strlen(one), strlen(last) - strlen(one) + 1);
        struct chat_reply r;
        CHECK_INT(parse(body, &r, NULL), 0);
        CHECK_INT(chat_reply_tool_calls(&r), 64);
        chat_reply_release(&r);
        free(body);

        /* Content over CHAT_MAX_REPLY_BYTES; arguments pushing it over. */
        size_t big = CHAT_MAX_REPLY_BYTES + 1;
        body = malloc(big + 128);
        n = (size_t)snprintf(body, 128, "{\"choices\":[{\"message\":{\"content\":\"");
        memset(body + n, 'a', big);
        snprintf(body + n + big, 64, "\"}}]}");
        FAIL(body, "longer than");
        n = (size_t)snprintf(body, 128, "{\"choices\":[{\"message\":{\"content\":\"");
        memset(body + n, 'a', big - 10);
        snprintf(body + n + big - 10, 128, "\",\"tool_calls\":[{\"function\":{\"arguments\":\"0123456789\"}}]}}]}");
        FAIL(body, "longer than");
        free(body);
}

TEST(error_message)
{
        const char *cases[][2] = {
                { "{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded"
                  "\"}}",
                  "Rate limit reached" },
                { "{\"error\":\"registry.ollama.ai/library/gemma3:270m does not support tools\"}",
                  "registry.ollama.ai/library/gemma3:270m does not support tools" },
                { "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size\","
                  "\"type\":\"exceed_context_size_error\"}}",
                  "the request exceeds the available context size" },
                { "{\"object\":\"error\",\"message\":\"\\\"auto\\\" tool choice requires --enable-auto-tool-choice and "
                  "--tool-call-parser to be set\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}",
                  "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set" },
                { "{\"message\":\"plain\"}", "plain" },
                { "{\"detail\":\"Not Found\"}", "Not Found" },
                { "{\"detail\":[{\"loc\":[\"body\",\"messages\"],\"msg\":\"Field required\",\"type\":\"missing\"}]}",
                  "Field required" },
                { "{\"error\":{\"message\":\"  two\\r\\nlines\\t \"}}", "two  lines" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                char *m = chat_error_message(cases[i][0], strlen(cases[i][0]));
                CHECK_STR(m, cases[i][1]);
                free(m);
        }
        const char *none[] = { "", "Bad Gateway", "<html></html>", "{}", "[\"error\"]", "{\"error\":{}}",
                               "{\"error\":null}", "{\"message\":\"\"}", "{\"message\":\" \\n \"}", "{\"detail\":[]}" };
        for (size_t i = 0; i < ARRAY_SIZE(none); i++) {
                char *m = chat_error_message(none[i], strlen(none[i]));
                CHECK(m == NULL);
                free(m);
        }
        CHECK(chat_error_message(NULL, 0) == NULL);
        /* A long message is cut at a character boundary, marked "...". */
        size_t n = 3000;
        char *body = malloc(n + 64);
        size_t off = (size_t)snprintf(body, 64, "{\"error\":\"");
        for (size_t i = 0; i < n / 3; i++, off += 3)
                memcpy(body + off, "\xe2\x82\xac", 3);
        snprintf(body + off, 64, "\"}");
        char *m = chat_error_message(body, strlen(body));
        CHECK(m != NULL && strlen(m) <= 1003 && strlen(m) >= 990);
        CHECK(m != NULL && strcmp(m + strlen(m) - 3, "...") == 0);
        CHECK(m != NULL && utf8_valid(m, strlen(m)));
        free(m);
        free(body);
}

/* ---- streamed replies ---- */

/* Feed payloads (NULL-terminated) to a freshly initialised stream; returns
 * the index of the payload that failed, or -1. */
static int feed(const char *const *payloads, struct chat_stream *s, corral_error **err)
{
        chat_stream_init(s);
        for (int i = 0; payloads[i] != NULL; i++)
                if (chat_stream_add(s, payloads[i], strlen(payloads[i]), err) < 0)
                        return i;
        return -1;
}

TEST(stream_openai_interleaved)
{
        /* Two parallel calls; arguments split across many chunks and the two
         * calls' fragments interleaved; then a usage-only chunk. */
        static const char *const p[] = {
                "{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\","
                "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"refusal\":null},"
                "\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}",
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_A\",\"type\":"
                "\"function\",\"function\":{\"name\":\"sh\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}",
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
                "\"{\\\"cm\"}}]},\"finish_reason\":null}]}",
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_B\",\"type\":"
                "\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}",
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":"
                "\"{\\\"path\\\":\"}}]},\"finish_reason\":null}]}",
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
                "\"d\\\": \\\"l\"}}]},\"finish_reason\":null}]}",
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":"
                "\" \\\"a.txt\\\"}\"}},{\"index\":0,\"function\":{\"arguments\":\"s\\\"\"}}]},\"finish_reason\":null}]}"
                "",
                "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
                "\"}\"}}]},\"finish_reason\":null}]}",
                "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":null}",
                "{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"choices\":[],"
                "\"usage\":{\"prompt_tokens\":81,\"completion_tokens\":40,\"total_tokens\":121}}",
                "[DONE]",
                NULL,
        };
        struct chat_stream s;
        struct chat_reply r;
        corral_error *err = NULL;
        CHECK_INT(feed(p, &s, &err), -1);
        CHECK(s.done);
        CHECK_INT(chat_stream_finish(&s, &r, &err), 0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
                                "{\"id\":\"call_A\",\"type\":\"function\",\"function\":{\"name\":\"sh\","
                                "\"arguments\":\"{\\\"cmd\\\": \\\"ls\\\"}\"}},"
                                "{\"id\":\"call_B\",\"type\":\"function\",\"function\":{\"name\":\"read\","
                                "\"arguments\":\"{\\\"path\\\": \\\"a.txt\\\"}\"}}]}");
        CHECK_STR(r.finish_reason, "tool_calls");
        CHECK(r.usage.reported && r.usage.prompt_tokens == 81 && r.usage.completion_tokens == 40);
        CHECK(err == NULL);
        chat_reply_release(&r);
        chat_stream_release(&s);
}

TEST(stream_openai_text)
{
        static const char *const p[] = {
                "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}"
                "]}",
                "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}",
                "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo \\u00e9\\n\"},\"finish_reason\":null}]}",
                "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}",
                NULL, /* no [DONE]: the server closed the stream */
        };
        struct chat_stream s;
        struct chat_reply r;
        CHECK_INT(feed(p, &s, NULL), -1);
        CHECK(!s.done);
        CHECK_INT(chat_stream_finish(&s, &r, NULL), 0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":\"Hello \xc3\xa9\\n\"}");
        CHECK_STR(r.finish_reason, "length");
        CHECK(!r.usage.reported && r.reasoning == NULL);
        chat_reply_release(&r);
        chat_stream_release(&s);
}

TEST(stream_ollama_whole_calls)
{
        /* Ollama: role in every chunk, each call whole in one chunk (with its
         * index), finish_reason in a chunk of its own, usage after it. */
        static const char *const p[] = {
                "{\"id\":\"chatcmpl-386\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"qwen3\","
                "\"system_fingerprint\":\"fp_ollama\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                "\"content\":\"\",\"reasoning\":\"The user wants\"},\"finish_reason\":null}]}",
                "{\"id\":\"chatcmpl-386\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"qwen3\","
                "\"system_fingerprint\":\"fp_ollama\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                "\"content\":\"\",\"reasoning\":\" a listing.\"},\"finish_reason\":null}]}",
                "{\"id\":\"chatcmpl-386\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"qwen3\","
                "\"system_fingerprint\":\"fp_ollama\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                "\"content\":\"\",\"tool_calls\":[{\"id\":\"call_jv0ndm2u\",\"index\":0,\"type\":\"function\","
                "\"function\":{\"name\":\"sh\",\"arguments\":\"{\\\"cmd\\\":\\\"ls -la\\\"}\"}}]},"
                "\"finish_reason\":null}]}",
                "{\"id\":\"chatcmpl-386\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"qwen3\","
                "\"system_fingerprint\":\"fp_ollama\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                "\"content\":\"\",\"tool_calls\":[{\"id\":\"call_x1\",\"index\":1,\"type\":\"function\","
                "\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]},"
                "\"finish_reason\":null}]}",
                "{\"id\":\"chatcmpl-386\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"qwen3\","
                "\"system_fingerprint\":\"fp_ollama\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                "\"content\":\"\"},\"finish_reason\":\"tool_calls\"}]}",
                "{\"id\":\"chatcmpl-386\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"qwen3\","
                "\"system_fingerprint\":\"fp_ollama\",\"choices\":[],\"usage\":{\"prompt_tokens\":150,"
                "\"completion_tokens\":25,\"total_tokens\":175}}",
                "[DONE]",
                NULL,
        };
        struct chat_stream s;
        struct chat_reply r;
        CHECK_INT(feed(p, &s, NULL), -1);
        CHECK_INT(chat_stream_finish(&s, &r, NULL), 0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
                                "{\"id\":\"call_jv0ndm2u\",\"type\":\"function\",\"function\":{\"name\":\"sh\","
                                "\"arguments\":\"{\\\"cmd\\\":\\\"ls -la\\\"}\"}},"
                                "{\"id\":\"call_x1\",\"type\":\"function\",\"function\":{\"name\":\"read\","
                                "\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]}");
        CHECK_STR(r.reasoning, "The user wants a listing.");
        CHECK_STR(r.finish_reason, "tool_calls");
        CHECK(r.usage.reported && r.usage.prompt_tokens == 150 && r.usage.completion_tokens == 25);
        chat_reply_release(&r);
        chat_stream_release(&s);
}

TEST(stream_llamacpp_reasoning)
{
        /* llama.cpp: reasoning_content deltas, then content, timings, a
         * final chunk with usage and finish_reason together. */
        static const char *const p[] = {
                "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\","
                "\"content\":null}}],\"created\":1,\"id\":\"chatcmpl-Q\",\"model\":\"qwen\",\"system_fingerprint\":"
                "\"b6000\",\"object\":\"chat.completion.chunk\"}",
                "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"reasoning_content\":\"Two\"}}],"
                "\"object\":\"chat.completion.chunk\"}",
                "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"reasoning_content\":\" plus two.\"}}],"
                "\"object\":\"chat.completion.chunk\"}",
                "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\"4\"}}],"
                "\"object\":\"chat.completion.chunk\"}",
                "{\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}],\"created\":1,\"object\":"
                "\"chat.completion.chunk\",\"usage\":{\"completion_tokens\":12,\"prompt_tokens\":30,"
                "\"total_tokens\":42},\"timings\":{\"prompt_n\":30,\"predicted_n\":12}}",
                "[DONE]",
                NULL,
        };
        struct chat_stream s;
        struct chat_reply r;
        CHECK_INT(feed(p, &s, NULL), -1);
        CHECK_INT(chat_stream_finish(&s, &r, NULL), 0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":\"4\"}");
        CHECK_STR(r.reasoning, "Two plus two.");
        CHECK_STR(r.finish_reason, "stop");
        CHECK(r.usage.reported && r.usage.prompt_tokens == 30 && r.usage.completion_tokens == 12);
        chat_reply_release(&r);
        chat_stream_release(&s);
}

TEST(stream_vllm)
{
        /* vLLM: the first tool-call fragment carries id, type, name; the
         * rest arguments; usage only in the last chunk (include_usage). */
        static const char *const p[] = {
                "{\"id\":\"chatcmpl-b\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"Qwen\","
                "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
                "\"finish_reason\":null}]}",
                "{\"id\":\"chatcmpl-b\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":"
                "\"chatcmpl-tool-1f\",\"type\":\"function\",\"index\":0,\"function\":{\"name\":\"sh\"}}]},"
                "\"logprobs\":null,\"finish_reason\":null}]}",
                "{\"id\":\"chatcmpl-b\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                "\"function\":{\"arguments\":\"{\\\"cmd\\\": \\\"\"}}]},\"logprobs\":null,\"finish_reason\":null}]}",
                "{\"id\":\"chatcmpl-b\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                "\"function\":{\"arguments\":\"pwd\\\"}\"}}]},\"logprobs\":null,\"finish_reason\":null}]}",
                "{\"id\":\"chatcmpl-b\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"logprobs\":null,"
                "\"finish_reason\":\"tool_calls\",\"stop_reason\":null}]}",
                "{\"id\":\"chatcmpl-b\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"Qwen\","
                "\"choices\":[],\"usage\":{\"prompt_tokens\":200,\"total_tokens\":220,\"completion_tokens\":20}}",
                " [DONE] \n",
                NULL,
        };
        struct chat_stream s;
        struct chat_reply r;
        CHECK_INT(feed(p, &s, NULL), -1);
        CHECK(s.done);
        CHECK_INT(chat_stream_finish(&s, &r, NULL), 0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
                                "{\"id\":\"chatcmpl-tool-1f\",\"type\":\"function\",\"function\":{\"name\":\"sh\","
                                "\"arguments\":\"{\\\"cmd\\\": \\\"pwd\\\"}\"}}]}");
        CHECK(r.usage.prompt_tokens == 200 && r.usage.completion_tokens == 20);
        chat_reply_release(&r);
        chat_stream_release(&s);
}

TEST(stream_fragment_rules)
{
        /* Without "index": a different id starts a new call, no id continues
         * the last one.  Names: a repeat is ignored, a different fragment is
         * appended.  A different id for the same index is ignored.  An object
         * as arguments is serialised.  Other choices are ignored. */
        static const char *const p[] = {
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"x1\",\"function\":{\"name\":\"get_\","
                "\"arguments\":\"{\\\"a\\\"\"}}]}}]}",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"weather\",\"arguments\":\":1}\"}}]"
                "}}]}",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"x1\",\"function\":{\"name\":\"get_weather\"}}]}}]}"
                "",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"x2\",\"function\":{\"name\":\"sh\","
                "\"arguments\":{\"cmd\":\"ls\"}}}]}}]}",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"other\",\"function\":{\"name\":\"sh\"}"
                "}]}},"
                "{\"index\":1,\"delta\":{\"content\":\"ignored\",\"tool_calls\":[{\"index\":5,\"function\":{\"name\":\""
                "z\"}}]}}]}",
                "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"},\"finish_reason\":\"tool_calls\"}]}",
                "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":null}]}",
                NULL,
        };
        struct chat_stream s;
        struct chat_reply r;
        corral_error *err = NULL;
        CHECK_INT(feed(p, &s, &err), -1);
        CHECK_INT(s.n_calls, 2);
        CHECK_INT(chat_stream_finish(&s, &r, &err), 0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":\"done\",\"tool_calls\":["
                                "{\"id\":\"x1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
                                "\"arguments\":\"{\\\"a\\\":1}\"}},"
                                "{\"id\":\"x2\",\"type\":\"function\",\"function\":{\"name\":\"sh\","
                                "\"arguments\":\"{\\\"cmd\\\":\\\"ls\\\"}\"}}]}");
        CHECK_STR(r.finish_reason, "tool_calls"); /* a later null does not clear it */
        chat_reply_release(&r);
        chat_stream_release(&s);
        CHECK(err == NULL);
}

TEST(stream_name_resent)
{
        /* llama.cpp resends id and the whole name when either changed: the
         * grown name replaces the old one, the first id stays. */
        static const char *const p[] = {
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"type\":\"function\","
                "\"function\":{\"name\":\"read\",\"arguments\":\"\"}}]}}]}",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":"
                "\"read_file\",\"arguments\":\"{\\\"path\\\":\"}}]}}]}",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":"
                "\"read_file\",\"arguments\":\"\\\"a\\\"}\"}}]}}]}",
                NULL,
        };
        struct chat_stream s;
        struct chat_reply r;
        CHECK_INT(feed(p, &s, NULL), -1);
        CHECK_INT(chat_stream_finish(&s, &r, NULL), 0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"a\","
                                "\"type\":\"function\",\"function\":{\"name\":\"read_file\","
                                "\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]}");
        chat_reply_release(&r);
        chat_stream_release(&s);
}

TEST(stream_gaps_and_missing_ids)
{
        static const char *const p[] = {
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":2,\"function\":{\"name\":\"b\",\"arguments\":\"{}"
                "\"}}]}}]}",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"a\"}}]}}]}",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":4}]}}]}",
                NULL,
        };
        struct chat_stream s;
        struct chat_reply r;
        CHECK_INT(feed(p, &s, NULL), -1);
        CHECK_INT(s.n_calls, 5);
        CHECK_INT(chat_stream_finish(&s, &r, NULL), 0);
        CHECK_STR(msg_text(&r), "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
                                "{\"id\":\"call_0\",\"type\":\"function\",\"function\":{\"name\":\"a\",\"arguments\":\""
                                "{}\"}},"
                                "{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"b\",\"arguments\":\""
                                "{}\"}}]}");
        CHECK_INT(chat_reply_tool_calls(&r), 2);
        chat_reply_release(&r);
        chat_stream_release(&s);
}

/* Feed payloads; the one at `at` must fail with REFUSED and `want`. */
static void expect_stream_fail(const char *const *p, int at, const char *want)
{
        struct chat_stream s;
        corral_error *err = NULL;
        CHECK_INT(feed(p, &s, &err), at);
        CHECK(err != NULL && err->kind == CORRAL_ERR_MODEL_REFUSED && strstr(err->msg, want) != NULL);
        if (err && !strstr(err->msg, want))
                printf("#   '%s' lacks '%s'\n", err->msg, want);
        corral_error_free(err);
        chat_stream_release(&s);
}

TEST(stream_errors)
{
        static const char *const error_chunk[] = {
                "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}",
                "{\"error\":{\"code\":500,\"message\":\"context shift is disabled\",\"type\":\"server_error\"}}",
                NULL,
        };
        expect_stream_fail(error_chunk, 1, "the endpoint reported an error: context shift is disabled");
        static const char *const vllm_error[] = {
                "{\"error\":{\"object\":\"error\",\"message\":\"out of memory\",\"type\":\"InternalServerError\","
                "\"param\":null,\"code\":500}}",
                NULL,
        };
        expect_stream_fail(vllm_error, 0, "out of memory");
        static const char *const not_json[] = { "{\"choices\":[]}", "{\"choices\":[", NULL };
        expect_stream_fail(not_json, 1, "invalid JSON in a streamed chunk at line 1");
        static const char *const dup[] = { "{\"choices\":[],\"choices\":[]}", NULL };
        expect_stream_fail(dup, 0, "duplicate");
        static const char *const not_obj[] = { "[]", NULL };
        expect_stream_fail(not_obj, 0, "not a JSON object");
        static const char *const bad_delta[] = { "{\"choices\":[{\"delta\":[]}]}", NULL };
        expect_stream_fail(bad_delta, 0, "delta");
        static const char *const bad_content[] = { "{\"choices\":[{\"delta\":{\"content\":1}}]}", NULL };
        expect_stream_fail(bad_content, 0, "content");
        static const char *const bad_index[] = { "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":\"0\"}]}}]}",
                                                 NULL };
        expect_stream_fail(bad_index, 0, "index");
        static const char *const neg_index[] = { "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}",
                                                 NULL };
        expect_stream_fail(neg_index, 0, "index -1");
        static const char *const big_index[] = { "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":64}]}}]}",
                                                 NULL };
        expect_stream_fail(big_index, 0, "index 64");
        static const char *const max_index[] = { "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":63,"
                                                 "\"function\":{\"name\":\"f\"}}]}}]}",
                                                 NULL };
        struct chat_stream s;
        struct chat_reply r;
        CHECK_INT(feed(max_index, &s, NULL), -1);
        CHECK_INT(chat_stream_finish(&s, &r, NULL), 0);
        CHECK_INT(chat_reply_tool_calls(&r), 1);
        chat_reply_release(&r);
        chat_stream_release(&s);

        /* Nothing but [DONE] or usage: no message. */
        static const char *const empty[] = { "{\"choices\":[],\"usage\":{\"prompt_tokens\":1}}", "[DONE]", NULL };
        corral_error *err = NULL;
        CHECK_INT(feed(empty, &s, NULL), -1);
        CHECK_INT(chat_stream_finish(&s, &r, &err), -1);
        CHECK(err && err->kind == CORRAL_ERR_MODEL_REFUSED && r.message == NULL);
        corral_error_clear(&err);
        chat_stream_release(&s);
}

TEST(stream_caps)
{
        /* 65 calls without index, each with its own id. */
        struct chat_stream s;
        corral_error *err = NULL;
        chat_stream_init(&s);
        int rc = 0, i;
        for (i = 0; i < 65 && rc == 0; i++) {
                char chunk[160];
                snprintf(chunk, sizeof(chunk),
                         "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"c%d\",\"function\":{\"name\":\"f\"}}]}}]}"
                         "",
                         i);
                rc = chat_stream_add(&s, chunk, strlen(chunk), &err);
        }
        CHECK_INT(rc, -1);
        CHECK_INT(i, 65);
        CHECK(err && strstr(err->msg, "more than 64 tool calls"));
        corral_error_clear(&err);
        chat_stream_release(&s);

        /* Content of 1 MiB per chunk: the ninth goes over 8 MiB.  Reasoning
         * and arguments count towards the same total. */
        size_t mib = 1u << 20;
        char *chunk = malloc(mib + 128);
        int n = snprintf(chunk, 128, "{\"choices\":[{\"delta\":{\"content\":\"");
        memset(chunk + n, 'a', mib);
        snprintf(chunk + n + mib, 64, "\"}}]}");
        chat_stream_init(&s);
        for (i = 0, rc = 0; i < 9 && rc == 0; i++)
                rc = chat_stream_add(&s, chunk, strlen(chunk), &err);
        CHECK_INT(rc, -1);
        CHECK_INT(i, 9);
        CHECK(err && err->kind == CORRAL_ERR_MODEL_REFUSED && strstr(err->msg, "longer than 8388608 bytes"));
        corral_error_clear(&err);
        chat_stream_release(&s);

        chat_stream_init(&s);
        for (i = 0, rc = 0; i < 8 && rc == 0; i++)
                rc = chat_stream_add(&s, chunk, strlen(chunk), &err);
        n = snprintf(chunk, 128, "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\""
                                 "");
        memset(chunk + n, 'a', mib);
        snprintf(chunk + n + mib, 64, "\"}}]}}]}");
        CHECK_INT(rc, 0);
        CHECK_INT(chat_stream_add(&s, chunk, strlen(chunk), &err), -1);
        CHECK(err && strstr(err->msg, "longer than"));
        corral_error_clear(&err);
        chat_stream_release(&s);
        free(chunk);
}

TEST(round_trip)
{
        /* A parsed reply appended to the conversation builds a request whose
         * arguments all parse: a garbled call is repaired on the way out. */
        struct chat_reply r;
        CHECK_INT(parse("{\"choices\":[{\"message\":{\"content\":null,\"tool_calls\":["
                        "{\"id\":\"a\",\"function\":{\"name\":\"sh\",\"arguments\":\"{\\\"cmd\\\":\"}},"
                        "{\"id\":\"b\",\"function\":{\"name\":\"sh\",\"arguments\":{\"cmd\":\"ls\"}}}]}}]}",
                        &r, NULL),
                  0);
        json_t *conv = J(USER);
        json_array_append(conv, r.message);
        struct chat_request_opts o = { .model = "m", .messages = conv, .temperature = -1 };
        char *b = chat_request_build(&o, NULL);
        CHECK(b && strstr(b, "\"arguments\":\"{}\"") && strstr(b, "\"arguments\":\"{\\\"cmd\\\":\\\"ls\\\"}\""));
        free(b);
        json_decref(conv);
        chat_reply_release(&r);
}

/* Figures for the model: the user message with image parts, exactly as
 * Chat Completions takes it, and the helpers around it. */
TEST(image_message)
{
        /* A 1x1 PNG's first 24 bytes are enough for its dimensions. */
        static const unsigned char png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13,
                                             'I', 'H', 'D', 'R', 0, 0, 3, 0, 0, 0, 1, 0x2c, 8, 2 };
        struct chat_image im[2] = { { png, sizeof(png), "low" }, { (const unsigned char *)"ab", 2, NULL } };
        json_t *m = chat_image_message_new("figures from the step above: output/figures/step1-1.png", im, 2);
        char *t = m ? json_dumps(m, JSON_COMPACT) : NULL;
        CHECK_STR(t, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"figures from the step above: "
                     "output/figures/step1-1.png\"},{\"type\":\"image_url\",\"image_url\":{\"url\":"
                     "\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAwAAAAEsCAI=\",\"detail\":\"low\"}},"
                     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,YWI=\"}}]}");
        free(t);

        /* Round trip through the decoder; the PNG's dimensions. */
        const char *url = json_string_value(json_object_get(
                json_object_get(json_array_get(json_object_get(m, "content"), 1), "image_url"), "url"));
        const char *b64 = url ? strchr(url, ',') + 1 : "";
        unsigned char *back = NULL;
        size_t len = 0;
        CHECK(chat_base64_decode(b64, strlen(b64), 1000, &back, &len) == 0);
        CHECK(len == sizeof(png) && back && memcmp(back, png, len) == 0);
        uint32_t w = 0, h = 0;
        CHECK(chat_png_dimensions(back, len, &w, &h) == 0);
        CHECK_INT(w, 768);
        CHECK_INT(h, 300);
        free(back);
        CHECK(chat_base64_decode(b64, strlen(b64), 10, &back, &len) < 0);      /* over the cap */
        CHECK(chat_base64_decode("YW*=", 4, 10, &back, &len) < 0);             /* not base64 */
        CHECK(chat_base64_decode("Y", 1, 10, &back, &len) < 0);                /* cut */
        CHECK(chat_png_dimensions("GIF89a", 6, &w, &h) < 0);
        CHECK(chat_png_dimensions("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\0\0\0\0\1", 24, &w, &h) < 0);

        /* In a conversation: counted, dropped (texts joined), sent as is. */
        json_t *conv = J("[{\"role\":\"user\",\"content\":\"task\"},"
                         "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":"
                         "\"function\",\"function\":{\"name\":\"run_python\",\"arguments\":\"{}\"}}]},"
                         "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"ok\"}]");
        json_array_append(conv, m);
        size_t bytes = 0;
        CHECK_INT(chat_messages_count_images(conv, json_array_size(conv), &bytes), 2);
        CHECK_INT(bytes, strlen(url) + strlen("data:image/png;base64,YWI="));
        CHECK_INT(chat_messages_count_images(conv, 3, NULL), 0);
        struct chat_request_opts o = { .model = "m", .messages = conv, .temperature = -1 };
        char *b = chat_request_build(&o, NULL);
        CHECK(b && strstr(b, "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"ok\"},{\"role\":\"user\","
                             "\"content\":[{\"type\":\"text\""));
        free(b);
        CHECK_INT(chat_messages_drop_images(conv, 3, "x"), 0);
        CHECK_INT(chat_messages_drop_images(conv, json_array_size(conv), "too old"), 2);
        CHECK_STR(json_string_value(json_object_get(json_array_get(conv, 3), "content")),
                  "figures from the step above: output/figures/step1-1.png\n\n[image omitted: too old]\n\n"
                  "[image omitted: too old]");
        CHECK_INT(chat_messages_count_images(conv, json_array_size(conv), NULL), 0);
        json_decref(conv);
        json_decref(m);
}

int main(void)
{
        RUN(request_plain);
        RUN(request_tools_and_options);
        RUN(request_quirks);
        RUN(request_arguments_sanitised);
        RUN(request_errors);
        RUN(reply_openai_text);
        RUN(reply_openai_tool_calls);
        RUN(reply_ollama_object_arguments);
        RUN(reply_ids_and_names);
        RUN(reply_llamacpp_reasoning);
        RUN(reply_errors);
        RUN(reply_strict_json);
        RUN(reply_caps);
        RUN(error_message);
        RUN(stream_openai_interleaved);
        RUN(stream_openai_text);
        RUN(stream_ollama_whole_calls);
        RUN(stream_llamacpp_reasoning);
        RUN(stream_vllm);
        RUN(stream_fragment_rules);
        RUN(stream_name_resent);
        RUN(stream_gaps_and_missing_ids);
        RUN(stream_errors);
        RUN(stream_caps);
        RUN(round_trip);
        RUN(image_message);
        return DONE();
}
