/* resolve.c: the model's paths, opened without leaving the workspace.
 *
 * A path from the model is first made clean and relative (no "..", nothing
 * absolute outside /workspace), then opened beneath the workspace's fd by
 * the kernel: openat2 with RESOLVE_BENEATH refuses any step out of the tree
 * (a "..", an absolute symlink, a relative one climbing out), and
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV keep /proc links and mount points
 * out.  Kernels without openat2 (before 5.6) get the same rules from a walk
 * of one component at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "workspace-internal.h"

#define WS_PREFIX "/workspace"
#define MAX_SYMLINKS 40 /* as the kernel's MAXSYMLINKS */

int ws_path_normalize(const char *path, bool allow_root, char **ret, corral_error **ret_err)
{
        if (path == NULL || path[0] == '\0') {
                if (allow_root)
                        return (*ret = strdup("")) ? 0 : corral_fail(ret_err, ENOMEM, "cannot normalize a path");
                return corral_usage(ret_err, "the path is empty: name a file such as 'output/result.txt'");
        }
        if (strlen(path) >= PATH_MAX)
                return corral_usage(ret_err, "the path '%.64s...' is too long", path);
        const char *p = path;
        if (p[0] == '/') {
                size_t n = strlen(WS_PREFIX);
                if (strncmp(p, WS_PREFIX, n) != 0 || (p[n] != '\0' && p[n] != '/'))
                        return corral_usage(ret_err,
                                            "'%s' is outside the workspace: use a path relative to /workspace, "
                                            "such as 'output/result.txt'",
                                            path);
                p += n;
        }
        char *out = malloc(strlen(p) + 1);
        if (out == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot normalize '%s'", path);
        size_t o = 0;
        while (*p) {
                while (*p == '/')
                        p++;
                size_t n = strcspn(p, "/");
                if (n == 0)
                        break;
                if (n == 2 && p[0] == '.' && p[1] == '.') {
                        free(out);
                        return corral_usage(ret_err, "'%s' contains '..': paths must stay inside the workspace", path);
                }
                if (!(n == 1 && p[0] == '.')) {
                        if (o > 0)
                                out[o++] = '/';
                        memcpy(out + o, p, n);
                        o += n;
                }
                p += n;
        }
        out[o] = '\0';
        if (o == 0 && !allow_root) {
                free(out);
                return corral_usage(ret_err, "'%s' names the workspace directory itself, not a file", path);
        }
        *ret = out;
        return 0;
}

/* ---- opening beneath a directory ---- */

static int openat2_state; /* 0 not probed, 1 works, -1 missing (or forced off) */

void ws_force_walk(bool force)
{
        __atomic_store_n(&openat2_state, force ? -1 : 0, __ATOMIC_RELAXED);
}

int ws_open_beneath(int dirfd, const char *path, int flags, mode_t mode, bool no_symlinks)
{
        if (__atomic_load_n(&openat2_state, __ATOMIC_RELAXED) >= 0) {
                struct open_how how = {
                        .flags = (uint64_t)(flags | O_CLOEXEC),
                        .mode = (flags & (O_CREAT | __O_TMPFILE)) ? mode : 0,
                        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV |
                                   (no_symlinks ? RESOLVE_NO_SYMLINKS : 0),
                };
                /* EAGAIN: a rename or mount raced with the lookup; retry. */
                for (int tries = 0; tries < 16; tries++) {
                        int fd = (int)syscall(SYS_openat2, dirfd, path[0] ? path : ".", &how, sizeof(how));
                        if (fd >= 0) {
                                __atomic_store_n(&openat2_state, 1, __ATOMIC_RELAXED);
                                return fd;
                        }
                        if (errno != EAGAIN)
                                break;
                }
                int e = errno;
                /* Some container seccomp profiles answer EPERM for system
                 * calls they do not know: on the first call, tell that from
                 * a real EPERM by opening dirfd itself. */
                if (e == EPERM && __atomic_load_n(&openat2_state, __ATOMIC_RELAXED) == 0) {
                        struct open_how probe = { .flags = O_PATH | O_CLOEXEC };
                        int fd = (int)syscall(SYS_openat2, dirfd, ".", &probe, sizeof(probe));
                        if (fd >= 0)
                                close(fd);
                        else if (errno == EPERM || errno == ENOSYS)
                                e = ENOSYS;
                }
                if (e != ENOSYS) {
                        errno = e;
                        return -1;
                }
                __atomic_store_n(&openat2_state, -1, __ATOMIC_RELAXED);
        }
        return ws_walk_open(dirfd, path, flags, mode, no_symlinks);
}

/* The rest of a path, with a symlink's target spliced in front. */
static char *splice_link(const char *target, const char *rest)
{
        char *s = NULL;
        if (asprintf(&s, "%s%s%s", target, rest[0] ? "/" : "", rest) < 0)
                return NULL;
        return s;
}

int ws_walk_open(int dirfd, const char *path, int flags, mode_t mode, bool no_symlinks)
{
        struct stat top;
        if (fstat(dirfd, &top) < 0)
                return -1;
        /* stack[0] is dirfd (not ours); stack[1..depth] are O_PATH fds of
         * the directories walked into, so ".." pops one and cannot climb
         * above dirfd whatever the filesystem's ".." says. */
        int stack[PATH_MAX / 2 + 2];
        unsigned depth = 0;
        stack[0] = dirfd;
        char *todo = strdup(path);
        int links = 0, fd = -1, err = 0;
        if (todo == NULL)
                return -1;
        char *p = todo;
        for (;;) {
                while (*p == '/')
                        p++;
                int cur = stack[depth];
                if (*p == '\0') {
                        /* The path ends at a directory ("", ".", "a/.."). */
                        fd = openat(cur, ".", flags | O_CLOEXEC, mode);
                        if (fd < 0)
                                err = errno;
                        break;
                }
                char *comp = p;
                size_t n = strcspn(p, "/");
                char *rest = p + n;
                while (*rest == '/')
                        rest++;
                bool last = *rest == '\0';
                comp[n] = '\0'; /* rest starts after the separator(s) */
                if (strcmp(comp, ".") == 0) {
                        p = rest;
                        continue;
                }
                if (strcmp(comp, "..") == 0) {
                        if (depth == 0) {
                                err = EXDEV;
                                break;
                        }
                        close(stack[depth--]);
                        p = rest;
                        continue;
                }
                struct stat st;
                bool exists = fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0;
                if (exists && S_ISLNK(st.st_mode) && (!last || !(flags & O_NOFOLLOW))) {
                        if (no_symlinks) {
                                err = ELOOP;
                                break;
                        }
                        if (++links > MAX_SYMLINKS) {
                                err = ELOOP;
                                break;
                        }
                        char target[PATH_MAX];
                        ssize_t len = readlinkat(cur, comp, target, sizeof(target) - 1);
                        if (len < 0) {
                                err = errno;
                                break;
                        }
                        target[len] = '\0';
                        if (target[0] == '/') {
                                err = EXDEV;
                                break;
                        }
                        char *next = splice_link(target, rest);
                        if (next == NULL) {
                                err = ENOMEM;
                                break;
                        }
                        free(todo);
                        todo = p = next;
                        continue;
                }
                if (exists && st.st_dev != top.st_dev) {
                        err = EXDEV;
                        break;
                }
                if (last) {
                        /* O_NOFOLLOW: a symlink swapped in since the fstatat
                         * fails with ELOOP rather than being followed. */
                        fd = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
                        if (fd < 0) {
                                err = errno;
                                break;
                        }
                        if (fstat(fd, &st) < 0 || st.st_dev != top.st_dev) {
                                err = EXDEV;
                                close(fd);
                                fd = -1;
                        }
                        break;
                }
                if (depth + 1 >= ARRAY_SIZE(stack)) {
                        err = ENAMETOOLONG;
                        break;
                }
                int next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0) {
                        err = errno;
                        break;
                }
                if (fstat(next, &st) < 0 || st.st_dev != top.st_dev) {
                        close(next);
                        err = EXDEV;
                        break;
                }
                stack[++depth] = next;
                p = rest;
        }
        while (depth > 0)
                close(stack[depth--]);
        free(todo);
        if (fd < 0)
                errno = err ? err : EIO;
        return fd;
}

