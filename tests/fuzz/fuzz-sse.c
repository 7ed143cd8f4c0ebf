/* fuzz-sse.c: the Server-Sent Events parser (src/model/sse.c) and, behind
 * it, the streamed-reply assembly (chat_stream_*, src/model/chat.c).
 *
 * The input is a raw event stream.  It is parsed three ways: fed whole, fed
 * in pieces whose sizes come from a hash of the input, and fed byte by
 * byte, each followed by sse_parser_finish().  Invariants: no crash or
 * leak; the three runs produce the same events (name and data, byte for
 * byte) and end the same way (same return value, same error message); an
 * error has a message; each event's data is NUL-terminated at its length.
 * The whole-feed run also hands every event's data to a chat_stream as
 * openai.c does; once a chunk fails no more are added, and the stream is
 * finished either way: chat_stream_finish() then fails with a message or
 * yields an assistant message that serialises, with at most
 * CHAT_MAX_TOOL_CALLS tool calls, each with a unique id and string
 * arguments. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/model/chat.h"
#include "../../src/model/sse.h"
#include "fuzz.h"

#define MAX_EVENT 1024

struct record {
        char *buf;     /* per event: name, NUL, 8-byte length, data */
        size_t len, alloc;
        size_t events;
        struct chat_stream *stream; /* or NULL */
        bool stream_failed;
};

static void record_put(struct record *r, const void *p, size_t n)
{
        if (r->len + n > r->alloc) {
                size_t want = r->alloc ? r->alloc * 2 : 1024;
                while (want < r->len + n)
                        want *= 2;
                r->buf = realloc(r->buf, want);
                FUZZ_ASSERT(r->buf != NULL);
                r->alloc = want;
        }
        memcpy(r->buf + r->len, p, n);
        r->len += n;
}

static int on_event(void *userdata, const char *event, const char *data, size_t len)
{
        struct record *r = userdata;
        FUZZ_ASSERT(event != NULL && data != NULL);
        FUZZ_ASSERT(data[len] == '\0', "data not NUL-terminated at its length %zu", len);
        FUZZ_ASSERT(len <= MAX_EVENT, "event of %zu bytes over the cap", len);
        FUZZ_ASSERT(strlen(event) < MAX_EVENT);
        record_put(r, event, strlen(event) + 1);
        uint64_t n = len;
        record_put(r, &n, sizeof(n));
        record_put(r, data, len);
        r->events++;
        if (r->stream && !r->stream_failed) {
                corral_error *err = NULL;
                int rc = chat_stream_add(r->stream, data, len, &err);
                FUZZ_ASSERT(rc == 0 || rc == -1, "chat_stream_add returned %d", rc);
                if (rc < 0) {
                        FUZZ_ASSERT(err != NULL && err->msg != NULL && err->msg[0] != '\0', "no error message");
                        r->stream_failed = true;
                } else {
                        FUZZ_ASSERT(err == NULL, "error set on success: %s", err->msg);
                }
                corral_error_free(err);
        }
        return 0;
}

struct outcome {
        struct record rec;
        int rc;
        char *msg;
};

/* Feed data in pieces: sizes from `seed` (0: whole; 1: byte by byte). */
static void run(const uint8_t *data, size_t size, uint64_t seed, struct chat_stream *stream, struct outcome *out)
{
        memset(out, 0, sizeof(*out));
        out->rec.stream = stream;
        struct sse_parser p;
        corral_error *err = NULL;
        sse_parser_init(&p, MAX_EVENT, on_event, &out->rec);
        int rc = 0;
        for (size_t off = 0; rc == 0 && off < size;) {
                size_t n = size - off;
                if (seed == 1) {
                        n = 1;
                } else if (seed != 0) {
                        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                        size_t piece = (size_t)(seed >> 33) % 17; /* 0..16 bytes, empty feeds too */
                        if (piece < n)
                                n = piece;
                }
                rc = sse_parser_feed(&p, (const char *)data + off, n, &err);
                off += n;
        }
        if (rc == 0)
                rc = sse_parser_finish(&p, &err);
        FUZZ_ASSERT(rc == 0 || rc == -1, "parser returned %d", rc);
        if (rc < 0) {
                FUZZ_ASSERT(err != NULL && err->msg != NULL && err->msg[0] != '\0', "no error message");
                out->msg = strdup(err->msg);
        } else {
                FUZZ_ASSERT(err == NULL, "error set on success: %s", err->msg);
        }
        out->rc = rc;
        corral_error_free(err);
        sse_parser_release(&p);
}

