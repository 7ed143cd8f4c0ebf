/* test-archive.c: workspace archives (src/workspace/archive.h).
 *
 * Round trips (workspace -> archive -> extract, and restore into a fresh
 * workspace) with hostile entries in the workspace (FIFO, hard link,
 * symlinks out, set-uid), staged entries left out (ephemeral, inputs) or
 * read from their source (bound), and every refusal of extraction, each on
 * an archive written here with libarchive: the error names the entry and
 * the reason, and neither the destination nor a temporary directory is
 * left behind.  e2e/test_archive.py does the same against GNU tar.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/workspace/archive-dl.h"
#include "../../src/workspace/archive.h"
#include "../../src/workspace/workspace-internal.h"
#include "../../src/workspace/dest.h"
#include "archive-to.h"
#include "harness.h"

static char base[4096];
static corral_error *err;

static const char *P(const char *fmt, ...) CORRAL_PRINTF(1, 2);
static const char *P(const char *fmt, ...)
{
        static char bufs[8][4096];
        static int next;
        char *b = bufs[next++ % 8];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b, 4096, fmt, ap);
        va_end(ap);
        return b;
}

static void put(const char *path, const char *text, mode_t mode)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd >= 0) {
                if (write(fd, text, strlen(text)) < 0)
                        perror("write");
                fchmod(fd, mode);
                close(fd);
        }
}

static const char *get(const char *path)
{
        static char buf[8192];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[n < 0 ? 0 : n] = '\0';
        return buf;
}

static bool exists(const char *path)
{
        struct stat st;
        return lstat(path, &st) == 0;
}

static mode_t mode_of(const char *path)
{
        struct stat st;
        return lstat(path, &st) == 0 ? st.st_mode : 0;
}

/* Entries in dir (0 when it is missing). */
static int count_entries(const char *dir)
{
        struct ws_names names;
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        int n = ws_names_read(fd, 1000, &names) == 0 ? (int)names.n : -1;
        ws_names_release(&names);
        close(fd);
        return n;
}

static bool msg_has(const char *sub)
{
        bool ok = err && strstr(err->msg, sub);
        if (!ok)
                printf("#   error: %s (wanted '%s')\n", err ? err->msg : "(none)", sub);
        return ok;
}

static bool list_has(json_t *list, const char *path)
{
        json_t *e;
        size_t i;
        json_array_foreach(json_object_get(list, "entries"), i, e)
                if (strcmp(json_string_value(json_object_get(e, "path")), path) == 0)
                        return true;
        return false;
}

static bool report_has(json_t *report, const char *key, const char *path)
{
        json_t *e;
        size_t i;
        json_array_foreach(json_object_get(report, key), i, e) {
                const char *p = json_is_string(e) ? json_string_value(e) : json_string_value(json_object_get(e, "path"));
                if (p && strcmp(p, path) == 0)
                        return true;
        }
        return false;
}

/* ---- hostile archives, written with libarchive ---- */

struct spec {
        const char *path;
        mode_t type;        /* AE_IF* */
        const char *data;   /* regular files */
        const char *link;   /* symlink target */
        const char *hard;   /* hard link target */
        int64_t size;       /* declared size when no data (-1: strlen(data)) */
};

static void write_tar(const char *path, const struct spec *s, size_t n, bool gzip_it)
{
        const struct archive_api *A = archive_api_get(NULL);
        struct archive *a = A->archive_write_new();
        struct archive_entry *e = A->archive_entry_new();
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        A->archive_write_set_format_pax_restricted(a);
        A->archive_write_add_filter_none(a);
        (void)gzip_it;
        A->archive_write_open_fd(a, fd);
        for (size_t i = 0; i < n; i++) {
                A->archive_entry_clear(e);
                A->archive_entry_set_pathname(e, s[i].path);
                A->archive_entry_set_filetype(e, s[i].type);
                A->archive_entry_set_perm(e, 0644);
                if (s[i].link)
                        A->archive_entry_set_symlink(e, s[i].link);
                if (s[i].hard)
                        A->archive_entry_set_hardlink(e, s[i].hard);
                int64_t size = s[i].data ? (int64_t)strlen(s[i].data) : s[i].size;
                A->archive_entry_set_size(e, size);
                A->archive_write_header(a, e);
                if (s[i].data)
                        A->archive_write_data(a, s[i].data, strlen(s[i].data));
        }
        A->archive_write_close(a);
        A->archive_write_free(a);
        A->archive_entry_free(e);
        close(fd);
}

