/* artifact.h: what a file a step made is, told by its content.
 *
 * A workspace_diff() entry for a created or modified regular file gets a
 * "format" and what is cheap to know about it: a PNG's or JPEG's size in
 * pixels, a CSV's rows and columns, a JSON document's top-level type, a
 * text's lines.  The type comes from the bytes (magic numbers, a header, a
 * sniff of the first records); the file name only settles ties between the
 * text formats (a ".md" file is Markdown, a ".csv" file with one column is
 * still CSV).  Files are opened beneath the workspace's fd, never through a
 * symlink, O_NONBLOCK, regular files with one link only, and read at most
 * ARTIFACT_SCAN_MAX bytes: counts past it are lower bounds ("rows_at_least").
 *
 * Formats and their fields (besides "format"):
 *   png, jpeg, gif    "width", "height" (pixels); "valid":false for a
 *                     signature without a readable header
 *   svg, html, xml    nothing more ("title" for html when it has one)
 *   pdf               "pages" when the page tree is readable uncompressed
 *   csv, tsv          "rows" (records after the header) or "rows_at_least",
 *                     "columns", "delimiter", "header":[first 8 names] when
 *                     the first record looks like one, "ragged":true when
 *                     records differ in field count
 *   json              "valid", "json_type" ("object", "array", "string",
 *                     "number", "boolean", "null"), "length" (array
 *                     elements) or "keys" (object members) at the top level
 *   jsonl             "valid", "rows" (one JSON value per line)
 *   markdown, text    "lines" or "lines_at_least"; "title" (markdown: the
 *                     first heading)
 *   xlsx, docx, pptx, zip   "entries" (zip), "sheets" (xlsx)
 *   parquet, gzip, zstd, sqlite, npy, elf   by magic, nothing more
 *   empty, binary     nothing more
 *
 * Threads: thread-safe (no shared state; snapshot ids atomic), one caller at a
 * time per snapshot; ws_snapshot_max_watches() is process-wide (a test knob).
 */
#ifndef CORRAL_ARTIFACT_H
#define CORRAL_ARTIFACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <corral/jail.h>

#include "../lib/util.h"
#include "workspace.h"

#define ARTIFACT_SCAN_MAX (64ull << 20) /* bytes read to count rows and lines */
#define ARTIFACT_HEAD_MAX 65536         /* bytes sniffed for the format */
#define ARTIFACT_TYPE_MAX 1000          /* files typed per diff */

/* Type the len bytes at data, the whole file or its first len bytes when
 * file_size is larger (then counts are lower bounds); name (may be NULL) is
 * the file's path, a tie-breaker among the text formats.  At most scan_max
 * bytes are looked at.  Adds the fields above to entry; -1 only on
 * allocation failure. */
CORRAL_HIDDEN int artifact_detect_mem(const void *data, size_t len, uint64_t file_size, const char *name,
                                      uint64_t scan_max, json_t *entry);

/* Open rel (clean, relative; no symlink anywhere on it) beneath root_fd
 * O_RDONLY | O_NONBLOCK | O_NOCTTY and type it as above.  Only regular files
 * with one link are read.  0 typed; -1 with errno when it could not be:
 * ELOOP/EXDEV (a symlink or a way out), EINVAL (not a regular file), EMLINK
 * (more than one link), or the open's or read's error. */
CORRAL_HIDDEN int artifact_detect_at(int root_fd, const char *rel, uint64_t scan_max, json_t *entry);

/* The first max_rows records of CSV text (delim: ',' when 0; RFC 4180
 * quoting) as [[cell, ...], ...], at most max_cols cells a row (*ret_more_cols
 * says when a row had more) and cell_max bytes a cell, cells as valid
 * UTF-8; blank lines skipped.  For the exports' table previews.  NULL on
 * allocation failure. */
CORRAL_HIDDEN json_t *artifact_csv_preview(const void *data, size_t len, unsigned char delim, size_t max_rows,
                                           size_t max_cols, size_t cell_max, bool *ret_more_cols);

/* Type every "created" or "modified" entry of type "file" in diff (a
 * workspace_diff() array) in place, the first ARTIFACT_TYPE_MAX of them (a
 * step that makes 100,000 files costs no more than one that makes 1,000).
 * Files that cannot be typed keep their entry as it was.  Returns how many
 * were typed. */
CORRAL_HIDDEN size_t artifact_type_diff(int root_fd, json_t *diff, uint64_t scan_max);

