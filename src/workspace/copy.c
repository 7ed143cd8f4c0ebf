/* copy.c: copying files and trees between directory fds, and copy-out.
 *
 * Both sides are handled by fd: the source is walked with O_NOFOLLOW at
 * every level (regular files and directories only, each re-checked with
 * fstat once open), and the destination is written beneath a directory fd
 * that was opened once: subdirectories are made with mkdirat and opened with
 * no symlinks allowed, files are written to a fresh temporary name
 * (O_EXCL | O_NOFOLLOW) and renamed over the final name, which replaces a
 * regular file's directory entry rather than writing through it.  A
 * destination entry that is a symlink or anything but a regular file is
 * left alone and the file reported as skipped.  Temporary files never
 * outlive a failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <time.h>

#include "dest.h"
#include "workspace-internal.h"

#define CHUNK ((uint64_t)1 << 30)

int ws_temp_create(int dirfd, const char *base, mode_t mode, char *name)
{
        static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        static unsigned long counter;
        for (int tries = 0; tries < 100; tries++) {
                unsigned char rnd[6];
                if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
                        /* No entropy yet: unique enough with O_EXCL retries. */
                        uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20) ^
                                     __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0x9e3779b97f4a7c15ull;
                        for (size_t i = 0; i < sizeof(rnd); i++, x >>= 8)
                                rnd[i] = (unsigned char)x;
                }
                char suffix[sizeof(rnd) + 1];
                for (size_t i = 0; i < sizeof(rnd); i++)
                        suffix[i] = chars[rnd[i] % (sizeof(chars) - 1)];
                suffix[sizeof(rnd)] = '\0';
                /* ".BASE.corral-XXXXXX" is 15 bytes longer than BASE. */
                if (strlen(base) + 15 <= NAME_MAX)
                        snprintf(name, WS_TEMP_NAME_MAX, ".%s.corral-%s", base, suffix);
                else
                        snprintf(name, WS_TEMP_NAME_MAX, ".corral-%s", suffix);
                int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                if (fd >= 0 || errno != EEXIST)
                        return fd;
        }
        errno = EEXIST;
        return -1;
}

/* Copy src to dst from their offsets to src's end, at most limit bytes
 * (more returns -2): a reflink when the filesystem can, else
 * copy_file_range, else read and write.  *ret_bytes: bytes written.  -1
 * with errno on an I/O error. */
static int copy_data(int src, int dst, uint64_t limit, uint64_t *ret_bytes)
{
        *ret_bytes = 0;
        struct stat st;
        if (ioctl(dst, FICLONE, src) == 0 && fstat(dst, &st) == 0) {
                *ret_bytes = (uint64_t)st.st_size;
                return *ret_bytes > limit ? -2 : 0;
        }
        uint64_t done = 0;
        bool cfr = true;
        for (;;) {
                size_t want = (size_t)(limit - done >= CHUNK ? CHUNK : limit - done + 1);
                ssize_t n;
                if (cfr) {
                        n = copy_file_range(src, NULL, dst, NULL, want, 0);
                        /* Not between these files (or at all): fall back.
                         * 0 at the very start may be a file whose size the
                         * kernel does not know (procfs): let read() say. */
                        if ((n < 0 && errno != EINTR && errno != ENOSPC && errno != EDQUOT && errno != EIO) ||
                            (n == 0 && done == 0)) {
                                cfr = false;
                                continue;
                        }
                } else {
                        char buf[65536];
                        n = read(src, buf, want < sizeof(buf) ? want : sizeof(buf));
                        if (n > 0 && write_all(dst, buf, (size_t)n) < 0)
                                return -1;
                }
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                if (n == 0)
                        break;
                done += (uint64_t)n;
                *ret_bytes = done;
                if (done > limit)
                        return -2;
        }
        return 0;
}

/* "base/rel", or base alone for the top. */
static char *shown(const char *base, const char *rel)
{
        return rel[0] ? ws_path_join(base, rel) : strdup(base);
}

/* Record a skipped entry; allocation failures only lose the record. */
static int skip(struct ws_copy *c, const char *rel, const char *fmt, ...) CORRAL_PRINTF(3, 4);
static int skip(struct ws_copy *c, const char *rel, const char *fmt, ...)
{
        cleanup_free char *path = shown(c->src_name, rel);
        char *reason = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&reason, fmt, ap) < 0)
                reason = NULL;
        va_end(ap);
        if (path && reason && c->skipped)
                json_array_append_new(c->skipped, json_pack("{s:o, s:o}", "path", ws_json_path(path), "reason",
                                                            ws_json_path(reason)));
        free(reason);
        return 0;
}

