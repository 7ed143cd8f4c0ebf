/* archive.c: workspaces as tar archives (archive.h).
 *
 * Writing walks the workspace by fds (walk.c), never following a symlink,
 * and streams regular files into a pax tar written to a temporary file
 * beside the target.  Reading accepts the tar family only, checks every
 * entry against a model of the tree built so far (which paths are
 * directories, files, symlinks) before anything is written, and extracts
 * by fds: each parent is entered with O_NOFOLLOW from the temporary
 * directory's fd, so nothing is ever written through a symlink, whether
 * the archive made it or not.  Owners, ACLs and extended attributes in an
 * archive are ignored: archive_write_disk() is never used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "archive-dl.h"
#include "archive.h"
#include "workspace-internal.h"

#define BLOCK 65536


/* What an archive can set of a mode when extracted: never group or other
 * write (a "./" entry of 0777 would open the workspace to every local user),
 * never set-id or sticky. */
#define EXTRACT_PERM_MASK 0755
/* ---- reading: the checks ---- */

/* Kinds of entries in the model of the tree (json integers in r->seen). */
enum { SEEN_DIR = 'd', SEEN_FILE = 'f', SEEN_SYMLINK = 'l' };

struct reader {
        const struct archive_api *A;
        struct archive *a;
        int fd;
        struct archive_limits lim;
        const char *name;  /* the archive as shown in messages */
        json_t *seen;      /* clean path -> SEEN_* */
        uint64_t entries;
        uint64_t bytes;    /* sizes of the entries so far */
        bool checked_format;
};

/* One entry, checked. */
struct entry {
        char *path;        /* clean: no "", "." or ".." components; "" for the top */
        char *link;        /* hard link: the clean target; symlink: the target as stored */
        int type;          /* AE_IF* (AE_IFREG for a hard link) */
        bool hardlink;
        uint64_t size;
        mode_t perm;       /* & 0777 */
        time_t mtime;
};

static void entry_release(struct entry *e)
{
        free(e->path);
        free(e->link);
        *e = (struct entry){ 0 };
}

static void limits_fill(struct archive_limits *l, const struct archive_limits *given)
{
        *l = given ? *given : (struct archive_limits){ 0 };
        if (l->max_entries == 0)
                l->max_entries = ARCHIVE_DEFAULT_MAX_ENTRIES;
        if (l->max_bytes == 0)
                l->max_bytes = ARCHIVE_DEFAULT_MAX_BYTES;
        if (l->max_ratio == 0)
                l->max_ratio = ARCHIVE_DEFAULT_MAX_RATIO;
        if (l->ratio_min_bytes == 0)
                l->ratio_min_bytes = ARCHIVE_DEFAULT_RATIO_MIN_BYTES;
}

static void reader_close(struct reader *r)
{
        if (r->a)
                r->A->archive_read_free(r->a);
        r->a = NULL;
        if (r->fd >= 0)
                close(r->fd);
        r->fd = -1;
        json_decref(r->seen);
        r->seen = NULL;
}

static const char *archive_msg(struct reader *r)
{
        const char *m = r->A->archive_error_string(r->a);
        return m ? m : "unknown error";
}

