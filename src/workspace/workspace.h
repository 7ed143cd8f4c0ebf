/* workspace.h: the host side of /workspace, handled without trusting it.
 *
 * A run's workspace is a host directory bound read-write at /workspace in
 * every jail of the run: input/ holds the staged inputs (bound read-only),
 * output/ the artifacts the task should leave.  Code in the jail controls
 * everything in it, so corral treats its contents as hostile whenever it
 * touches them from the host: every path is resolved beneath the
 * workspace's directory fd (openat2 RESOLVE_BENEATH, no magic links, no
 * symlinks on the copy-out path), only regular files with a single link are
 * read or copied, files are opened O_NONBLOCK (a planted FIFO cannot hang
 * corral) and every read, walk and copy is bounded.  Knows nothing of jails
 * or models.
 *
 * Threads: one caller at a time per workspace; workspaces on different
 * threads are independent (the openat2 probe is atomic).
 */
#ifndef CORRAL_WORKSPACE_H
#define CORRAL_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <jansson.h>

#include "../lib/util.h"

#define WORKSPACE_MAX_ENTRIES 100000 /* a walk stops (and says so) past this */
#define WORKSPACE_MAX_DEPTH 64

/* One staged entry: an --input or a --manifest entry.  Shared by staging
 * (which fills it), the jail set-up (binds), the file tools and archiving. */
struct ws_staged {
        char *dest;      /* relative to the workspace: "input/sales.csv", "data/ref" */
        char *source;    /* host path it came from; NULL for inline content */
        bool dir;        /* a directory (recursively) rather than a file */
        bool writable;   /* copied in: the jail may change the copy */
        bool ephemeral;  /* never archived */
        bool bound;      /* bound read-only at dest in every jail; the workspace
                          * itself holds only an empty mount point there (for
                          * inline content, and a directory that had to be
                          * copied, the read-only copy source_fd names) */
        int source_fd;   /* bound entries: O_PATH fd of the source (-1 otherwise):
                          * read the content through it, never through dest */
};

struct workspace {
        char *root;      /* absolute host path */
        int root_fd;     /* O_DIRECTORY fd of root */
        bool created;    /* made by workspace_open(NULL) (a temporary directory) */
        struct ws_staged *staged; /* what was staged, in order */
        size_t n_staged;
        char *store;     /* private directory for read-only copies (outside the
                          * workspace, never in a jail), or NULL */
        bool open_inputs; /* workspace_attach(): input/ is a directory like any other */
        char *frozen;    /* a directory read-only to the file operations below, as input/
                          * is (workspace_freeze_dir()), or NULL */
};

/* dir NULL: create a fresh private directory (0700) with
 * workspace_make_temporary() under $TMPDIR (or /tmp).  Otherwise use the
 * existing directory dir.  Either way input/ and output/ exist afterwards. */
CORRAL_HIDDEN int workspace_open(const char *dir, struct workspace **ret, corral_error **ret_err);

/* An existing directory as it is (a sandbox's, whose files a server's
 * caller reads and writes): nothing is made in it, and input/ is not
 * read-only.  Close without remove. */
CORRAL_HIDDEN int workspace_attach(const char *dir, struct workspace **ret, corral_error **ret_err);
/* The same for the directory name in parent, opened without following a
 * link: for a directory a jail may still be changing (a going run's
 * output/), which it could swap for a link to anywhere on the host. */
CORRAL_HIDDEN int workspace_attach_beneath(const char *parent, const char *name, struct workspace **ret,
                                           corral_error **ret_err);

/* Temporary workspaces: "corral-ws-XXXXXX" (mode 0700) under tmpdir (NULL:
 * $TMPDIR, else /tmp), held with an flock on *ret_lock (an O_DIRECTORY fd
 * of it) for as long as the workspace is in use.  workspace_sweep() removes
 * those of tmpdir that are the caller's and that nobody holds: left by a
 * corral that was SIGKILLed (a lock dies with its process, whatever pid
 * namespace it is in).  Never follows a symlink. */
