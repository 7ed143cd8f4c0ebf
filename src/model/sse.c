/* sse.c: the Server-Sent Events parser (see sse.h).
 *
 * Follows the WHATWG HTML "event stream interpretation": a leading U+FEFF
 * is skipped; lines end in CRLF, LF or CR (a CR ending one feed and an LF
 * starting the next are one line end); "data" lines are joined with LF; a
 * blank line dispatches the event when a data field was seen; "event" names
 * it; comments (":") and the fields "id", "retry" and any other are ignored;
 * a line without a colon is a field with an empty value.  One deliberate
 * leniency: at the end of the stream (sse_parser_finish) an unterminated last
 * line is still interpreted and a pending event with data is dispatched,
 * where the standard discards both; servers that close the connection right
 * after their last "data:" line lose nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "sse.h"

static const char utf8_bom[] = "\xef\xbb\xbf";

void sse_parser_init(struct sse_parser *p, size_t max_event_bytes, sse_event_fn fn, void *userdata)
{
        memset(p, 0, sizeof(*p));
        p->max_event = max_event_bytes;
        p->line.cap = max_event_bytes;
        p->data.cap = max_event_bytes;
        p->fn = fn;
        p->userdata = userdata;
}

void sse_parser_release(struct sse_parser *p)
{
        capbuf_release(&p->line);
        capbuf_release(&p->data);
        free(p->event);
        p->event = NULL;
        p->have_data = false;
}

/* Empty a capbuf but keep its allocation for the next line or event. */
static void capbuf_reset(struct capbuf *b)
{
        b->len = 0;
        b->total = 0;
        b->truncated = false;
        if (b->data)
                b->data[0] = '\0';
}

/* Hand the pending event to the callback (when a data field was seen) and
 * start a new one.  Returns 0 or the callback's negative value. */
static int dispatch(struct sse_parser *p)
{
        int r = 0;
        if (p->have_data && p->fn) {
                r = p->fn(p->userdata, p->event ? p->event : "", p->data.data ? p->data.data : "", p->data.len);
                if (r > 0)
                        r = 0;
        }
        capbuf_reset(&p->data);
        p->have_data = false;
        free(p->event);
        p->event = NULL;
        return r;
}

/* Interpret the complete line held in p->line (without its line end). */
static int process_line(struct sse_parser *p, corral_error **ret_err)
{
        const char *line = p->line.data ? p->line.data : "";
        size_t len = p->line.len;
        if (!p->bom_checked) {
                p->bom_checked = true;
                if (len >= 3 && memcmp(line, utf8_bom, 3) == 0) {
                        line += 3;
                        len -= 3;
                }
        }
        int r = 0;
        if (len == 0) {
                r = dispatch(p);
        } else if (line[0] != ':') {
                const char *colon = memchr(line, ':', len);
                size_t name_len = colon ? (size_t)(colon - line) : len;
                const char *value = colon ? colon + 1 : line + len;
                size_t value_len = len - (size_t)(value - line);
                if (value_len > 0 && value[0] == ' ') {
                        value++;
                        value_len--;
                }
                if (name_len == 4 && memcmp(line, "data", 4) == 0) {
                        size_t need = value_len + (p->have_data ? 1 : 0);
                        if (need > p->max_event - p->data.len) {
                                r = corral_make_error(ret_err, CORRAL_ERR_MODEL_REFUSED, 0,
                                                      "event stream: an event is longer than %zu bytes",
                                                      p->max_event);
                        } else if ((p->have_data && capbuf_append(&p->data, "\n", 1) == (size_t)-1) ||
                                   capbuf_append(&p->data, value, value_len) == (size_t)-1) {
                                r = corral_fail(ret_err, ENOMEM, "event stream");
                        } else {
                                p->have_data = true;
                        }
                } else if (name_len == 5 && memcmp(line, "event", 5) == 0) {
                        char *e = strndup(value, value_len);
                        if (e == NULL) {
                                r = corral_fail(ret_err, ENOMEM, "event stream");
                        } else {
                                free(p->event);
                                p->event = e;
                        }
                }
                /* "id", "retry" and unknown fields: ignored. */
        }
        capbuf_reset(&p->line);
        return r;
}

/* Add len bytes (no line end among them) to the current line. */
static int line_append(struct sse_parser *p, const char *buf, size_t len, corral_error **ret_err)
{
        if (len > p->max_event - p->line.len)
                return corral_make_error(ret_err, CORRAL_ERR_MODEL_REFUSED, 0,
                                         "event stream: a line is longer than %zu bytes", p->max_event);
        if (capbuf_append(&p->line, buf, len) == (size_t)-1)
                return corral_fail(ret_err, ENOMEM, "event stream");
        return 0;
}

/* Split buf into lines: runs without CR or LF are added to the current line,
 * each line end completes it.  A CR followed by LF counts once, also when
 * the LF starts the next feed (last_was_cr).  Stops at the first error or
 * callback refusal; the rest of buf is then not looked at. */
int sse_parser_feed(struct sse_parser *p, const char *buf, size_t len, corral_error **ret_err)
{
        while (len > 0) {
                if (p->last_was_cr) {
                        p->last_was_cr = false;
                        if (buf[0] == '\n') {
                                buf++;
                                len--;
                                continue;
                        }
                }
                size_t n = 0;
                while (n < len && buf[n] != '\n' && buf[n] != '\r')
                        n++;
                if (n > 0 && line_append(p, buf, n, ret_err) < 0)
                        return -1;
                if (n == len)
                        break;
                p->last_was_cr = buf[n] == '\r';
                buf += n + 1;
                len -= n + 1;
                int r = process_line(p, ret_err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The end of the stream: interpret an unterminated last line, then dispatch
 * a pending event that has data (see the top of this file). */
int sse_parser_finish(struct sse_parser *p, corral_error **ret_err)
{
        p->last_was_cr = false;
        if (p->line.len > 0) {
                int r = process_line(p, ret_err);
                if (r < 0)
                        return r;
        }
        return dispatch(p);
}
