/* test-manifest.c: manifests (src/workspace/manifest.c) and their staging
 * (stage.c), host side only: no jail runs here (tests/e2e/test_manifest.py
 * does that).
 *
 * Each schema error and each bad destination is checked for its message,
 * which must name the entry and the field.  Staging is checked on a real
 * temporary workspace: a read-only entry leaves an empty mount point and an
 * fd of its source, which the file tools read through (also after the host
 * path was swapped for a symlink); a directory holding a symlink is copied
 * to the private store instead; a failure undoes the whole manifest; a
 * replaced mount point is put back; closing leaves nothing behind. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/workspace/workspace.h"
#include "../../src/workspace/workspace-internal.h"
#include "harness.h"

__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

static corral_error *err;
static char tmp[256]; /* this test's $TMPDIR */

static const char *P(const char *fmt, ...) CORRAL_PRINTF(1, 2);
static const char *P(const char *fmt, ...)
{
        static char ring[16][4096];
        static unsigned next;
        char *b = ring[next++ % ARRAY_SIZE(ring)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b, sizeof(ring[0]), fmt, ap);
        va_end(ap);
        return b;
}

static void put(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write_all(fd, text, strlen(text)) < 0)
                abort();
        close(fd);
}

static bool msg_has(const corral_error *e, const char *sub)
{
        bool ok = e && e->msg && strstr(e->msg, sub);
        if (!ok)
                printf("#   error '%s', expected it to contain '%s'\n", e && e->msg ? e->msg : "(none)", sub);
        return ok;
}

#define CHECK_FAILS(call, sub)                                                                                         \
        do {                                                                                                           \
                corral_error_clear(&err);                                                                              \
                int _r = (call);                                                                                       \
                CHECK(_r == -1 && msg_has(err, sub));                                                                  \
                corral_error_clear(&err);                                                                              \
        } while (0)

/* Parse text alone; -1 with err set on error. */
static int parse(const char *text)
{
        struct ws_manifest m = { 0 };
        int r = ws_manifest_parse(&m, text, strlen(text), "/base", &err);
        if (r == 0)
                CHECK(err == NULL);
        else
                CHECK(m.n == 0 && m.v == NULL); /* nothing kept on error */
        ws_manifest_release(&m);
        return r;
}

/* A manifest of one entry {"dest": DEST, "content": ""} (dest as JSON). */
static int parse_dest(const char *dest_json, bool writable)
{
        return parse(P("{\"entries\":[{\"dest\":%s,\"content\":\"\",\"writable\":%s}]}", dest_json,
                       writable ? "true" : "false"));
}

TEST(schema_errors)
{
        CHECK_FAILS(parse("{"), "not valid JSON");
        CHECK_FAILS(parse("[]"), "a manifest is a JSON object {\"entries\": [...]}, not an array");
        CHECK_FAILS(parse("{}"), "no \"entries\" array");
        CHECK_FAILS(parse("{\"entries\":{}}"), "\"entries\" must be an array");
        CHECK_FAILS(parse("{\"entries\":[],\"entires\":[]}"), "unknown key \"entires\"");
        CHECK_FAILS(parse("{\"entries\":[1]}"), "entries[0] must be an object, not a number");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"content\":\"\"},\"x\"]}"),
                    "entries[1] must be an object, not a string");
        CHECK_FAILS(parse("{\"entries\":[{\"content\":\"x\"}]}"), "entries[0] has no \"dest\"");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\"}]}"), "entries[0] has no source: give \"file\"");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":5,\"content\":\"\"}]}"),
                    "entries[0].dest must be a string, not a number");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"file\":\"x\",\"dir\":\"y\"}]}"),
                    "entries[0] has both \"file\" and \"dir\"");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"file\":[]}]}"),
                    "entries[0].file must be a string, not an array");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"dir\":\"\"}]}"), "entries[0].dir is empty");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"file\":\"a\\u0000b\"}]}"),
                    "entries[0].file contains a NUL character");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\\u0000b\",\"content\":\"\"}]}"),
                    "entries[0].dest contains a NUL character");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"content\":\"\",\"writable\":\"yes\"}]}"),
                    "entries[0].writable must be true or false, not a string");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"content\":\"\",\"ephemeral\":1}]}"),
                    "entries[0].ephemeral must be true or false, not a number");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"content\":\"\",\"writeable\":true}]}"),
                    "entries[0] has an unknown key \"writeable\"");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"dest\":\"b\",\"content\":\"\"}]}"), "duplicate");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"base64\":\"abc\"}]}"),
                    "entries[0].base64 is not valid base64");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"base64\":\"ab!=\"}]}"), "is not valid base64");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"base64\":\"a===\"}]}"), "is not valid base64");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"base64\":\"YQ==YQ==\"}]}"), "is not valid base64");
        CHECK_INT(parse("{\"entries\":[]}"), 0);
}

