/* export.h: a trace turned into something a colleague can open.
 *
 *   ipynb  a Jupyter notebook (nbformat 4.5): the task and the model's text
 *          as markdown cells, each run_python as a code cell with its
 *          stdout/stderr as stream outputs, run_shell as a "%%bash" cell,
 *          file tools and the final answer as markdown.
 *   html   one standalone page (inline CSS, no scripts, no external
 *          resources), every string HTML-escaped.
 * Input is the events of one trace file (trace_read_file); output is
 * written to a temporary file beside `out` (O_EXCL, mode 0600) and renamed
 * over it; on failure the temporary file is removed and `out` is untouched.
 * docs/trace.md has the mapping.
 *
 * Threads: thread-safe (no shared state).
 */
#ifndef CORRAL_TRACE_EXPORT_H
#define CORRAL_TRACE_EXPORT_H

#include "../lib/util.h"

enum export_format {
        EXPORT_IPYNB,
        EXPORT_HTML,
};

CORRAL_HIDDEN int trace_export(const char *trace_path, enum export_format fmt, const char *out,
                               corral_error **ret_err);
/* Where an export goes when the caller names no file: the trace's path
 * with .jsonl replaced by .ipynb or .html (appended to any other name);
 * malloc'd, NULL when out of memory.  Thread-safe. */
CORRAL_HIDDEN char *export_default_path(const char *trace_path, enum export_format fmt);

#endif
