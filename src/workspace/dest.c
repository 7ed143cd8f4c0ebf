/* dest.c: resolving the host paths corral writes after jailed code ran
 * (dest.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dest.h"
#include "workspace-internal.h"

#define MAX_LINKS 40     /* as the kernel's path walk */
#define MAX_DEPTH 4096   /* ".." steps up to "/" in ws_roots_containing() */

int ws_roots_add(struct ws_roots *r, const char *path, const char *what, corral_error **ret_err)
{
        struct stat st;
        if (stat(path, &st) < 0)
                return errno == ENOENT ? 0 : corral_fail(ret_err, errno, "cannot look at '%s'", path);
        struct ws_root *v = realloc(r->v, (r->n + 1) * sizeof(*v));
        if (v == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot note '%s'", path);
        r->v = v;
        v[r->n] = (struct ws_root){ .dev = st.st_dev, .ino = st.st_ino, .path = strdup(path), .what = strdup(what) };
        if (v[r->n].path == NULL || v[r->n].what == NULL) {
                free(v[r->n].path);
                free(v[r->n].what);
                return corral_fail(ret_err, ENOMEM, "cannot note '%s'", path);
        }
        r->n++;
        return 0;
}

void ws_roots_release(struct ws_roots *r)
{
        for (size_t i = 0; r && i < r->n; i++) {
                free(r->v[i].path);
                free(r->v[i].what);
        }
        if (r) {
                free(r->v);
                r->v = NULL;
                r->n = 0;
        }
}

static const struct ws_root *root_of(const struct ws_roots *r, const struct stat *st)
{
        for (size_t i = 0; r && i < r->n; i++)
                if (r->v[i].dev == st->st_dev && r->v[i].ino == st->st_ino)
                        return &r->v[i];
        return NULL;
}

/* Up through ".." (the kernel's: across mounts, never a link) until a root
 * or "/".  A directory a jail can write stays beneath its root whatever the
 * jail renames: it cannot move anything out of its mount. */
const struct ws_root *ws_roots_containing(const struct ws_roots *r, int fd)
{
        if (r == NULL || r->n == 0)
                return NULL;
        cleanup_close int cur = openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        for (int depth = 0; cur >= 0 && depth < MAX_DEPTH; depth++) {
                struct stat st, up;
                if (fstat(cur, &st) < 0)
                        return NULL;
                const struct ws_root *root = root_of(r, &st);
                if (root)
                        return root;
                int parent = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (parent < 0 || fstat(parent, &up) < 0 || (up.st_dev == st.st_dev && up.st_ino == st.st_ino)) {
                        if (parent >= 0)
                                close(parent);
                        return NULL;
                }
                close(cur);
                cur = parent;
        }
        return NULL;
}

void ws_dest_release(struct ws_dest *d)
{
        if (d == NULL)
                return;
        if (d->dirfd >= 0)
                close(d->dirfd);
        free(d->missing);
        free(d->name);
        free(d->shown);
        *d = (struct ws_dest){ .dirfd = -1 };
}

/* Replace *fd by next (both owned). */
static void step_to(int *fd, int next)
{
        close(*fd);
        *fd = next;
}

/* Append component c (n bytes) to the "a/b" list *list. */
static int add_missing(char **list, const char *c, size_t n)
{
        size_t len = *list ? strlen(*list) : 0;
        char *m = realloc(*list, len + n + 2);
        if (m == NULL)
                return -1;
        if (len)
                m[len++] = '/';
        memcpy(m + len, c, n);
        m[len + n] = '\0';
        *list = m;
        return 0;
}

/* Walk dir (the path's directory part: every component, for a directory
 * destination) to its deepest existing directory, following links as
 * dest.h says.  *cur is the walk's position (owned); *missing collects what
 * does not exist. */
static int walk(const char *what, const char *shown, const char *dir, const struct ws_roots *roots, int *cur,
                char **missing, corral_error **ret_err)
{
        cleanup_free char *rest = strdup(dir);
        if (rest == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot resolve %s", what);
        unsigned links = 0;
        size_t pos = 0;
        for (;;) {
                while (rest[pos] == '/')
                        pos++;
                if (rest[pos] == '\0')
                        return 0;
                const char *c = rest + pos;
                size_t n = strcspn(c, "/");
                char name[NAME_MAX + 1];
                if (n > NAME_MAX)
                        return corral_usage(ret_err, "%s '%s' has a component longer than %d bytes", what, shown,
                                            NAME_MAX);
                memcpy(name, c, n);
                name[n] = '\0';
                pos += n;
                if (strcmp(name, ".") == 0)
                        continue;
                if (*missing) {
                        if (strcmp(name, "..") == 0)
                                return corral_usage(ret_err, "%s '%s' does not exist ('..' after '%s')", what, shown,
                                                    *missing);
                        if (add_missing(missing, name, n) < 0)
                                return corral_fail(ret_err, ENOMEM, "cannot resolve %s", what);
                        continue;
                }
                if (strcmp(name, "..") == 0) {
                        int up = openat(*cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                        if (up < 0)
                                return corral_fail(ret_err, errno, "cannot resolve %s '%s'", what, shown);
                        step_to(cur, up);
                        continue;
                }
                struct stat st;
                if (fstatat(*cur, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno != ENOENT)
                                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot use %s '%s'", what,
                                                         shown);
                        if (add_missing(missing, name, n) < 0)
                                return corral_fail(ret_err, ENOMEM, "cannot resolve %s", what);
                        continue;
                }
                if (S_ISLNK(st.st_mode)) {
                        const struct ws_root *root = ws_roots_containing(roots, *cur);
                        if (root)
                                return corral_usage(ret_err,
                                                    "%s '%s' leads through the symbolic link '%s' in %s '%s', which "
                                                    "code in a jail can write: corral does not follow it; choose a "
                                                    "path outside it",
                                                    what, shown, name, root->what, root->path);
                        if (++links > MAX_LINKS)
                                return corral_usage(ret_err, "%s '%s' has too many levels of symbolic links", what,
                                                    shown);
                        char target[PATH_MAX];
                        ssize_t t = readlinkat(*cur, name, target, sizeof(target) - 1);
                        if (t <= 0)
                                return corral_make_error(ret_err, CORRAL_ERR_USAGE, t < 0 ? errno : ENOENT,
                                                         "cannot resolve %s '%s'", what, shown);
                        target[t] = '\0';
                        /* The link's target, then what followed it. */
                        char *next = NULL;
                        if (asprintf(&next, "%s/%s", target, rest + pos) < 0)
                                return corral_fail(ret_err, ENOMEM, "cannot resolve %s", what);
                        free(rest);
                        rest = next;
                        pos = 0;
                        if (target[0] == '/') {
                                int top = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                                if (top < 0)
                                        return corral_fail(ret_err, errno, "cannot open '/'");
                                step_to(cur, top);
                        }
                        continue;
                }
                if (!S_ISDIR(st.st_mode))
                        return corral_usage(ret_err, "%s '%s' cannot be made: '%s' is %s, not a directory", what,
                                            shown, name, ws_type_phrase(st.st_mode));
                int next = openat(*cur, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot use %s '%s'", what, shown);
                step_to(cur, next);
        }
}

int ws_dest_open(const char *path, enum ws_dest_kind kind, const char *what, const struct ws_roots *roots,
                 struct ws_dest *ret, corral_error **ret_err)
{
        *ret = (struct ws_dest){ .dirfd = -1 };
        if (path == NULL || path[0] == '\0')
                return corral_usage(ret_err, "%s is an empty path", what);
        struct ws_dest d = { .dirfd = -1, .shown = strdup(path) };
        cleanup_free char *dir = strdup(path);
        if (d.shown == NULL || dir == NULL) {
                ws_dest_release(&d);
                return corral_fail(ret_err, ENOMEM, "cannot resolve %s", what);
        }
        if (kind == WS_DEST_FILE) {
                char *slash = strrchr(dir, '/');
                const char *base = slash ? slash + 1 : dir;
                if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
                        ws_dest_release(&d);
                        return corral_usage(ret_err, "%s '%s' names a directory, not a file", what, path);
                }
                d.name = strdup(base);
                if (slash)
                        slash[1] = '\0';
                else
                        dir[0] = '\0';
        }
        int cur = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        int r;
        if (kind == WS_DEST_FILE && d.name == NULL)
                r = corral_fail(ret_err, ENOMEM, "cannot resolve %s", what);
        else if (cur < 0)
                r = corral_fail(ret_err, errno, "cannot resolve %s '%s'", what, path);
        else
                r = walk(what, path, dir, roots, &cur, &d.missing, ret_err);
        const struct ws_root *root = r == 0 ? ws_roots_containing(roots, cur) : NULL;
        if (root)
                r = corral_usage(ret_err,
                                 "%s '%s' lies inside %s '%s', which code in a jail can write: choose a path "
                                 "outside it",
                                 what, path, root->what, root->path);
        /* O_PATH: making entries beneath it needs search and write
         * permission, not read. */
        if (r == 0)
                d.dirfd = TAKE_FD(cur);
        if (cur >= 0)
                close(cur);
        /* Can we make what is missing, or write the file, at all?  Asked
         * now, before the run, not at its end. */
        if (r == 0 && (d.missing || kind == WS_DEST_FILE) && faccessat(d.dirfd, ".", W_OK | X_OK, AT_EACCESS) < 0)
                r = corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot write %s '%s'", what, path);
        if (r == 0 && kind == WS_DEST_FILE && d.missing == NULL) {
                struct stat st;
                if (fstatat(d.dirfd, d.name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                        r = corral_usage(ret_err, "%s '%s' is a directory", what, path);
        }
        if (r < 0) {
                ws_dest_release(&d);
                return -1;
        }
        *ret = d;
        return 0;
}

int ws_dest_dir(const struct ws_dest *d, mode_t mode, corral_error **ret_err)
{
        int cur = fcntl(d->dirfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return corral_fail(ret_err, errno, "cannot open '%s'", d->shown);
        cleanup_free char *list = d->missing ? strdup(d->missing) : NULL;
        if (d->missing && list == NULL) {
                close(cur);
                return corral_fail(ret_err, ENOMEM, "cannot make '%s'", d->shown);
        }
        char *save = NULL;
        for (char *c = list ? strtok_r(list, "/", &save) : NULL; c; c = strtok_r(NULL, "/", &save)) {
                if (mkdirat(cur, c, mode) < 0 && errno != EEXIST) {
                        int e = errno;
                        close(cur);
                        return corral_fail(ret_err, e, "cannot make the directory '%s' of '%s'", c, d->shown);
                }
                int next = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0) {
                        int e = errno;
                        close(cur);
                        return corral_fail(ret_err, e, "cannot open the directory '%s' of '%s'", c, d->shown);
                }
                step_to(&cur, next);
        }
        return cur;
}

int ws_dest_write(const struct ws_dest *d, const char *data, size_t len, mode_t mode, corral_error **ret_err)
{
        cleanup_close int dfd = ws_dest_dir(d, 0755, ret_err);
        if (dfd < 0)
                return -1;
        struct stat st;
        if (fstatat(dfd, d->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                return corral_usage(ret_err, "cannot write '%s': it is a directory", d->shown);
        char tmp[WS_TEMP_NAME_MAX];
        int fd = ws_temp_create(dfd, d->name, 0600, tmp);
        if (fd < 0)
                return corral_fail(ret_err, errno, "cannot create a file beside '%s'", d->shown);
        int e = 0;
        if (fchmod(fd, mode) < 0 || write_all(fd, data, len) < 0 || fsync(fd) < 0)
                e = errno;
        /* close: NFS reports write errors there. */
        if (close(fd) < 0 && e == 0)
                e = errno;
        if (e == 0 && renameat(dfd, tmp, dfd, d->name) < 0)
                e = errno;
        if (e != 0) {
                (void)unlinkat(dfd, tmp, 0);
                return corral_fail(ret_err, e, "cannot write '%s'", d->shown);
        }
        return 0;
}