/* Extraction of specs must fail naming why, leaving nothing in base/x. */
static void refused(const char *name, const struct spec *s, size_t n, const char *why,
                    const struct archive_limits *lim)
{
        printf("# refusal: %s\n", name);
        cleanup_free char *arc = strdup(P("%s/%s.tar", base, name));
        write_tar(arc, s, n, false);
        mkdir(P("%s/x", base), 0755);
        corral_error_clear(&err);
        json_t *report = NULL;
        CHECK_INT(archive_extract(arc, P("%s/x/dest", base), lim, &report, &err), -1);
        CHECK(err && err->kind == CORRAL_ERR_USAGE);
        CHECK(msg_has(why));
        CHECK(report == NULL);
        CHECK_INT(count_entries(P("%s/x", base)), 0); /* no dest, no temporary directory */
        /* list says the same, without failing */
        json_t *list = NULL;
        corral_error_clear(&err);
        CHECK_INT(archive_list(arc, NULL, 0, lim, &list, &err), 0);
        CHECK(json_is_false(json_object_get(list, "ok")));
        json_t *r0 = json_array_get(json_object_get(list, "refused"), 0);
        CHECK(r0 && strstr(json_string_value(json_object_get(r0, "reason")), why));
        json_decref(list);
        unlink(arc);
}

#define REFUSED(name, why, ...)                                                                                        \
        do {                                                                                                           \
                const struct spec _s[] = { __VA_ARGS__ };                                                              \
                refused(name, _s, ARRAY_SIZE(_s), why, NULL);                                                          \
        } while (0)

TEST(refusals)
{
        REFUSED("dotdot", "'..'", { "../x", AE_IFREG, "bad" });
        REFUSED("dotdot-inner", "'..'", { "a/b/../../../x", AE_IFREG, "bad" });
        REFUSED("absolute", "absolute path", { "/tmp/corral-unit-x", AE_IFREG, "bad" });
        REFUSED("symlink-absolute", "absolute path '/etc'", { "etc", AE_IFLNK, .link = "/etc" });
        REFUSED("symlink-climbing", "climbs out of the tree", { "a/l", AE_IFLNK, .link = "../../x" });
        REFUSED("symlink-two-step", "'..' after a name", { "s", AE_IFLNK, .link = "." },
                { "t", AE_IFLNK, .link = "s/.." });
        REFUSED("through-symlink", "beneath 'l', a symbolic link", { "d", AE_IFDIR }, { "l", AE_IFLNK, .link = "d" },
                { "l/x", AE_IFREG, "bad" });
        REFUSED("beneath-file", "which is a file", { "f", AE_IFREG, "x" }, { "f/x", AE_IFREG, "bad" });
        REFUSED("hardlink-out", "hard link to '/etc/passwd'", { "pw", AE_IFREG, .hard = "/etc/passwd" });
        REFUSED("hardlink-dotdot", "outside the tree", { "pw", AE_IFREG, .hard = "../x" });
        REFUSED("hardlink-later", "not a regular file extracted before it", { "h", AE_IFREG, .hard = "f" },
                { "f", AE_IFREG, "x" });
        REFUSED("hardlink-dir", "not a regular file extracted before it", { "d", AE_IFDIR },
                { "h", AE_IFREG, .hard = "d" });
        REFUSED("chardev", "character device", { "null", AE_IFCHR });
        REFUSED("blockdev", "block device", { "sda", AE_IFBLK });
        REFUSED("fifo", "FIFO", { "f", AE_IFIFO });
        REFUSED("dir-then-file", "appears twice", { "a", AE_IFDIR }, { "a", AE_IFREG, "x" });

        /* Limits given by the caller. */
        struct spec many[20];
        for (size_t i = 0; i < ARRAY_SIZE(many); i++)
                many[i] = (struct spec){ strdup(P("f%zu", i)), AE_IFREG, "x" };
        refused("entries", many, ARRAY_SIZE(many), "past the limit of 10 entries",
                &(struct archive_limits){ .max_entries = 10 });
        refused("bytes", many, ARRAY_SIZE(many), "past the limit of 15 B", &(struct archive_limits){ .max_bytes = 15 });
        for (size_t i = 0; i < ARRAY_SIZE(many); i++)
                free((char *)many[i].path);

        /* Not tar: refused before anything is made. */
        cleanup_free char *junk = strdup(P("%s/junk.zip", base));
        put(junk, "PK\003\004 not a tar archive at all, but long enough to be looked at ............", 0644);
        corral_error_clear(&err);
        CHECK_INT(archive_extract(junk, P("%s/x/dest", base), NULL, NULL, &err), -1);
        CHECK(msg_has("tar archives only"));
        CHECK_INT(count_entries(P("%s/x", base)), 0);
        json_t *list = NULL;
        corral_error_clear(&err);
        CHECK_INT(archive_list(junk, NULL, 0, NULL, &list, &err), -1);
        CHECK(msg_has("tar archives only"));
        corral_error_clear(&err);
        CHECK_INT(archive_extract(P("%s/missing.tar", base), P("%s/x/dest", base), NULL, NULL, &err), -1);
        CHECK(msg_has("No such file"));
}