/* Open path (or data) for reading: tar formats, gzip and zstd only. */
static int reader_open(struct reader *r, const char *path, const void *data, size_t size,
                       const struct archive_limits *limits, corral_error **ret_err)
{
        *r = (struct reader){ .fd = -1, .name = path ? path : "(memory)" };
        limits_fill(&r->lim, limits);
        r->A = archive_api_get(ret_err);
        if (r->A == NULL)
                return -1;
        r->seen = json_object();
        if (r->seen == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot read '%s'", r->name);
        if (path) {
                /* O_NONBLOCK: a FIFO named by mistake must not hang the open. */
                r->fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
                struct stat st;
                if (r->fd < 0 || fstat(r->fd, &st) < 0)
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot open the archive '%s'",
                                                 path);
                if (!S_ISREG(st.st_mode))
                        return corral_usage(ret_err, "cannot read '%s': it is %s, not an archive file", path,
                                            ws_type_phrase(st.st_mode));
        }
        const struct archive_api *A = r->A;
        r->a = A->archive_read_new();
        if (r->a == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot read '%s'", r->name);
        /* Only what a workspace archive can be: every other format and
         * filter libarchive knows is attack surface we do not need.  A
         * filter that would run an external program (ARCHIVE_WARN) is
         * accepted: it still only decompresses. */
        if (A->archive_read_support_format_tar(r->a) < ARCHIVE_WARN ||
            A->archive_read_support_filter_gzip(r->a) < ARCHIVE_WARN ||
            A->archive_read_support_filter_zstd(r->a) < ARCHIVE_WARN)
                return corral_fail(ret_err, 0, "cannot set up libarchive: %s", archive_msg(r));
        int rc = path ? A->archive_read_open_fd(r->a, r->fd, BLOCK) : A->archive_read_open_memory(r->a, data, size);
        if (rc < ARCHIVE_WARN)
                return corral_usage(ret_err,
                                    "cannot read '%s': %s (corral reads tar archives only: ustar, pax or GNU tar, "
                                    "uncompressed or gzip- or zstd-compressed)",
                                    r->name, archive_msg(r));
        return 0;
}

/* The format and the filters, once the first header is read: only the tar
 * family, through no filter but gzip and zstd (belt and braces: nothing
 * else is enabled). */
static int check_format(struct reader *r, char *why, size_t whylen)
{
        const struct archive_api *A = r->A;
        if ((A->archive_format(r->a) & ARCHIVE_FORMAT_BASE_MASK) != ARCHIVE_FORMAT_TAR) {
                snprintf(why, whylen, "it is not a tar archive (%s)", A->archive_format_name(r->a));
                return -1;
        }
        for (int i = 0; i < A->archive_filter_count(r->a); i++) {
                int code = A->archive_filter_code(r->a, i);
                if (code != ARCHIVE_FILTER_NONE && code != ARCHIVE_FILTER_GZIP && code != ARCHIVE_FILTER_ZSTD) {
                        snprintf(why, whylen, "it is compressed with %s (only gzip and zstd are read)",
                                 A->archive_filter_name(r->a, i));
                        return -1;
                }
        }
        return 0;
}

static json_t *filters_json(struct reader *r)
{
        json_t *v = json_array();
        for (int i = 0; v && i < r->A->archive_filter_count(r->a); i++)
                if (r->A->archive_filter_code(r->a, i) != ARCHIVE_FILTER_NONE)
                        json_array_append_new(v, json_string(r->A->archive_filter_name(r->a, i)));
        return v;
}

/* A compression bomb: more than max_ratio times as much data out as in,
 * once ratio_min_bytes have come out. */
static int check_ratio(struct reader *r, char *why, size_t whylen)
{
        int64_t out = r->A->archive_filter_bytes(r->a, 0);
        int64_t in = r->A->archive_filter_bytes(r->a, -1);
        if (r->A->archive_filter_count(r->a) < 2 || out <= 0 || in <= 0 || (uint64_t)out < r->lim.ratio_min_bytes)
                return 0;
        if ((uint64_t)out / (uint64_t)in <= r->lim.max_ratio)
                return 0;
        char a[32], b[32];
        snprintf(why, whylen,
                 "it expands more than %" PRIu64 " times (%s of compressed data gave %s): refused as a "
                 "compression bomb",
                 r->lim.max_ratio, ws_format_size((uint64_t)in, a, sizeof(a)),
                 ws_format_size((uint64_t)out, b, sizeof(b)));
        return -1;
}

/* Clean a path from the archive: "./a//b/" is "a/b".  NULL (why says
 * why) for an absolute path, a ".." component or one too deep or long;
 * what names the path in messages ("path", "hard link target"). */
static char *clean_path(const char *p, const char *what, unsigned *ret_depth, char *why, size_t whylen)
{
        if (p == NULL || p[0] == '\0') {
                snprintf(why, whylen, "has an empty %s", what);
                return NULL;
        }
        if (p[0] == '/') {
                snprintf(why, whylen, "has an absolute %s (entries must stay inside the destination)", what);
                return NULL;
        }
        if (strlen(p) >= PATH_MAX) {
                snprintf(why, whylen, "has a %s longer than %d bytes", what, PATH_MAX - 1);
                return NULL;
        }
        char *out = malloc(strlen(p) + 1);
        if (out == NULL) {
                snprintf(why, whylen, "cannot be checked: out of memory");
                return NULL;
        }
        size_t len = 0;
        unsigned depth = 0;
        for (const char *c = p; *c;) {
                size_t n = strcspn(c, "/");
                if (n == 2 && c[0] == '.' && c[1] == '.') {
                        snprintf(why, whylen, "has a '..' component in its %s (it would climb out of the destination)",
                                 what);
                        free(out);
                        return NULL;
                }
                if (n > NAME_MAX) {
                        snprintf(why, whylen, "has a %s component longer than %d bytes", what, NAME_MAX);
                        free(out);
                        return NULL;
                }
                if (n > 0 && !(n == 1 && c[0] == '.')) {
                        if (len)
                                out[len++] = '/';
                        memcpy(out + len, c, n);
                        len += n;
                        depth++;
                }
                c += n;
                while (*c == '/')
                        c++;
        }
        out[len] = '\0';
        if (depth > WORKSPACE_MAX_DEPTH) {
                snprintf(why, whylen, "is nested deeper than %d levels", WORKSPACE_MAX_DEPTH);
                free(out);
                return NULL;
        }
        *ret_depth = depth;
        return out;
}

/* A symlink's target must be relative and stay in the tree: ".."
 * components only at its start, no more of them than the link is deep.
 * ".." after a name is refused even when it looks harmless ("a/../b"): if
 * "a" is itself a symlink, ".." would step back from where it points, not
 * from "a" (the classic escape through two links). */
static int check_symlink_target(const char *target, unsigned parent_depth, char *why, size_t whylen)
{
        if (target == NULL || target[0] == '\0') {
                snprintf(why, whylen, "is a symbolic link with an empty target");
                return -1;
        }
        if (target[0] == '/') {
                snprintf(why, whylen,
                         "is a symbolic link to the absolute path '%.200s' (symlinks must stay inside the tree)",
                         target);
                return -1;
        }
        if (strlen(target) >= PATH_MAX) {
                snprintf(why, whylen, "is a symbolic link with a target longer than %d bytes", PATH_MAX - 1);
                return -1;
        }
        long depth = parent_depth;
        bool named = false;
        for (const char *c = target; *c;) {
                size_t n = strcspn(c, "/");
                if (n == 2 && c[0] == '.' && c[1] == '.') {
                        if (named) {
                                snprintf(why, whylen,
                                         "is a symbolic link to '%.200s': '..' after a name could leave the tree "
                                         "through another symbolic link",
                                         target);
                                return -1;
                        }
                        if (--depth < 0) {
                                snprintf(why, whylen, "is a symbolic link to '%.200s', which climbs out of the tree",
                                         target);
                                return -1;
                        }
                } else if (n > 0 && !(n == 1 && c[0] == '.')) {
                        named = true;
                }
                c += n;
                while (*c == '/')
                        c++;
        }
        return 0;
}

static int seen_get(struct reader *r, const char *path)
{
        return (int)json_integer_value(json_object_get(r->seen, path));
}

static int seen_set(struct reader *r, const char *path, int kind)
{
        return json_object_set_new_nocheck(r->seen, path, json_integer(kind));
}

static const char *seen_phrase(int kind)
{
        return kind == SEEN_DIR ? "a directory" : kind == SEEN_SYMLINK ? "a symbolic link" : "a file";
}

/* Check the current header against the limits and the tree so far and fill
 * e.  0: accepted (recorded in the model of the tree); 1: this entry is
 * refused (why); 2: reading must stop (a limit, a read error: why).  e->path
 * is set (possibly raw) whenever there is one to name. */
static int check_entry(struct reader *r, struct archive_entry *ae, struct entry *e, char *why, size_t whylen)
{
        const struct archive_api *A = r->A;
        const char *raw = A->archive_entry_pathname(ae);
        *e = (struct entry){ 0 };
        e->path = strdup(raw ? raw : "");
        if (e->path == NULL) {
                snprintf(why, whylen, "cannot be checked: out of memory");
                return 2;
        }
        if (++r->entries > r->lim.max_entries) {
                snprintf(why, whylen, "is past the limit of %" PRIu64 " entries: refused as an archive bomb",
                         r->lim.max_entries);
                return 2;
        }
        const char *hard = A->archive_entry_hardlink(ae);
        e->hardlink = hard != NULL;
        e->type = e->hardlink ? (int)AE_IFREG : (int)A->archive_entry_filetype(ae);
        e->perm = A->archive_entry_perm(ae) & 0777;
        e->mtime = A->archive_entry_mtime_is_set(ae) ? A->archive_entry_mtime(ae) : 0;
        int64_t size = A->archive_entry_size_is_set(ae) ? A->archive_entry_size(ae) : 0;
        e->size = size > 0 ? (uint64_t)size : 0;

        unsigned depth = 0;
        cleanup_free char *path = clean_path(raw, "path", &depth, why, whylen);
        if (path == NULL)
                return 1;
        free(e->path);
        e->path = TAKE_PTR(path);

        switch (e->type) {
        case AE_IFREG:
        case AE_IFDIR:
        case AE_IFLNK:
                break;
        case AE_IFCHR:
                snprintf(why, whylen, "is a character device: device files are refused");
                return 1;
        case AE_IFBLK:
                snprintf(why, whylen, "is a block device: device files are refused");
                return 1;
        case AE_IFIFO:
                snprintf(why, whylen, "is a FIFO: FIFOs are refused");
                return 1;
        case AE_IFSOCK:
                snprintf(why, whylen, "is a socket: sockets are refused");
                return 1;
        default:
                snprintf(why, whylen, "has an unknown type (0%o)", (unsigned)e->type);
                return 1;
        }
        if (e->path[0] == '\0') {
                if (e->type == AE_IFDIR)
                        return 0; /* "./": the destination itself */
                snprintf(why, whylen, "has an empty path");
                return 1;
        }
        /* Every parent must be a directory of the tree, never a symlink or
         * a file: writing beneath a symlink would write wherever it points. */
        for (char *slash = strchr(e->path, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                int kind = seen_get(r, e->path);
                if (kind == 0 && seen_set(r, e->path, SEEN_DIR) < 0)
                        kind = -1;
                if (kind == SEEN_SYMLINK)
                        snprintf(why, whylen,
                                 "lies beneath '%.200s', a symbolic link in the archive (it would be written "
                                 "through it)",
                                 e->path);
                else if (kind == SEEN_FILE)
                        snprintf(why, whylen, "lies beneath '%.200s', which is a file, not a directory", e->path);
                else if (kind < 0)
                        snprintf(why, whylen, "cannot be checked: out of memory");
                *slash = '/';
                if (kind == SEEN_SYMLINK || kind == SEEN_FILE)
                        return 1;
                if (kind < 0)
                        return 2;
        }
        if (e->type == AE_IFLNK) {
                const char *target = A->archive_entry_symlink(ae);
                if (check_symlink_target(target, depth - 1, why, whylen) < 0)
                        return 1;
                if ((e->link = strdup(target)) == NULL) {
                        snprintf(why, whylen, "cannot be checked: out of memory");
                        return 2;
                }
        }
        if (e->hardlink) {
                unsigned tdepth;
                char twhy[512];
                e->link = clean_path(hard, "hard link target", &tdepth, twhy, sizeof(twhy));
                if (e->link == NULL) {
                        snprintf(why, whylen, "is a hard link to '%.200s', outside the tree: it %s", hard, twhy);
                        return 1;
                }
                if (strcmp(e->link, e->path) == 0) {
                        snprintf(why, whylen, "is a hard link to itself");
                        return 1;
                }
                if (seen_get(r, e->link) != SEEN_FILE) {
                        snprintf(why, whylen,
                                 "is a hard link to '%.200s', which is not a regular file extracted before it "
                                 "(hard links may only join files of the archive)",
                                 e->link);
                        return 1;
                }
        }
        if (e->type == AE_IFREG) {
                if (e->size > r->lim.max_bytes - r->bytes) {
                        char lim[32], sz[32];
                        snprintf(why, whylen,
                                 "is %s, which takes the archive past the limit of %s in all: refused as an "
                                 "archive bomb",
                                 ws_format_size(e->size, sz, sizeof(sz)),
                                 ws_format_size(r->lim.max_bytes, lim, sizeof(lim)));
                        return 2;
                }
                r->bytes += e->size;
        }
        int old = seen_get(r, e->path);
        int kind = e->type == AE_IFDIR ? SEEN_DIR : e->type == AE_IFLNK ? SEEN_SYMLINK : SEEN_FILE;
        if (old && (old == SEEN_DIR) != (kind == SEEN_DIR)) {
                snprintf(why, whylen, "appears twice, first as %s, then as %s", seen_phrase(old), seen_phrase(kind));
                return 1;
        }
        if (seen_set(r, e->path, kind) < 0) {
                snprintf(why, whylen, "cannot be checked: out of memory");
                return 2;
        }
        return 0;
}

/* The next header: 1 with *ae, 0 at the end, -1 with why (fatal). */
static int next_header(struct reader *r, struct archive_entry **ae, char *why, size_t whylen)
{
        int rc = r->A->archive_read_next_header(r->a, ae);
        if (rc == ARCHIVE_EOF)
                return check_ratio(r, why, whylen) < 0 ? -1 : 0;
        if (rc < ARCHIVE_WARN) {
                snprintf(why, whylen, "%s", archive_msg(r));
                return -1;
        }
        if (!r->checked_format) {
                r->checked_format = true;
                if (check_format(r, why, whylen) < 0)
                        return -1;
        }
        if (check_ratio(r, why, whylen) < 0)
                return -1;
        return 1;
}

static const char *entry_type_name(const struct entry *e)
{
        return e->hardlink ? "hardlink" : ws_type_name((mode_t)e->type);
}

/* ---- listing ---- */

int archive_list(const char *path, const void *data, size_t size, const struct archive_limits *limits, json_t **ret,
                 corral_error **ret_err)
{
        struct reader r;
        if (reader_open(&r, path, data, size, limits, ret_err) < 0) {
                reader_close(&r);
                return -1;
        }
        json_t *entries = json_array(), *refused = json_array();
        json_t *out = json_pack("{s:o, s:o}", "entries", entries, "refused", refused);
        if (out == NULL) {
                reader_close(&r);
                return corral_fail(ret_err, ENOMEM, "cannot list '%s'", r.name);
        }
        char why[1024];
        for (;;) {
                struct archive_entry *ae;
                int h = next_header(&r, &ae, why, sizeof(why));
                if (h == 0)
                        break;
                if (h < 0) {
                        if (r.entries == 0 && !r.checked_format) {
                                /* Not even a first header: not an archive we read. */
                                corral_usage(ret_err, "cannot read '%s': %s", r.name, why);
                                json_decref(out);
                                reader_close(&r);
                                return -1;
                        }
                        json_array_append_new(refused, json_pack("{s:n, s:o}", "path", "reason", ws_json_path(why)));
                        break;
                }
                struct entry e;
                int c = check_entry(&r, ae, &e, why, sizeof(why));
                json_t *j = json_pack("{s:o, s:s, s:I, s:i, s:I}", "path", ws_json_path(e.path ? e.path : ""), "type",
                                      entry_type_name(&e), "size", (json_int_t)e.size, "mode", (int)e.perm, "mtime",
                                      (json_int_t)e.mtime);
                const char *target = e.type == AE_IFLNK ? r.A->archive_entry_symlink(ae)
                                                        : r.A->archive_entry_hardlink(ae);
                if (j && target)
                        json_object_set_new(j, "target", ws_json_path(target));
                if (j && c > 0)
                        json_object_set_new(j, "refused", ws_json_path(why));
                if (c > 0)
                        json_array_append_new(refused, json_pack("{s:o, s:o}", "path",
                                                                 ws_json_path(e.path ? e.path : ""), "reason",
                                                                 ws_json_path(why)));
                if (c < 2)
                        json_array_append_new(entries, j);
                else
                        json_decref(j);
                entry_release(&e);
                if (c == 2)
                        break;
        }
        if (r.checked_format) {
                json_object_set_new(out, "format", json_string(r.A->archive_format_name(r.a)));
                json_object_set_new(out, "filters", filters_json(&r));
        }
        json_object_set_new(out, "ok", json_boolean(json_array_size(refused) == 0));
        reader_close(&r);
        *ret = out;
        return 0;
}

/* ---- extraction ---- */

/* Make a fresh directory in dirfd named "PREFIX-XXXXXX" (mode 0700). */
static int mkdtemp_at(int dirfd, const char *prefix, char *name, size_t size)
{
        static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
        for (int tries = 0; tries < 100; tries++) {
                unsigned char rnd[6] = { 0 };
                if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
                        uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16) ^ (uint64_t)tries * 7919;
                        memcpy(rnd, &x, sizeof(rnd));
                }
                char suffix[sizeof(rnd) + 1];
                for (size_t i = 0; i < sizeof(rnd); i++)
                        suffix[i] = chars[rnd[i] % (sizeof(chars) - 1)];
                suffix[sizeof(rnd)] = '\0';
                if (snprintf(name, size, "%s-%s", prefix, suffix) >= (int)size) {
                        errno = ENAMETOOLONG;
                        return -1;
                }
                if (mkdirat(dirfd, name, 0700) == 0)
                        return 0;
                if (errno != EEXIST)
                        return -1;
        }
        errno = EEXIST;
        return -1;
}

