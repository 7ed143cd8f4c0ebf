/* stage.c: inputs: copying the user's files into input/, and describing
 * them for the model.
 *
 * The user named the source, so a top-level symlink is followed; inside a
 * staged directory only regular files and directories are copied (copy.c),
 * symlinks, devices, FIFOs and sockets are skipped and listed.  A staging
 * that fails (a limit, an I/O error) removes what it made: an input is
 * staged whole or not at all.  input/ may be a directory left by an earlier
 * run (a reused --workspace), so it is entered with no symlinks allowed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "workspace-internal.h"

#define HEAD_BYTES 4096   /* read of a file to describe it */
#define HEAD_LINE_MAX 200 /* bytes of each line shown */

/* DEST: relative to input/, no empty, "." or ".." components. */
static int check_dest(const char *dest, corral_error **ret_err)
{
        if (dest[0] == '/')
                return corral_usage(ret_err, "input destination '%s' must be relative (it is placed under input/)",
                                    dest);
        if (strlen(dest) >= PATH_MAX - 64)
                return corral_usage(ret_err, "input destination '%.64s...' is too long", dest);
        for (const char *p = dest;;) {
                size_t n = strcspn(p, "/");
                if (n == 0)
                        return corral_usage(ret_err, "input destination '%s' has an empty path component", dest);
                if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return corral_usage(ret_err, "input destination '%s' may not contain '.' or '..'", dest);
                if (n > NAME_MAX)
                        return corral_usage(ret_err, "input destination '%s' has a component longer than %d bytes",
                                            dest, NAME_MAX);
                if (p[n] == '\0')
                        return 0;
                p += n + 1;
        }
}

/* The default DEST: the base name of path ("data/" gives "data"; "." the
 * name of the current directory). */
static int default_dest(const char *path, char **ret, corral_error **ret_err)
{
        size_t len = strlen(path);
        while (len > 1 && path[len - 1] == '/')
                len--;
        size_t start = len;
        while (start > 0 && path[start - 1] != '/')
                start--;
        cleanup_free char *base = strndup(path + start, len - start);
        if (base == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot stage '%s'", path);
        if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strcmp(base, "/") == 0) {
                cleanup_free char *real = realpath(path, NULL);
                const char *slash = real ? strrchr(real, '/') : NULL;
                if (slash == NULL || slash[1] == '\0')
                        return corral_usage(ret_err, "cannot stage '%s': give it a name with '%s:NAME'", path, path);
                free(base);
                base = strdup(slash + 1);
                if (base == NULL)
                        return corral_fail(ret_err, ENOMEM, "cannot stage '%s'", path);
        }
        *ret = TAKE_PTR(base);
        return 0;
}

/* "data/" is "data" (in reports too); "/" stays. */
static void strip_slashes(char *path)
{
        size_t len = strlen(path);
        while (len > 1 && path[len - 1] == '/')
                path[--len] = '\0';
}

/* Split spec into PATH and DEST. */
static int parse_spec(const char *spec, char **ret_path, char **ret_dest, corral_error **ret_err)
{
        struct stat st;
        const char *colon = strrchr(spec, ':');
        if (lstat(spec, &st) == 0 || colon == NULL) {
                *ret_path = strdup(spec);
                *ret_dest = NULL;
                if (*ret_path)
                        strip_slashes(*ret_path);
                return *ret_path ? 0 : corral_fail(ret_err, ENOMEM, "cannot stage '%s'", spec);
        }
        if (colon == spec)
                return corral_usage(ret_err, "cannot stage '%s': the path before ':' is empty", spec);
        if (colon[1] == '\0')
                return corral_usage(ret_err,
                                    "cannot stage '%s': the name after ':' is empty (give PATH:NAME, or PATH alone "
                                    "to keep its name)",
                                    spec);
        *ret_path = strndup(spec, (size_t)(colon - spec));
        *ret_dest = strdup(colon + 1);
        if (*ret_path)
                strip_slashes(*ret_path);
        if (*ret_path == NULL || *ret_dest == NULL) {
                free(*ret_path);
                free(*ret_dest);
                return corral_fail(ret_err, ENOMEM, "cannot stage '%s'", spec);
        }
        return 0;
}

