/* format.h: helpers shared by the terminal view (render.c) and the exports
 * (export.c): reading fields of an event, and writing sizes, durations and
 * counts the same way in both.
 * Threads: thread-safe (pure functions).
 * Internal to src/trace/. */
#ifndef CORRAL_TRACE_FORMAT_H
#define CORRAL_TRACE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "../lib/util.h"

/* The string at key, or NULL. */
CORRAL_HIDDEN const char *trace_jstr(const json_t *o, const char *key);
/* The number at key into *ret; false when absent or not a number. */
CORRAL_HIDDEN bool trace_jnum(const json_t *o, const char *key, double *ret);
/* A tool that ends the run with an answer (not shown as a step). */
CORRAL_HIDDEN bool trace_is_answer_tool(const char *name);
/* "312 B", "1.2 KiB", "512 MiB" (no decimal when it would be ".0"). */
CORRAL_HIDDEN void trace_fmt_size(char *buf, size_t size, double bytes);
/* One artifact or diff entry (an object with path, change, size or bytes,
 * type and the fields of workspace/artifact.h, or a string) as a line:
 * "+ output/top5.csv (312 B, CSV 5 rows × 2 columns)", "~ path (2 KiB)",
 * "- path", "+ path (12 B) [symlink]".  *ret_change (may be NULL): "created",
 * "modified" or "deleted".  malloc'd; NULL when the entry has no path or
 * out of memory. */
CORRAL_HIDDEN char *trace_artifact_line(const json_t *a, const char **ret_change);
/* "412 ms", "3.2 s", "2 min 05 s", "1 h 02 min". */
CORRAL_HIDDEN void trace_fmt_ms(char *buf, size_t size, double ms);
/* 1234567 -> "1,234,567" */
CORRAL_HIDDEN void trace_fmt_count(char *buf, size_t size, unsigned long long n);

#endif