struct extract {
        struct reader r;
        int top;            /* the temporary directory */
        const char *verb;   /* "extract", "restore" */
        json_t *dirs;       /* path -> [mode, mtime], applied at the end */
        json_t *list;       /* [{path,type,size}] or NULL */
        uint64_t files;
        bool top_mode_set;
        mode_t top_mode;
        time_t top_mtime;
};

static int extract_refuse(struct extract *x, const char *path, const char *why, corral_error **ret_err)
{
        if (path && path[0])
                return corral_usage(ret_err, "cannot %s '%s': entry '%s' %s", x->verb, x->r.name, path, why);
        return corral_usage(ret_err, "cannot %s '%s': %s", x->verb, x->r.name, why);
}

/* Open the parent directory of path beneath x->top, making missing
 * directories (0700 until the end); every step O_NOFOLLOW. *ret_name
 * points at path's last component.  -1 with errno. */
static int open_parent(struct extract *x, char *path, bool create, const char **ret_name)
{
        int cur = fcntl(x->top, F_DUPFD_CLOEXEC, 0);
        char *p = path;
        for (char *slash; cur >= 0 && (slash = strchr(p, '/')) != NULL; p = slash + 1) {
                *slash = '\0';
                int next = openat(cur, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0 && errno == ENOENT && create && mkdirat(cur, p, 0700) == 0) {
                        /* A parent the archive has no entry for: 0755 at the end. */
                        if (json_object_get(x->dirs, path) == NULL)
                                json_object_set_new_nocheck(x->dirs, path, json_pack("[i, I]", 0755, (json_int_t)-1));
                        next = openat(cur, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                }
                int e = errno;
                *slash = '/';
                close(cur);
                cur = next;
                errno = e;
        }
        *ret_name = p;
        return cur;
}

/* Make room for a non-directory at name: an existing file or symlink is
 * removed (a later entry replaces an earlier one, as tar does). */
static int make_room(int dirfd, const char *name)
{
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -1;
        if (S_ISDIR(st.st_mode)) {
                errno = EISDIR;
                return -1;
        }
        return unlinkat(dirfd, name, 0);
}

static int write_file(struct extract *x, int dirfd, const char *name, const struct entry *e, char *why,
                      size_t whylen)
{
        const struct archive_api *A = x->r.A;
        if (make_room(dirfd, name) < 0)
                return -1;
        cleanup_close int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -1;
        for (;;) {
                const void *buf;
                size_t len;
                la_int64_t off;
                int rc = A->archive_read_data_block(x->r.a, &buf, &len, &off);
                if (rc == ARCHIVE_EOF)
                        break;
                if (rc < ARCHIVE_WARN) {
                        snprintf(why, whylen, "cannot be read: %s", archive_msg(&x->r));
                        errno = 0;
                        return -2;
                }
                /* libarchive keeps blocks within the declared size; a
                 * sparse file comes as blocks at offsets. */
                if (off < 0 || (uint64_t)off > e->size || len > e->size - (uint64_t)off) {
                        snprintf(why, whylen, "has data past its declared size");
                        return -2;
                }
                for (size_t done = 0; done < len;) {
                        ssize_t n = pwrite(fd, (const char *)buf + done, len - done, off + (off_t)done);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0)
                                return -1;
                        done += (size_t)n;
                }
                if (check_ratio(&x->r, why, whylen) < 0)
                        return -3;
        }
        struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = e->mtime } };
        if (ftruncate(fd, (off_t)e->size) < 0 || fchmod(fd, e->perm & EXTRACT_PERM_MASK) < 0 || futimens(fd, ts) < 0 ||
            close(TAKE_FD(fd)) < 0)
                return -1;
        return 0;
}

