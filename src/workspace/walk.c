/* walk.c: walking and removing trees that code in a jail may have shaped.
 *
 * Every step is relative to the parent's fd: entries are lstat'ed, never
 * followed, and a directory is entered with openat(O_NOFOLLOW), so a
 * symlink swapped in mid-walk is at worst reported as a symlink.  Walks are
 * bounded in entries and depth; removal recurses at most
 * WORKSPACE_MAX_DEPTH levels and moves deeper subtrees up to finish them.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "workspace-internal.h"

static int cmp_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

void ws_names_release(struct ws_names *names)
{
        for (size_t i = 0; i < names->n; i++)
                free(names->v[i]);
        free(names->v);
        names->v = NULL;
        names->n = 0;
}

int ws_names_read(int dirfd, size_t max, struct ws_names *ret)
{
        *ret = (struct ws_names){ 0 };
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                close(fd);
                return -1;
        }
        size_t alloc = 0;
        int err = 0;
        struct dirent *de;
        while ((errno = 0, de = readdir(d)) != NULL) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (ret->n >= max) {
                        ret->more = true;
                        break;
                }
                if (ret->n == alloc) {
                        size_t want = alloc ? alloc * 2 : 16;
                        char **v = realloc(ret->v, want * sizeof(*v));
                        if (v == NULL) {
                                err = ENOMEM;
                                break;
                        }
                        ret->v = v;
                        alloc = want;
                }
                if ((ret->v[ret->n] = strdup(de->d_name)) == NULL) {
                        err = ENOMEM;
                        break;
                }
                ret->n++;
        }
        if (de == NULL && errno != 0)
                err = errno;
        closedir(d);
        if (err) {
                ws_names_release(ret);
                errno = err;
                return -1;
        }
        if (ret->n > 1)
                qsort(ret->v, ret->n, sizeof(*ret->v), cmp_names);
        return 0;
}

/* Walk one directory; 1 when the walk must stop (limit reached), -1 on a
 * visit's error. */