/* Accepted oddities: "./" prefixes, doubled slashes, a later entry
 * replacing an earlier one, links that stay inside. */
TEST(accepted)
{
        const struct spec s[] = {
                { "./", AE_IFDIR },
                { "./a//b/f", AE_IFREG, "one" },
                { "a/b/f", AE_IFREG, "two" },
                { "a/l", AE_IFLNK, .link = "b/f" },
                { "a/b/up", AE_IFLNK, .link = "../l" },
                { "a/h", AE_IFREG, .hard = "a/b/f" },
                { "a/l", AE_IFREG, "now a file" },
        };
        cleanup_free char *arc = strdup(P("%s/ok.tar", base));
        write_tar(arc, s, ARRAY_SIZE(s), false);
        cleanup_free char *dest = strdup(P("%s/okdest", base));
        json_t *report = NULL;
        corral_error_clear(&err);
        CHECK_INT(archive_extract(arc, dest, NULL, &report, &err), 0);
        CHECK_STR(get(P("%s/a/b/f", dest)), "two");
        CHECK_STR(get(P("%s/a/h", dest)), "two");
        CHECK_STR(get(P("%s/a/l", dest)), "now a file");
        CHECK(S_ISREG(mode_of(P("%s/a/l", dest))));
        CHECK(S_ISLNK(mode_of(P("%s/a/b/up", dest))));
        CHECK_INT(json_integer_value(json_object_get(report, "entries")), (long long)ARRAY_SIZE(s));
        json_decref(report);
        /* An existing non-empty destination is refused and left alone. */
        corral_error_clear(&err);
        CHECK_INT(archive_extract(arc, dest, NULL, NULL, &err), -1);
        CHECK(msg_has("not empty"));
        CHECK_STR(get(P("%s/a/b/f", dest)), "two");
        ws_remove_at(AT_FDCWD, dest);
        unlink(arc);
}

static char *xstrdup(const char *s)
{
        return s ? strdup(s) : NULL;
}

static void stage(struct workspace *ws, const char *dest, const char *source, bool ephemeral, bool bound, int fd)
{
        struct ws_staged *v = realloc(ws->staged, (ws->n_staged + 1) * sizeof(*v));
        if (v == NULL)
                return;
        ws->staged = v;
        v[ws->n_staged++] = (struct ws_staged){ .dest = xstrdup(dest), .source = xstrdup(source),
                                                .dir = false, .ephemeral = ephemeral, .bound = bound,
                                                .source_fd = fd };
}