/* Extract one checked entry.  0, or -1 with *ret_err. */
static int extract_entry(struct extract *x, struct entry *e, corral_error **ret_err)
{
        char why[1024] = "";
        if (e->path[0] == '\0') { /* "./" */
                x->top_mode_set = true;
                x->top_mode = e->perm;
                x->top_mtime = e->mtime;
                return 0;
        }
        const char *name;
        cleanup_close int dirfd = open_parent(x, e->path, true, &name);
        if (dirfd < 0) {
                int err = errno;
                if (err == ELOOP || err == ENOTDIR)
                        return extract_refuse(x, e->path, "lies beneath a symbolic link or a file in the destination",
                                              ret_err);
                return corral_fail(ret_err, err, "cannot %s '%s': cannot create the parent of '%s'", x->verb,
                                   x->r.name, e->path);
        }
        int r = 0;
        struct stat st;
        switch (e->type) {
        case AE_IFDIR:
                if (mkdirat(dirfd, name, 0700) < 0 &&
                    (errno != EEXIST || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))) {
                        r = -1;
                        break;
                }
                json_object_set_new_nocheck(x->dirs, e->path, json_pack("[i, I]", (int)e->perm, (json_int_t)e->mtime));
                break;
        case AE_IFLNK:
                if (make_room(dirfd, name) < 0 || symlinkat(e->link, dirfd, name) < 0) {
                        r = -1;
                        break;
                }
                struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = e->mtime } };
                (void)utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW);
                break;
        default:
                if (e->hardlink) {
                        cleanup_free char *target = strdup(e->link);
                        const char *tname;
                        cleanup_close int tfd = target ? open_parent(x, target, false, &tname) : -1;
                        if (tfd < 0 || fstatat(tfd, tname, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                                return extract_refuse(x, e->path, "is a hard link to what is not a regular file of "
                                                                  "the archive", ret_err);
                        if (make_room(dirfd, name) < 0 || linkat(tfd, tname, dirfd, name, 0) < 0)
                                r = -1;
                        break;
                }
                r = write_file(x, dirfd, name, e, why, sizeof(why));
                if (r == 0)
                        x->files++;
                break;
        }
        if (r == -2)
                return extract_refuse(x, e->path, why, ret_err);
        if (r == -3)
                return extract_refuse(x, NULL, why, ret_err);
        if (r < 0)
                return corral_fail(ret_err, errno, "cannot %s '%s': cannot write '%s'", x->verb, x->r.name, e->path);
        if (x->list)
                json_array_append_new(x->list, json_pack("{s:o, s:s, s:I}", "path", ws_json_path(e->path), "type",
                                                         entry_type_name(e), "size", (json_int_t)e->size));
        return 0;
}