/* ---- saying why ---- */

/* When the path's last component is a symlink: its target (sanitized),
 * read from its parent opened beneath root.  NULL otherwise. */
static char *link_target(int root_fd, const char *rel)
{
        const char *slash = strrchr(rel, '/');
        cleanup_free char *parent = slash ? strndup(rel, (size_t)(slash - rel)) : strdup("");
        if (parent == NULL)
                return NULL;
        cleanup_close int pfd = ws_open_beneath(root_fd, parent, O_PATH | O_DIRECTORY, 0, false);
        if (pfd < 0)
                return NULL;
        char target[PATH_MAX];
        ssize_t n = readlinkat(pfd, slash ? slash + 1 : rel, target, sizeof(target) - 1);
        if (n < 0)
                return NULL;
        return utf8_sanitize(target, (size_t)n, NULL);
}

/* The first prefix of rel that fails to open beneath root with errnum, when
 * it is a symlink: "'output/escape' is a symbolic link to '/etc'". */
static char *explain(int root_fd, const char *rel, int errnum)
{
        cleanup_free char *prefix = strdup(rel);
        if (prefix == NULL)
                return NULL;
        for (char *p = prefix;; p++) {
                if (*p != '/' && *p != '\0')
                        continue;
                char saved = *p;
                *p = '\0';
                int fd = ws_open_beneath(root_fd, prefix, O_PATH, 0, false);
                int e = errno;
                if (fd >= 0)
                        close(fd);
                else if (e == errnum) {
                        cleanup_free char *target = link_target(root_fd, prefix);
                        char *s = NULL;
                        if (target && asprintf(&s, "'%s' is a symbolic link to '%s'", prefix, target) < 0)
                                s = NULL;
                        return s;
                }
                if (saved == '\0')
                        return NULL;
                *p = saved;
        }
}