/* What a failed staging leaves to undo: the first entry it made. */
struct undo {
        int dirfd;
        char *name;
};

static void undo_set(struct undo *u, int dirfd, const char *name)
{
        if (u->dirfd >= 0)
                return;
        u->name = strdup(name);
        u->dirfd = u->name ? fcntl(dirfd, F_DUPFD_CLOEXEC, 0) : -1;
}

static void undo_run(struct undo *u, bool remove)
{
        if (u->dirfd >= 0 && remove)
                (void)ws_remove_at(u->dirfd, u->name);
        if (u->dirfd >= 0)
                close(u->dirfd);
        free(u->name);
}

/* Open the parent of input/DEST, making missing directories (recorded in
 * u); *ret_base points at DEST's last component. */
static int open_dest_parent(struct workspace *ws, const char *path, char *dest, struct undo *u, const char **ret_base,
                            corral_error **ret_err)
{
        int cur = ws_open_beneath(ws->root_fd, "input", O_RDONLY | O_DIRECTORY, 0, true);
        if (cur < 0)
                return corral_fail(ret_err, errno, "cannot open input/ in the workspace '%s'", ws->root);
        char *p = dest;
        for (char *slash; (slash = strchr(p, '/')) != NULL; p = slash + 1) {
                *slash = '\0';
                bool made = mkdirat(cur, p, 0755) == 0;
                int e = errno;
                if (!made && e != EEXIST) {
                        close(cur);
                        return corral_fail(ret_err, e, "cannot create 'input/%s'", dest);
                }
                if (made)
                        undo_set(u, cur, p);
                int next = ws_open_beneath(cur, p, O_RDONLY | O_DIRECTORY, 0, true);
                e = errno;
                close(cur);
                if (next < 0) {
                        /* dest ends at this component here. */
                        if (e == ENOTDIR || e == ELOOP)
                                return corral_usage(ret_err,
                                                    "cannot stage '%s': 'input/%s' exists and is not a "
                                                    "directory",
                                                    path, dest);
                        return corral_fail(ret_err, e, "cannot open 'input/%s'", dest);
                }
                *slash = '/';
                cur = next;
        }
        *ret_base = p;
        return cur;
}

