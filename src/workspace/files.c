/* files.c: the model's file tools (read, write, list) over the workspace.
 *
 * Paths are normalized (resolve.c) and opened beneath the workspace's fd, so
 * nothing the model names or a jail planted leads outside it.  Reads take
 * regular files with a single link only, opened O_NONBLOCK (a FIFO cannot
 * hang corral) and bounded; writes go to a temporary name in the target's
 * directory and are renamed over it, never through a symlink; listings
 * never follow a symlink.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "workspace-internal.h"

int workspace_open_file(struct workspace *ws, const char *path, struct stat *ret_st, corral_error **ret_err)
{
        cleanup_free char *rel = NULL;
        if (ws_path_normalize(path, false, &rel, ret_err) < 0)
                return -1;
        int base_fd;
        const char *sub;
        bool bound = workspace_staged_at(ws, rel, true) != NULL;
        cleanup_close int fd = ws_open_rel(ws, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, &base_fd, &sub);
        if (fd < 0) {
                int e = errno;
                if (e == ENXIO || e == EACCES) {
                        /* A socket (ENXIO), or no permission: say which. */
                        cleanup_close int pfd = ws_open_rel(ws, rel, O_PATH, NULL, NULL);
                        struct stat st;
                        if (pfd >= 0 && fstat(pfd, &st) == 0 && !S_ISREG(st.st_mode))
                                return corral_usage(ret_err, "cannot read '%s': it is %s, not a regular file", path,
                                                    ws_type_phrase(st.st_mode));
                }
                return ws_resolve_error(ret_err, base_fd, "read", path, sub, e);
        }
        struct stat *st = ret_st;
        if (fstat(fd, st) < 0)
                return corral_fail(ret_err, errno, "cannot stat '%s'", path);
        if (!S_ISREG(st->st_mode))
                return corral_usage(ret_err, "cannot read '%s': it is %s, not a regular file", path,
                                    ws_type_phrase(st->st_mode));
        /* A bound input is the user's own file, out of any jail's reach. */
        if (st->st_nlink > 1 && !bound)
                return corral_usage(ret_err,
                                    "cannot read '%s': it has %ju hard links, and corral reads only files with one "
                                    "(another link could be a file from outside the workspace)",
                                    path, (uintmax_t)st->st_nlink);
        return TAKE_FD(fd);
}

