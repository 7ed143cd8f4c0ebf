/* cmark-dl.h: libcmark, loaded when a report is first rendered to HTML.
 *
 * Linked in, cmark's table of HTML entities (34 KiB of pointers) was
 * relocated by the dynamic loader at every corral start: a third of the
 * binary's relocations and nine page faults (each ~17 us on a VM), on
 * every `corral exec` too, for the one command that exports a trace to
 * HTML.  It is loaded with dlopen() on first use instead, as libcurl and
 * libarchive are; the prototype and constants come from <cmark.h>, so the
 * call is type-checked.
 */
#ifndef CORRAL_TRACE_CMARK_DL_H
#define CORRAL_TRACE_CMARK_DL_H

#include <cmark.h>
#include <jansson.h>

#include "../lib/util.h"

/* cmark_markdown_to_html() of libcmark: NULL with ret_err set (the
 * library missing, or out of memory). */
char *markdown_to_html(const char *text, size_t len, corral_error **ret_err);
/* The check `corral doctor` shows for it. */
void cmark_probe(json_t *checks);

#endif