#define WS_TEMP_PREFIX "corral-ws-"
CORRAL_HIDDEN int workspace_make_temporary(const char *tmpdir, char **ret_path, int *ret_lock,
                                           corral_error **ret_err);
CORRAL_HIDDEN void workspace_sweep(const char *tmpdir);
/* Close; with remove, delete the directory tree first (never following a
 * symlink, making unreadable directories readable on the way; also a
 * directory given to workspace_open). NULL ok. */
CORRAL_HIDDEN void workspace_close(struct workspace *ws, bool remove);

/* Stage a host file or directory "PATH[:DEST]" at input/DEST (DEST relative,
 * no "..", default PATH's base name).  When the whole spec names an
 * existing path it is PATH (so paths may contain ':').  Copies regular files
 * and directories (reflink or copy_file_range where possible); symlinks,
 * devices, FIFOs and sockets inside a directory are skipped and listed.
 * *budget is the bytes still allowed, decremented.  ret_entry (optional):
 * {"source","dest","type":"file"|"dir","bytes","files","skipped":[{path,reason}]}
 * ("dest" is "input/DEST"; skipped paths name the source).  Errors: DEST
 * exists, is absolute or has "", "." or ".." components; PATH is missing or
 * neither a regular file nor a directory; the budget, WORKSPACE_MAX_ENTRIES
 * or WORKSPACE_MAX_DEPTH is exceeded.  On error nothing of this input stays
 * in input/ and *budget is unchanged. */
CORRAL_HIDDEN int workspace_stage_input(struct workspace *ws, const char *spec, uint64_t *budget, json_t **ret_entry,
                                        corral_error **ret_err);

/* ---- manifests (manifest.c; docs/workspace.md "Manifests") ---- */

#define WS_MANIFEST_MAX_BYTES (4u << 20)  /* a manifest file */
#define WS_MANIFEST_MAX_ENTRIES 10000

enum ws_source_kind {
        WS_SOURCE_FILE,    /* "file": a host regular file */
        WS_SOURCE_DIR,     /* "dir": a host directory, recursively */
        WS_SOURCE_CONTENT, /* "content" (text) or "base64": inline bytes */
};

struct ws_manifest_entry {
        char *dest;        /* clean, relative to the workspace: "data/sales.csv" */
        enum ws_source_kind kind;
        char *source;      /* file, dir: the host path (made absolute) */
        char *content;     /* inline: the bytes (NUL-terminated, may hold NULs) */
        size_t content_len;
        bool writable;     /* copied in, changes stay in the workspace */
        bool ephemeral;    /* not archived */
        bool from_input;   /* one of the run's inputs (ws_manifest_add_input), not a manifest's entry */
};

struct ws_manifest {
        struct ws_manifest_entry *v;
        size_t n;
};

/* Parse a manifest's JSON text: {"entries":[{"dest":..., "file"|"dir"|
 * "content"|"base64":..., "writable":bool, "ephemeral":bool}]}.  Relative
 * source paths are taken from base_dir (NULL: the current directory).
 * Checks the schema (unknown or duplicate keys, wrong types) and each
 * destination (see ws_manifest_check); errors are CORRAL_ERR_USAGE naming the
 * entry and field ("entries[2].dest: ...").  Sources are not looked at yet.
 * *ret is appended to (it may hold entries already); on error it is left as
 * it was. */
CORRAL_HIDDEN int ws_manifest_parse(struct ws_manifest *m, const char *text, size_t len, const char *base_dir,
                                    corral_error **ret_err);
/* The same from a file (at most WS_MANIFEST_MAX_BYTES); relative sources are
 * taken from the file's directory. */
