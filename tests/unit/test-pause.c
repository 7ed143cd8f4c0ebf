/* test-pause.c: pause and resume through the library (src/session/pause.c).
 *
 * session_origin() on hostile .corral/session.json files (a symlink, an
 * oversized file, control characters, wrong types); session_restore() into
 * a new and an empty directory, refusing a non-empty one and a hostile
 * archive with nothing left; and, when jails can run here, the whole round
 * trip: session_start() -> a step -> session_archive() -> session_free() ->
 * session_start() with opt.from -> the files are back, the variable is not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/session/session.h"
#include "../../src/workspace/archive.h"
#include "../../src/workspace/workspace-internal.h"
#include "../../src/workspace/dest.h"
#include "archive-to.h"
#include "harness.h"

static char base[4096];

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

static void put(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
                if (write(fd, text, strlen(text)) < 0)
                        perror("write");
                close(fd);
        }
}

static size_t entries(const char *dir)
{
        struct ws_names names;
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || ws_names_read(fd, SIZE_MAX, &names) < 0) {
                if (fd >= 0)
                        close(fd);
                return (size_t)-1;
        }
        close(fd);
        size_t n = names.n;
        ws_names_release(&names);
        return n;
}

TEST(origin_is_checked)
{
        char d[4200];
        snprintf(d, sizeof(d), "%s/origin", base);
        mkdir(d, 0700);
        json_t *o = session_origin("/a.tar", d);
        CHECK(o != NULL && json_object_size(o) == 1);
        CHECK_STR(json_string_value(json_object_get(o, "archive")), "/a.tar");
        json_decref(o);

        mkdir(P("%s/.corral", d), 0700);
        put(P("%s/.corral/session.json", d),
            "{\"session\":\"abc\\u001b[31m\",\"created\":7,\"steps\":-3,\"corral_version\":"
            "\"0123456789012345678901234567890123456789012345678901234567890123456789\",\"archived\":\"t\"}");
        o = session_origin("/a.tar", d);
        /* escapes made harmless, wrong types and long strings dropped */
        CHECK_STR(json_string_value(json_object_get(o, "session")), "abc?[31m");
        CHECK(json_object_get(o, "created") == NULL && json_object_get(o, "steps") == NULL);
        CHECK(json_object_get(o, "corral_version") == NULL);
        CHECK_STR(json_string_value(json_object_get(o, "archived")), "t");
        json_decref(o);

        /* a symlink is never followed, not even to a good file */
        put(P("%s/good.json", base), "{\"session\":\"0123456789ab\",\"steps\":4}");
        unlink(P("%s/.corral/session.json", d));
        CHECK(symlink(P("%s/good.json", base), P("%s/.corral/session.json", d)) == 0);
        o = session_origin("/a.tar", d);
        CHECK(json_object_get(o, "session") == NULL);
        json_decref(o);
        CHECK(unlink(P("%s/.corral/session.json", d)) == 0 && rmdir(P("%s/.corral", d)) == 0);
        mkdir(P("%s/elsewhere", base), 0700);
        rename(P("%s/good.json", base), P("%s/elsewhere/session.json", base));
        CHECK(symlink(P("%s/elsewhere", base), P("%s/.corral", d)) == 0);
        o = session_origin("/a.tar", d);
        CHECK(json_object_size(o) == 1);
        json_decref(o);
}