/* A file that does not fit in what is left of the budget. */
static int over_budget(struct ws_copy *c, const char *rel, const char *src, uint64_t left)
{
        const char *what = c->budget_what ? c->budget_what : "the budget";
        char size[32];
        ws_format_size(left, size, sizeof(size));
        if (c->strict)
                return corral_usage(&c->err, "'%s' goes past %s (%s left)", src, what, size);
        return skip(c, rel, "it goes past %s (%s left)", what, size);
}

int ws_copy_file(struct ws_copy *c, int src_fd, const struct stat *st, int dst_dirfd, const char *dst_name,
                 const char *rel)
{
        if (!S_ISREG(st->st_mode))
                return skip(c, rel, "%s, not a regular file", ws_type_phrase(st->st_mode));
        if (c->single_link && st->st_nlink > 1)
                return skip(c, rel,
                            "it has %ju hard links (only files with a single link are copied: another link could "
                            "be a file from outside the workspace)",
                            (uintmax_t)st->st_nlink);
        cleanup_free char *dest = shown(c->dest_name, rel);
        cleanup_free char *src = shown(c->src_name, rel);
        if (dest == NULL || src == NULL)
                return corral_fail(&c->err, ENOMEM, "cannot copy a file");
        uint64_t left = c->budget - c->bytes;
        if ((uint64_t)st->st_size > left)
                return over_budget(c, rel, src, left);
        struct stat dst;
        if (fstatat(dst_dirfd, dst_name, &dst, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(dst.st_mode))
                return skip(c, rel, "the destination '%s' is %s: not replaced, not written through", dest,
                            ws_type_phrase(dst.st_mode));

        char tmp[WS_TEMP_NAME_MAX];
        cleanup_close int fd = ws_temp_create(dst_dirfd, dst_name, 0600, tmp);
        if (fd < 0)
                return corral_fail(&c->err, errno, "cannot create a file beside '%s'", dest);
        uint64_t n = 0;
        int r = copy_data(src_fd, fd, left, &n);
        /* close: NFS reports write errors there. */
        if (r == 0 && (fchmod(fd, ws_copy_mode(st->st_mode)) < 0 || close(TAKE_FD(fd)) < 0 ||
                       renameat(dst_dirfd, tmp, dst_dirfd, dst_name) < 0))
                r = -1;
        if (r < 0) {
                int e = errno;
                (void)unlinkat(dst_dirfd, tmp, 0);
                if (r == -2)
                        return over_budget(c, rel, src, left);
                return corral_fail(&c->err, e, "cannot copy '%s' to '%s'", src, dest);
        }
        c->bytes += n;
        c->files++;
        if (c->copied)
                json_array_append_new(c->copied,
                                      json_pack("{s:o, s:I}", "path", ws_json_path(src), "bytes", (json_int_t)n));
        return 1;
}

/* A limit reached: an error when strict, else a skipped entry. */
static int over_limit(struct ws_copy *c, const char *rel, const char *what)
{
        if (c->strict) {
                cleanup_free char *src = shown(c->src_name, rel);
                return corral_usage(&c->err, "'%s' %s", src ? src : c->src_name, what);
        }
        return skip(c, rel, "%s: not copied", what);
}

static int copy_tree(struct ws_copy *c, int src_dirfd, int dst_dirfd, const char *rel, unsigned depth)
{
        struct ws_names names;
        if (ws_names_read(src_dirfd, WORKSPACE_MAX_ENTRIES - c->entries + 1, &names) < 0) {
                if (errno == ENOMEM)
                        return corral_fail(&c->err, errno, "cannot read a directory");
                return skip(c, rel, "cannot read the directory: %s", strerror(errno));
        }
        int r = 0;
        for (size_t i = 0; i < names.n && r == 0; i++) {
                const char *name = names.v[i];
                cleanup_free char *sub = ws_path_join(rel, name);
                if (sub == NULL) {
                        r = corral_fail(&c->err, ENOMEM, "cannot copy a tree");
                        break;
                }
                if (c->entries >= WORKSPACE_MAX_ENTRIES) {
                        char what[96];
                        snprintf(what, sizeof(what), "is past the limit of %d entries", WORKSPACE_MAX_ENTRIES);
                        r = over_limit(c, sub, what);
                        if (r == 0)
                                r = 1; /* stop copying, quietly */
                        break;
                }
                c->entries++;
                struct stat st;
                if (fstatat(src_dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone since readdir */
                if (S_ISDIR(st.st_mode)) {
                        if (depth + 1 >= WORKSPACE_MAX_DEPTH) {
                                char what[96];
                                snprintf(what, sizeof(what), "is nested deeper than %d levels", WORKSPACE_MAX_DEPTH);
                                r = over_limit(c, sub, what);
                                continue;
                        }
                        cleanup_close int sfd =
                                openat(src_dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sfd < 0) {
                                skip(c, sub, "cannot open the directory: %s", strerror(errno));
                                continue;
                        }
                        cleanup_free char *dest = shown(c->dest_name, sub);
                        if (mkdirat(dst_dirfd, name, 0755) < 0 && errno != EEXIST) {
                                r = corral_fail(&c->err, errno, "cannot create the directory '%s'", dest);
                                break;
                        }
                        cleanup_close int dfd = ws_open_beneath(dst_dirfd, name, O_RDONLY | O_DIRECTORY, 0, true);
                        if (dfd < 0) {
                                if (errno == ELOOP)
                                        skip(c, sub, "the destination '%s' is a symbolic link: not written through",
                                             dest);
                                else if (errno == ENOTDIR)
                                        skip(c, sub, "the destination '%s' exists and is not a directory", dest);
                                else
                                        r = corral_fail(&c->err, errno, "cannot open the directory '%s'", dest);
                                continue;
                        }
                        r = copy_tree(c, sfd, dfd, sub, depth + 1);
                } else if (S_ISREG(st.st_mode)) {
                        cleanup_close int fd =
                                openat(src_dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
                        if (fd < 0 || fstat(fd, &st) < 0) {
                                skip(c, sub, "cannot open: %s", strerror(errno));
                                continue;
                        }
                        if (ws_copy_file(c, fd, &st, dst_dirfd, name, sub) < 0)
                                r = -1;
                } else {
                        skip(c, sub, "%s (only regular files and directories are copied)", ws_type_phrase(st.st_mode));
                }
        }
        ws_names_release(&names);
        if (r == 0 && names.more) {
                char what[96];
                snprintf(what, sizeof(what), "has entries past the limit of %d", WORKSPACE_MAX_ENTRIES);
                r = over_limit(c, rel, what);
                if (r == 0)
                        r = 1;
        }
        return r;
}

int ws_copy_tree(struct ws_copy *c, int src_dirfd, int dst_dirfd, const char *rel)
{
        return copy_tree(c, src_dirfd, dst_dirfd, rel, 0) < 0 ? -1 : 0;
}

int workspace_copy_out(struct workspace *ws, const struct ws_dest *d, json_t **ret_report, corral_error **ret_err)
{
        const char *dest = d->shown;
        cleanup_close int dfd = ws_dest_dir(d, 0755, ret_err);
        if (dfd < 0)
                return -1;
        json_t *copied = json_array(), *skipped = json_array();
        json_t *report = json_pack("{s:o, s:o, s:o}", "dest", ws_json_path(dest), "copied", copied, "skipped", skipped);
        if (report == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot copy the workspace's output");
        struct ws_copy c = {
                .src_name = "output",
                .dest_name = dest,
                .single_link = true,
                .budget = UINT64_MAX,
                .copied = copied,
                .skipped = skipped,
        };
        /* O_NOFOLLOW: code in a jail may have replaced output/ itself. */
        cleanup_close int sfd = openat(ws->root_fd, "output", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r = 0;
        if (sfd < 0) {
                struct stat st;
                if (fstatat(ws->root_fd, "output", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
                        skip(&c, "", "%s, not a directory: nothing was copied", ws_type_phrase(st.st_mode));
                else
                        skip(&c, "", "cannot open it: %s", strerror(errno));
        } else {
                r = ws_copy_tree(&c, sfd, dfd, "");
        }
        if (r < 0) {
                json_decref(report);
                if (ret_err) {
                        corral_error_free(*ret_err);
                        *ret_err = TAKE_PTR(c.err);
                }
                corral_error_free(c.err);
                return -1;
        }
        if (ret_report)
                *ret_report = report;
        else
                json_decref(report);
        return 0;
}