CORRAL_HIDDEN int ws_manifest_load(struct ws_manifest *m, const char *path, corral_error **ret_err);
/* Add --input "PATH[:DEST]" as a read-only entry at input/DEST (DEST: the
 * base name of PATH by default; the whole spec is PATH when it names an
 * existing path). */
CORRAL_HIDDEN int ws_manifest_add_input(struct ws_manifest *m, const char *spec, corral_error **ret_err);
/* Check a destination: relative, not empty, no "", "." or ".." components,
 * no component over NAME_MAX, not ".corral" or beneath it, not input/ or
 * output/ themselves, read-only entries not under output/ (copy-out would
 * take them for artifacts), writable ones not under input/ (read-only in
 * every jail).  what names it in the message. */
CORRAL_HIDDEN int ws_manifest_check_dest(const char *dest, bool writable, const char *what, corral_error **ret_err);
/* Check the whole manifest: every destination, and no two the same or one
 * inside another. */
CORRAL_HIDDEN int ws_manifest_check(const struct ws_manifest *m, corral_error **ret_err);
CORRAL_HIDDEN void ws_manifest_release(struct ws_manifest *m);

/* Stage every entry of m into the workspace, in order, recording each in
 * ws->staged.  Read-only files and directories are not copied: their source
 * is opened once (O_PATH, kept in source_fd) and the workspace gets an empty
 * mount point at dest that every jail binds the source onto, read-only
 * (see src/agent/tools.c).  A directory holding anything but regular files
 * and directories on one filesystem (symlinks, devices, FIFOs, sockets,
 * mount points) is copied instead, without those (they are listed as
 * skipped), then bound read-only like the rest.  Writable entries are copied
 * (reflink or copy_file_range where possible); inline content is written.
 * Never a hard link.  Sizes count against *budget (bytes, decremented) and
 * files against WORKSPACE_MAX_ENTRIES, bound or not.  A destination that
 * exists already, or whose parent is reached through a symlink, is an
 * error.  ret_report (optional): [{"source"|"content_bytes","dest","type":
 * "file"|"dir","staging":"bind"|"copy"|"write","writable","ephemeral",
 * "bytes","files","skipped":[{path,reason}]}].  On error what this call
 * staged is removed again. */
CORRAL_HIDDEN int workspace_stage_manifest(struct workspace *ws, const struct ws_manifest *m, uint64_t *budget,
                                           json_t **ret_report, corral_error **ret_err);
/* Before each jail: make sure every bound entry's mount point is in place
 * (recreating it, and its parents, when code in a jail moved or replaced
 * them; never through a symlink). */
CORRAL_HIDDEN int workspace_prepare_mounts(struct workspace *ws, corral_error **ret_err);
/* Remove from a workspace_diff() array the entries at or beneath a bound
 * entry's destination: mount points put back by workspace_prepare_mounts(),
 * not anything a jail did. */
CORRAL_HIDDEN void workspace_diff_drop_mounts(const struct workspace *ws, json_t *diff);
/* The staged entry whose dest is rel or contains it (rel: a clean relative
 * path), or NULL; with bound_only, bound entries only. */
CORRAL_HIDDEN const struct ws_staged *workspace_staged_at(const struct workspace *ws, const char *rel,
                                                          bool bound_only);

/* Read the regular file rel (clean, relative) beneath dirfd whole, never
 * through a symlink (ws_open_beneath(), O_NONBLOCK: a FIFO cannot hang
 * the reader), if it holds at most max bytes: malloc'd in *ret (NUL added),
 * its length in *ret_len.  -1 with errno: EFBIG past max, EINVAL not a
 * regular file, ELOOP/EXDEV a link or a way out.  For what corral reads back
 * from an output directory (the exports' figures and previews). */
CORRAL_HIDDEN int ws_read_beneath(int dirfd, const char *rel, size_t max, char **ret, size_t *ret_len);