int workspace_stage_input(struct workspace *ws, const char *spec, uint64_t *budget, json_t **ret_entry,
                          corral_error **ret_err)
{
        if (spec == NULL || spec[0] == '\0')
                return corral_usage(ret_err, "an input to stage is empty: give PATH or PATH:NAME");
        cleanup_free char *path = NULL, *dest = NULL;
        if (parse_spec(spec, &path, &dest, ret_err) < 0)
                return -1;
        struct stat st;
        if (stat(path, &st) < 0)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot stage '%s'", path);
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
                return corral_usage(ret_err, "cannot stage '%s': it is %s; inputs are regular files and directories",
                                    path, ws_type_phrase(st.st_mode));
        if (dest == NULL && default_dest(path, &dest, ret_err) < 0)
                return -1;
        if (check_dest(dest, ret_err) < 0)
                return -1;
        cleanup_close int src = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat sst;
        if (src < 0 || fstat(src, &sst) < 0)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot stage '%s'", path);
        if ((sst.st_mode & S_IFMT) != (st.st_mode & S_IFMT))
                return corral_usage(ret_err, "cannot stage '%s': it changed while being staged", path);

        cleanup_free char *dest_shown = NULL;
        if (asprintf(&dest_shown, "input/%s", dest) < 0)
                return corral_fail(ret_err, ENOMEM, "cannot stage '%s'", path);
        json_t *skipped = json_array();
        if (skipped == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot stage '%s'", path);
        struct ws_copy c = {
                .src_name = path,
                .dest_name = dest_shown,
                .strict = true,
                .budget = budget ? *budget : UINT64_MAX,
                .budget_what = "the input budget",
                .skipped = skipped,
        };
        struct undo u = { .dirfd = -1 };
        const char *base = NULL;
        int r = -1;
        int parent = open_dest_parent(ws, path, dest, &u, &base, ret_err);
        if (parent < 0)
                goto out;
        struct stat dst;
        if (fstatat(parent, base, &dst, AT_SYMLINK_NOFOLLOW) == 0) {
                corral_usage(ret_err, "cannot stage '%s': '%s' already exists (name it with '%s:OTHER-NAME')", path,
                             dest_shown, path);
                goto out;
        }
        if (S_ISREG(sst.st_mode)) {
                r = ws_copy_file(&c, src, &sst, parent, base, "");
        } else if (mkdirat(parent, base, 0755) < 0) {
                corral_fail(ret_err, errno, "cannot create '%s'", dest_shown);
        } else {
                undo_set(&u, parent, base);
                cleanup_close int dfd = ws_open_beneath(parent, base, O_RDONLY | O_DIRECTORY, 0, true);
                if (dfd < 0)
                        corral_fail(ret_err, errno, "cannot open '%s'", dest_shown);
                else
                        r = ws_copy_tree(&c, src, dfd, "");
        }
        if (r < 0 && c.err) {
                corral_error_free(ret_err ? *ret_err : NULL);
                if (ret_err)
                        *ret_err = TAKE_PTR(c.err);
                corral_error_prefix(ret_err, "cannot stage '%s'", path);
        }
out:
        undo_run(&u, r < 0);
        if (parent >= 0)
                close(parent);
        corral_error_free(c.err);
        if (r < 0) {
                json_decref(skipped);
                return -1;
        }
        if (budget)
                *budget -= c.bytes;
        if (ret_entry) {
                *ret_entry = json_pack("{s:o, s:o, s:s, s:I, s:I, s:o}", "source", ws_json_path(path), "dest",
                                       ws_json_path(dest_shown), "type", S_ISDIR(sst.st_mode) ? "dir" : "file", "bytes",
                                       (json_int_t)c.bytes, "files", (json_int_t)c.files, "skipped", skipped);
                if (*ret_entry == NULL)
                        return corral_fail(ret_err, ENOMEM, "cannot stage '%s'", path);
        } else {
                json_decref(skipped);
        }
        return 0;
}

/* ---- describing ---- */

struct describe {
        struct capbuf out;
        size_t max_files;
        unsigned head_lines;
        size_t files; /* non-directories seen */
        size_t shown;
        bool failed;
};

static void put(struct describe *d, const char *s, size_t n)
{
        if (capbuf_append(&d->out, s, n) == (size_t)-1)
                d->failed = true;
}

static void putf(struct describe *d, const char *fmt, ...) CORRAL_PRINTF(2, 3);
static void putf(struct describe *d, const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0) {
                d->failed = true;
                return;
        }
        put(d, s, (size_t)n);
        free(s);
}

/* The length of buf without a UTF-8 sequence cut short at its end. */
static size_t trim_partial_utf8(const char *buf, size_t n)
{
        for (size_t back = 1; back <= 3 && back <= n; back++) {
                unsigned char c = (unsigned char)buf[n - back];
                if ((c & 0xc0) == 0x80)
                        continue; /* a continuation byte: look further back */
                size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
                return need > back ? n - back : n;
        }
        return n;
}

/* Text: valid UTF-8, no NUL (utf8_valid refuses NUL too). */
static bool looks_like_text(const char *buf, size_t n, bool cut)
{
        return utf8_valid(buf, cut ? trim_partial_utf8(buf, n) : n);
}

