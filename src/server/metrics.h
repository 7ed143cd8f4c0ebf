/* metrics.h: a small Prometheus registry for `corral serve`'s GET /metrics:
 * counters, gauges and histograms, rendered in the text exposition format
 * (version 0.0.4).  No client library: a family has at most one label, and
 * each family at most 64 series, so a label value that arrives from a
 * request (a route, a model name) cannot grow the registry without bound.
 *
 * A family is declared once with metrics_define(); after that any thread
 * updates it by name.  Updating a name never defined, or with the call of
 * another type (metrics_observe() on a counter), does nothing.
 *
 * Threads: every function is thread-safe (one mutex per registry), except
 * that metrics_free() must be the registry's last call.
 */
#ifndef CORRAL_SERVER_METRICS_H
#define CORRAL_SERVER_METRICS_H

#include <stddef.h>

#include "../lib/util.h"

struct metrics;

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

/* NULL when out of memory. */
CORRAL_HIDDEN struct metrics *metrics_new(void);
/* Accepts NULL. */
CORRAL_HIDDEN void metrics_free(struct metrics *m);

/* Declare a family once before use: name matches [a-zA-Z_:][a-zA-Z0-9_:]*,
 * help is one line (a backslash or newline in it is escaped).
 * label: the one label name of the family ([a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with "__", not "le" for a histogram), or NULL for none; a family
 * without a label has its one series, at 0, from the start.
 * buckets (histograms only): upper bounds in seconds, finite and strictly
 * ascending, n_buckets of them (+Inf is added); NULL uses the default
 * 0.0005 0.001 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10.
 * Returns 0, or -1 (bad name, label or buckets, duplicate, out of memory). */
CORRAL_HIDDEN int metrics_define(struct metrics *m, const char *name, enum metric_type type, const char *help,
                                 const char *label, const double *buckets, size_t n_buckets);

/* The series of a family are found by label value (ignored for a family
 * without a label; NULL in one with a label is ""), a new value making a
 * new series.  At most 64 series per family: the 64th is "other", and
 * every value that finds no series of its own once 63 exist is counted
 * there, as is a value longer than 256 bytes or not UTF-8.  Out of memory,
 * an update is lost. */

/* Add n to a counter or a gauge.  A counter only goes up: a negative or
 * NaN n is ignored (Prometheus would read a decrease as a restart). */
CORRAL_HIDDEN void metrics_add(struct metrics *m, const char *name, const char *label_value, double n);
/* Set a gauge. */
CORRAL_HIDDEN void metrics_set(struct metrics *m, const char *name, const char *label_value, double v);
/* One observation of a histogram (seconds); NaN is ignored (it would make
 * the _sum NaN for good). */
CORRAL_HIDDEN void metrics_observe(struct metrics *m, const char *name, const char *label_value, double v);

/* The exposition text (malloc'd, NUL-terminated), families in definition
 * order, series in first-use order: "# HELP", "# TYPE", then samples;
 * histograms as _bucket{le="..."} (cumulative), _sum and _count.  Label
 * values escaped as the format requires (backslash, double quote,
 * newline); numbers as the shortest text that reads back exactly, "+Inf",
 * "-Inf", "NaN".  NULL when out of memory. */
CORRAL_HIDDEN char *metrics_render(struct metrics *m);

#endif