TEST(bad_destinations)
{
        CHECK_FAILS(parse_dest("\"\"", false), "entries[0].dest is empty");
        CHECK_FAILS(parse_dest("\"/etc/passwd\"", false),
                    "entries[0].dest '/etc/passwd' must be relative to /workspace, not absolute");
        CHECK_FAILS(parse_dest("\"a//b\"", false), "entries[0].dest 'a//b' has an empty path component");
        CHECK_FAILS(parse_dest("\"//\"", false), "must be relative");
        CHECK_FAILS(parse_dest("\"./x\"", false), "entries[0].dest './x' may not contain '.' or '..'");
        CHECK_FAILS(parse_dest("\"a/./x\"", false), "may not contain '.' or '..'");
        CHECK_FAILS(parse_dest("\"..\"", false), "may not contain '.' or '..'");
        CHECK_FAILS(parse_dest("\"a/../../etc\"", false), "may not contain '.' or '..'");
        CHECK_FAILS(parse_dest("\"a/..\"", false), "may not contain '.' or '..'");
        CHECK_FAILS(parse_dest("\".corral\"", true), "entries[0].dest '.corral' is reserved");
        CHECK_FAILS(parse_dest("\".corral/runs/x\"", true), "is reserved");
        CHECK_FAILS(parse_dest("\"input\"", false), "would replace the workspace's input/ directory");
        CHECK_FAILS(parse_dest("\"output\"", true), "would replace the workspace's output/ directory");
        CHECK_FAILS(parse_dest("\"output/report.md\"", false), "is read-only but under output/");
        CHECK_INT(parse_dest("\"output/report.md\"", true), 0);
        CHECK_FAILS(parse_dest("\"input/x\"", true), "is writable but under input/");
        char longname[300];
        memset(longname, 'x', sizeof(longname));
        longname[sizeof(longname) - 1] = '\0';
        CHECK_FAILS(parse_dest(P("\"a/%s\"", longname), false), "has a component longer than 255 bytes");
        /* Good ones, a trailing slash dropped. */
        CHECK_INT(parse_dest("\"data/sales.csv\"", false), 0);
        CHECK_INT(parse_dest("\".corralx\"", false), 0);
        CHECK_INT(parse_dest("\"input/x\"", false), 0);
}

TEST(overlapping_destinations)
{
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a/b\",\"content\":\"\"},{\"dest\":\"a/b\",\"content\":\"\"}]}"),
                    "entries[1].dest 'a/b' is also the destination of entries[0]");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a/b\",\"content\":\"\"},{\"dest\":\"a/b/\",\"content\":\"\"}]}"),
                    "entries[1].dest 'a/b' is also the destination of entries[0]");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a\",\"dir\":\"d\"},{\"dest\":\"a/b\",\"content\":\"\"}]}"),
                    "entries[1].dest 'a/b' overlaps entries[0] ('a')");
        CHECK_FAILS(parse("{\"entries\":[{\"dest\":\"a/b/c\",\"content\":\"\"},{\"dest\":\"a/b\",\"dir\":\"d\"}]}"),
                    "entries[1].dest 'a/b' overlaps entries[0] ('a/b/c')");
        /* Neighbours and prefixes that are not parents are fine. */
        CHECK_INT(parse("{\"entries\":[{\"dest\":\"a/b\",\"content\":\"\"},{\"dest\":\"a/bc\",\"content\":\"\"},"
                        "{\"dest\":\"a/c\",\"content\":\"\"}]}"),
                  0);
        /* The run's inputs take part, named as such, the field "inputs"
         * at fault (the CLI adds its flag, --input). */
        struct ws_manifest m = { 0 };
        put(P("%s/s.csv", tmp), "x\n");
        CHECK_INT(ws_manifest_add_input(&m, P("%s/s.csv", tmp), &err), 0);
        const char *text = "{\"entries\":[{\"dest\":\"input/s.csv/x\",\"content\":\"\"}]}";
        CHECK_INT(ws_manifest_parse(&m, text, strlen(text), NULL, &err), -1);
        CHECK_STR(err ? err->field : NULL, "inputs");
        CHECK_FAILS(ws_manifest_parse(&m, text, strlen(text), NULL, &err),
                    "entries[0].dest 'input/s.csv/x' overlaps the input 'input/s.csv' ('input/s.csv')");
        CHECK_INT(m.n, 1);
        CHECK_FAILS(ws_manifest_add_input(&m, P("%s/s.csv", tmp), &err), "'input/s.csv' is staged already");
        ws_manifest_release(&m);
}