static void put_head(struct describe *d, const char *buf, size_t n)
{
        const char *p = buf, *end = buf + n;
        for (unsigned line = 0; line < d->head_lines && p < end; line++) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
                size_t show = len;
                if (show > 0 && p[show - 1] == '\r')
                        show--;
                bool cut = show > HEAD_LINE_MAX;
                if (cut) {
                        show = HEAD_LINE_MAX;
                        while (show > 0 && ((unsigned char)p[show] & 0xc0) == 0x80)
                                show--; /* not inside a UTF-8 sequence */
                }
                char clean[HEAD_LINE_MAX];
                for (size_t i = 0; i < show; i++) {
                        unsigned char c = (unsigned char)p[i];
                        clean[i] = (c < 0x20 && c != '\t') || c == 0x7f ? '?' : (char)c;
                }
                if (show > 0) {
                        put(d, "    ", 4);
                        put(d, clean, show);
                }
                if (cut)
                        put(d, " [...]", 6);
                put(d, "\n", 1);
                p += len + (nl ? 1 : 0);
        }
}

static void describe_file(struct describe *d, int dirfd, const char *name, const char *path, const struct stat *st)
{
        char size[32];
        ws_format_size((uint64_t)st->st_size, size, sizeof(size));
        cleanup_free char *shown = utf8_sanitize(path, strlen(path), NULL);
        if (shown == NULL) {
                d->failed = true;
                return;
        }
        if (!S_ISREG(st->st_mode)) {
                putf(d, "%s (%s, not %s)\n", shown, ws_type_phrase(st->st_mode),
                     S_ISLNK(st->st_mode) ? "followed" : "read");
                return;
        }
        if (st->st_nlink > 1) {
                putf(d, "%s (%s, %ju hard links: not shown)\n", shown, size, (uintmax_t)st->st_nlink);
                return;
        }
        if (st->st_size == 0) {
                putf(d, "%s (0 B, empty)\n", shown);
                return;
        }
        char buf[HEAD_BYTES];
        ssize_t n = -1;
        int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat fst;
        if (fd >= 0 && fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_nlink == 1) {
                do
                        n = pread(fd, buf, sizeof(buf), 0);
                while (n < 0 && errno == EINTR);
        }
        if (fd >= 0)
                close(fd);
        if (n < 0) {
                putf(d, "%s (%s, not readable)\n", shown, size);
                return;
        }
        bool cut = (size_t)n == sizeof(buf);
        if (!looks_like_text(buf, (size_t)n, cut)) {
                putf(d, "%s (%s, binary)\n", shown, size);
                return;
        }
        putf(d, "%s (%s)\n", shown, size);
        put_head(d, buf, cut ? trim_partial_utf8(buf, (size_t)n) : (size_t)n);
}

static int describe_visit(struct ws_walk *w, int dirfd, const char *name, const char *path, const struct stat *st,
                          unsigned depth)
{
        struct describe *d = w->data;
        if (S_ISDIR(st->st_mode))
                return 1;
        d->files++;
        if (d->shown < d->max_files) {
                d->shown++;
                describe_file(d, dirfd, name, path, st);
        }
        return d->failed ? -1 : 0;
}

char *workspace_describe_inputs(struct workspace *ws, size_t max_files, unsigned head_lines)
{
        struct describe d = {
                .out = { .cap = SIZE_MAX },
                .max_files = max_files,
                .head_lines = head_lines,
        };
        int fd = ws_open_beneath(ws->root_fd, "input", O_RDONLY | O_DIRECTORY, 0, true);
        if (fd < 0)
                return strdup("");
        struct ws_walk w = {
                .max_depth = WORKSPACE_MAX_DEPTH,
                .max_entries = WORKSPACE_MAX_ENTRIES,
                .visit = describe_visit,
                .data = &d,
        };
        int r = ws_walk_run(&w, fd, "input");
        close(fd);
        if (r < 0 || d.failed) {
                capbuf_release(&d.out);
                return NULL;
        }
        if (d.files > d.shown || w.truncated)
                putf(&d, "(and %s%zu more file%s in input/)\n", w.truncated ? "over " : "", d.files - d.shown,
                     d.files - d.shown == 1 && !w.truncated ? "" : "s");
        if (d.failed) {
                capbuf_release(&d.out);
                return NULL;
        }
        return capbuf_detach(&d.out, NULL);
}