static int walk_dir(struct ws_walk *w, int dirfd, const char *prefix, unsigned depth)
{
        struct ws_names names;
        size_t room = w->max_entries - w->entries;
        if (ws_names_read(dirfd, room + 1, &names) < 0) {
                w->unreadable++;
                return 0;
        }
        int r = 0;
        for (size_t i = 0; i < names.n && r == 0; i++) {
                if (w->entries >= w->max_entries) {
                        w->truncated = true;
                        r = 1;
                        break;
                }
                struct stat st;
                if (fstatat(dirfd, names.v[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone since readdir */
                cleanup_free char *path = ws_path_join(prefix, names.v[i]);
                if (path == NULL) {
                        r = -1;
                        break;
                }
                w->entries++;
                int v = w->visit(w, dirfd, names.v[i], path, &st, depth);
                if (v < 0) {
                        r = -1;
                        break;
                }
                if (v == 0 || !S_ISDIR(st.st_mode))
                        continue;
                if (depth >= w->max_depth) {
                        w->depth_limited = true;
                        continue;
                }
                int sub = openat(dirfd, names.v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0) {
                        w->unreadable++;
                        continue;
                }
                r = walk_dir(w, sub, path, depth + 1);
                close(sub);
        }
        if (r == 0 && names.more) {
                w->truncated = true;
                r = 1;
        }
        ws_names_release(&names);
        return r;
}

int ws_walk_run(struct ws_walk *w, int dirfd, const char *prefix)
{
        w->entries = 0;
        w->truncated = w->depth_limited = false;
        w->unreadable = 0;
        if (w->max_entries == 0 || w->max_entries > WORKSPACE_MAX_ENTRIES)
                w->max_entries = WORKSPACE_MAX_ENTRIES;
        if (w->max_depth == 0 || w->max_depth > WORKSPACE_MAX_DEPTH)
                w->max_depth = WORKSPACE_MAX_DEPTH;
        return walk_dir(w, dirfd, prefix, 1) < 0 ? -1 : 0;
}

/* ---- removal ---- */

struct rm_ctx {
        int top_fd;         /* where subtrees too deep to recurse into are moved */
        unsigned long next; /* queue of moved subtrees: .corral-rm-<done..next-1> */
        unsigned long done;
        int failed;
};

static void queue_name(char *buf, size_t size, unsigned long i)
{
        snprintf(buf, size, ".corral-rm-%d-%lu", (int)getpid(), i);
}

/* Open the directory name in dirfd for removal, giving it u+rwx when its
 * mode is in the way (code in a jail may leave a directory 0000). */
static int open_dir_for_removal(int dirfd, const char *name)
{
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == EACCES) {
                /* AT_SYMLINK_NOFOLLOW: glibc does it through O_PATH; where
                 * it cannot, the lstat makes sure a directory is chmod'ed. */
                if (fchmodat(dirfd, name, 0700, AT_SYMLINK_NOFOLLOW) < 0) {
                        struct stat st;
                        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
                            fchmodat(dirfd, name, 0700, 0) < 0)
                                return -1;
                }
                fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd >= 0) {
                struct stat st;
                if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
                        (void)fchmod(fd, (st.st_mode & 07777) | 0700);
        }
        return fd;
}

static void rm_contents(struct rm_ctx *ctx, int fd, unsigned depth);

/* Remove name in dirfd (at depth: dirfd is that deep below the top). */
static void rm_entry(struct rm_ctx *ctx, int dirfd, const char *name, unsigned depth)
{
        if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
                return;
        if (errno != EISDIR && errno != EPERM) {
                ctx->failed++;
                return;
        }
        int sub = open_dir_for_removal(dirfd, name);
        if (sub < 0) {
                ctx->failed++;
                return;
        }
        if (depth + 1 >= WORKSPACE_MAX_DEPTH && ctx->top_fd != dirfd) {
                /* Too deep to recurse: move it up to the top, removed later. */
                char qname[64];
                for (int tries = 0; tries < 100; tries++) {
                        queue_name(qname, sizeof(qname), ctx->next);
                        if (renameat2(dirfd, name, ctx->top_fd, qname, RENAME_NOREPLACE) == 0) {
                                ctx->next++;
                                close(sub);
                                return;
                        }
                        if (errno != EEXIST)
                                break;
                        ctx->next++;
                }
                ctx->failed++;
                close(sub);
                return;
        }
        rm_contents(ctx, sub, depth + 1);
        close(sub);
        if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                ctx->failed++;
}

static void rm_contents(struct rm_ctx *ctx, int fd, unsigned depth)
{
        /* Unlinking while reading may skip entries: read again until a
         * pass removes nothing. */
        for (;;) {
                int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
                if (d == NULL) {
                        if (dfd >= 0)
                                close(dfd);
                        ctx->failed++;
                        return;
                }
                int failed_before = ctx->failed;
                size_t seen = 0;
                struct dirent *de;
                while ((de = readdir(d)) != NULL) {
                        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                                continue;
                        seen++;
                        rm_entry(ctx, fd, de->d_name, depth);
                }
                closedir(d);
                /* Empty, or every entry failed: nothing more to gain. */
                if (seen == 0 || ctx->failed - failed_before >= (int)seen)
                        return;
                ctx->failed = failed_before;
        }
}

static int rm_run(int top_fd, int dirfd, const char *name)
{
        struct rm_ctx ctx = { .top_fd = top_fd };
        if (name)
                rm_entry(&ctx, dirfd, name, 0);
        else
                rm_contents(&ctx, dirfd, 0);
        while (ctx.done < ctx.next) {
                char qname[64];
                queue_name(qname, sizeof(qname), ctx.done++);
                rm_entry(&ctx, top_fd, qname, 0);
        }
        if (ctx.failed) {
                errno = ENOTEMPTY;
                return -1;
        }
        return 0;
}

int ws_remove_at(int dirfd, const char *name)
{
        return rm_run(dirfd, dirfd, name);
}

int ws_remove_contents(int dirfd)
{
        struct stat st;
        if (fstat(dirfd, &st) == 0 && (st.st_mode & 0700) != 0700)
                (void)fchmod(dirfd, (st.st_mode & 07777) | 0700);
        return rm_run(dirfd, dirfd, NULL);
}