TEST(parsed_entries)
{
        struct ws_manifest m = { 0 };
        const char *text = "{\"entries\":["
                           "{\"dest\":\"data/s.csv\",\"file\":\"rel/s.csv\"},"
                           "{\"dest\":\"ref/\",\"dir\":\"/abs/ref\",\"writable\":true,\"ephemeral\":true},"
                           "{\"dest\":\"n.md\",\"content\":\"a\\u0000b\"},"
                           "{\"dest\":\"b.bin\",\"base64\":\"AAH/\\nYmluYXJ5\"}]}";
        CHECK_INT(ws_manifest_parse(&m, text, strlen(text), "/base/dir", &err), 0);
        CHECK_INT(m.n, 4);
        if (m.n == 4) {
                CHECK_STR(m.v[0].dest, "data/s.csv");
                CHECK(m.v[0].kind == WS_SOURCE_FILE);
                CHECK_STR(m.v[0].source, "/base/dir/rel/s.csv");
                CHECK(!m.v[0].writable && !m.v[0].ephemeral && !m.v[0].from_input);
                CHECK_STR(m.v[1].dest, "ref");
                CHECK(m.v[1].kind == WS_SOURCE_DIR && m.v[1].writable && m.v[1].ephemeral);
                CHECK_STR(m.v[1].source, "/abs/ref");
                CHECK(m.v[2].kind == WS_SOURCE_CONTENT && m.v[2].content_len == 3 &&
                      memcmp(m.v[2].content, "a\0b", 3) == 0);
                CHECK(m.v[3].content_len == 9 && memcmp(m.v[3].content, "\x00\x01\xff" "binary", 9) == 0);
        }
        ws_manifest_release(&m);
        CHECK(m.n == 0 && m.v == NULL);
}

TEST(inputs)
{
        struct ws_manifest m = { 0 };
        mkdir(P("%s/dir", tmp), 0755);
        put(P("%s/a:b", tmp), "colon");
        CHECK_INT(ws_manifest_add_input(&m, P("%s/s.csv", tmp), &err), 0);
        CHECK_INT(ws_manifest_add_input(&m, P("%s/s.csv:data/2024/s.csv", tmp), &err), 0);
        CHECK_INT(ws_manifest_add_input(&m, P("%s/dir/", tmp), &err), 0);
        CHECK_INT(ws_manifest_add_input(&m, P("%s/a:b", tmp), &err), 0);
        CHECK_INT(m.n, 4);
        if (m.n == 4) {
                CHECK_STR(m.v[0].dest, "input/s.csv");
                CHECK_STR(m.v[1].dest, "input/data/2024/s.csv");
                CHECK_STR(m.v[2].dest, "input/dir");
                CHECK(m.v[2].kind == WS_SOURCE_DIR && m.v[2].from_input && !m.v[2].writable);
                CHECK_STR(m.v[3].dest, "input/a:b");
        }
        CHECK_FAILS(ws_manifest_add_input(&m, P("%s/s.csv:/etc/x", tmp), &err), "must be relative");
        CHECK_FAILS(ws_manifest_add_input(&m, P("%s/s.csv:a/../x", tmp), &err), "may not contain '.' or '..'");
        CHECK_FAILS(ws_manifest_add_input(&m, P("%s/missing:x", tmp), &err), "cannot stage");
        CHECK_FAILS(ws_manifest_add_input(&m, "", &err), "is empty");
        CHECK_INT(m.n, 4);
        CHECK_INT(ws_manifest_check(&m, &err), 0);
        ws_manifest_release(&m);
}

