/* output.c: a step's stdout and stderr as "output" trace events while it
 * runs (docs/trace.md, "output"), for the views that follow a run live.
 *
 * The jail's pump hands over chunks as they arrive; they are gathered per
 * stream and sent as events cut at line ends, at most one per stream every
 * STEP_OUTPUT_INTERVAL_MS, and at most STEP_OUTPUT_MAX bytes per step in all
 * (then one event says "capped" and nothing more is sent: the step's
 * tool_result has its output whole, within the output limit).  Bytes
 * waiting for a line end or for the interval go out with the next chunk that
 * finds the interval over, or at the step's end.  A chunk cut without a line
 * end keeps back as many bytes as the run's longest secret, less one, so
 * that the trace's redaction sees any secret whole.  This does not make
 * events: it neither reads the jail nor blocks it.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agent-internal.h"

static size_t utf8_floor_at(const char *s, size_t i)
{
        while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
                i--;
        return i;
}

void step_output_begin(struct step_output *o, trace *t, unsigned iteration)
{
        memset(o, 0, sizeof(*o));
        o->trace = t;
        o->iteration = iteration;
        o->holdback = t ? trace_longest_secret(t) : 0;
        if (o->holdback > 0)
                o->holdback--;
}

static void emit(struct step_output *o, int k, size_t n, bool capped)
{
        struct step_output_stream *s = &o->s[k];
        cleanup_free char *text = utf8_sanitize(s->buf, n, NULL);
        json_t *ev = json_pack("{s:I, s:s, s:I, s:s}", "iteration", (json_int_t)o->iteration, "stream",
                               k ? "stderr" : "stdout", "seq", (json_int_t)++o->seq, "text", text ? text : "");
        if (ev && capped)
                json_object_set_new(ev, "capped", json_true());
        trace_emit(o->trace, "output", ev);
        o->sent += n;
        memmove(s->buf, s->buf + n, s->len - n);
        s->len -= n;
        s->last_ms = monotonic_ms();
}

/* Send what stream k can send now: up to its last line end (or all of it,
 * at the end), within the step's cap. */
static void flush(struct step_output *o, int k, bool at_end)
{
        struct step_output_stream *s = &o->s[k];
        if (o->capped || s->len == 0)
                return;
        size_t n = s->len;
        if (!at_end) {
                while (n > 0 && s->buf[n - 1] != '\n' && s->buf[n - 1] != '\r')
                        n--;
                if (n == 0 && s->len == sizeof(s->buf)) /* a long line: cut it, the secrets whole */
                        n = utf8_floor_at(s->buf, s->len > o->holdback ? s->len - o->holdback : 0);
                if (n == 0)
                        return;
        }
        bool capped = false;
        if (o->sent + n >= STEP_OUTPUT_MAX) {
                n = utf8_floor_at(s->buf, STEP_OUTPUT_MAX - o->sent);
                capped = true;
        }
        emit(o, k, n, capped);
        if (capped)
                o->capped = true;
}

void step_output_feed(void *userdata, int stream, const char *data, size_t len)
{
        struct step_output *o = userdata;
        int k = stream == 2 ? 1 : 0;
        struct step_output_stream *s = &o->s[k];
        if (o->trace == NULL)
                return;
        while (len > 0 && !o->capped) {
                size_t room = sizeof(s->buf) - s->len;
                size_t take = len < room ? len : room;
                memcpy(s->buf + s->len, data, take);
                s->len += take;
                data += take;
                len -= take;
                if (s->len == sizeof(s->buf) || monotonic_ms() - s->last_ms >= STEP_OUTPUT_INTERVAL_MS)
                        flush(o, k, false);
                if (s->len == sizeof(s->buf)) /* nothing could go: no room for the rest */
                        break;
        }
}

void step_output_end(struct step_output *o)
{
        if (o->trace == NULL)
                return;
        flush(o, 0, true);
        flush(o, 1, true);
        o->trace = NULL;
}