static int cmp_desc(const void *a, const void *b)
{
        return strcmp(*(const char *const *)b, *(const char *const *)a);
}

/* Directories' modes and mtimes, deepest first (a directory made read-only
 * first would stop its entries from being made). */
static void apply_dir_modes(struct extract *x)
{
        size_t n = json_object_size(x->dirs), i = 0;
        const char **names = calloc(n ? n : 1, sizeof(*names));
        if (names == NULL)
                return;
        const char *key;
        json_t *v;
        json_object_foreach(x->dirs, key, v) names[i++] = key;
        qsort(names, n, sizeof(*names), cmp_desc);
        for (i = 0; i < n; i++) {
                json_t *m = json_object_get(x->dirs, names[i]);
                int fd = ws_open_beneath(x->top, names[i], O_RDONLY | O_DIRECTORY, 0, true);
                if (fd < 0)
                        continue;
                json_int_t mtime = json_integer_value(json_array_get(m, 1));
                (void)fchmod(fd, (mode_t)json_integer_value(json_array_get(m, 0)) & EXTRACT_PERM_MASK);
                if (mtime >= 0) {
                        struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = (time_t)mtime } };
                        (void)futimens(fd, ts);
                }
                close(fd);
        }
        free(names);
}

/* Read the whole archive into x->top.  0, or -1 with *ret_err. */
static int extract_all(struct extract *x, corral_error **ret_err)
{
        char why[1024];
        for (;;) {
                struct archive_entry *ae;
                int h = next_header(&x->r, &ae, why, sizeof(why));
                if (h == 0)
                        break;
                if (h < 0)
                        return extract_refuse(x, NULL, why, ret_err);
                struct entry e;
                int c = check_entry(&x->r, ae, &e, why, sizeof(why));
                int r = c ? extract_refuse(x, e.path, why, ret_err) : extract_entry(x, &e, ret_err);
                entry_release(&e);
                if (r < 0)
                        return -1;
        }
        apply_dir_modes(x);
        return 0;
}

/* A first pass over the headers alone (data is skipped: seeked over when
 * uncompressed): every refusal and every limit is found before anything is
 * written, so a bomb of entries costs no disk and a refused archive
 * creates nothing at all.  The second pass checks again as it extracts. */
static int prescan(struct extract *x, const char *path, const struct archive_limits *limits, corral_error **ret_err)
{
        struct reader r;
        int rc = reader_open(&r, path, NULL, 0, limits, ret_err);
        char why[1024];
        while (rc == 0) {
                struct archive_entry *ae;
                int h = next_header(&r, &ae, why, sizeof(why));
                if (h == 0)
                        break;
                if (h < 0) {
                        rc = corral_usage(ret_err, "cannot %s '%s': %s", x->verb, path, why);
                        break;
                }
                struct entry e;
                if (check_entry(&r, ae, &e, why, sizeof(why)) != 0)
                        rc = e.path && e.path[0] ? corral_usage(ret_err, "cannot %s '%s': entry '%s' %s", x->verb,
                                                                path, e.path, why)
                                                 : corral_usage(ret_err, "cannot %s '%s': %s", x->verb, path, why);
                entry_release(&e);
        }
        reader_close(&r);
        return rc;
}