TEST(round_trip)
{
        struct workspace *ws = NULL;
        CHECK_INT(workspace_open(NULL, &ws, &err), 0);
        if (ws == NULL)
                return;
        const char *r = ws->root;
        mkdir(P("%s/output/sub", r), 0750);
        put(P("%s/output/a.txt", r), "alpha\n", 0644);
        put(P("%s/output/sub/run.sh", r), "#!/bin/sh\n", 04755);
        put(P("%s/output/sub/empty", r), "", 0600);
        symlink("a.txt", P("%s/output/link", r));
        symlink("/etc/passwd", P("%s/output/evil", r));
        mkfifo(P("%s/output/fifo", r), 0644);
        put(P("%s/hard1", r), "shared", 0644);
        link(P("%s/hard1", r), P("%s/hard2", r));
        put(P("%s/input/data.csv", r), "a,b\n", 0644);
        put(P("%s/scratch.tmp", r), "ephemeral", 0644);
        put(P("%s/copied.csv", r), "the user's", 0644);
        /* A bound entry: the workspace holds an empty mount point, the
         * content comes from the source fd. */
        put(P("%s/bound-src.txt", base), "bound content", 0644);
        put(P("%s/ref.txt", r), "", 0644);
        stage(ws, "scratch.tmp", NULL, true, false, -1);
        stage(ws, "copied.csv", "/somewhere/copied.csv", false, false, -1);
        stage(ws, "ref.txt", P("%s/bound-src.txt", base), false, true,
              open(P("%s/bound-src.txt", base), O_PATH | O_CLOEXEC));
        stage(ws, "input/data.csv", "/somewhere/data.csv", false, false, -1);

        /* Without inputs; with run.json (the workspace's own is replaced). */
        mkdir(P("%s/.corral", r), 0755);
        put(P("%s/.corral/run.json", r), "{\"forged\":true}", 0644);
        put(P("%s/.corral/other", r), "kept", 0644);
        cleanup_free char *arc = strdup(P("%s/ws.tar", base));
        json_t *report = NULL;
        struct ws_archive_opts opts = { .run_json = "{\"task\":\"t\"}" };
        CHECK_INT(archive_to(ws, arc, &opts, &report, &err), 0);
        CHECK(report_has(report, "skipped", "output/fifo"));
        CHECK(report_has(report, "skipped", "hard1"));
        CHECK(report_has(report, "skipped", "hard2"));
        CHECK(report_has(report, "excluded", "scratch.tmp"));
        CHECK(report_has(report, "excluded", "copied.csv"));
        CHECK(report_has(report, "excluded", "input"));
        CHECK(json_is_false(json_object_get(report, "truncated")));
        json_decref(report);
        CHECK_INT(mode_of(arc) & 07777, 0600);

        json_t *list = NULL;
        CHECK_INT(archive_list(arc, NULL, 0, NULL, &list, &err), 0);
        CHECK(list_has(list, "output/a.txt") && list_has(list, "output/link"));
        CHECK(!list_has(list, "scratch.tmp") && !list_has(list, "copied.csv") && !list_has(list, "input/data.csv"));
        CHECK(!list_has(list, "ref.txt")); /* bound from the user's file: an input too */
        CHECK(!list_has(list, "output/fifo") && !list_has(list, "hard1"));
        /* The absolute symlink is stored (never followed) but extraction refuses it. */
        CHECK(list_has(list, "output/evil"));
        CHECK(json_is_false(json_object_get(list, "ok")));
        json_decref(list);
        unlink(P("%s/output/evil", r));

        CHECK_INT(archive_to(ws, arc, &opts, NULL, &err), 0);
        cleanup_free char *dest = strdup(P("%s/extracted", base));
        CHECK_INT(archive_extract(arc, dest, NULL, NULL, &err), 0);
        CHECK_STR(get(P("%s/output/a.txt", dest)), "alpha\n");
        CHECK_STR(get(P("%s/.corral/run.json", dest)), "{\"task\":\"t\"}");
        CHECK_STR(get(P("%s/.corral/other", dest)), "kept");
        CHECK_INT(mode_of(P("%s/output/sub/run.sh", dest)) & 07777, 0755); /* set-uid dropped */
        CHECK_INT(mode_of(P("%s/output/sub/empty", dest)) & 07777, 0600);
        CHECK_INT(mode_of(P("%s/output/sub", dest)) & 07777, 0750);
        CHECK(S_ISLNK(mode_of(P("%s/output/link", dest))));
        CHECK(!exists(P("%s/input", dest)) && !exists(P("%s/scratch.tmp", dest)));
        ws_remove_at(AT_FDCWD, dest);

        /* With inputs: the staged copies come too, ephemeral ones never. */
        opts.include_inputs = true;
        report = NULL;
        CHECK_INT(archive_to(ws, arc, &opts, &report, &err), 0);
        CHECK(report_has(report, "excluded", "scratch.tmp"));
        CHECK(!report_has(report, "excluded", "copied.csv"));
        json_decref(report);
        CHECK_INT(archive_extract(arc, dest, NULL, NULL, &err), 0);
        CHECK_STR(get(P("%s/input/data.csv", dest)), "a,b\n");
        CHECK_STR(get(P("%s/copied.csv", dest)), "the user's");
        CHECK_STR(get(P("%s/ref.txt", dest)), "bound content"); /* not the empty mount point */
        CHECK(!exists(P("%s/scratch.tmp", dest)));
        ws_remove_at(AT_FDCWD, dest);

        /* Restore into a fresh workspace: input/ and output/ are empty
         * there and replaced; anything else already there is an error. */
        struct workspace *fresh = NULL;
        CHECK_INT(workspace_open(NULL, &fresh, &err), 0);
        if (fresh) {
                CHECK_INT(workspace_restore(fresh, arc, NULL, &report, &err), 0);
                CHECK_STR(get(P("%s/output/a.txt", fresh->root)), "alpha\n");
                CHECK(json_array_size(json_object_get(report, "files_list")) > 5);
                json_decref(report);
                CHECK_INT(count_entries(fresh->root), 5); /* .corral copied.csv input output ref.txt */
                corral_error_clear(&err);
                CHECK_INT(workspace_restore(fresh, arc, NULL, NULL, &err), -1);
                CHECK(msg_has("is already there"));
                CHECK_STR(get(P("%s/output/a.txt", fresh->root)), "alpha\n");
                workspace_close(fresh, true);
        }
        /* An archive written into the workspace itself leaves itself out. */
        cleanup_free char *inside = strdup(P("%s/self.tar", r));
        report = NULL;
        CHECK_INT(archive_to(ws, inside, NULL, &report, &err), 0);
        json_decref(report);
        list = NULL;
        CHECK_INT(archive_list(inside, NULL, 0, NULL, &list, &err), 0);
        CHECK(!list_has(list, "self.tar"));
        json_decref(list);
        /* A target that is a directory is refused; no temporary file stays. */
        int before = count_entries(base);
        corral_error_clear(&err);
        CHECK_INT(archive_to(ws, base, NULL, NULL, &err), -1);
        CHECK(msg_has("directory"));
        CHECK_INT(count_entries(base), before);
        workspace_close(ws, true);
        unlink(arc);
        unlink(P("%s/bound-src.txt", base));
}