int ws_resolve_error(corral_error **ret_err, int root_fd, const char *verb, const char *shown, const char *rel,
                     int errnum)
{
        if (errnum == EXDEV || errnum == ELOOP) {
                cleanup_free char *why = explain(root_fd, rel, errnum);
                if (errnum == EXDEV)
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, 0,
                                                 "cannot %s '%s': it leads outside the workspace (%s)", verb, shown,
                                                 why ? why : "through a symbolic link or a mount point");
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, 0,
                                         "cannot %s '%s': too many levels of symbolic links, or a link corral does "
                                         "not follow%s%s%s",
                                         verb, shown, why ? " (" : "", why ? why : "", why ? ")" : "");
        }
        if (errnum == ENOTDIR)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, 0,
                                         "cannot %s '%s': a component of the path is not a directory", verb, shown);
        int kind = errnum == ENOMEM || errnum == EIO || errnum == EMFILE ? CORRAL_ERR_INTERNAL
                   : errnum == ENOENT                                    ? CORRAL_ERR_NOT_FOUND
                                                                         : CORRAL_ERR_USAGE;
        return corral_make_error(ret_err, kind, errnum, "cannot %s '%s'", verb, shown);
}

const char *ws_type_name(mode_t mode)
{
        switch (mode & S_IFMT) {
        case S_IFREG:
                return "file";
        case S_IFDIR:
                return "dir";
        case S_IFLNK:
                return "symlink";
        case S_IFIFO:
                return "fifo";
        case S_IFSOCK:
                return "socket";
        default:
                return "device";
        }
}

const char *ws_type_phrase(mode_t mode)
{
        switch (mode & S_IFMT) {
        case S_IFREG:
                return "a regular file";
        case S_IFDIR:
                return "a directory";
        case S_IFLNK:
                return "a symbolic link";
        case S_IFIFO:
                return "a FIFO";
        case S_IFSOCK:
                return "a socket";
        case S_IFCHR:
                return "a character device";
        case S_IFBLK:
                return "a block device";
        default:
                return "a file of unknown type";
        }
}

json_t *ws_json_path(const char *s)
{
        size_t n = strlen(s);
        if (utf8_valid(s, n))
                return json_stringn_nocheck(s, n);
        cleanup_free char *clean = utf8_sanitize(s, n, &n);
        return clean ? json_stringn_nocheck(clean, n) : NULL;
}

char *ws_path_join(const char *prefix, const char *name)
{
        char *s = NULL;
        if (asprintf(&s, "%s%s%s", prefix, prefix[0] ? "/" : "", name) < 0)
                return NULL;
        return s;
}

char *ws_format_size_in(uint64_t bytes, const char *const units[6], bool whole_from_10, char *buf, size_t size)
{
        if (bytes < 1024) {
                snprintf(buf, size, "%u B", (unsigned)bytes);
                return buf;
        }
        double v = (double)bytes / 1024.0;
        size_t u = 0;
        while (v >= 1024.0 && u + 1 < 6) {
                v /= 1024.0;
                u++;
        }
        snprintf(buf, size, whole_from_10 && v >= 10 ? "%.0f %s" : "%.1f %s", v, units[u]);
        return buf;
}

char *ws_format_size(uint64_t bytes, char *buf, size_t size)
{
        static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
        return ws_format_size_in(bytes, units, false, buf, size);
}

int ws_reopen(int fd, int flags)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        return open(path, flags | O_CLOEXEC);
}

int ws_open_rel(struct workspace *ws, const char *rel, int flags, int *ret_base_fd, const char **ret_sub)
{
        const struct ws_staged *b = workspace_staged_at(ws, rel, true);
        const char *sub = rel;
        int base = ws->root_fd, fd;
        if (b) {
                sub = rel + strlen(b->dest);
                sub += *sub == '/';
                base = b->source_fd;
        }
        if (b && sub[0] == '\0')
                fd = ws_reopen(b->source_fd, flags); /* the source itself (a file, or the top directory) */
        else
                fd = ws_open_beneath(base, sub, flags, 0, false);
        if (ret_base_fd)
                *ret_base_fd = base;
        if (ret_sub)
                *ret_sub = sub;
        return fd;
}