int workspace_read_file(struct workspace *ws, const char *path, size_t max_bytes, char **ret_data, size_t *ret_len,
                        bool *ret_truncated, corral_error **ret_err)
{
        struct stat st;
        cleanup_close int fd = workspace_open_file(ws, path, &st, ret_err);
        if (fd < 0)
                return -1;
        /* Read one byte past max_bytes to tell a file of exactly max_bytes
         * from a longer one; the file may also have grown since fstat. */
        size_t want = max_bytes < SIZE_MAX ? max_bytes + 1 : max_bytes;
        size_t alloc = (uint64_t)st.st_size < want ? (size_t)st.st_size + 1 : want;
        if (alloc < 64)
                alloc = 64 < want ? 64 : want;
        char *buf = malloc(alloc + 1);
        size_t len = 0;
        while (buf != NULL && len < want) {
                if (len == alloc) {
                        size_t next = alloc > want / 2 ? want : alloc * 2;
                        char *p = realloc(buf, next + 1);
                        if (p == NULL) {
                                free(buf);
                                buf = NULL;
                                break;
                        }
                        buf = p;
                        alloc = next;
                }
                ssize_t n = read(fd, buf + len, alloc - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        free(buf);
                        return corral_fail(ret_err, e, "cannot read '%s'", path);
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        if (buf == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot read '%s'", path);
        bool truncated = len > max_bytes;
        if (truncated)
                len = max_bytes;
        buf[len] = '\0';
        *ret_data = buf;
        if (ret_len)
                *ret_len = len;
        if (ret_truncated)
                *ret_truncated = truncated;
        return 0;
}

/* Is st the directory input/, the frozen directory (workspace_freeze_dir())
 * or the mount point of a bound directory?  Which one (NULL: none). */
static const char *read_only_dir(struct workspace *ws, const struct stat *st)
{
        struct stat ro;
        if (!ws->open_inputs && fstatat(ws->root_fd, "input", &ro, AT_SYMLINK_NOFOLLOW) == 0 && st->st_dev == ro.st_dev &&
            st->st_ino == ro.st_ino)
                return "input";
        if (ws->frozen && fstatat(ws->root_fd, ws->frozen, &ro, AT_SYMLINK_NOFOLLOW) == 0 &&
            st->st_dev == ro.st_dev && st->st_ino == ro.st_ino)
                return ws->frozen;
        for (size_t i = 0; i < ws->n_staged; i++) {
                if (!ws->staged[i].bound || !ws->staged[i].dir)
                        continue;
                int fd = ws_open_beneath(ws->root_fd, ws->staged[i].dest, O_PATH, 0, true);
                bool same = fd >= 0 && fstat(fd, &ro) == 0 && st->st_dev == ro.st_dev && st->st_ino == ro.st_ino;
                if (fd >= 0)
                        close(fd);
                if (same)
                        return ws->staged[i].dest;
        }
        return NULL;
}

/* Walk up from dirfd by ".." to the workspace root: is input/ (or a bound
 * directory) on the way?  (A symlink elsewhere in the tree may lead there.) */
static const char *under_input(struct workspace *ws, int dirfd)
{
        struct stat root, st;
        if (fstat(ws->root_fd, &root) < 0)
                return NULL;
        int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
        const char *found = NULL;
        for (unsigned i = 0; cur >= 0 && i <= PATH_MAX / 2; i++) {
                if (fstat(cur, &st) < 0 || (st.st_dev == root.st_dev && st.st_ino == root.st_ino))
                        break;
                if ((found = read_only_dir(ws, &st)) != NULL)
                        break;
                int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                close(cur);
                cur = up;
        }
        if (cur >= 0)
                close(cur);
        return found;
}

/* Open (creating as needed, like mkdir -p) the directory rel beneath the
 * workspace.  Each missing component is made with mkdirat in its parent,
 * itself opened beneath the root, so no step leaves the tree. */
static int open_parent(struct workspace *ws, const char *rel, const char *path, corral_error **ret_err)
{
        int fd = ws_open_beneath(ws->root_fd, rel, O_RDONLY | O_DIRECTORY, 0, false);
        if (fd >= 0 || errno != ENOENT)
                return fd >= 0 ? fd : ws_resolve_error(ret_err, ws->root_fd, "write", path, rel, errno);
        cleanup_free char *prefix = strdup(rel);
        if (prefix == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot write '%s'", path);
        cleanup_close int parent = fcntl(ws->root_fd, F_DUPFD_CLOEXEC, 0);
        for (char *p = prefix;; p++) {
                if (*p != '/' && *p != '\0')
                        continue;
                char saved = *p;
                *p = '\0';
                const char *name = strrchr(prefix, '/') ? strrchr(prefix, '/') + 1 : prefix;
                if (mkdirat(parent, name, 0755) < 0 && errno != EEXIST)
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno,
                                                 "cannot write '%s': cannot create the directory '%s'", path, prefix);
                fd = ws_open_beneath(ws->root_fd, prefix, O_RDONLY | O_DIRECTORY, 0, false);
                if (fd < 0)
                        return ws_resolve_error(ret_err, ws->root_fd, "write", path, prefix, errno);
                if (saved == '\0')
                        return fd;
                close(parent);
                parent = fd;
                *p = saved;
        }
}

/* path's directory, under write's rules: open beneath the root, not
 * input/ nor a read-only input (unless the workspace is attached);
 * *ret_base the last component (in *ret_rel). */
static int writable_parent(struct workspace *ws, const char *path, const char *verb, char **ret_rel,
                           const char **ret_base, corral_error **ret_err)
{
        cleanup_free char *rel = NULL;
        if (ws_path_normalize(path, false, &rel, ret_err) < 0)
                return -1;
        if (rel[0] == '\0' || strcmp(rel, ".") == 0)
                return corral_usage(ret_err, "cannot %s '%s': it is the workspace itself", verb, path);
        if (!ws->open_inputs && strncmp(rel, "input", 5) == 0 && (rel[5] == '/' || rel[5] == '\0'))
                return corral_usage(ret_err,
                                    "cannot %s '%s': input/ is read-only (write under output/ or elsewhere in "
                                    "the workspace)",
                                    verb, path);
        size_t fl = ws->frozen ? strlen(ws->frozen) : 0;
        if (fl && strncmp(rel, ws->frozen, fl) == 0 && (rel[fl] == '/' || rel[fl] == '\0'))
                return corral_usage(ret_err, "cannot %s '%s': %s/ is read-only now (frozen)", verb, path,
                                    ws->frozen);
        const struct ws_staged *ro = workspace_staged_at(ws, rel, true);
        if (ro)
                return corral_usage(ret_err,
                                    "cannot %s '%s': '%s' is a read-only input (write under output/ or elsewhere "
                                    "in the workspace)",
                                    verb, path, ro->dest);
        char *slash = strrchr(rel, '/');
        *ret_base = slash ? slash + 1 : rel;
        if (slash)
                *slash = '\0';
        int dirfd = open_parent(ws, slash ? rel : "", path, ret_err);
        if (dirfd < 0)
                return -1;
        const char *into = ws->open_inputs && !ws->frozen ? NULL : under_input(ws, dirfd);
        if (into) {
                close(dirfd);
                return corral_usage(ret_err, "cannot %s '%s': it leads into %s/, which is read-only", verb, path,
                                    into);
        }
        *ret_rel = TAKE_PTR(rel);
        return dirfd;
}

_Static_assert(sizeof(((struct ws_upload *)0)->tmp) >= WS_TEMP_NAME_MAX, "ws_upload.tmp holds a temporary name");

int workspace_upload_begin(struct workspace *ws, const char *path, struct ws_upload *up, corral_error **ret_err)
{
        memset(up, 0, sizeof(*up));
        up->dirfd = up->fd = -1;
        cleanup_free char *rel = NULL;
        const char *base;
        int dirfd = writable_parent(ws, path, "write", &rel, &base, ret_err);
        if (dirfd < 0)
                return -1;
        up->dirfd = dirfd;
        up->base = strdup(base);
        up->path = strdup(path);
        if (up->base == NULL || up->path == NULL) {
                workspace_upload_abort(up);
                return corral_fail(ret_err, ENOMEM, "cannot write '%s'", path);
        }
        /* The final component is never followed: a symlink or anything but
         * a regular file there is refused, a regular file replaced. */
        struct stat st;
        up->mode = 0644;
        if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (!S_ISREG(st.st_mode)) {
                        workspace_upload_abort(up);
                        return corral_usage(ret_err, "cannot write '%s': it is %s, not a regular file", path,
                                            ws_type_phrase(st.st_mode));
                }
                up->mode = st.st_mode & 0777; /* keep a replaced file's permissions (an executable stays one) */
        }
        up->fd = ws_temp_create(dirfd, base, 0600, up->tmp);
        if (up->fd < 0) {
                int e = errno;
                workspace_upload_abort(up);
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, e, "cannot write '%s'", path);
        }
        return 0;
}

int workspace_upload_write(struct ws_upload *up, const char *data, size_t len, corral_error **ret_err)
{
        if (up->fd < 0 || write_all(up->fd, data, len) < 0) {
                int e = up->fd < 0 ? EBADF : errno;
                corral_make_error(ret_err, CORRAL_ERR_USAGE, e, "cannot write '%s'", up->path ? up->path : "?");
                workspace_upload_abort(up);
                return -1;
        }
        up->written += len;
        return 0;
}

int workspace_upload_commit(struct ws_upload *up, corral_error **ret_err)
{
        if (up->fd < 0)
                return corral_fail(ret_err, EBADF, "cannot write '%s'", up->path ? up->path : "?");
        int fd = TAKE_FD(up->fd);
        if (fchmod(fd, up->mode) < 0 || close(fd) < 0 || renameat(up->dirfd, up->tmp, up->dirfd, up->base) < 0) {
                int e = errno;
                corral_make_error(ret_err, CORRAL_ERR_USAGE, e, "cannot write '%s'", up->path);
                workspace_upload_abort(up);
                return -1;
        }
        up->tmp[0] = '\0'; /* renamed: nothing to remove */
        workspace_upload_abort(up);
        return 0;
}

void workspace_upload_abort(struct ws_upload *up)
{
        if (up->fd >= 0)
                close(TAKE_FD(up->fd));
        if (up->dirfd >= 0 && up->tmp[0])
                (void)unlinkat(up->dirfd, up->tmp, 0);
        if (up->dirfd >= 0)
                close(TAKE_FD(up->dirfd));
        up->tmp[0] = '\0';
        free(TAKE_PTR(up->base));
        free(TAKE_PTR(up->path));
}

int workspace_write_file(struct workspace *ws, const char *path, const char *data, size_t len, corral_error **ret_err)
{
        struct ws_upload up;
        if (workspace_upload_begin(ws, path, &up, ret_err) < 0 || workspace_upload_write(&up, data, len, ret_err) < 0)
                return -1;
        return workspace_upload_commit(&up, ret_err);
}

int workspace_remove_file(struct workspace *ws, const char *path, corral_error **ret_err)
{
        cleanup_free char *rel = NULL;
        const char *base;
        cleanup_close int dirfd = writable_parent(ws, path, "remove", &rel, &base, ret_err);
        if (dirfd < 0)
                return -1;
        struct stat st;
        if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return corral_make_error(ret_err, errno == ENOENT ? CORRAL_ERR_NOT_FOUND : CORRAL_ERR_USAGE, errno,
                                         "cannot remove '%s'", path);
        if (S_ISDIR(st.st_mode)) {
                /* Opened without following a link swapped in since: its
                 * contents go, never through a symlink. */
                cleanup_close int fd = openat(dirfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || ws_remove_contents(fd) < 0 || unlinkat(dirfd, base, AT_REMOVEDIR) < 0)
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot remove '%s'", path);
                return 0;
        }
        if (unlinkat(dirfd, base, 0) < 0)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot remove '%s'", path);
        return 0;
}

int workspace_freeze_dir(struct workspace *ws, const char *rel, corral_error **ret_err)
{
        char *copy = NULL;
        if (rel && (copy = strdup(rel)) == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot freeze '%s'", rel);
        free(ws->frozen);
        ws->frozen = copy;
        return 0;
}

int workspace_make_dir(struct workspace *ws, const char *path, corral_error **ret_err)
{
        cleanup_free char *rel = NULL;
        const char *base;
        cleanup_close int dirfd = writable_parent(ws, path, "create", &rel, &base, ret_err);
        if (dirfd < 0)
                return -1;
        if (mkdirat(dirfd, base, 0755) == 0)
                return 0;
        struct stat st;
        if (errno == EEXIST && fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                return 1;
        return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot create the directory '%s'", path);
}

int workspace_rename(struct workspace *ws, const char *from, const char *to, corral_error **ret_err)
{
        cleanup_free char *from_rel = NULL, *to_rel = NULL;
        const char *from_base, *to_base;
        cleanup_close int from_fd = writable_parent(ws, from, "move", &from_rel, &from_base, ret_err);
        if (from_fd < 0)
                return -1;
        struct stat st;
        if (fstatat(from_fd, from_base, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return corral_make_error(ret_err, errno == ENOENT ? CORRAL_ERR_NOT_FOUND : CORRAL_ERR_USAGE, errno,
                                         "cannot move '%s'", from);
        cleanup_close int to_fd = writable_parent(ws, to, "move to", &to_rel, &to_base, ret_err);
        if (to_fd < 0)
                return -1;
        if (renameat(from_fd, from_base, to_fd, to_base) < 0)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot move '%s' to '%s'", from, to);
        return 0;
}

/* ---- listing ---- */

static json_t *list_entry(int dirfd, const char *name, const char *path, const struct stat *st)
{
        json_t *e = json_pack("{s:o, s:s, s:i, s:f}", "path", ws_json_path(path), "type", ws_type_name(st->st_mode),
                              "mode", (int)(st->st_mode & 07777), "mtime",
                              (double)st->st_mtim.tv_sec + st->st_mtim.tv_nsec / 1e9);
        if (e == NULL)
                return NULL;
        if (!S_ISDIR(st->st_mode))
                json_object_set_new(e, "size", json_integer((json_int_t)st->st_size));
        if (S_ISLNK(st->st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
                if (n >= 0) {
                        target[n] = '\0';
                        json_object_set_new(e, "target", ws_json_path(target));
                }
        }
        return e;
}

struct listing {
        struct workspace *ws;
        json_t *out;
};

static int list_visit(struct ws_walk *w, int dirfd, const char *name, const char *path, const struct stat *st,
                      unsigned depth)
{
        struct listing *l = w->data;
        /* A bound entry's mount point: list its source instead. */
        const struct ws_staged *b = workspace_staged_at(l->ws, path, true);
        struct stat bst;
        if (b && strcmp(b->dest, path) == 0 && fstat(b->source_fd, &bst) == 0) {
                json_t *e = list_entry(-1, path, path, &bst);
                if (e == NULL || json_array_append_new(l->out, e) < 0)
                        return -1;
                if (!S_ISDIR(bst.st_mode) || depth >= w->max_depth)
                        return 0;
                struct ws_walk sub = {
                        .max_depth = w->max_depth - depth,
                        .max_entries = w->max_entries > w->entries ? w->max_entries - w->entries : 1,
                        .visit = list_visit,
                        .data = l,
                };
                if (ws_walk_run(&sub, b->source_fd, path) < 0)
                        return -1;
                w->entries += sub.entries;
                w->truncated |= sub.truncated;
                return 0;
        }
        json_t *e = list_entry(dirfd, name, path, st);
        if (e == NULL || json_array_append_new(l->out, e) < 0)
                return -1;
        return 1;
}

int workspace_list_files(struct workspace *ws, const char *path, unsigned max_depth, size_t max_entries, json_t **ret,
                         corral_error **ret_err)
{
        cleanup_free char *rel = NULL;
        if (ws_path_normalize(path, true, &rel, ret_err) < 0)
                return -1;
        const char *shown = path && path[0] ? path : ".";
        int base_fd;
        const char *sub;
        cleanup_close int fd = ws_open_rel(ws, rel, O_PATH, &base_fd, &sub);
        if (fd < 0)
                return ws_resolve_error(ret_err, base_fd, "list", shown, sub, errno);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return corral_fail(ret_err, errno, "cannot stat '%s'", shown);
        json_t *out = json_array();
        if (out == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot list '%s'", shown);
        if (!S_ISDIR(st.st_mode)) {
                /* A single file (O_PATH followed a final symlink: st is
                 * what it leads to, never a symlink itself). */
                json_t *e = list_entry(-1, rel, rel, &st);
                if (e == NULL || json_array_append_new(out, e) < 0) {
                        json_decref(out);
                        return corral_fail(ret_err, ENOMEM, "cannot list '%s'", shown);
                }
                *ret = out;
                return 0;
        }
        struct listing l = { .ws = ws, .out = out };
        struct ws_walk w = {
                .max_depth = max_depth,
                .max_entries = max_entries,
                .visit = list_visit,
                .data = &l,
        };
        if (ws_walk_run(&w, fd, rel) < 0) {
                json_decref(out);
                return corral_fail(ret_err, ENOMEM, "cannot list '%s'", shown);
        }
        if (w.truncated && json_array_append_new(out, json_pack("{s:b}", "truncated", 1)) < 0) {
                json_decref(out);
                return corral_fail(ret_err, ENOMEM, "cannot list '%s'", shown);
        }
        *ret = out;
        return 0;
}

int ws_read_beneath(int dirfd, const char *rel, size_t max, char **ret, size_t *ret_len)
{
        cleanup_close int fd = ws_open_beneath(dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, true);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return -1;
        if (!S_ISREG(st.st_mode)) {
                errno = EINVAL;
                return -1;
        }
        if ((uint64_t)st.st_size > max) {
                errno = EFBIG;
                return -1;
        }
        char *buf = malloc((size_t)st.st_size + 1);
        if (buf == NULL)
                return -1;
        size_t got = 0;
        while (got < (size_t)st.st_size) {
                ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break; /* shrank meanwhile: what is there */
                got += (size_t)n;
        }
        buf[got] = '\0';
        *ret = buf;
        *ret_len = got;
        return 0;
}