/* The same for a workspace, with the default scan cap. */
static inline size_t workspace_type_artifacts(struct workspace *ws, json_t *diff)
{
        return artifact_type_diff(ws->root_fd, diff, ARTIFACT_SCAN_MAX);
}

/* What an entry is, for people and models: "PNG 1200×600",
 * "CSV 42 rows × 5 columns", "JSON array of 12", "text, 3 lines"; "" when
 * the entry has no format.  Returns buf. */
CORRAL_HIDDEN char *artifact_describe(const json_t *entry, char *buf, size_t size);

/* A size as people write it: "812 B", "3.1 KB", "48 KB", "2.0 MB" (units
 * of 1024).  Returns buf. */
CORRAL_HIDDEN char *artifact_format_size(uint64_t bytes, char *buf, size_t size);

/* ---- snapshots that follow a workspace between steps ---- */

/* What to snapshot. */
enum {
        WS_SNAPSHOT_ALL = 1 << 0, /* input/ too (corral exec -w: the directory is the user's) */
};

/* A snapshot of the directory dirfd (not owned), like workspace_snapshot().
 * It also sets up change tracking (inotify on every directory, when the
 * kernel allows) so that workspace_snapshot_next() need not stat every
 * entry again. */
CORRAL_HIDDEN int ws_snapshot_dir(int dirfd, unsigned flags, struct ws_snapshot **ret, corral_error **ret_err);

/* The workspace now, given prev (a snapshot of the same workspace, or
 * NULL): when prev is tracking changes and the kernel lost none, only what
 * changed since prev is stat'ed again, and the tracking moves to the new
 * snapshot (prev stays valid for diffs, but a next() from it again would
 * walk the whole tree).  Otherwise a full walk, as workspace_snapshot().
 * ws_snapshot_dir_next() is the same for a directory fd and flags. */
CORRAL_HIDDEN int workspace_snapshot_next(struct workspace *ws, struct ws_snapshot *prev, struct ws_snapshot **ret,
                                          corral_error **ret_err);
CORRAL_HIDDEN int ws_snapshot_dir_next(int dirfd, unsigned flags, struct ws_snapshot *prev, struct ws_snapshot **ret,
                                       corral_error **ret_err);
/* Entries in a snapshot; whether it is tracking changes (tests, bench). */
CORRAL_HIDDEN size_t ws_snapshot_count(const struct ws_snapshot *s);
CORRAL_HIDDEN bool ws_snapshot_tracking(const struct ws_snapshot *s);
/* s was built from its predecessor's events, not by a full walk. */
CORRAL_HIDDEN bool ws_snapshot_incremental(const struct ws_snapshot *s);
/* A jail's result as corral_jail_result_to_json() gives it, plus what the
 * program did to the directory ws_fd: "artifacts" (workspace_diff() entries,
 * files typed by content) and "artifacts_truncated" when the directory had
 * more entries than a snapshot holds.  before: ws_fd's snapshot from before
 * the run (its change tracking makes the second one cheap), or NULL for the
 * plain result.  malloc'd, or NULL (ret_err set when it is not ENOMEM). */
CORRAL_HIDDEN char *artifact_result_to_json(const corral_jail_result *res, int ws_fd, struct ws_snapshot *before,
                                            corral_error **ret_err);
/* corral_jail_run() with its result as artifact_result_to_json() gives it
 * (*ret_json, malloc'd), the artifacts those of cfg->workspace when it has
 * one: what `corral exec --json` prints.  -1 with err, nothing in
 * *ret_res then. */
CORRAL_HIDDEN int artifact_jail_run(const corral_jail_config *cfg, const corral_jail_io *io,
                                    corral_jail_result *ret_res, char **ret_json, corral_error **ret_err);
/* The same with another way to run the jail (corral exec: a pooled jail
 * where one fits), called as corral_jail_run() is. */
typedef int (*artifact_runner)(const corral_jail_config *cfg, const corral_jail_io *io, corral_jail_result *ret_res,
                               void *userdata, corral_error **ret_err);
CORRAL_HIDDEN int artifact_jail_run_by(const corral_jail_config *cfg, const corral_jail_io *io, artifact_runner run,
                                       void *userdata, corral_jail_result *ret_res, char **ret_json,
                                       corral_error **ret_err);
/* Tests: watch at most n directories per snapshot (0: the default, 8,192;
 * a tree with more is walked whole every time). */
CORRAL_HIDDEN void ws_snapshot_max_watches(size_t n);

#endif