static int extract_begin(struct extract *x, const char *path, const struct archive_limits *limits, const char *verb,
                         corral_error **ret_err)
{
        *x = (struct extract){ .top = -1, .verb = verb };
        x->r.fd = -1;
        if (prescan(x, path, limits, ret_err) < 0)
                return -1;
        if (reader_open(&x->r, path, NULL, 0, limits, ret_err) < 0)
                return -1;
        x->dirs = json_object();
        if (x->dirs == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot %s '%s'", verb, path);
        return 0;
}

static void extract_end(struct extract *x)
{
        reader_close(&x->r);
        if (x->top >= 0)
                close(x->top);
        json_decref(x->dirs);
        json_decref(x->list);
}

static json_t *extract_report(struct extract *x, const char *dest)
{
        json_t *j = json_pack("{s:o, s:I, s:I, s:I, s:s?, s:o}", "dest", ws_json_path(dest), "entries",
                              (json_int_t)x->r.entries, "files", (json_int_t)x->files, "bytes",
                              (json_int_t)x->r.bytes, "format",
                              x->r.checked_format ? x->r.A->archive_format_name(x->r.a) : NULL, "filters",
                              x->r.checked_format ? filters_json(&x->r) : json_array());
        return j;
}

int archive_extract(const char *path, const char *dest_dir, const struct archive_limits *limits, json_t **ret_report,
                    corral_error **ret_err)
{
        if (dest_dir == NULL || dest_dir[0] == '\0')
                return corral_usage(ret_err, "no destination directory given");
        cleanup_free char *dest = strdup(dest_dir);
        if (dest == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot extract '%s'", path);
        size_t len = strlen(dest);
        while (len > 1 && dest[len - 1] == '/')
                dest[--len] = '\0';
        char *slash = strrchr(dest, '/');
        const char *base = slash ? slash + 1 : dest;
        cleanup_free char *parent = slash ? strndup(dest, (size_t)(slash - dest) + (slash == dest)) : strdup(".");
        if (parent == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot extract '%s'", path);
        if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
                return corral_usage(ret_err, "cannot extract into '%s': name a new or empty directory", dest_dir);
        cleanup_close int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot extract into '%s': cannot open '%s'",
                                         dest_dir, parent);
        struct stat st;
        if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (!S_ISDIR(st.st_mode))
                        return corral_usage(ret_err, "cannot extract into '%s': it exists and is %s", dest_dir,
                                            ws_type_phrase(st.st_mode));
                struct ws_names names;
                cleanup_close int dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (dfd < 0 || ws_names_read(dfd, 1, &names) < 0)
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot extract into '%s'",
                                                 dest_dir);
                bool empty = names.n == 0;
                ws_names_release(&names);
                if (!empty)
                        return corral_usage(ret_err, "cannot extract into '%s': it is not empty (give a new or empty "
                                                     "directory)",
                                            dest_dir);
        }

        struct extract x;
        char tmp[NAME_MAX + 1], prefix[NAME_MAX + 1];
        tmp[0] = '\0';
        int r = extract_begin(&x, path, limits, "extract", ret_err);
        if (r == 0) {
                /* ".DEST.corral-XXXXXX" beside dest: the rename stays on
                 * one filesystem, and the name says what it was for. */
                if (strlen(base) + 16 <= NAME_MAX)
                        snprintf(prefix, sizeof(prefix), ".%s.corral", base);
                else
                        snprintf(prefix, sizeof(prefix), ".corral-extract");
                if (mkdtemp_at(pfd, prefix, tmp, sizeof(tmp)) < 0) {
                        tmp[0] = '\0';
                        r = corral_fail(ret_err, errno, "cannot create a temporary directory in '%s'", parent);
                }
        }
        if (r == 0 && (x.top = openat(pfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                r = corral_fail(ret_err, errno, "cannot open the temporary directory in '%s'", parent);
        if (r == 0)
                r = extract_all(&x, ret_err);
        if (r == 0) {
                /* The destination gets the mode of the archive's "./" entry,
                 * else that of a new directory. */
                (void)fchmod(x.top, x.top_mode_set ? x.top_mode & EXTRACT_PERM_MASK : 0755);
                if (x.top_mode_set) {
                        struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = x.top_mtime } };
                        (void)futimens(x.top, ts);
                }
                /* rename() replaces an empty directory, and fails on one
                 * that filled up since it was checked. */
                if (renameat(pfd, tmp, pfd, base) < 0)
                        r = corral_make_error(ret_err, errno == ENOTEMPTY || errno == EEXIST ? CORRAL_ERR_USAGE
                                                                                                : CORRAL_ERR_INTERNAL,
                                              errno, "cannot extract '%s': cannot move it into place at '%s'", path,
                                              dest_dir);
        }
        if (r == 0 && ret_report)
                *ret_report = extract_report(&x, dest_dir);
        if (r < 0 && tmp[0])
                (void)ws_remove_at(pfd, tmp);
        extract_end(&x);
        return r;
}

int workspace_restore(struct workspace *ws, const char *path, const struct archive_limits *limits, json_t **ret_report,
                      corral_error **ret_err)
{
        struct extract x;
        char tmp[NAME_MAX + 1] = "";
        struct ws_names names = { 0 };
        size_t moved = 0;
        int r = extract_begin(&x, path, limits, "restore", ret_err);
        if (r == 0 && (x.list = json_array()) == NULL)
                r = corral_fail(ret_err, ENOMEM, "cannot restore '%s'", path);
        if (r == 0 && mkdtemp_at(ws->root_fd, ".corral-restore", tmp, sizeof(tmp)) < 0) {
                tmp[0] = '\0';
                r = corral_fail(ret_err, errno, "cannot create a temporary directory in the workspace '%s'",
                                ws->root);
        }
        if (r == 0 && (x.top = openat(ws->root_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                r = corral_fail(ret_err, errno, "cannot open a temporary directory in the workspace '%s'", ws->root);
        if (r == 0)
                r = extract_all(&x, ret_err);
        if (r == 0 && ws_names_read(x.top, SIZE_MAX, &names) < 0)
                r = corral_fail(ret_err, errno, "cannot restore '%s'", path);
        /* Check every top-level entry before moving any. */
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                struct stat have, got;
                if (fstatat(ws->root_fd, names.v[i], &have, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                bool empty_dir = false;
                if (S_ISDIR(have.st_mode) && fstatat(x.top, names.v[i], &got, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISDIR(got.st_mode)) {
                        struct ws_names sub;
                        int dfd = openat(ws->root_fd, names.v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (dfd >= 0 && ws_names_read(dfd, 1, &sub) == 0) {
                                empty_dir = sub.n == 0;
                                ws_names_release(&sub);
                        }
                        if (dfd >= 0)
                                close(dfd);
                }
                if (!empty_dir)
                        r = corral_usage(ret_err,
                                         "cannot restore '%s' into the workspace '%s': '%s' is already there (give "
                                         "a fresh workspace)",
                                         path, ws->root, names.v[i]);
        }
        for (; r == 0 && moved < names.n; moved++)
                if (renameat(x.top, names.v[moved], ws->root_fd, names.v[moved]) < 0)
                        r = corral_fail(ret_err, errno, "cannot restore '%s': cannot move '%s' into the workspace",
                                        path, names.v[moved]);
        if (r < 0) {
                /* Take back what was moved; input/ and output/ must exist. */
                for (size_t i = 0; i < moved; i++)
                        (void)ws_remove_at(ws->root_fd, names.v[i]);
                (void)mkdirat(ws->root_fd, "input", 0755);
                (void)mkdirat(ws->root_fd, "output", 0755);
        }
        if (r == 0 && ret_report) {
                *ret_report = extract_report(&x, ws->root);
                if (*ret_report)
                        json_object_set(*ret_report, "files_list", x.list);
        }
        if (tmp[0])
                (void)ws_remove_at(ws->root_fd, tmp);
        ws_names_release(&names);
        extract_end(&x);
        return r;
}

/* ---- writing ---- */

struct writer {
        const struct archive_api *A;
        struct archive *a;
        struct archive_entry *ae;
        struct workspace *ws;
        const struct ws_archive_opts *opts;
        dev_t self_dev;     /* the archive being written (it may be in the workspace) */
        ino_t self_ino;
        bool in_source;     /* walking a bound entry's source */
        uint64_t files, bytes;
        size_t entries;
        bool truncated;
        json_t *skipped, *excluded;
        corral_error *err;
        const char *target; /* for messages */
        const char *meta_name; /* run_json's name under .corral/ */
        struct ws_walk walk;
};

static void w_skip(struct writer *w, const char *path, const char *fmt, ...) CORRAL_PRINTF(3, 4);
static void w_skip(struct writer *w, const char *path, const char *fmt, ...)
{
        char *reason = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&reason, fmt, ap) < 0)
                reason = NULL;
        va_end(ap);
        if (reason)
                json_array_append_new(w->skipped, json_pack("{s:o, s:o}", "path", ws_json_path(path), "reason",
                                                            ws_json_path(reason)));
        free(reason);
}

/* The header of an entry whose sparse map (if any) is already set. */
static int w_header_kept(struct writer *w, const char *path, mode_t type, mode_t perm, uint64_t size, time_t mtime,
                         const char *symlink)
{
        const struct archive_api *A = w->A;
        A->archive_entry_set_pathname(w->ae, path);
        A->archive_entry_set_filetype(w->ae, type);
        A->archive_entry_set_perm(w->ae, perm & 0777);
        A->archive_entry_set_size(w->ae, (la_int64_t)size);
        A->archive_entry_set_mtime(w->ae, mtime, 0);
        /* Owner and group 0, no names: the jail's ids mean nothing on the
         * host, and whoever extracts should own the files. */
        A->archive_entry_set_uid(w->ae, 0);
        A->archive_entry_set_gid(w->ae, 0);
        if (symlink)
                A->archive_entry_set_symlink(w->ae, symlink);
        if (A->archive_write_header(w->a, w->ae) < ARCHIVE_WARN)
                return corral_fail(&w->err, 0, "cannot write '%s' to '%s': %s", path, w->target,
                                   A->archive_error_string(w->a));
        w->entries++;
        return 0;
}

static int w_header(struct writer *w, const char *path, mode_t type, mode_t perm, uint64_t size, time_t mtime,
                    const char *symlink)
{
        w->A->archive_entry_clear(w->ae);
        return w_header_kept(w, path, type, perm, size, mtime, symlink);
}

/* A run of data in a sparse file; what lies between runs is a hole. */
struct region {
        off_t off, len;
};
#define SPARSE_MAX 4096 /* regions: more, and the file is stored whole */

/* The data regions of fd (SEEK_DATA/SEEK_HOLE), ending with an empty
 * region at the end of the file, as GNU tar writes them (malloc'd in
 * *ret); 0 when the file has no hole, or too many regions, or the
 * filesystem cannot tell: it is then stored whole.  The offset is left at
 * 0. */
static size_t sparse_regions(int fd, const struct stat *st, struct region **ret)
{
        *ret = NULL;
        /* Cheap first: a file using as many blocks as its size has no hole. */
        if (st->st_size == 0 || (uint64_t)st->st_blocks * 512 >= (uint64_t)st->st_size)
                return 0;
        struct region *r = malloc(SPARSE_MAX * sizeof(*r));
        if (r == NULL)
                return 0;
        size_t n = 0;
        for (off_t pos = 0; pos < st->st_size;) {
                off_t data = lseek(fd, pos, SEEK_DATA);
                if (data < 0 && errno == ENXIO)
                        break;
                off_t hole = data < 0 ? -1 : lseek(fd, data, SEEK_HOLE);
                if (hole < 0 || n + 1 >= SPARSE_MAX) {
                        free(r);
                        return 0;
                }
                if (hole > st->st_size)
                        hole = st->st_size;
                r[n++] = (struct region){ data, hole - data };
                pos = hole;
        }
        if (lseek(fd, 0, SEEK_SET) < 0) {
                free(r);
                return 0;
        }
        r[n++] = (struct region){ st->st_size, 0 };
        *ret = r;
        return n;
}

/* The regular file open as fd (st: its fstat) as path; a sparse file is
 * stored sparse (pax, GNU sparse 1.0): its holes take no room in the
 * archive, and extraction makes them holes again. */
static int w_file(struct writer *w, int fd, const struct stat *st, const char *path)
{
        static const char zeros[BLOCK];
        const struct archive_api *A = w->A;
        A->archive_entry_clear(w->ae);
        struct region *r;
        size_t nr = sparse_regions(fd, st, &r);
        /* The size first: libarchive drops regions past it. */
        A->archive_entry_set_size(w->ae, (la_int64_t)st->st_size);
        for (size_t i = 0; i < nr; i++)
                A->archive_entry_sparse_add_entry(w->ae, r[i].off, r[i].len);
        int rc = w_header_kept(w, path, AE_IFREG, st->st_mode, (uint64_t)st->st_size, st->st_mtim.tv_sec, NULL);
        /* The file's bytes in order: holes as zeros, which the writer
         * skips; a region of the map at a time, or all of it. */
        char buf[BLOCK];
        uint64_t pos = 0, size = (uint64_t)st->st_size;
        for (size_t i = 0; rc == 0 && i < (nr ? nr : 1); i++) {
                uint64_t start = nr ? (uint64_t)r[i].off : 0, end = nr ? start + (uint64_t)r[i].len : size;
                for (; rc == 0 && pos < start; pos += BLOCK < start - pos ? BLOCK : start - pos)
                        if (A->archive_write_data(w->a, zeros, BLOCK < start - pos ? BLOCK : start - pos) < 0)
                                rc = corral_fail(&w->err, 0, "cannot write '%s' to '%s': %s", path, w->target,
                                                 A->archive_error_string(w->a));
                while (rc == 0 && pos < end) {
                        ssize_t n = pread(fd, buf, end - pos < sizeof(buf) ? end - pos : sizeof(buf), (off_t)pos);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0) {
                                rc = corral_fail(&w->err, errno, "cannot read '%s'", path);
                        } else if (n == 0) {
                                end = pos; /* shrank: the rest is padded with zeros */
                        } else if (A->archive_write_data(w->a, buf, (size_t)n) < 0) {
                                rc = corral_fail(&w->err, 0, "cannot write '%s' to '%s': %s", path, w->target,
                                                 A->archive_error_string(w->a));
                        } else {
                                pos += (uint64_t)n;
                        }
                }
        }
        free(r);
        if (rc == 0 && A->archive_write_finish_entry(w->a) < ARCHIVE_WARN)
                rc = corral_fail(&w->err, 0, "cannot write '%s' to '%s': %s", path, w->target,
                                 A->archive_error_string(w->a));
        if (rc < 0)
                return -1;
        w->files++;
        w->bytes += (uint64_t)st->st_size;
        return 0;
}

static const struct ws_staged *staged_at(struct workspace *ws, const char *path)
{
        for (size_t i = 0; i < ws->n_staged; i++)
                if (ws->staged[i].dest && strcmp(ws->staged[i].dest, path) == 0)
                        return &ws->staged[i];
        return NULL;
}

static int visit(struct ws_walk *walk, int dirfd, const char *name, const char *path, const struct stat *st,
                 unsigned depth);

/* A bound entry, from its source (the workspace has only its mount point). */
static int w_bound(struct writer *w, const struct ws_staged *s, const char *path)
{
        struct stat st;
        if (fstat(s->source_fd, &st) < 0) {
                w_skip(w, path, "cannot read its source '%s': %s", s->source, strerror(errno));
                return 0;
        }
        if (S_ISDIR(st.st_mode)) {
                cleanup_close int fd = openat(s->source_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0) {
                        w_skip(w, path, "cannot open its source '%s': %s", s->source, strerror(errno));
                        return 0;
                }
                if (w_header(w, path, AE_IFDIR, st.st_mode, 0, st.st_mtim.tv_sec, NULL) < 0)
                        return -1;
                struct ws_walk sub = w->walk;
                sub.max_entries = WORKSPACE_MAX_ENTRIES > w->entries ? WORKSPACE_MAX_ENTRIES - w->entries : 1;
                sub.max_depth = WORKSPACE_MAX_DEPTH;
                w->in_source = true;
                int r = ws_walk_run(&sub, fd, path);
                w->in_source = false;
                if (sub.truncated || sub.depth_limited)
                        w->truncated = true;
                return r;
        }
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", s->source_fd);
        cleanup_close int fd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                w_skip(w, path, "cannot read its source '%s'", s->source);
                return 0;
        }
        return w_file(w, fd, &st, path);
}

/* Left out: ephemeral entries always; inputs unless include_inputs. */
static bool excluded(struct writer *w, const char *path)
{
        if (!w->opts->include_inputs && strcmp(path, "input") == 0)
                return true;
        const struct ws_staged *s = staged_at(w->ws, path);
        return s && (s->ephemeral || (s->source && !w->opts->include_inputs));
}

static int visit(struct ws_walk *walk, int dirfd, const char *name, const char *path, const struct stat *st,
                 unsigned depth)
{
        struct writer *w = walk->data;
        if (!w->in_source) {
                if (excluded(w, path)) {
                        json_array_append_new(w->excluded, ws_json_path(path));
                        return 0;
                }
                if (w->opts->run_json && depth <= 2 && strncmp(path, ".corral", 7) == 0) {
                        if (strncmp(path, ".corral/", 8) == 0 && strcmp(path + 8, w->meta_name) == 0)
                                return 0; /* replaced by the new one */
                        if (strcmp(path, ".corral") == 0) {
                                if (S_ISDIR(st->st_mode))
                                        return 1; /* its entry is written already */
                                w_skip(w, path, "%s in place of corral's .corral/ directory", ws_type_phrase(st->st_mode));
                                return 0;
                        }
                }
                const struct ws_staged *s = staged_at(w->ws, path);
                if (s && s->bound && s->source_fd >= 0)
                        return w_bound(w, s, path) < 0 ? -1 : 0;
        }
        if (st->st_dev == w->self_dev && st->st_ino == w->self_ino)
                return 0;
        if (S_ISDIR(st->st_mode))
                return w_header(w, path, AE_IFDIR, st->st_mode, 0, st->st_mtim.tv_sec, NULL) < 0 ? -1 : 1;
        if (S_ISLNK(st->st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
                if (n <= 0) {
                        w_skip(w, path, "cannot read the symbolic link: %s", n < 0 ? strerror(errno) : "empty");
                        return 0;
                }
                target[n] = '\0';
                return w_header(w, path, AE_IFLNK, 0777, 0, st->st_mtim.tv_sec, target) < 0 ? -1 : 0;
        }
        if (!S_ISREG(st->st_mode)) {
                w_skip(w, path, "%s (only regular files, directories and symbolic links are archived)",
                       ws_type_phrase(st->st_mode));
                return 0;
        }
        if (st->st_nlink > 1) {
                w_skip(w, path,
                       "it has %ju hard links (only files with a single link are archived: another link could be a "
                       "file from outside the workspace)",
                       (uintmax_t)st->st_nlink);
                return 0;
        }
        struct stat fst;
        cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &fst) < 0) {
                w_skip(w, path, "cannot open it: %s", strerror(errno));
                return 0;
        }
        if (!S_ISREG(fst.st_mode) || fst.st_ino != st->st_ino || fst.st_dev != st->st_dev || fst.st_nlink > 1) {
                w_skip(w, path, "it changed while it was archived");
                return 0;
        }
        return w_file(w, fd, &fst, path);
}

/* corral's metadata: ".corral/" and ".corral/run.json" (or meta_name),
 * first. */
static int w_run_json(struct writer *w, const char *text)
{
        time_t now = time(NULL);
        char name[NAME_MAX + 16];
        snprintf(name, sizeof(name), ".corral/%s", w->meta_name);
        if (w_header(w, ".corral", AE_IFDIR, 0755, 0, now, NULL) < 0)
                return -1;
        size_t len = strlen(text);
        if (w_header(w, name, AE_IFREG, 0644, len, now, NULL) < 0)
                return -1;
        if (w->A->archive_write_data(w->a, text, len) < (la_ssize_t)len ||
            w->A->archive_write_finish_entry(w->a) < ARCHIVE_WARN)
                return corral_fail(&w->err, 0, "cannot write %s to '%s': %s", name, w->target,
                                   w->A->archive_error_string(w->a));
        w->files++;
        w->bytes += len;
        return 0;
}

int workspace_archive(struct workspace *ws, const struct ws_dest *dest, const struct ws_archive_opts *opts,
                      json_t **ret_report, corral_error **ret_err)
{
        static const struct ws_archive_opts no_opts;
        if (dest == NULL || dest->name == NULL)
                return corral_usage(ret_err, "no archive path given");
        const char *path = dest->shown, *base = dest->name;
        struct writer w = { .ws = ws, .opts = opts ? opts : &no_opts, .target = path };
        w.meta_name = w.opts->meta_name ? w.opts->meta_name : "run.json";
        if (strchr(w.meta_name, '/') || w.meta_name[0] == '\0' || w.meta_name[0] == '.' ||
            strlen(w.meta_name) > NAME_MAX)
                return corral_usage(ret_err, "'%s' is not a name for corral's metadata", w.meta_name);
        w.A = archive_api_get(ret_err);
        if (w.A == NULL)
                return -1;
        cleanup_close int pfd = ws_dest_dir(dest, 0755, ret_err);
        if (pfd < 0)
                return -1;
        struct stat st;
        if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                return corral_usage(ret_err, "cannot write the archive '%s': it is a directory", path);

        char tmp[WS_TEMP_NAME_MAX];
        /* 0600: the workspace is private (0700), and so is its archive. */
        int fd = ws_temp_create(pfd, base, 0600, tmp);
        if (fd < 0)
                return corral_fail(ret_err, errno, "cannot create a file beside '%s'", path);
        int r = 0;
        if (fstat(fd, &st) < 0) {
                r = corral_fail(&w.err, errno, "cannot write '%s'", path);
        } else {
                w.self_dev = st.st_dev;
                w.self_ino = st.st_ino;
        }
        w.skipped = json_array();
        w.excluded = json_array();
        w.ae = w.A->archive_entry_new();
        w.a = w.A->archive_write_new();
        if (r == 0 && (w.skipped == NULL || w.excluded == NULL || w.ae == NULL || w.a == NULL))
                r = corral_fail(&w.err, ENOMEM, "cannot archive the workspace");
        if (r == 0 && (w.A->archive_write_set_format_pax_restricted(w.a) < ARCHIVE_WARN ||
                       w.A->archive_write_add_filter_none(w.a) < ARCHIVE_WARN ||
                       w.A->archive_write_open_fd(w.a, fd) < ARCHIVE_WARN))
                r = corral_fail(&w.err, 0, "cannot write '%s': %s", path, w.A->archive_error_string(w.a));
        if (r == 0 && w.opts->run_json)
                r = w_run_json(&w, w.opts->run_json);
        if (r == 0) {
                w.walk = (struct ws_walk){ .visit = visit, .data = &w };
                r = ws_walk_run(&w.walk, ws->root_fd, "");
                if (r < 0 && w.err == NULL)
                        corral_fail(&w.err, ENOMEM, "cannot archive the workspace");
                if (w.walk.truncated || w.walk.depth_limited)
                        w.truncated = true;
        }
        if (r == 0 && w.A->archive_write_close(w.a) < ARCHIVE_WARN)
                r = corral_fail(&w.err, 0, "cannot write '%s': %s", path, w.A->archive_error_string(w.a));
        if (w.a)
                w.A->archive_write_free(w.a);
        if (w.ae)
                w.A->archive_entry_free(w.ae);
        /* close: NFS reports write errors there. */
        if (close(fd) < 0 && r == 0)
                r = corral_fail(&w.err, errno, "cannot write '%s'", path);
        if (r == 0 && renameat(pfd, tmp, pfd, base) < 0)
                r = corral_fail(&w.err, errno, "cannot rename the archive into place at '%s'", path);
        if (r < 0) {
                (void)unlinkat(pfd, tmp, 0);
                json_decref(w.skipped);
                json_decref(w.excluded);
                if (ret_err) {
                        corral_error_free(*ret_err);
                        *ret_err = TAKE_PTR(w.err);
                }
                corral_error_free(w.err);
                return -1;
        }
        json_t *report = json_pack("{s:o, s:I, s:I, s:I, s:o, s:o, s:b}", "path", ws_json_path(path), "entries",
                                   (json_int_t)w.entries, "files", (json_int_t)w.files, "bytes", (json_int_t)w.bytes,
                                   "skipped", w.skipped, "excluded", w.excluded, "truncated", w.truncated);
        if (ret_report)
                *ret_report = report;
        else
                json_decref(report);
        return 0;
}
