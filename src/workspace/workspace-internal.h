/* workspace-internal.h: the pieces of workspace/, shared between its files.
 *
 *   resolve.c   the model's paths: normalizing them, opening them beneath a
 *               directory fd (openat2, or a component walk without it), and
 *               saying why a path was refused
 *   walk.c      bounded, sorted, fd-based tree walks that never follow a
 *               symlink; removing a tree
 *   copy.c      copying a file or a tree between directory fds (temporary
 *               name, then rename) and workspace_copy_out()
 *   workspace.c workspace_open() and workspace_close()
 *   manifest.c  manifests: parsing and checking them (nothing staged)
 *   stage.c     staging: workspace_stage_input(), workspace_stage_manifest()
 *               (read-only entries bound by fd, writable ones copied), the
 *               mount points, workspace_describe_inputs()
 *   files.c     the model's file tools: read, write, list
 *   snapshot.c  snapshots (full walks, or updates from inotify events) and
 *               their diff (artifact.h)
 *   artifact.c  typing a changed file by its content (artifact.h)
 *   archive.c   workspaces as tar archives: writing, listing, extracting
 *               (archive.h); archive-dl.c loads libarchive on first use
 *
 * Threads: one caller at a time per workspace.
 */
#ifndef CORRAL_WORKSPACE_INTERNAL_H
#define CORRAL_WORKSPACE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <jansson.h>

#include "workspace.h"

/* ---- resolve.c ---- */

/* Turn a path from the model ("output/a.txt", "./a", "/workspace/output/a")
 * into a clean relative one ("output/a.txt"; "" for the workspace itself).
 * Refuses absolute paths outside /workspace and any ".." component; empty
 * paths unless allow_root.  Errors are CORRAL_ERR_USAGE. */
CORRAL_HIDDEN int ws_path_normalize(const char *path, bool allow_root, char **ret, corral_error **ret_err);

/* Open the clean relative path (see ws_path_normalize; "" is dirfd itself)
 * beneath dirfd: openat2() with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV, plus RESOLVE_NO_SYMLINKS when no_symlinks.  O_CLOEXEC is
 * added.  Without openat2 (ENOSYS) it uses ws_walk_open().  Returns the fd,
 * or -1 with errno: EXDEV for a path leading outside dirfd or across a
 * mount, ELOOP for a symlink where none may be followed. */
CORRAL_HIDDEN int ws_open_beneath(int dirfd, const char *path, int flags, mode_t mode, bool no_symlinks);
/* The fallback: one component at a time from dirfd, each opened O_NOFOLLOW;
 * a symlink is followed by splicing its target into the rest of the path,
 * an absolute target or a ".." above dirfd is EXDEV, a change of st_dev is
 * EXDEV, and ".." pops a stack of fds (never the filesystem's ".."). */
CORRAL_HIDDEN int ws_walk_open(int dirfd, const char *path, int flags, mode_t mode, bool no_symlinks);
/* Tests: make ws_open_beneath() act as if openat2 were missing (true), or
 * probe it again (false). */
CORRAL_HIDDEN void ws_force_walk(bool force);

/* Fill *ret_err for a failed ws_open_beneath(root_fd, rel, ...) with errno
 * errnum: "cannot VERB 'shown': ..." saying, for EXDEV and ELOOP, which
 * symlink leads where.  Returns -1. */
CORRAL_HIDDEN int ws_resolve_error(corral_error **ret_err, int root_fd, const char *verb, const char *shown,
                                   const char *rel, int errnum);

/* Open the clean relative path rel like ws_open_beneath(root_fd, rel, ...),
 * but at or beneath a bound entry's destination through its source_fd (the
 * workspace holds only an empty mount point there), with the same rules
 * beneath the source.  *ret_base_fd and *ret_sub (optional) say what was
 * opened beneath what, for ws_resolve_error(). */
CORRAL_HIDDEN int ws_open_rel(struct workspace *ws, const char *rel, int flags, int *ret_base_fd,
                              const char **ret_sub);
/* A new fd of what fd (O_PATH is enough) refers to, opened with flags
 * (O_CLOEXEC added) through /proc/self/fd: how a bound entry's source is
 * read.  -1 with errno. */
CORRAL_HIDDEN int ws_reopen(int fd, int flags);

/* "file", "dir", "symlink", "fifo", "socket", "device" (JSON type names). */
CORRAL_HIDDEN const char *ws_type_name(mode_t mode);
/* "a regular file", "a directory", "a symbolic link", "a FIFO", ... */
CORRAL_HIDDEN const char *ws_type_phrase(mode_t mode);
/* A JSON string of a file name that may not be valid UTF-8 (invalid bytes
 * become U+FFFD).  NULL on allocation failure. */
CORRAL_HIDDEN json_t *ws_json_path(const char *s);
/* "a/b" from prefix "a" and name "b" (name alone when prefix is ""). */
CORRAL_HIDDEN char *ws_path_join(const char *prefix, const char *name);
/* "210 B", "12.3 KiB", "4.0 MiB" into buf (at least 32 bytes); returns buf. */
CORRAL_HIDDEN char *ws_format_size(uint64_t bytes, char *buf, size_t size);
/* The same with units[0..5] for KiB..EiB, and no decimal from 10 up when
 * whole_from_10 ("144 KB"). */
