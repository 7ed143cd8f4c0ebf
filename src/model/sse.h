/* sse.h: an incremental parser for Server-Sent Events (text/event-stream).
 *
 * Bytes arrive from the network in arbitrary pieces; the parser splits them
 * into lines (LF, CRLF or CR), collects "data:" fields and hands each event
 * to a callback when a blank line ends it, as the WHATWG HTML standard's
 * "event stream interpretation" describes.  Comment lines (":") and fields
 * other than "data" and "event" are ignored.  Every buffer is capped: a line
 * or an event (its data lines joined) larger than max_event_bytes is an
 * error (CORRAL_ERR_MODEL_REFUSED, naming the limit), not an allocation.
 * Knows nothing of JSON or of chat completions.
 *
 * Threads: one caller at a time per parser.
 *
 * openai.c reads model replies with it, mcp/client.c Streamable HTTP answers.
 */
#ifndef CORRAL_MODEL_SSE_H
#define CORRAL_MODEL_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "../lib/util.h"

/* Called once per complete event.  `event` is the "event:" field or "" (the
 * default "message"); `data` is the joined data lines (NUL-terminated, LF
 * between lines, no trailing LF).  Return 0 to go on, or a negative value to
 * stop parsing (sse_parser_feed returns it). */
typedef int (*sse_event_fn)(void *userdata, const char *event, const char *data, size_t len);

struct sse_parser {
        struct capbuf line;   /* the current, unfinished line */
        struct capbuf data;   /* data lines of the current event */
        char *event;          /* "event:" of the current event, or NULL */
        bool have_data;       /* a data field was seen (may be empty) */
        bool last_was_cr;     /* CRLF split across two feeds */
        bool bom_checked;     /* a leading U+FEFF is skipped once */
        size_t max_event;
        sse_event_fn fn;
        void *userdata;
};

CORRAL_HIDDEN void sse_parser_init(struct sse_parser *p, size_t max_event_bytes, sse_event_fn fn, void *userdata);
/* Feed bytes, split anywhere.  Returns 0, the callback's negative value, or
 * -1 with ret_err set (a line or event over the cap, out of memory).  After
 * a non-zero return the rest of buf is not looked at: stop feeding.  A
 * callback that refuses keeps its own reason (ret_err is not touched). */
CORRAL_HIDDEN int sse_parser_feed(struct sse_parser *p, const char *buf, size_t len, corral_error **ret_err);
/* The stream ended: interpret an unterminated last line and dispatch a
 * final event that has data but lacked its blank line (the standard drops
 * both; servers that close right after "data: [DONE]" lose nothing). */
CORRAL_HIDDEN int sse_parser_finish(struct sse_parser *p, corral_error **ret_err);
CORRAL_HIDDEN void sse_parser_release(struct sse_parser *p);

#endif
