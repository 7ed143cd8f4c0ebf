/* dest.h: the places on the host that corral writes after code ran in a
 * jail: an output directory, an archive, a trace, a run's records.
 *
 * Code in a jail can change everything in a directory it can write (the
 * workspace, a writable bind): it can turn an entry there into a symbolic
 * link to any host directory, and corral, acting later with the caller's
 * rights (often root), would write through it.  So every such destination
 * is resolved once, before the first step of a run (a session's archive:
 * when it is asked for), into a directory fd that every later write goes
 * beneath:
 *   - the path is the caller's, so its symbolic links are followed as the
 *     kernel would follow them, except a link found in a directory a jail
 *     can write: that is refused, never followed;
 *   - a destination that lies inside such a directory is refused;
 *   - components that do not exist yet are made only when needed, one at a
 *     time beneath the fd, never through a link (ws_dest_dir()).
 * Thread-safe: no shared state.  docs/security.md, "Host paths".
 */
#ifndef CORRAL_WORKSPACE_DEST_H
#define CORRAL_WORKSPACE_DEST_H

#include <stdbool.h>
#include <sys/types.h>

#include "../lib/util.h"

/* Directories code in a jail can write (the workspace, writable binds),
 * known by device and inode, so a bind mount of one elsewhere is the same
 * directory. */
struct ws_root {
        dev_t dev;
        ino_t ino;
        char *path;    /* for messages */
        char *what;    /* "the workspace", "a writable bind" */
};
struct ws_roots {
        struct ws_root *v;
        size_t n;
};
/* Add the directory at path (followed: it is the caller's).  A path that
 * does not exist is skipped (a jail cannot write it either). */
CORRAL_HIDDEN int ws_roots_add(struct ws_roots *r, const char *path, const char *what, corral_error **ret_err);
CORRAL_HIDDEN void ws_roots_release(struct ws_roots *r);
/* The root fd lies in, at any depth, or NULL. */
CORRAL_HIDDEN const struct ws_root *ws_roots_containing(const struct ws_roots *r, int fd);

enum ws_dest_kind {
        WS_DEST_DIR,   /* a directory (made when needed) */
        WS_DEST_FILE,  /* a file: its directory (made when needed) and its name */
};

struct ws_dest {
        int dirfd;       /* the deepest directory of the path that existed (O_PATH) */
        char *missing;   /* "a/b": directories still to make beneath dirfd, or NULL */
        char *name;      /* WS_DEST_FILE: the file's name; else NULL */
        char *shown;     /* the path as given */
};

/* Resolve path (absolute, or relative to the current directory) for kind.
 * what names it in messages ("the output directory").  Errors, all
 * CORRAL_ERR_USAGE but allocation: the path is empty or names a directory
 * for a file; it leads through a symbolic link in a directory of roots, or
 * lies inside one; a component is not a directory; the destination is a
 * directory for a file, or something else than a directory for a
 * directory; the deepest existing directory cannot be written. */
CORRAL_HIDDEN int ws_dest_open(const char *path, enum ws_dest_kind kind, const char *what,
                               const struct ws_roots *roots, struct ws_dest *ret, corral_error **ret_err);
/* The destination's directory (the directory itself for WS_DEST_DIR, the
 * file's for WS_DEST_FILE), made now where missing (mode, each component
 * made with mkdirat and opened with O_NOFOLLOW beneath the last): a new
 * O_DIRECTORY fd (O_PATH when nothing was missing: enough to make and rename
 * entries beneath it), or -1 with *ret_err. */
CORRAL_HIDDEN int ws_dest_dir(const struct ws_dest *d, mode_t mode, corral_error **ret_err);
/* Write a whole WS_DEST_FILE: to a fresh temporary file beside it (mode
 * 0600, then mode), synced, then renamed over the name, so an entry there
 * (a symlink too) is replaced, never written through, and a failure leaves
 * what was there.  Missing directories are made 0755. */
CORRAL_HIDDEN int ws_dest_write(const struct ws_dest *d, const char *data, size_t len, mode_t mode,
                                corral_error **ret_err);
CORRAL_HIDDEN void ws_dest_release(struct ws_dest *d);

#endif