/* Sparse files are stored sparse and come back with their holes; an
 * extracted mode never has group or other write. */
TEST(sparse_and_modes)
{
        struct workspace *ws = NULL;
        CHECK_INT(workspace_open(NULL, &ws, &err), 0);
        const char *r = ws->root;
        struct { const char *name; off_t size; off_t data[3]; } files[] = {
                { "output/sparse.bin", 60 << 20, { (60 << 20) - 3, -1 } },     /* a hole, then data */
                { "output/holes.bin", 30 << 20, { 0, 10 << 20, -1 } },         /* data, hole, data, hole */
                { "output/empty.bin", 5 << 20, { -1 } },                       /* all hole */
        };
        for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
                int fd = open(P("%s/%s", r, files[i].name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                for (size_t k = 0; files[i].data[k] >= 0; k++)
                        CHECK(pwrite(fd, "abc", 3, files[i].data[k]) == 3);
                CHECK(ftruncate(fd, files[i].size) == 0);
                close(fd);
        }
        mkdir(P("%s/open", r), 0777);
        chmod(P("%s/open", r), 0777);
        put(P("%s/open/w.txt", r), "w", 0666);
        chmod(P("%s/open/w.txt", r), 0666);
        chmod(r, 0777);
        cleanup_free char *arc = strdup(P("%s/sparse.tar", base));
        CHECK_INT(archive_to(ws, arc, NULL, NULL, &err), 0);
        struct stat st;
        CHECK(stat(arc, &st) == 0 && st.st_size < (1 << 20)); /* not 95 MiB */
        cleanup_free char *dest = strdup(P("%s/sparse-out", base));
        CHECK_INT(archive_extract(arc, dest, NULL, NULL, &err), 0);
        for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
                const char *p = P("%s/%s", dest, files[i].name);
                CHECK(stat(p, &st) == 0 && st.st_size == files[i].size);
                CHECK((uint64_t)st.st_blocks * 512 < (1 << 20)); /* holes again */
                int fd = open(p, O_RDONLY | O_CLOEXEC);
                char got[4] = "";
                for (size_t k = 0; files[i].data[k] >= 0; k++) {
                        CHECK(pread(fd, got, 3, files[i].data[k]) == 3 && memcmp(got, "abc", 3) == 0);
                }
                CHECK(pread(fd, got, 1, files[i].size - 1) == 1 && (files[i].data[0] == files[i].size - 3 || got[0] == 0));
                close(fd);
        }
        CHECK_INT(mode_of(dest) & 0777, 0755);
        CHECK_INT(mode_of(P("%s/open", dest)) & 0777, 0755);
        CHECK_INT(mode_of(P("%s/open/w.txt", dest)) & 0777, 0644);
        workspace_close(ws, true);
        unlink(arc);
        corral_error_clear(&err);
}

