/* test-sse.c: the Server-Sent Events parser (src/model/sse.c).
 *
 * Each case feeds a stream and compares the events it produced, written as
 * one string ("EVENT|DATA" per event, DATA with its LFs as "\n"), with the
 * expected list.  Line ends (LF, CRLF, CR, a CR at the end of one feed and
 * an LF at the start of the next), multi-line data, comments, the event
 * field, the BOM, the caps, sse_parser_finish, a callback that stops, and
 * split invariance: every stream gives the same events fed whole, byte by
 * byte, and split in two at every position. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/model/sse.h"
#include "harness.h"

/* Under UBSan the first report ends the test, so it fails it. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

struct seen {
        char out[8192];
        size_t len;
        int events;
        int stop_after; /* return -7 after this many events; 0 never */
};

static void seen_put(struct seen *s, const char *p, size_t n)
{
        for (size_t i = 0; i < n && s->len + 3 < sizeof(s->out); i++) {
                if (p[i] == '\n') {
                        s->out[s->len++] = '\\';
                        s->out[s->len++] = 'n';
                } else if (p[i] == '\0') {
                        s->out[s->len++] = '\\';
                        s->out[s->len++] = '0';
                } else {
                        s->out[s->len++] = p[i];
                }
        }
        s->out[s->len] = '\0';
}

static int on_event(void *userdata, const char *event, const char *data, size_t len)
{
        struct seen *s = userdata;
        if (s->events > 0)
                seen_put(s, ";", 1);
        seen_put(s, event, strlen(event));
        seen_put(s, "|", 1);
        seen_put(s, data, len);
        CHECK(data[len] == '\0');
        s->events++;
        if (s->stop_after > 0 && s->events >= s->stop_after)
                return -7;
        return 0;
}

/* Feed text in pieces of `step` bytes (0: whole), then finish; returns the
 * events seen, or "ERROR: message". */
static char *parse_split(const char *text, size_t len, size_t step, size_t max)
{
        struct seen s = { 0 };
        struct sse_parser p;
        corral_error *err = NULL;
        sse_parser_init(&p, max, on_event, &s);
        int r = 0;
        for (size_t off = 0; r == 0 && off < len;) {
                size_t n = step == 0 || len - off < step ? len - off : step;
                r = sse_parser_feed(&p, text + off, n, &err);
                off += n;
        }
        if (r == 0)
                r = sse_parser_finish(&p, &err);
        sse_parser_release(&p);
        char *out = NULL;
        if (r < 0 && err != NULL) {
                if (asprintf(&out, "ERROR: %s", err->msg) < 0)
                        out = NULL;
        } else {
                out = strdup(s.out);
        }
        corral_error_free(err);
        return out;
}

/* Feed text split once at `at`, then finish. */
static char *parse_at(const char *text, size_t len, size_t at, size_t max)
{
        struct seen s = { 0 };
        struct sse_parser p;
        corral_error *err = NULL;
        sse_parser_init(&p, max, on_event, &s);
        int r = sse_parser_feed(&p, text, at, &err);
        if (r == 0)
                r = sse_parser_feed(&p, text + at, len - at, &err);
        if (r == 0)
                r = sse_parser_finish(&p, &err);
        sse_parser_release(&p);
        char *out = NULL;
        if (r < 0 && err != NULL) {
                if (asprintf(&out, "ERROR: %s", err->msg) < 0)
                        out = NULL;
        } else {
                out = strdup(s.out);
        }
        corral_error_free(err);
        return out;
}

/* Parse whole, byte by byte and split at every position: all must equal
 * `expected`. */
static void expect_len(const char *text, size_t len, const char *expected, size_t max)
{
        char *whole = parse_split(text, len, 0, max);
        CHECK_STR(whole, expected);
        free(whole);
        char *bytes = parse_split(text, len, 1, max);
        CHECK_STR(bytes, expected);
        free(bytes);
        int bad = 0;
        for (size_t at = 0; at <= len; at++) {
                char *split = parse_at(text, len, at, max);
                if (split == NULL || strcmp(split, expected) != 0) {
                        if (!bad)
                                printf("#   split at %zu: got '%s', expected '%s'\n", at, split ? split : "(null)",
                                       expected);
                        bad++;
                }
                free(split);
        }
        CHECK_INT(bad, 0);
}