/* Empty the directory dirfd (an O_RDONLY directory fd): never following a
 * symlink, giving directories u+rwx when their mode is in the way, with
 * bounded recursion (subtrees deeper than WORKSPACE_MAX_DEPTH are moved up
 * and removed from there).  For a workspace's directory, or a session's
 * restore directory undone (session/pause.c). */
CORRAL_HIDDEN int ws_remove_contents(int dirfd);

/* Add "sha256" (digest.h) to each file entry of entries (as
 * workspace_stage_manifest() reports them), read through what the jails
 * see: for telling a replay on other data. */
CORRAL_HIDDEN void workspace_digest_inputs(struct workspace *ws, json_t *entries);

/* What the model should know of the inputs: one line per file under input/
 * (path relative to /workspace, size) and, for text files, the first
 * head_lines lines (each cut at 200 bytes); at most max_files files.
 * Text: the first 4 KiB is valid UTF-8 without NUL; other files get
 * "(SIZE, binary)".  "" when input/ has no files; NULL on allocation
 * failure. */
CORRAL_HIDDEN char *workspace_describe_inputs(struct workspace *ws, size_t max_files, unsigned head_lines);

/* Snapshots of the tree (input/ excluded) to tell what a step changed.  A
 * snapshot also watches the tree with inotify, so that the next one can be
 * made from its events: workspace_snapshot_next() in artifact.h, which
 * also types the changed files by content. */
struct ws_snapshot;
CORRAL_HIDDEN int workspace_snapshot(struct workspace *ws, struct ws_snapshot **ret, corral_error **ret_err);
CORRAL_HIDDEN void ws_snapshot_free(struct ws_snapshot *s);
/* The walk stopped at WORKSPACE_MAX_ENTRIES or WORKSPACE_MAX_DEPTH: entries
 * past the limit are missing from the snapshot (and from any diff). */
CORRAL_HIDDEN bool ws_snapshot_truncated(const struct ws_snapshot *s);
/* Non-directory entries created, modified (size, mtime, inode or type
 * changed) or deleted between two snapshots, sorted by path in tree order
 * (bytewise with '/' first: "a/z" before "a-b"):
 * [{"path":"output/top5.csv","change":"created"|"modified"|"deleted",
 *   "type":"file"|"symlink"|"fifo"|"socket"|"device","size":N}]
 * Paths are relative to the workspace; size is the newer entry's (the
 * deleted one's for "deleted").  A directory replaced by a file is that file
 * "created", a file replaced by a directory "deleted".  A NULL snapshot is
 * empty.  NULL on allocation failure. */
CORRAL_HIDDEN json_t *workspace_diff(const struct ws_snapshot *before, const struct ws_snapshot *after);

/* The model's file tools.  path is relative to /workspace, or absolute
 * beneath /workspace ("/workspace/output/a.txt"); anything resolving
 * outside, through a symlink leaving the tree or a magic link, is refused.
 * Symlinks that stay inside are followed (but see write and list).  Errors
 * are CORRAL_ERR_USAGE when the path or the file is at fault, and say why
 * ("it leads outside the workspace ('output/x' is a symbolic link to
 * '/etc')", "it is a FIFO, not a regular file").
 *
 * read: regular files with one link only (a FIFO, socket, device, directory
 * or hard-linked file is an error naming what it is); at most max_bytes are
 * returned, NUL-terminated, *ret_truncated set when the file has more
 * (ret_len and ret_truncated may be NULL). */
CORRAL_HIDDEN int workspace_read_file(struct workspace *ws, const char *path, size_t max_bytes, char **ret_data,
                                      size_t *ret_len, bool *ret_truncated, corral_error **ret_err);
/* The regular file at path opened for reading (O_NONBLOCK), under read's
 * rules; its stat in *ret_st.  fd, or -1 with err. */
CORRAL_HIDDEN int workspace_open_file(struct workspace *ws, const char *path, struct stat *ret_st,
                                      corral_error **ret_err);