static int count_names(const char *dir)
{
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct ws_names names;
        if (fd < 0 || ws_names_read(fd, 1000, &names) < 0) {
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        close(fd);
        int n = (int)names.n;
        ws_names_release(&names);
        return n;
}

static int load_text(struct ws_manifest *m, const char *text)
{
        return ws_manifest_parse(m, text, strlen(text), tmp, &err);
}

TEST(staging)
{
        /* Sources: a file, a clean directory, a directory with a symlink. */
        mkdir(P("%s/src", tmp), 0755);
        put(P("%s/src/sales.csv", tmp), "Product,Revenue\nWidget,1\n");
        mkdir(P("%s/src/ref", tmp), 0755);
        mkdir(P("%s/src/ref/sub", tmp), 0755);
        put(P("%s/src/ref/sub/b.txt", tmp), "beta\n");
        mkdir(P("%s/src/linky", tmp), 0755);
        put(P("%s/src/linky/ok.txt", tmp), "ok\n");
        CHECK(symlink("/etc/passwd", P("%s/src/linky/pw", tmp)) == 0);

        struct workspace *ws = NULL;
        CHECK_INT(workspace_open(NULL, &ws, &err), 0);
        if (ws == NULL)
                return;
        struct ws_manifest m = { 0 };
        CHECK_INT(load_text(&m, "{\"entries\":["
                                "{\"dest\":\"data/sales.csv\",\"file\":\"src/sales.csv\"},"
                                "{\"dest\":\"ref\",\"dir\":\"src/ref\"},"
                                "{\"dest\":\"linky\",\"dir\":\"src/linky\"},"
                                "{\"dest\":\"notes/task.md\",\"content\":\"# task\\n\"},"
                                "{\"dest\":\"work\",\"dir\":\"src/ref\",\"writable\":true,\"ephemeral\":true}]}"),
                  0);
        uint64_t budget = 1000;
        json_t *report = NULL;
        CHECK_INT(workspace_stage_manifest(ws, &m, &budget, &report, &err), 0);
        CHECK_INT(ws->n_staged, 5);
        CHECK_INT(json_array_size(report), 5);
        const char *staging[] = { "bind", "bind", "copy", "write", "copy" };
        for (size_t i = 0; i < 5 && i < json_array_size(report); i++)
                CHECK_STR(json_string_value(json_object_get(json_array_get(report, i), "staging")), staging[i]);
        json_t *skipped = json_object_get(json_array_get(report, 2), "skipped");
        CHECK(json_array_size(skipped) == 1 &&
              strstr(json_string_value(json_object_get(json_array_get(skipped, 0), "path")), "pw"));
        CHECK_INT(budget, 1000 - 25 - 5 - 3 - 7 - 5);
        json_decref(report);

        /* What ws->staged says (the archive reads it). */
        if (ws->n_staged == 5) {
                CHECK_STR(ws->staged[0].dest, "data/sales.csv");
                CHECK_STR(ws->staged[0].source, P("%s/src/sales.csv", tmp));
                CHECK(ws->staged[0].bound && !ws->staged[0].dir && ws->staged[0].source_fd >= 0);
                CHECK(ws->staged[1].bound && ws->staged[1].dir && ws->staged[1].source_fd >= 0);
                CHECK(ws->staged[2].bound && ws->staged[2].source_fd >= 0);
                CHECK(ws->staged[3].bound && ws->staged[3].source == NULL && ws->staged[3].source_fd >= 0);
                CHECK(!ws->staged[4].bound && ws->staged[4].writable && ws->staged[4].ephemeral &&
                      ws->staged[4].source_fd == -1);
        }
        /* The workspace holds empty mount points; the writable copy is real. */
        struct stat st;
        CHECK(lstat(P("%s/data/sales.csv", ws->root), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0);
        CHECK(lstat(P("%s/ref", ws->root), &st) == 0 && S_ISDIR(st.st_mode));
        CHECK_INT(count_names(P("%s/ref", ws->root)), 0);
        CHECK_INT(count_names(P("%s/linky", ws->root)), 0);
        CHECK(lstat(P("%s/notes/task.md", ws->root), &st) == 0 && st.st_size == 0);
        CHECK(lstat(P("%s/work/sub/b.txt", ws->root), &st) == 0 && st.st_size == 5 && st.st_nlink == 1);
        CHECK(ws->store != NULL && count_names(ws->store) == 2); /* linky's copy, the note */

        /* The file tools see the sources. */
        char *data = NULL;
        CHECK_INT(workspace_read_file(ws, "data/sales.csv", 1000, &data, NULL, NULL, &err), 0);
        CHECK_STR(data, "Product,Revenue\nWidget,1\n");
        free(data);
        data = NULL;
        CHECK_INT(workspace_read_file(ws, "/workspace/ref/sub/b.txt", 1000, &data, NULL, NULL, &err), 0);
        CHECK_STR(data, "beta\n");
        free(data);
        data = NULL;
        CHECK_INT(workspace_read_file(ws, "notes/task.md", 1000, &data, NULL, NULL, &err), 0);
        CHECK_STR(data, "# task\n");
        free(data);
        data = NULL;
        CHECK_FAILS(workspace_read_file(ws, "linky/pw", 1000, &data, NULL, NULL, &err), "cannot read 'linky/pw'");
        CHECK_FAILS(workspace_read_file(ws, "ref/../../etc/passwd", 1000, &data, NULL, NULL, &err), "'..'");
        json_t *list = NULL;
        CHECK_INT(workspace_list_files(ws, "", 0, 0, &list, &err), 0);
        size_t k;
        json_t *entry;
        json_array_foreach(list, k, entry) {
                json_object_del(entry, "mode"); /* test-workspace.c checks them */
                json_object_del(entry, "mtime");
        }
        char *text = json_dumps(list, JSON_COMPACT);
        CHECK(text && strstr(text, "{\"path\":\"data/sales.csv\",\"type\":\"file\",\"size\":25}") &&
              strstr(text, "{\"path\":\"ref/sub/b.txt\",\"type\":\"file\",\"size\":5}") &&
              strstr(text, "\"linky/ok.txt\"") && !strstr(text, "linky/pw"));
        free(text);
        json_decref(list);
        CHECK_INT(workspace_list_files(ws, "ref/sub", 0, 0, &list, &err), 0);
        CHECK_INT(json_array_size(list), 1);
        json_decref(list);
        char *desc = workspace_describe_inputs(ws, 50, 2);
        CHECK(desc && strstr(desc, "data/sales.csv (25 B, read-only)\n    Product,Revenue\n    Widget,1\n") &&
              strstr(desc, "work/sub/b.txt (5 B, writable)"));
        free(desc);

        /* Writes: never into a read-only entry, fine in a writable one. */
        CHECK_FAILS(workspace_write_file(ws, "data/sales.csv", "x", 1, &err),
                    "cannot write 'data/sales.csv': 'data/sales.csv' is a read-only input");
        CHECK_FAILS(workspace_write_file(ws, "ref/new.txt", "x", 1, &err), "'ref' is a read-only input");
        CHECK(symlink("../ref", P("%s/output/r", ws->root)) == 0);
        CHECK_FAILS(workspace_write_file(ws, "output/r/new.txt", "x", 1, &err),
                    "it leads into ref/, which is read-only");
        CHECK_INT(workspace_write_file(ws, "work/new.txt", "x", 1, &err), 0);
        CHECK_INT(workspace_write_file(ws, "data/other.csv", "x", 1, &err), 0);
        CHECK_INT(count_names(P("%s/ref", ws->root)), 0);

        /* Snapshots: mount points are not the jail's changes. */
        struct ws_snapshot *before = NULL, *after = NULL;
        CHECK_INT(workspace_snapshot(ws, &before, &err), 0);
        unlink(P("%s/data/sales.csv", ws->root));
        CHECK(symlink("/etc", P("%s/notes", ws->root)) < 0); /* notes/ exists */
        CHECK(rename(P("%s/notes", ws->root), P("%s/n2", ws->root)) == 0);
        CHECK(symlink("/etc", P("%s/notes", ws->root)) == 0);
        CHECK(rmdir(P("%s/ref", ws->root)) == 0);
        put(P("%s/ref", ws->root), "a file now");
        CHECK_INT(workspace_prepare_mounts(ws, &err), 0);
        CHECK(lstat(P("%s/data/sales.csv", ws->root), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0);
        CHECK(lstat(P("%s/notes", ws->root), &st) == 0 && S_ISDIR(st.st_mode));
        CHECK(lstat(P("%s/notes/task.md", ws->root), &st) == 0 && S_ISREG(st.st_mode));
        CHECK(lstat(P("%s/ref", ws->root), &st) == 0 && S_ISDIR(st.st_mode));
        CHECK(lstat("/etc/task.md", &st) < 0);
        CHECK_INT(workspace_snapshot(ws, &after, &err), 0);
        json_t *diff = workspace_diff(before, after);
        workspace_diff_drop_mounts(ws, diff);
        text = json_dumps(diff, JSON_COMPACT);
        /* Only the moved note's old mount point (an empty file) shows. */
        CHECK_STR(text, "[{\"path\":\"n2/task.md\",\"change\":\"created\",\"type\":\"file\",\"size\":0}]");
        free(text);
        json_decref(diff);
        ws_snapshot_free(before);
        ws_snapshot_free(after);

        /* The source swapped for a symlink: the fd still names the file. */
        CHECK(rename(P("%s/src/sales.csv", tmp), P("%s/src/moved.csv", tmp)) == 0);
        CHECK(symlink("/etc/passwd", P("%s/src/sales.csv", tmp)) == 0);
        data = NULL;
        CHECK_INT(workspace_read_file(ws, "data/sales.csv", 1000, &data, NULL, NULL, &err), 0);
        CHECK_STR(data, "Product,Revenue\nWidget,1\n");
        free(data);
        unlink(P("%s/src/sales.csv", tmp));
        CHECK(rename(P("%s/src/moved.csv", tmp), P("%s/src/sales.csv", tmp)) == 0);

        /* A kept workspace loses its mount points and the store, nothing else. */
        char root[256], store[256];
        snprintf(root, sizeof(root), "%s", ws->root);
        snprintf(store, sizeof(store), "%s", ws->store);
        workspace_close(ws, false);
        CHECK(lstat(P("%s/data/sales.csv", root), &st) < 0 && lstat(P("%s/ref", root), &st) < 0);
        CHECK(lstat(P("%s/data/other.csv", root), &st) == 0 && lstat(P("%s/work/new.txt", root), &st) == 0);
        CHECK(lstat(store, &st) < 0);
        CHECK_INT(workspace_open(root, &ws, &err), 0);
        workspace_close(ws, true);
        CHECK(lstat(root, &st) < 0);
        ws_manifest_release(&m);
}

TEST(staging_errors)
{
        struct workspace *ws = NULL;
        CHECK_INT(workspace_open(NULL, &ws, &err), 0);
        if (ws == NULL)
                return;
        struct ws_manifest m = { 0 };
        uint64_t budget = 1 << 20;
        put(P("%s/big", tmp), "0123456789");
#define STAGE_FAILS(json, sub)                                                                                         \
        do {                                                                                                           \
                ws_manifest_release(&m);                                                                               \
                CHECK_INT(load_text(&m, json), 0);                                                                     \
                CHECK_FAILS(workspace_stage_manifest(ws, &m, &budget, NULL, &err), sub);                               \
                CHECK_INT(ws->n_staged, 0);                                                                            \
                CHECK_INT(count_names(ws->root), 2); /* input/, output/: all undone */                                 \
                CHECK(ws->store == NULL || count_names(ws->store) == 0);                                               \
        } while (0)
        STAGE_FAILS("{\"entries\":[{\"dest\":\"a\",\"file\":\"missing.csv\"}]}",
                    "entries[0]: cannot stage '");
        STAGE_FAILS("{\"entries\":[{\"dest\":\"a\",\"file\":\"src\"}]}",
                    "it is a directory, not a regular file (stage a directory with \"dir\")");
        STAGE_FAILS("{\"entries\":[{\"dest\":\"a\",\"dir\":\"big\"}]}",
                    "it is a regular file, not a directory (stage a file with \"file\")");
        STAGE_FAILS("{\"entries\":[{\"dest\":\"a/b\",\"content\":\"x\"},{\"dest\":\"c\",\"file\":\"nope\"}]}",
                    "entries[1]: cannot stage");
        STAGE_FAILS("{\"entries\":[{\"dest\":\"x/y\",\"content\":\"x\"},{\"dest\":\"input/a\",\"file\":\"nope\"}]}",
                    "entries[1]");
        STAGE_FAILS("{\"entries\":[{\"dest\":\"q/x\",\"content\":\"ro\"},{\"dest\":\"z\",\"file\":\"nope\"}]}",
                    "entries[1]");
        budget = 5;
        STAGE_FAILS("{\"entries\":[{\"dest\":\"a\",\"file\":\"big\"}]}", "goes past the input budget");
        STAGE_FAILS("{\"entries\":[{\"dest\":\"a\",\"file\":\"big\",\"writable\":true}]}",
                    "goes past the input budget");
        STAGE_FAILS("{\"entries\":[{\"dest\":\"a\",\"content\":\"0123456789\"}]}", "goes past the input budget");
        STAGE_FAILS("{\"entries\":[{\"dest\":\"a\",\"dir\":\"src\"}]}", "goes past the input budget");
        budget = 1 << 20;
        /* What a jail (or an earlier run) left in the workspace. */
        put(P("%s/taken", ws->root), "x");
        ws_manifest_release(&m);
        CHECK_INT(load_text(&m, "{\"entries\":[{\"dest\":\"taken\",\"content\":\"x\"}]}"), 0);
        CHECK_FAILS(workspace_stage_manifest(ws, &m, &budget, NULL, &err), "'taken': it already exists");
        CHECK(symlink(tmp, P("%s/esc", ws->root)) == 0);
        ws_manifest_release(&m);
        CHECK_INT(load_text(&m, "{\"entries\":[{\"dest\":\"esc/x\",\"content\":\"x\"}]}"), 0);
        CHECK_FAILS(workspace_stage_manifest(ws, &m, &budget, NULL, &err),
                    "cannot stage at 'esc/x': 'esc' exists and is a symbolic link");
        CHECK(access(P("%s/x", tmp), F_OK) < 0);
        ws_manifest_release(&m);
        CHECK_INT(load_text(&m, "{\"entries\":[{\"dest\":\"taken/x\",\"content\":\"x\"}]}"), 0);
        CHECK_FAILS(workspace_stage_manifest(ws, &m, &budget, NULL, &err), "exists and is not a directory");
        CHECK_INT(budget, 1 << 20);
        ws_manifest_release(&m);
        workspace_close(ws, true);
}

TEST(load)
{
        struct ws_manifest m = { 0 };
        put(P("%s/m.json", tmp), "{\"entries\":[{\"dest\":\"a\",\"file\":\"x.csv\"}]}");
        CHECK_INT(ws_manifest_load(&m, P("%s/m.json", tmp), &err), 0);
        CHECK(m.n == 1 && strcmp(m.v[0].source, P("%s/x.csv", tmp)) == 0);
        ws_manifest_release(&m);
        put(P("%s/bad.json", tmp), "{\"entries\":[{\"dest\":\"/a\",\"content\":\"\"}]}");
        CHECK_FAILS(ws_manifest_load(&m, P("%s/bad.json", tmp), &err),
                    P("manifest '%s/bad.json': entries[0].dest '/a' must be relative", tmp));
        CHECK_FAILS(ws_manifest_load(&m, P("%s/none.json", tmp), &err), "cannot read the manifest");
        CHECK_FAILS(ws_manifest_load(&m, tmp, &err), "is a directory, not a regular file");
        CHECK_INT(m.n, 0);
}

int main(void)
{
        snprintf(tmp, sizeof(tmp), "%s/corral-test-manifest-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(tmp) == NULL)
                return 1;
        setenv("TMPDIR", tmp, 1); /* the workspaces and the store go here too */
        RUN(schema_errors);
        RUN(bad_destinations);
        RUN(overlapping_destinations);
        RUN(parsed_entries);
        RUN(inputs);
        RUN(staging);
        RUN(staging_errors);
        RUN(load);
        /* Nothing of corral's left in our $TMPDIR. */
        int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct ws_names names;
        if (fd >= 0 && ws_names_read(fd, 100, &names) == 0) {
                size_t left = 0;
                for (size_t i = 0; i < names.n; i++)
                        left += strncmp(names.v[i], "corral-", 7) == 0;
                CHECK_INT(left, 0);
                ws_names_release(&names);
        }
        if (fd >= 0) {
                ws_remove_contents(fd);
                close(fd);
        }
        rmdir(tmp);
        corral_error_free(err);
        return DONE();
}
