/* stage.c: inputs: putting the user's files into the workspace, and
 * describing them for the model.
 *
 * A manifest's read-only files and directories (and --input's) are not
 * copied: the source is opened once and bound read-only by that fd onto an
 * empty mount point in every jail; what cannot be bound as it is (inline
 * content, a directory holding symlinks or devices) is copied to a private
 * store outside the workspace and bound from there.  Writable entries are
 * copied in.  Never a hard link.  workspace_stage_input() is the older call:
 * a copy into input/.
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

#include "../lib/digest.h"
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

/* "PATH[:DEST]" of --input: the path (a regular file or a directory, *st
 * its stat) and the checked DEST (default: PATH's base name). */
static int input_spec(const char *spec, char **ret_path, char **ret_dest, struct stat *st, corral_error **ret_err)
{
        if (spec == NULL || spec[0] == '\0')
                return corral_usage(ret_err, "an input to stage is empty: give PATH or PATH:NAME");
        cleanup_free char *path = NULL, *dest = NULL;
        if (parse_spec(spec, &path, &dest, ret_err) < 0)
                return -1;
        if (stat(path, st) < 0)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot stage '%s'", path);
        if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
                return corral_usage(ret_err, "cannot stage '%s': it is %s; inputs are regular files and directories",
                                    path, ws_type_phrase(st->st_mode));
        if (dest == NULL && default_dest(path, &dest, ret_err) < 0)
                return -1;
        if (check_dest(dest, ret_err) < 0)
                return -1;
        *ret_path = TAKE_PTR(path);
        *ret_dest = TAKE_PTR(dest);
        return 0;
}