CORRAL_HIDDEN char *ws_format_size_in(uint64_t bytes, const char *const units[6], bool whole_from_10, char *buf,
                                      size_t size);

/* ---- manifest.c ---- */

/* How messages name entry i of m: "entries[N]" (N counting the manifest's
 * own entries) or "--input 'input/x'". */
CORRAL_HIDDEN void ws_manifest_entry_name(const struct ws_manifest *m, size_t i, char *buf, size_t size);

/* ---- stage.c ---- */

/* Close the staged entries' fds, free them and remove the staging store;
 * with remove_mount_points, also the (still empty) mount points of bound
 * entries in the workspace (a kept -w workspace). */
CORRAL_HIDDEN void ws_staged_release(struct workspace *ws, bool remove_mount_points);

/* ---- walk.c ---- */

/* The names in a directory (not "." or ".."), sorted bytewise. */
struct ws_names {
        char **v;
        size_t n;
        bool more; /* the directory had more than the max asked for */
};
/* Read at most max names of the directory dirfd (any fd of it, O_PATH too). */
CORRAL_HIDDEN int ws_names_read(int dirfd, size_t max, struct ws_names *ret);
CORRAL_HIDDEN void ws_names_release(struct ws_names *names);

/* A depth-first walk in name order that never follows a symlink: entries
 * are lstat'ed (fstatat AT_SYMLINK_NOFOLLOW) and directories opened
 * O_NOFOLLOW relative to their parent's fd. */
struct ws_walk {
        unsigned max_depth; /* 1: the start directory's entries only */
        size_t max_entries;
        /* visit: path is prefix/name; depth is 1 for the start's entries.
         * Return 1 to descend into a directory, 0 not to, -1 to stop the walk
         * (which then returns -1). */
        int (*visit)(struct ws_walk *w, int dirfd, const char *name, const char *path, const struct stat *st,
                     unsigned depth);
        void *data;
        /* Results: */
        size_t entries;     /* visited */
        bool truncated;     /* stopped at max_entries with entries left */
        bool depth_limited; /* a directory below max_depth was not entered */
        size_t unreadable;  /* directories that could not be opened */
};
CORRAL_HIDDEN int ws_walk_run(struct ws_walk *w, int dirfd, const char *prefix);

/* Remove the entry name in dirfd and, for a directory, everything in it:
 * never following a symlink, giving directories u+rwx when their mode is in
 * the way, with bounded recursion (subtrees deeper than WORKSPACE_MAX_DEPTH
 * are moved up into dirfd and removed from there).  ENOENT is success. */
CORRAL_HIDDEN int ws_remove_at(int dirfd, const char *name);
/* ws_remove_contents(), emptying a directory the same way: workspace.h. */

/* ---- copy.c ---- */

/* One copy job: a file or a tree from a source directory fd to a
 * destination directory fd.  Only regular files are copied (opened
 * O_NOFOLLOW | O_NONBLOCK, checked with fstat); each is written to a
 * temporary name (see ws_temp_create) then renamed over its final name.
 * Destination subdirectories are made with mkdirat and opened beneath their
 * parent with no symlinks; an existing destination entry that is not a
 * regular file is never replaced or written through.  Entries are reported
 * by their source path: src_name, then the path below it ("rel"). */
struct ws_copy {
        /* Options: */
        const char *src_name;    /* the source as reported ("output", "data") */
        const char *dest_name;   /* the destination as shown in messages */
        bool single_link;        /* skip files with st_nlink > 1 */
        bool strict;             /* going over a limit is an error, not a skipped entry */
        uint64_t budget;         /* bytes allowed (UINT64_MAX: no limit) */
        const char *budget_what; /* "the input budget": for the message when it runs out */
        /* Results: */
        uint64_t bytes;
        size_t files, entries;
        json_t *copied;    /* [{path, bytes}], or NULL not to list them */
        json_t *skipped;   /* [{path, reason}] */
        corral_error *err; /* why a call returned -1 */
};
/* Copy the regular file open as src_fd (st: its fstat) to dst_name in
 * dst_dirfd.  Returns 1 copied, 0 skipped (recorded), -1 failed (c->err). */
CORRAL_HIDDEN int ws_copy_file(struct ws_copy *c, int src_fd, const struct stat *st, int dst_dirfd,
                               const char *dst_name, const char *rel);
/* Copy the contents of the directory src_dirfd into dst_dirfd; rel is where
 * src_dirfd is below the source ("" for the top).  0, or -1 (c->err). */
CORRAL_HIDDEN int ws_copy_tree(struct ws_copy *c, int src_dirfd, int dst_dirfd, const char *rel);

/* Create a new file in dirfd named ".BASE.corral-XXXXXX" (".corral-XXXXXX"
 * when BASE is long), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW; the name is
 * stored in name (at least WS_TEMP_NAME_MAX bytes).  fd, or -1 with errno. */
#define WS_TEMP_NAME_MAX 256
CORRAL_HIDDEN int ws_temp_create(int dirfd, const char *base, mode_t mode, char *name);

/* Permission bits for a copied file: the source's & 0755 | 0644 (no set-id,
 * sticky, group or other write). */
static inline mode_t ws_copy_mode(mode_t m)
{
        return (m & 0755) | 0644;
}

#endif
