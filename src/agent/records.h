/* records.h: the runs' records, $XDG_STATE_HOME/corral/runs/ID/
 * (run_records_dir(), run.h), read back: which runs there are, what each
 * one's trace says of it, and where a run's trace is.  For `corral runs`,
 * `corral trace ID|last` and a server's GET /runs.
 *
 * A summary is read from the first and the last event of the run's trace
 * (run_start, run_end), at most 4 MiB of each: never the whole file.
 * Nothing here writes.  Every function takes the records directory, NULL
 * for run_records_dir().
 *
 * Threads: every function is thread-safe (no shared state; a run still
 * writing its trace reads as "unfinished").
 */
#ifndef CORRAL_AGENT_RECORDS_H
#define CORRAL_AGENT_RECORDS_H

#include <stdbool.h>
#include <stddef.h>

#include <corral/error.h>
#include <jansson.h>

#include "../lib/util.h"

/* A run's ID as run_open() makes it: 20261129-164512-3fa9c1. */
CORRAL_HIDDEN bool records_is_run_id(const char *s);

/* One run's summary: {"run_id", "trace", "started", "task", "model", "cwd",
 * "workspace" (from run_start), "status" ("unfinished" without a run_end),
 * "iterations", "output_dir", "artifacts" (their paths)}; only "run_id"
 * when the run has no trace.  NULL when out of memory. */
CORRAL_HIDDEN json_t *records_describe(const char *dir, const char *id);

/* The summaries of the recorded runs, newest first, at most max (< 0:
 * all): a JSON array, empty when there are none (or no directory yet).
 * NULL with *err when the directory cannot be told (CORRAL_ERR_USAGE: no
 * $XDG_STATE_HOME or $HOME) or out of memory. */
CORRAL_HIDDEN json_t *records_list(const char *dir, long max, corral_error **ret_err);

/* The trace of the run id, or of the newest run that has one for "last":
 * its path (malloc'd; for an ID, whether or not it exists), or NULL with
 * *err (CORRAL_ERR_USAGE: not an ID, no run with a trace). */
CORRAL_HIDDEN char *records_trace_path(const char *dir, const char *id, corral_error **ret_err);

#endif