/* A workspace archived with a session.json, written by workspace_archive. */
static void make_archive(const char *tar)
{
        char w[4200];
        snprintf(w, sizeof(w), "%s/src", base);
        mkdir(w, 0700);
        mkdir(P("%s/data", w), 0755);
        put(P("%s/data/a.csv", w), "x,y\n1,2\n");
        struct workspace ws = { .root = (char *)w, .root_fd = open(w, O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
        struct ws_archive_opts opts = { .include_inputs = true,
                                        .run_json = "{\"session\":\"0123456789ab\",\"steps\":3}",
                                        .meta_name = "session.json" };
        corral_error *err = NULL;
        CHECK(archive_to(&ws, tar, &opts, NULL, &err) == 0);
        corral_error_free(err);
        close(ws.root_fd);
}

TEST(restore)
{
        char tar[4200], fresh[4200], empty[4200], evil_dir[4200];
        snprintf(tar, sizeof(tar), "%s/ws.tar", base);
        snprintf(fresh, sizeof(fresh), "%s/fresh", base);
        snprintf(empty, sizeof(empty), "%s/empty", base);
        snprintf(evil_dir, sizeof(evil_dir), "%s/evil", base);
        make_archive(tar);
        corral_error *err = NULL;
        json_t *from = NULL;
        CHECK(session_restore(tar, fresh, &from, &err) == 0);
        CHECK(access(P("%s/data/a.csv", fresh), R_OK) == 0);
        CHECK_STR(json_string_value(json_object_get(from, "session")), "0123456789ab");
        CHECK_INT(json_integer_value(json_object_get(from, "steps")), 3);
        json_decref(from);
        session_restore_undo(fresh, false);
        CHECK(access(fresh, F_OK) < 0 && errno == ENOENT);

        mkdir(empty, 0700);
        CHECK(session_restore(tar, empty, NULL, &err) == 0);
        session_restore_undo(empty, true);
        CHECK_INT(entries(empty), 0);

        put(P("%s/x", empty), "x");
        CHECK(session_restore(tar, empty, NULL, &err) < 0 && err && err->kind == CORRAL_ERR_USAGE);
        corral_error_clear(&err);
        CHECK_INT(entries(empty), 1);

        /* a hostile archive: refused, nothing left beside the destination */
        mkdir(evil_dir, 0700);
        mkdir(P("%s/src2", base), 0700);
        CHECK(symlink("/etc", P("%s/src2/out", base)) == 0);
        struct workspace ws = { .root = (char *)P("%s/src2", base) };
        ws.root_fd = open(ws.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(archive_to(&ws, P("%s/evil/e.tar", base), NULL, NULL, &err) == 0);
        close(ws.root_fd);
        CHECK(session_restore(P("%s/evil/e.tar", base), P("%s/evil/dest", base), NULL, &err) < 0);
        CHECK(err && strstr(err->msg, "absolute path") != NULL);
        corral_error_clear(&err);
        CHECK_INT(entries(evil_dir), 1); /* e.tar alone */
}

/* The library round trip, when this machine can run a jail. */
TEST(round_trip)
{
        corral_error *err = NULL;
        if (session_driver_path(NULL) == NULL) {
                printf("# skipped: no session driver\n");
                return;
        }
        char w1[4200], w2[4200], tar[4200], w3[4200];
        snprintf(w1, sizeof(w1), "%s/s1", base);
        snprintf(w2, sizeof(w2), "%s/s2", base);
        snprintf(w3, sizeof(w3), "%s/s3", base);
        snprintf(tar, sizeof(tar), "%s/s1.tar", base);
        mkdir(w1, 0700);
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        char *argv[] = { "python3", NULL };
        corral_jail_config_set_argv(&cfg, argv, NULL);
        cfg.workspace = strdup(w1);
        struct session_options opt;
        session_options_init(&opt);
        struct session *s = NULL;
        if (session_start(&cfg, &opt, &s, &err) < 0) {
                printf("# skipped: no jail here: %s\n", err ? err->msg : "?");
                corral_error_free(err);
                corral_jail_config_release(&cfg);
                return;
        }
        struct session_result res;
        const char *code = "import os\nos.makedirs('d', exist_ok=True)\nopen('d/f.txt', 'w').write('kept')\nv = 9";
        CHECK(session_exec(s, code, strlen(code), NULL, NULL, &res, &err) == 0 && res.status == SESSION_STEP_OK);
        session_result_release(&res);
        json_t *report = NULL;
        CHECK(session_archive(s, tar, "00000000abcd", &report, &err) == 0);
        CHECK(json_integer_value(json_object_get(report, "files")) >= 2);
        json_decref(report);
        struct stat st;
        CHECK(stat(tar, &st) == 0 && (st.st_mode & 0777) == 0600);
        session_free(s);

        free(cfg.workspace);
        cfg.workspace = strdup(w2);
        opt.from = tar;
        s = NULL;
        CHECK(session_start(&cfg, &opt, &s, &err) == 0);
        if (s) {
                CHECK_STR(json_string_value(json_object_get(session_from(s), "session")), "00000000abcd");
                CHECK_INT(json_integer_value(json_object_get(session_from(s), "steps")), 1);
                code = "open('d/f.txt').read()";
                CHECK(session_exec(s, code, strlen(code), NULL, NULL, &res, &err) == 0);
                CHECK_STR(json_string_value(json_object_get(res.value, "text")), "'kept'");
                session_result_release(&res);
                CHECK(session_exec(s, "v", 1, NULL, NULL, &res, &err) == 0 && res.status == SESSION_STEP_ERROR);
                CHECK_STR(json_string_value(json_object_get(res.error, "type")), "NameError");
                session_result_release(&res);
                session_free(s);
        }
        /* a start that fails after extracting takes the files back */
        corral_error_clear(&err);
        free(cfg.workspace);
        cfg.workspace = strdup(w3);
        free(cfg.rootfs);
        cfg.rootfs = strdup(P("%s/no-such-root", base)); /* the jail fails, after the extraction */
        size_t before = entries(base);
        CHECK(session_start(&cfg, &opt, &s, &err) < 0);
        CHECK(access(w3, F_OK) < 0 && errno == ENOENT);
        CHECK_INT(entries(base), before); /* nothing beside it either */
        corral_error_clear(&err);
        corral_jail_config_release(&cfg);
}

int main(void)
{
        snprintf(base, sizeof(base), "/tmp/corral-test-pause-XXXXXX");
        if (mkdtemp(base) == NULL) {
                perror("mkdtemp");
                return 1;
        }
        RUN(origin_is_checked);
        RUN(restore);
        RUN(round_trip);
        ws_remove_at(AT_FDCWD, base);
        return DONE();
}