int workspace_stage_input(struct workspace *ws, const char *spec, uint64_t *budget, json_t **ret_entry,
                          corral_error **ret_err)
{
        cleanup_free char *path = NULL, *dest = NULL;
        struct stat st;
        if (input_spec(spec, &path, &dest, &st, ret_err) < 0)
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
        struct workspace *ws;
        bool in_bound;  /* walking a bound entry's source: the user's own files */
        const char *note; /* "read-only" or "writable": for entries outside input/ */
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

/* src_fd >= 0: read the file through that fd (a staged entry's). */
static void describe_file(struct describe *d, int dirfd, const char *name, const char *path, const struct stat *st,
                          int src_fd)
{
        char size[64];
        ws_format_size((uint64_t)st->st_size, size, sizeof(size));
        if (d->note) /* entries outside input/ say what they are */
                snprintf(size + strlen(size), sizeof(size) - strlen(size), ", %s", d->note);
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
        if (st->st_nlink > 1 && !d->in_bound) {
                putf(d, "%s (%s, %ju hard links: not shown)\n", shown, size, (uintmax_t)st->st_nlink);
                return;
        }
        if (st->st_size == 0) {
                putf(d, "%s (%s, empty)\n", shown, size);
                return;
        }
        char buf[HEAD_BYTES];
        ssize_t n = -1;
        int fd = src_fd >= 0 ? ws_reopen(src_fd, O_RDONLY | O_NONBLOCK | O_NOCTTY)
                             : openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat fst;
        if (fd >= 0 && fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) &&
            (fst.st_nlink == 1 || d->in_bound)) {
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
        const struct ws_staged *b = d->in_bound ? NULL : workspace_staged_at(d->ws, path, true);
        struct stat bst;
        if (b && strcmp(b->dest, path) == 0 && fstat(b->source_fd, &bst) == 0) {
                /* A mount point: describe what is bound there. */
                if (S_ISDIR(bst.st_mode)) {
                        struct ws_walk sub = {
                                .max_depth = w->max_depth > depth ? w->max_depth - depth : 1,
                                .max_entries = w->max_entries > w->entries ? w->max_entries - w->entries : 1,
                                .visit = describe_visit,
                                .data = d,
                        };
                        d->in_bound = true;
                        int r = ws_walk_run(&sub, b->source_fd, path);
                        d->in_bound = false;
                        w->entries += sub.entries;
                        w->truncated |= sub.truncated;
                        return r < 0 || d->failed ? -1 : 0;
                }
                d->files++;
                if (d->shown < d->max_files) {
                        d->shown++;
                        d->in_bound = true;
                        describe_file(d, -1, NULL, path, &bst, b->source_fd);
                        d->in_bound = false;
                }
                return d->failed ? -1 : 0;
        }
        if (S_ISDIR(st->st_mode))
                return 1;
        d->files++;
        if (d->shown < d->max_files) {
                d->shown++;
                describe_file(d, dirfd, name, path, st, -1);
        }
        return d->failed ? -1 : 0;
}

void workspace_digest_inputs(struct workspace *ws, json_t *entries)
{
        size_t i;
        json_t *e;
        json_array_foreach (entries, i, e) {
                const char *dest = json_string_value(json_object_get(e, "dest"));
                const char *type = json_string_value(json_object_get(e, "type"));
                if (dest == NULL || type == NULL || strcmp(type, "file") != 0)
                        continue;
                char hex[DIGEST_HEX_LEN + 1];
                cleanup_close int fd = ws_open_rel(ws, dest, O_RDONLY | O_NONBLOCK | O_NOCTTY, NULL, NULL);
                if (fd >= 0 && digest_sha256_fd(fd, hex) == 0)
                        json_object_set_new(e, "sha256", json_string(hex));
        }
}

char *workspace_describe_inputs(struct workspace *ws, size_t max_files, unsigned head_lines)
{
        struct describe d = {
                .ws = ws,
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
        bool truncated = w.truncated, outside = false;
        /* Then the manifest's entries elsewhere in the workspace. */
        for (size_t i = 0; r == 0 && !d.failed && i < ws->n_staged; i++) {
                const struct ws_staged *s = &ws->staged[i];
                if (strncmp(s->dest, "input/", 6) == 0)
                        continue;
                d.note = s->writable ? "writable" : "read-only";
                struct stat st;
                cleanup_close int efd = ws_open_rel(ws, s->dest, O_PATH, NULL, NULL);
                outside = true;
                if (efd < 0 || fstat(efd, &st) < 0)
                        continue;
                if (!S_ISDIR(st.st_mode)) {
                        d.files++;
                        if (d.shown < d.max_files) {
                                d.shown++;
                                d.in_bound = s->bound;
                                describe_file(&d, -1, NULL, s->dest, &st, efd);
                                d.in_bound = false;
                        }
                        continue;
                }
                struct ws_walk sub = {
                        .max_depth = WORKSPACE_MAX_DEPTH,
                        .max_entries = WORKSPACE_MAX_ENTRIES,
                        .visit = describe_visit,
                        .data = &d,
                };
                d.in_bound = s->bound;
                r = ws_walk_run(&sub, efd, s->dest);
                d.in_bound = false;
                truncated |= sub.truncated;
        }
        if (r < 0 || d.failed) {
                capbuf_release(&d.out);
                return NULL;
        }
        if (d.files > d.shown || truncated)
                putf(&d, "(and %s%zu more file%s%s)\n", truncated ? "over " : "", d.files - d.shown,
                     d.files - d.shown == 1 && !truncated ? "" : "s", outside ? "" : " in input/");
        if (d.failed) {
                capbuf_release(&d.out);
                return NULL;
        }
        return capbuf_detach(&d.out, NULL);
}

/* ---- manifests: staging entries ---- */

/* Record a staged entry (fd is taken, also on failure). */
static int staged_add(struct workspace *ws, const char *dest, const char *source, bool dir, bool writable,
                      bool ephemeral, bool bound, int fd)
{
        struct ws_staged *v = realloc(ws->staged, (ws->n_staged + 1) * sizeof(*v));
        char *d = strdup(dest), *s = source ? strdup(source) : NULL;
        if (v == NULL || d == NULL || (source && s == NULL)) {
                if (v)
                        ws->staged = v;
                free(d);
                free(s);
                if (fd >= 0)
                        close(fd);
                errno = ENOMEM;
                return -1;
        }
        ws->staged = v;
        v[ws->n_staged++] = (struct ws_staged){
                .dest = d,
                .source = s,
                .dir = dir,
                .writable = writable,
                .ephemeral = ephemeral,
                .bound = bound,
                .source_fd = fd,
        };
        return 0;
}

const struct ws_staged *workspace_staged_at(const struct workspace *ws, const char *rel, bool bound_only)
{
        for (size_t i = 0; ws && i < ws->n_staged; i++) {
                const struct ws_staged *s = &ws->staged[i];
                size_t n = strlen(s->dest);
                if ((bound_only && !s->bound) || strncmp(rel, s->dest, n) != 0)
                        continue;
                if (rel[n] == '\0' || (rel[n] == '/' && s->dir))
                        return s;
        }
        return NULL;
}

int ws_manifest_add_input(struct ws_manifest *m, const char *spec, corral_error **ret_err)
{
        cleanup_free char *path = NULL, *dest = NULL;
        struct stat st;
        if (input_spec(spec, &path, &dest, &st, ret_err) < 0)
                return -1;
        struct ws_manifest_entry e = { .kind = S_ISDIR(st.st_mode) ? WS_SOURCE_DIR : WS_SOURCE_FILE,
                                       .from_input = true };
        char cwd[PATH_MAX];
        if (path[0] != '/' && getcwd(cwd, sizeof(cwd)) == NULL)
                return corral_fail(ret_err, errno, "cannot stage '%s'", path);
        if (asprintf(&e.dest, "input/%s", dest) < 0)
                e.dest = NULL;
        if (path[0] == '/')
                e.source = strdup(path);
        else if (asprintf(&e.source, "%s/%s", cwd, path) < 0)
                e.source = NULL;
        struct ws_manifest_entry *v = realloc(m->v, (m->n + 1) * sizeof(*v));
        if (v)
                m->v = v;
        if (v == NULL || e.dest == NULL || e.source == NULL) {
                free(e.dest);
                free(e.source);
                return corral_fail(ret_err, ENOMEM, "cannot stage '%s'", path);
        }
        m->v[m->n++] = e;
        for (size_t j = 0; j + 1 < m->n; j++)
                if (strcmp(m->v[j].dest, e.dest) == 0)
                        return corral_usage(ret_err, "cannot stage '%s': '%s' is staged already (name it with "
                                                     "'%s:OTHER-NAME')",
                                            path, e.dest, path);
        return 0;
}

/* Where read-only copies live: a private directory beside the workspace,
 * outside every jail's reach (a copy inside the workspace could be reached
 * by a jail that renamed its mount point's parent).  Made on first use. */
static int store_open(struct workspace *ws, corral_error **ret_err)
{
        if (ws->store == NULL) {
                const char *tmp = getenv("TMPDIR");
                if (tmp == NULL || tmp[0] != '/')
                        tmp = "/tmp";
                char *templ = NULL;
                if (asprintf(&templ, "%s/corral-stage-XXXXXX", tmp) < 0)
                        return corral_fail(ret_err, ENOMEM, "cannot stage the inputs");
                if (mkdtemp(templ) == NULL) { /* mode 0700 */
                        int e = errno;
                        free(templ);
                        return corral_fail(ret_err, e, "cannot create a staging directory in '%s'", tmp);
                }
                ws->store = templ;
        }
        int fd = open(ws->store, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return corral_fail(ret_err, errno, "cannot open '%s'", ws->store);
        return fd;
}

/* Open (making missing directories, recorded in u) the parent of dest
 * beneath the workspace, never through a symlink. */
static int open_parent_beneath(struct workspace *ws, char *dest, struct undo *u, const char **ret_base,
                               corral_error **ret_err)
{
        int cur = fcntl(ws->root_fd, F_DUPFD_CLOEXEC, 0);
        if (cur < 0)
                return corral_fail(ret_err, errno, "cannot open the workspace");
        char *p = dest;
        for (char *slash; (slash = strchr(p, '/')) != NULL; p = slash + 1) {
                *slash = '\0';
                bool made = mkdirat(cur, p, 0755) == 0;
                int e = errno;
                if (!made && e != EEXIST) {
                        close(cur);
                        return corral_fail(ret_err, e, "cannot create '%s'", dest);
                }
                if (made && u)
                        undo_set(u, cur, p);
                int next = ws_open_beneath(cur, p, O_RDONLY | O_DIRECTORY, 0, true);
                e = errno;
                close(cur);
                if (next < 0) {
                        if (e == ENOTDIR || e == ELOOP || e == EXDEV)
                                corral_usage(ret_err, "'%s' exists and is %s", dest,
                                             e == ENOTDIR ? "not a directory" : "a symbolic link");
                        else
                                corral_fail(ret_err, e, "cannot open '%s'", dest);
                        *slash = '/';
                        return -1;
                }
                *slash = '/';
                cur = next;
        }
        *ret_base = p;
        return cur;
}

/* Open the parent of dest beneath the workspace if it is there (nothing
 * made, no symlink followed); *ret_base points into dest. */
static int open_parent_existing(struct workspace *ws, const char *dest, char **ret_parent, const char **ret_base)
{
        const char *slash = strrchr(dest, '/');
        *ret_base = slash ? slash + 1 : dest;
        *ret_parent = slash ? strndup(dest, (size_t)(slash - dest)) : strdup("");
        if (*ret_parent == NULL)
                return -1;
        return ws_open_beneath(ws->root_fd, *ret_parent, O_RDONLY | O_DIRECTORY, 0, true);
}

/* What a read-only directory holds: can it be bound as it is? */
struct scan {
        dev_t dev;
        uint64_t bytes;
        size_t files;
        const char *why;   /* not bindable: a phrase */
        char *why_path;
};

static int scan_visit(struct ws_walk *w, int dirfd, const char *name, const char *path, const struct stat *st,
                      unsigned depth)
{
        struct scan *s = w->data;
        if (S_ISREG(st->st_mode)) {
                s->bytes += (uint64_t)st->st_size;
                s->files++;
                return 0;
        }
        const char *why = NULL;
        if (!S_ISDIR(st->st_mode))
                why = ws_type_phrase(st->st_mode);
        else if (st->st_dev != s->dev)
                why = "a mount point";
        if (why && s->why == NULL) {
                s->why = why;
                s->why_path = strdup(path);
        }
        return why ? 0 : 1;
}

static json_t *entry_report(const struct ws_manifest_entry *e, const char *staging, uint64_t bytes, size_t files,
                            json_t *skipped)
{
        json_t *r = json_pack("{s:o, s:s, s:s, s:b, s:b, s:I, s:I, s:o}", "dest", ws_json_path(e->dest), "type",
                              e->kind == WS_SOURCE_DIR ? "dir" : "file", "staging", staging, "writable", e->writable,
                              "ephemeral", e->ephemeral, "bytes", (json_int_t)bytes, "files", (json_int_t)files,
                              "skipped", skipped ? json_incref(skipped) : json_array());
        if (r && e->source)
                json_object_set_new(r, "source", ws_json_path(e->source));
        return r;
}

/* The state of one manifest staging. */
struct staging {
        struct workspace *ws;
        uint64_t budget;
        size_t entries;      /* files and directories so far, for WORKSPACE_MAX_ENTRIES */
        json_t *report;
        struct undo *made;   /* what each staged entry made first, to undo on failure */
        size_t n_made;
};

static int over_budget_error(struct staging *sg, const char *what, uint64_t need, corral_error **ret_err)
{
        char left[32], size[32];
        ws_format_size(sg->budget, left, sizeof(left));
        ws_format_size(need, size, sizeof(size));
        return corral_usage_field(ret_err, "input_limit",
                                  "'%s' (%s) goes past the input budget (%s left); raise the input limit", what,
                                  size, left);
}

/* Copy the file or directory open as src (st) to name in dirfd. */
static int copy_in(struct staging *sg, const struct ws_manifest_entry *e, int src, const struct stat *st, int dirfd,
                   const char *name, json_t *skipped, uint64_t *ret_bytes, size_t *ret_files, corral_error **ret_err)
{
        struct ws_copy c = {
                .src_name = e->source,
                .dest_name = e->dest,
                .strict = true,
                .budget = sg->budget,
                .budget_what = "the input budget",
                .skipped = skipped,
                .entries = sg->entries,
        };
        int r = -1;
        if (S_ISREG(st->st_mode)) {
                cleanup_close int fd = ws_reopen(src, O_RDONLY | O_NONBLOCK | O_NOCTTY);
                struct stat fst;
                if (fd < 0 || fstat(fd, &fst) < 0)
                        corral_fail(&c.err, errno, "cannot open '%s'", e->source);
                else if (fst.st_dev != st->st_dev || fst.st_ino != st->st_ino)
                        corral_usage(&c.err, "'%s' changed while being staged", e->source);
                else
                        r = ws_copy_file(&c, fd, &fst, dirfd, name, "");
        } else if (mkdirat(dirfd, name, 0755) < 0) {
                corral_fail(&c.err, errno, "cannot create '%s'", e->dest);
        } else {
                cleanup_close int dfd = ws_open_beneath(dirfd, name, O_RDONLY | O_DIRECTORY, 0, true);
                cleanup_close int sfd = openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0 || sfd < 0)
                        corral_fail(&c.err, errno, "cannot open '%s'", dfd < 0 ? e->dest : e->source);
                else
                        r = ws_copy_tree(&c, sfd, dfd, "");
        }
        if (r < 0) {
                if (c.err == NULL)
                        corral_fail(&c.err, EIO, "cannot copy '%s'", e->source);
                corral_error_free(ret_err ? *ret_err : NULL);
                if (ret_err)
                        *ret_err = TAKE_PTR(c.err);
                corral_error_free(c.err);
                return -1;
        }
        *ret_bytes = c.bytes;
        *ret_files = c.files;
        sg->entries = c.entries + (S_ISREG(st->st_mode) ? 1 : 0);
        return 0;
}

/* Make the empty mount point at base in parent. */
static int make_mount_point(int parent, const char *base, bool dir)
{
        if (dir)
                return mkdirat(parent, base, 0755);
        int fd = openat(parent, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
        if (fd < 0)
                return -1;
        return close(fd);
}

/* An O_PATH fd of name in dirfd (no symlink followed). */
static int path_fd_at(int dirfd, const char *name)
{
        return openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
}

static int stage_entry(struct staging *sg, const struct ws_manifest *m, size_t index, corral_error **ret_err)
{
        const struct ws_manifest_entry *e = &m->v[index];
        struct workspace *ws = sg->ws;
        cleanup_free char *dest = strdup(e->dest);
        if (dest == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot stage '%s'", e->dest);
        struct undo u = { .dirfd = -1 };
        const char *base = NULL;
        int r = -1, keep_fd = -1, store = -1;
        json_t *skipped = json_array();
        uint64_t bytes = 0;
        size_t files = 0;
        const char *staging = "copy";
        bool is_dir = e->kind == WS_SOURCE_DIR;
        char store_name[32];
        snprintf(store_name, sizeof(store_name), "%zu", ws->n_staged);
        cleanup_close int src = -1;
        struct stat st = { 0 };

        if (skipped == NULL) {
                corral_fail(ret_err, ENOMEM, "cannot stage '%s'", e->dest);
                goto out;
        }
        if (e->kind != WS_SOURCE_CONTENT) {
                /* The user named it: a symlink at the top is followed.  Opened
                 * once; what is bound later is this file, whatever the path
                 * becomes. */
                src = open(e->source, O_PATH | O_CLOEXEC);
                if (src < 0 || fstat(src, &st) < 0) {
                        corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot stage '%s'", e->source);
                        goto out;
                }
                if (e->kind == WS_SOURCE_FILE && !S_ISREG(st.st_mode)) {
                        corral_usage(ret_err, "cannot stage '%s': it is %s, not a regular file%s", e->source,
                                     ws_type_phrase(st.st_mode),
                                     S_ISDIR(st.st_mode) ? " (stage a directory with \"dir\")" : "");
                        goto out;
                }
                if (e->kind == WS_SOURCE_DIR && !S_ISDIR(st.st_mode)) {
                        corral_usage(ret_err, "cannot stage '%s': it is %s, not a directory%s", e->source,
                                     ws_type_phrase(st.st_mode),
                                     S_ISREG(st.st_mode) ? " (stage a file with \"file\")" : "");
                        goto out;
                }
        }
        int parent = open_parent_beneath(ws, dest, &u, &base, ret_err);
        if (parent < 0) {
                corral_error_prefix(ret_err, "cannot stage at '%s'", e->dest);
                goto out;
        }
        struct stat dst;
        if (fstatat(parent, base, &dst, AT_SYMLINK_NOFOLLOW) == 0) {
                corral_usage(ret_err, "cannot stage at '%s': it already exists in the workspace", e->dest);
                goto close_parent;
        }

        if (e->kind == WS_SOURCE_CONTENT) {
                staging = "write";
                files = 1;
                bytes = e->content_len;
                if (bytes > sg->budget || sg->entries + 1 > WORKSPACE_MAX_ENTRIES) {
                        if (bytes > sg->budget)
                                over_budget_error(sg, e->dest, bytes, ret_err);
                        else
                                corral_usage(ret_err, "'%s' is past the limit of %d entries", e->dest,
                                             WORKSPACE_MAX_ENTRIES);
                        goto close_parent;
                }
                /* Read-only content goes to the store and is bound like a
                 * host file; writable content is written in place. */
                int dirfd = parent;
                const char *name = base;
                if (!e->writable) {
                        store = store_open(ws, ret_err);
                        if (store < 0)
                                goto close_parent;
                        dirfd = store;
                        name = store_name;
                }
                int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0 || write_all(fd, e->content, e->content_len) < 0 || close(fd) < 0) {
                        corral_fail(ret_err, errno, "cannot write '%s'", e->dest);
                        (void)unlinkat(dirfd, name, 0);
                        goto close_parent;
                }
                if (!e->writable)
                        undo_set(&u, store, name);
                else
                        undo_set(&u, parent, base);
                if (!e->writable && (keep_fd = path_fd_at(store, name)) < 0) {
                        corral_fail(ret_err, errno, "cannot open '%s/%s'", ws->store, name);
                        goto close_parent;
                }
                if (!e->writable) {
                        if (make_mount_point(parent, base, false) < 0) {
                                corral_fail(ret_err, errno, "cannot create '%s' in the workspace", e->dest);
                                goto close_parent;
                        }
                        undo_set(&u, parent, base);
                }
                sg->entries++;
        } else if (e->writable) {
                if (copy_in(sg, e, src, &st, parent, base, skipped, &bytes, &files, ret_err) < 0) {
                        corral_error_prefix(ret_err, "cannot stage '%s'", e->source);
                        /* A failed tree copy leaves its top directory. */
                        undo_set(&u, parent, base);
                        goto close_parent;
                }
                undo_set(&u, parent, base);
        } else {
                staging = "bind";
                if (S_ISDIR(st.st_mode)) {
                        struct scan s = { .dev = st.st_dev };
                        struct ws_walk w = {
                                .max_depth = WORKSPACE_MAX_DEPTH,
                                .max_entries = WORKSPACE_MAX_ENTRIES - sg->entries,
                                .visit = scan_visit,
                                .data = &s,
                        };
                        if (ws_walk_run(&w, src, "") < 0) {
                                free(s.why_path);
                                corral_fail(ret_err, errno ? errno : ENOMEM, "cannot read '%s'", e->source);
                                goto close_parent;
                        }
                        if (w.truncated || w.depth_limited) {
                                free(s.why_path);
                                if (w.truncated)
                                        corral_usage(ret_err, "cannot stage '%s': it has entries past the limit of "
                                                              "%d",
                                                     e->source, WORKSPACE_MAX_ENTRIES);
                                else
                                        corral_usage(ret_err, "cannot stage '%s': it is nested deeper than %d levels",
                                                     e->source, WORKSPACE_MAX_DEPTH);
                                goto close_parent;
                        }
                        if (s.why) {
                                /* A bind would show the jail what a copy skips:
                                 * copy it (without those) to the store. */
                                free(s.why_path);
                                staging = "copy";
                                store = store_open(ws, ret_err);
                                if (store < 0)
                                        goto close_parent;
                                undo_set(&u, store, store_name);
                                if (copy_in(sg, e, src, &st, store, store_name, skipped, &bytes, &files,
                                            ret_err) < 0) {
                                        corral_error_prefix(ret_err, "cannot stage '%s'", e->source);
                                        goto close_parent;
                                }
                                keep_fd = path_fd_at(store, store_name);
                        } else {
                                free(s.why_path);
                                if (s.bytes > sg->budget) {
                                        over_budget_error(sg, e->source, s.bytes, ret_err);
                                        goto close_parent;
                                }
                                bytes = s.bytes;
                                files = s.files;
                                sg->entries += w.entries;
                                keep_fd = TAKE_FD(src);
                        }
                } else {
                        if ((uint64_t)st.st_size > sg->budget) {
                                over_budget_error(sg, e->source, (uint64_t)st.st_size, ret_err);
                                goto close_parent;
                        }
                        bytes = (uint64_t)st.st_size;
                        files = 1;
                        sg->entries++;
                        keep_fd = TAKE_FD(src);
                }
                if (keep_fd < 0) {
                        corral_fail(ret_err, errno, "cannot open the staged copy of '%s'", e->source);
                        goto close_parent;
                }
                if (make_mount_point(parent, base, is_dir) < 0) {
                        corral_fail(ret_err, errno, "cannot create '%s' in the workspace", e->dest);
                        goto close_parent;
                }
                undo_set(&u, parent, base);
        }
        if (sg->entries > WORKSPACE_MAX_ENTRIES) {
                corral_usage(ret_err, "cannot stage '%s': the inputs have entries past the limit of %d", e->dest,
                             WORKSPACE_MAX_ENTRIES);
                goto close_parent;
        }
        if (staged_add(ws, e->dest, e->source, is_dir, e->writable, e->ephemeral, !e->writable, TAKE_FD(keep_fd)) <
            0) {
                corral_fail(ret_err, ENOMEM, "cannot stage '%s'", e->dest);
                goto close_parent;
        }
        sg->budget -= bytes;
        if (sg->report) {
                json_t *rep = entry_report(e, staging, bytes, files, skipped);
                if (rep && e->kind == WS_SOURCE_CONTENT)
                        json_object_set_new(rep, "content_bytes", json_integer((json_int_t)e->content_len));
                if (rep == NULL || json_array_append_new(sg->report, rep) < 0) {
                        /* Staged and recorded: undone with the rest by the caller. */
                        r = corral_fail(ret_err, ENOMEM, "cannot stage '%s'", e->dest);
                        goto close_parent;
                }
        }
        r = 0;
        /* Kept until the whole manifest is staged. */
        struct undo *made = realloc(sg->made, (sg->n_made + 1) * sizeof(*made));
        if (made == NULL) {
                r = corral_fail(ret_err, ENOMEM, "cannot stage '%s'", e->dest);
        } else {
                sg->made = made;
                made[sg->n_made++] = u;
                u = (struct undo){ .dirfd = -1 };
        }
close_parent:
        close(parent);
out:
        if (r < 0) {
                char name[PATH_MAX + 64];
                ws_manifest_entry_name(m, index, name, sizeof(name));
                corral_error_prefix(ret_err, "%s", name);
        }
        if (keep_fd >= 0)
                close(keep_fd);
        undo_run(&u, r < 0);
        if (store >= 0)
                close(store);
        json_decref(skipped);
        return r;
}

/* Undo the staged entries from index first on: their mount points or
 * copies in the workspace, their copies in the store, their fds. */
static void unstage_from(struct workspace *ws, size_t first)
{
        size_t end = ws->n_staged;
        while (ws->n_staged > first) {
                struct ws_staged *s = &ws->staged[--ws->n_staged];
                cleanup_free char *dir = NULL;
                const char *base = NULL;
                int parent = open_parent_existing(ws, s->dest, &dir, &base);
                if (parent >= 0) {
                        (void)ws_remove_at(parent, base);
                        close(parent);
                }
                if (s->source_fd >= 0)
                        close(s->source_fd);
                free(s->dest);
                free(s->source);
        }
        if (ws->store) {
                int fd = open(ws->store, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                char name[32];
                for (size_t i = first; fd >= 0 && i < end; i++) {
                        snprintf(name, sizeof(name), "%zu", i);
                        (void)ws_remove_at(fd, name);
                }
                if (fd >= 0)
                        close(fd);
        }
}

int workspace_stage_manifest(struct workspace *ws, const struct ws_manifest *m, uint64_t *budget,
                             json_t **ret_report, corral_error **ret_err)
{
        if (ws_manifest_check(m, ret_err) < 0)
                return -1;
        struct staging sg = {
                .ws = ws,
                .budget = budget ? *budget : UINT64_MAX,
                .report = ret_report ? json_array() : NULL,
        };
        if (ret_report && sg.report == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot stage the inputs");
        size_t first = ws->n_staged;
        int r = 0;
        for (size_t i = 0; r == 0 && i < m->n; i++)
                r = stage_entry(&sg, m, i, ret_err);
        if (r < 0)
                unstage_from(ws, first);
        for (size_t i = sg.n_made; i-- > 0;)
                undo_run(&sg.made[i], r < 0);
        free(sg.made);
        if (r < 0) {
                json_decref(sg.report);
                return -1;
        }
        if (budget)
                *budget = sg.budget;
        if (ret_report)
                *ret_report = sg.report;
        return 0;
}

int workspace_prepare_mounts(struct workspace *ws, corral_error **ret_err)
{
        for (size_t i = 0; i < ws->n_staged; i++) {
                const struct ws_staged *s = &ws->staged[i];
                if (!s->bound)
                        continue;
                cleanup_free char *dest = strdup(s->dest);
                if (dest == NULL)
                        return corral_fail(ret_err, ENOMEM, "cannot prepare '%s'", s->dest);
                const char *base = NULL;
                int parent = -1;
                /* A parent a jail replaced (a symlink, a file): removed
                 * and made again, a level at a time. */
                for (unsigned tries = 0; parent < 0 && tries < WORKSPACE_MAX_DEPTH; tries++) {
                        corral_error *e = NULL;
                        parent = open_parent_beneath(ws, dest, NULL, &base, &e);
                        if (parent >= 0)
                                break;
                        int kind = e ? e->kind : CORRAL_ERR_INTERNAL;
                        corral_error_free(e);
                        if (kind != CORRAL_ERR_USAGE)
                                return corral_fail(ret_err, errno ? errno : EIO, "cannot prepare '%s'", s->dest);
                        /* Find the first component that is not a directory. */
                        int cur = fcntl(ws->root_fd, F_DUPFD_CLOEXEC, 0);
                        for (char *p = dest, *slash; cur >= 0 && (slash = strchr(p, '/')) != NULL;
                             p = slash + 1) {
                                *slash = '\0';
                                struct stat st;
                                if (fstatat(cur, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
                                        (void)ws_remove_at(cur, p);
                                        *slash = '/';
                                        break;
                                }
                                int next = ws_open_beneath(cur, p, O_RDONLY | O_DIRECTORY, 0, true);
                                *slash = '/';
                                close(cur);
                                cur = next;
                        }
                        if (cur >= 0)
                                close(cur);
                }
                if (parent < 0)
                        return corral_fail(ret_err, ELOOP, "cannot prepare '%s'", s->dest);
                struct stat st;
                int r = 0;
                if (fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                        if (s->dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
                                r = ws_remove_at(parent, base) < 0 || make_mount_point(parent, base, s->dir) < 0;
                } else {
                        r = make_mount_point(parent, base, s->dir) < 0;
                }
                int e = errno;
                close(parent);
                if (r)
                        return corral_fail(ret_err, e, "cannot prepare the mount point '%s'", s->dest);
        }
        return 0;
}

void ws_staged_release(struct workspace *ws, bool remove_mount_points)
{
        for (size_t i = 0; i < ws->n_staged; i++) {
                struct ws_staged *s = &ws->staged[i];
                cleanup_free char *dir = NULL;
                const char *base = NULL;
                int parent = remove_mount_points && s->bound ? open_parent_existing(ws, s->dest, &dir, &base) : -1;
                /* A kept workspace loses its (empty) mount points: nothing else. */
                struct stat st;
                if (parent >= 0 && fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    (S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_size == 0)))
                        (void)unlinkat(parent, base, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
                if (parent >= 0)
                        close(parent);
                if (s->source_fd >= 0)
                        close(s->source_fd);
                free(s->dest);
                free(s->source);
        }
        free(ws->staged);
        ws->staged = NULL;
        ws->n_staged = 0;
        if (ws->store) {
                char *slash = strrchr(ws->store, '/');
                *slash = '\0';
                int fd = open(slash == ws->store ? "/" : ws->store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd >= 0) {
                        (void)ws_remove_at(fd, slash + 1);
                        close(fd);
                }
                free(ws->store);
                ws->store = NULL;
        }
}

void workspace_diff_drop_mounts(const struct workspace *ws, json_t *diff)
{
        for (size_t i = json_array_size(diff); i-- > 0;) {
                const char *path = json_string_value(json_object_get(json_array_get(diff, i), "path"));
                if (path && workspace_staged_at(ws, path, true))
                        json_array_remove(diff, i);
        }
}