static void expect(const char *text, const char *expected)
{
        expect_len(text, strlen(text), expected, 4096);
}

TEST(line_ends)
{
        expect("data: hello\n\n", "|hello");
        expect("data: a\r\n\r\ndata: b\r\rdata: c\n\n", "|a;|b;|c");
        expect("data: a\r\n\ndata: b\n\r\n", "|a;|b");
        /* "\r\n" counts once, "\n\r" twice. */
        expect("data: a\r\ndata: b\r\n\r\n", "|a\\nb");
        expect("data: a\n\rdata: b\n\n", "|a;|b");
}

TEST(cr_split_across_feeds)
{
        /* A CR ends one feed, the LF starts the next: one line end, so the
         * two data lines make one event. */
        struct seen s = { 0 };
        struct sse_parser p;
        corral_error *err = NULL;
        sse_parser_init(&p, 1024, on_event, &s);
        CHECK_INT(sse_parser_feed(&p, "data: a\r", 8, &err), 0);
        CHECK_INT(s.events, 0);
        CHECK_INT(sse_parser_feed(&p, "\ndata: b\r", 9, &err), 0);
        CHECK_INT(sse_parser_feed(&p, "\n", 1, &err), 0);
        CHECK_INT(s.events, 0);
        CHECK_INT(sse_parser_feed(&p, "\r", 1, &err), 0);
        CHECK_INT(s.events, 1);
        CHECK_INT(sse_parser_feed(&p, "\n", 1, &err), 0); /* the LF of that CRLF: nothing more */
        CHECK_INT(sse_parser_finish(&p, &err), 0);
        CHECK_INT(s.events, 1);
        CHECK_STR(s.out, "|a\\nb");
        CHECK(err == NULL);
        sse_parser_release(&p);
}

TEST(data_fields)
{
        expect("data: a\ndata:b\ndata:  c\n\n", "|a\\nb\\n c");
        expect("data\n\n", "|");                 /* no colon: empty value */
        expect("data\ndata\n\n", "|\\n");
        expect("data:\n\n", "|");
        expect("data: \n\n", "|");
        expect("data:x:y: z\n\n", "|x:y: z");
        expect("\n\n\n", "");                     /* blank lines without data */
        expect("event: x\n\n", "");               /* an event without data is not dispatched */
        expect("Data: x\n\n", "");                /* field names are case-sensitive */
        expect("data : x\n\n", "");
        expect("data: a\0b\n\n", "|a");           /* strlen stops the literal; see below */
        expect_len("data: a\0b\n\n", 11, "|a\\0b", 4096);
}

TEST(comments_and_ignored_fields)
{
        expect(": keep-alive\n\n", "");
        expect(":\n: x\ndata: y\n: z\n\n", "|y");
        expect("id: 7\nretry: 1000\ndata: y\nfoo: bar\n\n", "|y");
}

TEST(event_field)
{
        expect("event: error\ndata: {}\n\ndata: next\n\n", "error|{};|next");
        expect("event: a\nevent: b\ndata: x\n\n", "b|x");
        expect("event\ndata: x\n\n", "|x");
        expect("event:  sp\ndata: x\n\n", " sp|x");
}

TEST(bom)
{
        expect("\xef\xbb\xbf" "data: x\n\n", "|x");
        expect("\xef\xbb\xbf" ": c\r\ndata: x\r\n\r\n", "|x");
        /* Only at the very start: later it makes the field name unknown. */
        expect("data: x\n\n\xef\xbb\xbf" "data: y\n\n", "|x");
        expect("\xef\xbb\xbf\xef\xbb\xbf" "data: y\n\n", "");
        expect("\xef\xbb" "data: y\n\n", "");
}