static void same(const struct outcome *a, const struct outcome *b, const char *how)
{
        FUZZ_ASSERT(a->rc == b->rc, "%s: returned %d, whole %d", how, b->rc, a->rc);
        FUZZ_ASSERT(a->rec.events == b->rec.events, "%s: %zu events, whole %zu", how, b->rec.events, a->rec.events);
        FUZZ_ASSERT(a->rec.len == b->rec.len && (a->rec.len == 0 || memcmp(a->rec.buf, b->rec.buf, a->rec.len) == 0),
                    "%s: the events differ", how);
        FUZZ_ASSERT((a->msg == NULL) == (b->msg == NULL) && (a->msg == NULL || strcmp(a->msg, b->msg) == 0),
                    "%s: error '%s', whole '%s'", how, b->msg ? b->msg : "(none)", a->msg ? a->msg : "(none)");
}

static void release(struct outcome *o)
{
        free(o->rec.buf);
        free(o->msg);
}

/* The invariants of a finished reply (see the top of the file). */
static void check_reply(struct chat_stream *s)
{
        struct chat_reply r;
        corral_error *err = NULL;
        int rc = chat_stream_finish(s, &r, &err);
        FUZZ_ASSERT(rc == 0 || rc == -1, "chat_stream_finish returned %d", rc);
        if (rc < 0) {
                FUZZ_ASSERT(err != NULL && err->msg != NULL && err->msg[0] != '\0', "no error message");
                FUZZ_ASSERT(r.message == NULL && r.finish_reason == NULL && r.reasoning == NULL);
                corral_error_free(err);
                return;
        }
        FUZZ_ASSERT(err == NULL);
        FUZZ_ASSERT(json_is_object(r.message));
        char *text = json_dumps(r.message, JSON_COMPACT);
        FUZZ_ASSERT(text != NULL, "the message does not serialise");
        free(text);
        json_t *calls = json_object_get(r.message, "tool_calls");
        size_t n = chat_reply_tool_calls(&r);
        FUZZ_ASSERT(n <= CHAT_MAX_TOOL_CALLS && (calls == NULL || n > 0));
        for (size_t i = 0; i < n; i++) {
                json_t *c = json_array_get(calls, i);
                const char *id = json_string_value(json_object_get(c, "id"));
                FUZZ_ASSERT(id != NULL && id[0] != '\0', "call %zu has no id", i);
                for (size_t j = 0; j < i; j++)
                        FUZZ_ASSERT(strcmp(id, json_string_value(json_object_get(json_array_get(calls, j), "id"))) != 0,
                                    "calls %zu and %zu share id '%s'", j, i, id);
                FUZZ_ASSERT(json_is_string(json_object_get(json_object_get(c, "function"), "arguments")));
                FUZZ_ASSERT(json_is_string(json_object_get(json_object_get(c, "function"), "name")));
        }
        chat_reply_release(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint64_t h = 14695981039346656037ull; /* FNV-1a */
        for (size_t i = 0; i < size; i++)
                h = (h ^ data[i]) * 1099511628211ull;

        struct chat_stream stream;
        chat_stream_init(&stream);
        struct outcome whole, split, bytes;
        run(data, size, 0, &stream, &whole);
        run(data, size, h | 2, NULL, &split);
        run(data, size, 1, NULL, &bytes);
        same(&whole, &split, "split feeds");
        same(&whole, &bytes, "byte by byte");
        check_reply(&stream);
        chat_stream_release(&stream);
        release(&whole);
        release(&split);
        release(&bytes);
        return 0;
}