/* Write (create or replace) via a temporary name and rename; parents are
 * created; input/ is read-only.  Errors for anything but regular targets.
 * A new file is 0644, a replaced one keeps its permission bits; the last
 * component is never followed (a symlink there is refused); a path leading
 * into input/ through a symlink is refused too. */
CORRAL_HIDDEN int workspace_write_file(struct workspace *ws, const char *path, const char *data, size_t len,
                                       corral_error **ret_err);
/* The same in parts, for content that arrives in pieces (an upload):
 * begin, write as often as needed, then commit (the rename) or abort
 * (nothing left).  Each part fails with err and aborts by itself. */
struct ws_upload {
        int dirfd;
        int fd;
        char *base;
        char *path;
        mode_t mode;
        uint64_t written;
        char tmp[256];
};
CORRAL_HIDDEN int workspace_upload_begin(struct workspace *ws, const char *path, struct ws_upload *up,
                                         corral_error **ret_err);
CORRAL_HIDDEN int workspace_upload_write(struct ws_upload *up, const char *data, size_t len, corral_error **ret_err);
CORRAL_HIDDEN int workspace_upload_commit(struct ws_upload *up, corral_error **ret_err);
CORRAL_HIDDEN void workspace_upload_abort(struct ws_upload *up);
/* Remove the file, symlink (not followed) or directory tree at path, under
 * write's rules; the workspace itself cannot be removed. */
CORRAL_HIDDEN int workspace_remove_file(struct workspace *ws, const char *path, corral_error **ret_err);
/* Make the directory at path (and its parents) under write's rules: 0
 * made, 1 it was there, -1 with err. */
CORRAL_HIDDEN int workspace_make_dir(struct workspace *ws, const char *path, corral_error **ret_err);
/* Make the directory rel (a top-level name such as "tests") read-only to
 * the host-side operations above (write, upload, remove, make_dir, rename),
 * as input/ is: by its name and wherever a symlink leads into it.  Used by
 * the agent's test-driven mode to freeze the tests.  NULL: none. */
CORRAL_HIDDEN int workspace_freeze_dir(struct workspace *ws, const char *rel, corral_error **ret_err);
/* Rename from to to (replacing a file there), both under write's rules;
 * a symlink is moved, not followed. */
CORRAL_HIDDEN int workspace_rename(struct workspace *ws, const char *from, const char *to, corral_error **ret_err);
/* [{"path","type","size","mode","mtime"}] beneath path ("" or "." for all), depth-first,
 * sorted, at most max_entries (then the last element is {"truncated":true}).
 * path may be a file (then only its entry).  Symlinks are listed, never
 * followed, with "target"; directories have no "size".  max_depth 1 lists
 * path's own entries; 0 (or more than WORKSPACE_MAX_DEPTH) means
 * WORKSPACE_MAX_DEPTH, max_entries 0 (or more) WORKSPACE_MAX_ENTRIES. */
CORRAL_HIDDEN int workspace_list_files(struct workspace *ws, const char *path, unsigned max_depth, size_t max_entries,
                                       json_t **ret, corral_error **ret_err);

/* Copy output/ to the host directory dest (dest.h: a directory destination
 * resolved before the run; what is missing of it is made now): regular
 * single-link files only, never through a symlink on either side, never
 * outside dest, each file written to a temporary name then renamed; mode
 * bits: the source's & 0755 | 0644 (no set-id, sticky, group or other write).
 * An existing regular file in dest is replaced; an existing symlink or other
 * non-regular entry is left alone and the file skipped.  ret_report
 * (optional; paths name the source, "output/a.txt"):
 * {"dest": "...", "copied":[{"path","bytes"}], "skipped":[{"path","reason"}]}.
 * Copies what it can; fails only when dest cannot be made or written. */
struct ws_dest;
CORRAL_HIDDEN int workspace_copy_out(struct workspace *ws, const struct ws_dest *dest, json_t **ret_report,
                                     corral_error **ret_err);

#endif