TEST(caps)
{
        const char *line16 = "data:aaaaaaaaaaa\n\n"; /* a 16-byte line */
        expect_len(line16, strlen(line16), "|aaaaaaaaaaa", 16);
        char *r = parse_split("data:aaaaaaaaaaaa\n\n", 19, 0, 16);
        CHECK(r != NULL && strstr(r, "ERROR: ") == r && strstr(r, "16 bytes") != NULL);
        printf("#   %s\n", r);
        free(r);
        /* An unterminated line is capped too, without a line end ever coming. */
        char big[100];
        memset(big, 'x', sizeof(big));
        r = parse_split(big, sizeof(big), 7, 50);
        CHECK(r != NULL && strstr(r, "ERROR: ") == r && strstr(r, "50 bytes") != NULL);
        free(r);
        /* The event: 10 + 1 + 10 joined bytes > 16, each line under the cap. */
        const char *ev = "data:aaaaaaaaaa\ndata:bbbbbbbbbb\n\n";
        r = parse_split(ev, strlen(ev), 1, 16);
        CHECK(r != NULL && strstr(r, "ERROR: ") == r && strstr(r, "event") != NULL && strstr(r, "16 bytes") != NULL);
        printf("#   %s\n", r);
        free(r);
        /* 8 + 1 + 7 = 16: exactly at the cap. */
        expect_len("data:aaaaaaaa\ndata:bbbbbbb\n\n", 28, "|aaaaaaaa\\nbbbbbbb", 16);
        /* Events are capped one at a time. */
        expect_len("data:aaaaaaaaaa\n\ndata:bbbbbbbbbb\n\n", 34, "|aaaaaaaaaa;|bbbbbbbbbb", 16);
}

TEST(finish)
{
        expect("data: x", "|x");                  /* no line end at all */
        expect("data: x\n", "|x");                /* no blank line */
        expect("data: x\r", "|x");
        expect("data: x\n\n", "|x");              /* nothing more */
        expect("event: e\n", "");
        expect("data: x\ndata: y", "|x\\ny");
        expect("", "");
        expect(": c", "");
        expect("\xef\xbb\xbf", "");
}

TEST(real_streams)
{
        /* OpenAI's shape, with a usage chunk and [DONE]. */
        expect("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"
               "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3}}\n\n"
               "data: [DONE]\n\n",
               "|{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]};|{\"choices\":[],\"usage\":{\"prompt_tokens\":3}};|[D"
               "ONE]");
        /* A mixed bag: BOM, CRLF, comment keep-alives, an error event. */
        expect("\xef\xbb\xbf: ping\r\n\r\ndata: {\"a\":1}\r\n\r\n: ping\n\nevent: error\r"
               "data: {\"error\":{\"message\":\"boom\"}}\r\r",
               "|{\"a\":1};error|{\"error\":{\"message\":\"boom\"}}");
}

TEST(callback_stops)
{
        struct seen s = { .stop_after = 1 };
        struct sse_parser p;
        corral_error *err = NULL;
        sse_parser_init(&p, 1024, on_event, &s);
        const char *text = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
        CHECK_INT(sse_parser_feed(&p, text, strlen(text), &err), -7);
        CHECK_INT(s.events, 1);
        CHECK_STR(s.out, "|1");
        CHECK(err == NULL);
        sse_parser_release(&p);

        /* From finish too. */
        struct seen s2 = { .stop_after = 1 };
        sse_parser_init(&p, 1024, on_event, &s2);
        CHECK_INT(sse_parser_feed(&p, "data: x", 7, &err), 0);
        CHECK_INT(sse_parser_finish(&p, &err), -7);
        CHECK_INT(s2.events, 1);
        sse_parser_release(&p);
}

TEST(release_pending)
{
        /* Released with a pending event and line: no leak (ASan checks). */
        struct seen s = { 0 };
        struct sse_parser p;
        sse_parser_init(&p, 1024, on_event, &s);
        const char *text = "event: x\ndata: 1\ndata: 2";
        CHECK_INT(sse_parser_feed(&p, text, strlen(text), NULL), 0);
        CHECK_INT(s.events, 0);
        sse_parser_release(&p);
        sse_parser_release(&p); /* twice is harmless */
}

int main(void)
{
        RUN(line_ends);
        RUN(cr_split_across_feeds);
        RUN(data_fields);
        RUN(comments_and_ignored_fields);
        RUN(event_field);
        RUN(bom);
        RUN(caps);
        RUN(finish);
        RUN(real_streams);
        RUN(callback_stops);
        RUN(release_pending);
        return DONE();
}
