/* chat.h: the OpenAI chat-completions wire format, without any transport.
 *
 * Builds request bodies from a conversation, parses a non-streamed response,
 * and assembles a streamed one from its chunks (the "data:" payloads of the
 * SSE stream).  Every reply is normalised into one assistant message the
 * agent can append to its conversation and send back as is:
 *   {"role":"assistant","content":"..."|null,
 *    "tool_calls":[{"id":"...","type":"function",
 *                   "function":{"name":"...","arguments":"<JSON text>"}}]}
 * whatever dialect the endpoint spoke (see the quirks below and
 * docs/providers.md for the wire formats each one was written from):
 *   - "content" is null only when there are tool calls and no text, ""
 *     when there is neither; "tool_calls" is present only when non-empty;
 *   - every call has a unique id: a missing, empty or repeated one becomes
 *     "call_<position>" (with "_<n>" appended if that is taken);
 *   - "type" is always "function";
 *   - "arguments" is always a string: an object (Ollama's native style) is
 *     serialised compactly, a missing, null or empty one becomes "{}"; the
 *     text is NOT checked here (the agent reports bad arguments to the model,
 *     and chat_request_build() repairs them on the way back out);
 *   - a call without a function name keeps name "": the agent answers it as
 *     an unknown tool rather than failing the turn.
 * All JSON is parsed strictly (jansson: invalid UTF-8, NUL in strings and
 * duplicate keys are errors reporting line and column).  Malformed replies
 * and error objects fail with CORRAL_ERR_MODEL_REFUSED.
 *
 * Threads: thread-safe (no shared state); a chat_stream or chat_reply is one
 * caller's at a time.
 */
#ifndef CORRAL_MODEL_CHAT_H
#define CORRAL_MODEL_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../lib/util.h"

/* Caps on what an endpoint may send us; more is an error, not a truncation. */
#define CHAT_MAX_TOOL_CALLS 64          /* per reply */
#define CHAT_MAX_REPLY_BYTES (8u << 20) /* content, reasoning, call ids, names and arguments of one reply */

/* Dialect differences of OpenAI-compatible servers (docs/providers.md). */
enum chat_quirk {
        CHAT_QUIRK_NO_TOOL_CHOICE = 1u << 0,    /* omit "tool_choice" (older llama.cpp, Ollama) */
        CHAT_QUIRK_NO_STREAM_USAGE = 1u << 1,   /* omit "stream_options" (servers that reject it) */
        CHAT_QUIRK_MAX_TOKENS_LEGACY = 1u << 2, /* "max_tokens" instead of "max_completion_tokens" */
};

struct chat_usage {
        uint64_t prompt_tokens;
        uint64_t completion_tokens;
        bool reported; /* the endpoint sent a usage object */
};

/* One normalised reply. */
struct chat_reply {
        json_t *message;       /* the assistant message (see above); owned */
        char *finish_reason;   /* "stop", "tool_calls", "length", ... or NULL */
        char *reasoning;       /* non-standard "reasoning"/"reasoning_content", or NULL */
        struct chat_usage usage;
};
CORRAL_HIDDEN void chat_reply_release(struct chat_reply *r);
/* Number of tool calls in r->message (0 when none). */
CORRAL_HIDDEN size_t chat_reply_tool_calls(const struct chat_reply *r);

struct chat_request_opts {
        const char *model;
        const json_t *messages;  /* array; borrowed */
        const json_t *tools;     /* array of {"type":"function",...} or NULL */
        bool stream;
        unsigned quirks;         /* enum chat_quirk */
        double temperature;      /* < 0: leave to the server */
        uint64_t max_tokens;     /* 0: leave to the server */
};
/* The request body as compact JSON text (malloc'd), keys in this order:
 * model, messages, stream, stream_options ({"include_usage":true} when
 * streaming, unless CHAT_QUIRK_NO_STREAM_USAGE), tools and tool_choice
 * ("auto", unless CHAT_QUIRK_NO_TOOL_CHOICE; both only with a non-empty
 * tools array), temperature (when >= 0), max_completion_tokens or, with
 * CHAT_QUIRK_MAX_TOKENS_LEGACY, max_tokens (when > 0).  The messages are
 * deep-copied; in assistant messages' tool calls, "arguments" that is not a
 * string holding a JSON object (parsed strictly) is replaced by "{}", and an
 * object value is serialised to a string: Ollama, llama.cpp and older vLLM
 * re-parse the arguments and reject the whole request otherwise.  Fails (CORRAL_ERR_USAGE) on a missing model, messages that
 * are not an array, a non-finite temperature. */
CORRAL_HIDDEN char *chat_request_build(const struct chat_request_opts *o, corral_error **ret_err);

/* Parse a non-streamed response body: choices[0].message, finish_reason,
 * usage (reported only when the object is present), "reasoning_content" or
 * "reasoning".  An error object ({"error":...}, vLLM's "object":"error")
 * fails with its message; so do a missing or empty "choices", more than
 * CHAT_MAX_TOOL_CALLS calls or more than CHAT_MAX_REPLY_BYTES.  On failure
 * *ret is left empty. */
CORRAL_HIDDEN int chat_response_parse(const char *body, size_t len, struct chat_reply *ret, corral_error **ret_err);