/* Memory input (the fuzz target's path) and a gzip bomb built in memory. */
TEST(list_memory)
{
        static const char zeros_tar_gz_hdr[] = "not gzip";
        json_t *list = NULL;
        corral_error_clear(&err);
        CHECK_INT(archive_list(NULL, zeros_tar_gz_hdr, sizeof(zeros_tar_gz_hdr), NULL, &list, &err), -1);
        CHECK(msg_has("tar archives only"));
        const struct spec s[] = { { "a", AE_IFREG, "x" }, { "../b", AE_IFREG, "y" }, { "c", AE_IFLNK, .link = "a" } };
        cleanup_free char *arc = strdup(P("%s/mem.tar", base));
        write_tar(arc, s, ARRAY_SIZE(s), false);
        cleanup_free char *data = read_whole_file_at(AT_FDCWD, arc, 1 << 20);
        struct stat st;
        stat(arc, &st);
        CHECK(data != NULL);
        CHECK_INT(archive_list(NULL, data, (size_t)st.st_size, NULL, &list, &err), 0);
        CHECK_INT(json_array_size(json_object_get(list, "entries")), 3);
        CHECK_INT(json_array_size(json_object_get(list, "refused")), 1);
        json_decref(list);
        unlink(arc);
}

int main(void)
{
        snprintf(base, sizeof(base), "/tmp/corral-test-archive-XXXXXX");
        if (mkdtemp(base) == NULL)
                return 1;
        if (archive_api_get(&err) == NULL) {
                printf("1..0 # SKIP %s\n", err->msg);
                return 0;
        }
        RUN(refusals);
        RUN(accepted);
        RUN(round_trip);
        RUN(sparse_and_modes);
        RUN(list_memory);
        ws_remove_at(AT_FDCWD, base);
        corral_error_free(err);
        return DONE();
}
