/* archive.h: workspaces as tar archives, written and read without trusting
 * them.
 *
 * workspace_archive() writes a workspace as a POSIX pax tar (readable by GNU
 * tar), walking it by fds and never following a symlink: the contents were
 * written by code in a jail.  archive_extract() and archive_list() read tar
 * archives only (ustar, pax, GNU; uncompressed, gzip or zstd) and refuse,
 * with an error naming the entry and why, anything that could reach outside
 * the destination (absolute paths, "..", symlinks pointing out, hard links
 * to what is not already in the tree), device files, FIFOs, sockets, other
 * formats, and bombs (entry count, total size, compression ratio).
 * Extraction goes to a temporary directory beside the destination, by fds,
 * and is renamed into place only when the whole archive was accepted:
 * a refused archive leaves nothing behind.  docs/workspace.md, "Archives".
 *
 * libarchive is loaded on first use (archive-dl.h).  Errors: a refused or
 * unreadable archive is CORRAL_ERR_USAGE; libarchive missing,
 * CORRAL_ERR_UNSUPPORTED; a failing write or allocation, CORRAL_ERR_INTERNAL.
 *
 * Threads: thread-safe (no shared state; libarchive loaded once, archive-dl.h);
 * one caller at a time per workspace.
 */
#ifndef CORRAL_WORKSPACE_ARCHIVE_H
#define CORRAL_WORKSPACE_ARCHIVE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "dest.h"
#include "workspace.h"

struct ws_archive_opts {
        /* Archive staged inputs too (entries of ws->staged with a source,
         * and input/); bound entries are read from their source_fd, since
         * the workspace holds only their mount point.  Ephemeral entries
         * are never archived. */
        bool include_inputs;
        /* NULL, or the text of a ".corral/run.json" entry written first (the
         * workspace's own .corral/run.json is then left out). */
        const char *run_json;
        /* With run_json: its name under .corral/ (NULL: "run.json"); a
         * session's archive writes "session.json". */
        const char *meta_name;
};

/* Write the workspace to dest (dest.h: a file destination the caller
 * resolved, its missing directories made now) as a pax tar: regular files,
 * directories and symlinks (stored as symlinks), depth-first in name order;
 * hard-linked files, FIFOs, sockets and devices are skipped and reported.
 * Sparse files are stored sparse (pax, GNU sparse format 1.0).  Modes
 * without set-id and sticky bits, mtimes in whole seconds, owner and group
 * 0 with no names (the jail's ids mean nothing on the host).  Written to a
 * temporary file beside the destination (mode 0600) and renamed over it
 * when complete: an entry there (a symlink too) is replaced, never written
 * through.  At most WORKSPACE_MAX_ENTRIES entries and WORKSPACE_MAX_DEPTH
 * levels; past them entries are skipped and the report says so.
 * ret_report (optional): {"path","entries","files","bytes","skipped":
 * [{path,reason}],"excluded":[path],"truncated":bool}. */
CORRAL_HIDDEN int workspace_archive(struct workspace *ws, const struct ws_dest *dest,
                                    const struct ws_archive_opts *opts, json_t **ret_report, corral_error **ret_err);

/* Limits for reading an archive; 0 in a field means its default. */
struct archive_limits {
        uint64_t max_entries;    /* default ARCHIVE_DEFAULT_MAX_ENTRIES */
        uint64_t max_bytes;      /* total size of the entries, default ARCHIVE_DEFAULT_MAX_BYTES */
        uint64_t max_ratio;      /* uncompressed / compressed bytes, default ARCHIVE_DEFAULT_MAX_RATIO */
        uint64_t ratio_min_bytes; /* the ratio is checked past this much uncompressed data
                                   * (default ARCHIVE_DEFAULT_RATIO_MIN_BYTES) */
};
#define ARCHIVE_DEFAULT_MAX_ENTRIES 100000
#define ARCHIVE_DEFAULT_MAX_BYTES (8ull << 30)
#define ARCHIVE_DEFAULT_MAX_RATIO 200
#define ARCHIVE_DEFAULT_RATIO_MIN_BYTES (16ull << 20)

/* Extract the archive at path into dest_dir, which must not exist or be an
 * empty directory (it is then replaced; its parent must exist).  Files get
 * the archive's permission bits without set-id and sticky bits and its
 * mtimes; owners are never set.  limits NULL: the defaults.
 * ret_report (optional): {"dest","entries","files","bytes","format",
 * "filters":[...]}.  On any error nothing is left: neither dest_dir nor
 * the temporary directory. */
CORRAL_HIDDEN int archive_extract(const char *path, const char *dest_dir, const struct archive_limits *limits,
                                  json_t **ret_report, corral_error **ret_err);

/* Restore an archive into an open workspace (corral run --from): extracted
 * into a temporary directory in the workspace, then each top-level entry
 * moved into place.  A top-level entry that already exists in the
 * workspace is an error, unless both are directories and the workspace's
 * is empty (input/ and output/ of a fresh workspace).  Nothing is left of
 * the archive on error.  ret_report as for archive_extract(), plus
 * "files_list": [{"path","type","size"}] of the archive's entries. */
CORRAL_HIDDEN int workspace_restore(struct workspace *ws, const char *path, const struct archive_limits *limits,
                                    json_t **ret_report, corral_error **ret_err);

/* Read the archive at path (or the size bytes at data, when path is NULL)
 * without extracting anything: {"format","filters":[...],"entries":
 * [{"path","type","size","mode","mtime","target"?,"refused"?}],
 * "refused":[{"path","reason"}],"ok":bool}.  type is "file", "dir",
 * "symlink", "hardlink", "fifo", "socket", "device"; "target" the link's
 * target; "refused" says why extraction would refuse the entry.  A limit
 * reached or a read error ends the listing with a last "refused" item.
 * Fails (CORRAL_ERR_USAGE) only when path cannot be opened or is not a
 * tar archive at all. */
CORRAL_HIDDEN int archive_list(const char *path, const void *data, size_t size, const struct archive_limits *limits,
                               json_t **ret, corral_error **ret_err);

#endif