/* Streamed responses: feed each SSE data payload in order. */
struct chat_stream_call {
        char *id;
        char *name;
        struct capbuf arguments;
};
struct chat_stream {
        struct capbuf content;
        struct capbuf reasoning;
        struct chat_stream_call calls[CHAT_MAX_TOOL_CALLS];
        size_t n_calls;          /* highest index seen + 1 */
        char *finish_reason;
        struct chat_usage usage;
        bool done;               /* "[DONE]" seen */
        bool saw_choice;         /* some chunk carried choices[0] */
        size_t bytes;            /* total kept, against CHAT_MAX_REPLY_BYTES */
};
CORRAL_HIDDEN void chat_stream_init(struct chat_stream *s);
/* One payload: a chunk object, or "[DONE]" (whitespace around it allowed;
 * an all-whitespace payload is ignored).  Only the choice with index 0 is
 * read.  Content and reasoning deltas are appended.  Tool-call fragments are
 * joined per "index" (an id and name may come once, arguments in many
 * pieces); a call that arrives whole in one chunk (Ollama) works the same
 * way; "role" repeated in every chunk and unknown fields are ignored.
 *   - A fragment without "index" starts a new call when there is none yet
 *     or when its id differs from the last call's; otherwise it continues
 *     the last call (servers that omit the index send one call at a time).
 *   - The first id of a call is kept; a later, different one is ignored.
 *   - The name comes from the first fragment that has one; a later name
 *     equal to the name so far is ignored and one that extends it replaces
 *     it (llama.cpp resends the whole name), any other is appended (a
 *     server that sends the name in pieces).
 *   - "arguments" fragments are appended; an object is serialised first.
 *   - The last non-null "finish_reason" and the last "usage" win.
 * An error chunk ({"error":{...}} or "object":"error") fails with its
 * message; so do an index >= CHAT_MAX_TOOL_CALLS and more than
 * CHAT_MAX_REPLY_BYTES in all.  Returns 0 or -1. */
CORRAL_HIDDEN int chat_stream_add(struct chat_stream *s, const char *data, size_t len, corral_error **ret_err);
/* Build the reply from everything fed so far (also when [DONE] never came
 * but the stream ended cleanly), normalised as chat_response_parse() does:
 * calls in index order, slots that got no id, name or arguments (gaps in
 * the indices) skipped.  Fails when no chunk carried a choice.  The stream
 * is only read; release it afterwards. */
CORRAL_HIDDEN int chat_stream_finish(struct chat_stream *s, struct chat_reply *ret, corral_error **ret_err);
CORRAL_HIDDEN void chat_stream_release(struct chat_stream *s);

/* The message of an error body ({"error":{"message":...}},
 * {"error":"..."}, {"message":...} as vLLM's {"object":"error",...} has it,
 * {"detail":"..."} or FastAPI's {"detail":[{"msg":...}]}), malloc'd and made
 * one line (control characters become spaces; cut after about 1000 bytes,
 * marked "...").  NULL when the body is not JSON or holds no message. */
CORRAL_HIDDEN char *chat_error_message(const char *body, size_t len);

/* ---- images for the model (docs/sessions.md, "Figures for the model") ----
 *
 * Chat Completions takes image parts only in user messages (a tool
 * message's content parts may only be text; docs/providers.md), so figures
 * travel in a user message of their own after the tool results. */
struct chat_image {
        const unsigned char *png; /* a PNG file's bytes; borrowed */
        size_t len;
        const char *detail;       /* "low", "high" or "auto"; NULL: left out */
};
/* {"role":"user","content":[{"type":"text","text":text},
 *  {"type":"image_url","image_url":{"url":"data:image/png;base64,...",
 *  "detail":...}}, ...]}; NULL when out of memory. */
CORRAL_HIDDEN json_t *chat_image_message_new(const char *text, const struct chat_image *images, size_t n);
/* Image parts ("type":"image_url") in messages [0, end) of a conversation,
 * and the bytes of their URLs in *ret_url_bytes (may be NULL). */
CORRAL_HIDDEN size_t chat_messages_count_images(const json_t *messages, size_t end, size_t *ret_url_bytes);
/* Replace every image part of messages [0, end) by the text part
 * "[image omitted: note]"; a message left with text parts only gets its
 * texts joined into a plain string content.  Returns how many went; -1
 * when out of memory. */
CORRAL_HIDDEN long chat_messages_drop_images(json_t *messages, size_t end, const char *note);
/* Decode standard base64 (padding optional, no whitespace) of at most
 * max decoded bytes into a malloc'd buffer; -1 when invalid or too long. */
CORRAL_HIDDEN int chat_base64_decode(const char *s, size_t len, size_t max, unsigned char **ret, size_t *ret_len);
/* Width and height of a PNG from its signature and IHDR chunk; -1 when
 * data does not start like a PNG or a dimension is 0. */
CORRAL_HIDDEN int chat_png_dimensions(const void *data, size_t len, uint32_t *ret_w, uint32_t *ret_h);

/* Parse JSON text strictly into *ret (reject duplicates, NUL, bad UTF-8);
 * the error names `what` with line and column. */
CORRAL_HIDDEN int chat_json_parse(const char *text, size_t len, const char *what, json_t **ret, corral_error **ret_err);

#endif
