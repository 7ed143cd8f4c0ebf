/* render.h: the terminal view of a run, live or replayed from a trace.
 *
 * A trace subscriber that prints each step readably: the run's header, the
 * model's text, each tool call ("── step 3 · run_python ──" and the
 * numbered code, syntax-highlighted when colour is on; "$ command" for
 * run_shell; one line for file tools), the execution's status and output
 * (head + tail of each stream), the files a step changed ("+ created",
 * "~ modified", "- deleted"), retries and notices, and a summary at the end
 * (status, answer, iterations, tokens, model wait, wall time, artifacts,
 * output directory).  docs/trace.md shows a sample.  Everything from the
 * model or a program is passed through term_sanitize() before printing.
 * While the model is being waited for (between model_request and
 * model_reply) a spinner with the elapsed time runs on a TTY, from its own
 * thread; streamed text (render_content_delta) replaces it as it arrives
 * and is not printed again from the model_reply.  All functions are
 * thread-safe (one mutex per renderer).
 * (render_highlight lives in highlight.c.)
 */
#ifndef CORRAL_TRACE_RENDER_H
#define CORRAL_TRACE_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "../lib/termsafe.h"
#include "../lib/util.h"

struct render_options {
        FILE *out;          /* usually stderr for `run`, stdout for `trace show` */
        bool color;         /* ANSI colours and highlighting */
        bool spinner;       /* animate waits (live and a TTY only) */
        bool quiet;         /* only notices, model retries and the summary; no spinner */
        unsigned max_output_lines; /* per stream, head + tail; 0: 40 */
        /* A notice's or an outcome's text and the config fields it names in
         * words (its "field", see corral_error.field) as the front end says
         * them (the CLI adds its flags: cli_field_text); malloc'd.  NULL: the
         * text alone. */
        char *(*field_text)(const char *msg, const char *fields);
};
/* color: out is a TTY, NO_COLOR unset (or empty), TERM not "dumb";
 * spinner: live and out is a TTY and TERM not "dumb"; max_output_lines 40. */
CORRAL_HIDDEN void render_options_default(struct render_options *o, FILE *out, bool live);

typedef struct render render;
CORRAL_HIDDEN render *render_new(const struct render_options *o);
CORRAL_HIDDEN void render_free(render *r);
/* A trace_subscriber_fn (r is the render). */
CORRAL_HIDDEN void render_event(void *r, const json_t *event);
/* Streamed model text as it arrives (live runs only); a UTF-8 sequence
 * split across deltas is held back until complete. */
CORRAL_HIDDEN void render_content_delta(render *r, const char *text, size_t len);

/* Highlight Python or shell source with ANSI colours (keywords, builtins,
 * strings, comments, numbers, decorators, $variables); malloc'd.  lang:
 * "python" or "bash" (anything else: copied).  Every byte of code comes out
 * once and in order: removing the SGR sequences gives code back.  Each line
 * carries its own colour codes, so the result may be split at '\n'.  code is
 * not sanitised: pass untrusted code through term_sanitize() first. */
CORRAL_HIDDEN char *render_highlight(const char *code, const char *lang);

#endif
