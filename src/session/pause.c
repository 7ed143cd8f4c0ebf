/* pause.c: pause and resume, a session's workspace as an archive
 * (session.h; docs/sessions.md, "Pause and resume").
 *
 * session_archive() writes the workspace of a live session between steps
 * with workspace_archive() (src/workspace/archive.h), adding a first entry
 * .corral/session.json that says which session it was; session_restore()
 * extracts such an archive (or any workspace archive) with
 * archive_extract()'s checks into the directory a new session will use.
 * The interpreter's memory (variables, imports) is not saved: a resumed
 * session has the files and starts a fresh interpreter.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../workspace/archive.h"
#include "../workspace/dest.h"
#include "../workspace/workspace.h"
#include "session.h"

#ifndef CORRAL_VERSION_STRING
#define CORRAL_VERSION_STRING "0.1.0"
#endif

#define SESSION_JSON_MAX 65536

static void iso_time(time_t t, char *buf, size_t size)
{
        struct tm tm;
        buf[0] = '\0';
        if (gmtime_r(&t, &tm))
                strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int session_archive(struct session *s, const char *path, const char *id, json_t **ret_report, corral_error **ret_err)
{
        const char *root = session_workspace_dir(s);
        if (root == NULL)
                return corral_usage(ret_err, "the session has no workspace directory on the host (it was started "
                                             "without one): there is nothing to archive");
        char created[32], now[32];
        iso_time(session_created(s), created, sizeof(created));
        iso_time(time(NULL), now, sizeof(now));
        const json_t *from = session_from(s);
        json_t *meta = json_pack("{s:i, s:s?, s:s, s:s, s:I, s:s, s:O?}", "schema", 1, "session", id, "created",
                                 created, "archived", now, "steps", (json_int_t)session_steps(s), "corral_version",
                                 CORRAL_VERSION_STRING, "resumed_from", json_object_get(from, "session"));
        cleanup_free char *text = meta ? json_dumps(meta, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(meta);
        if (text == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot archive the session");
        /* Steps have run: the destination is resolved now, refusing a path
         * in or through what the session's jail can write (dest.h). */
        const corral_jail_config *cfg = session_config(s);
        struct ws_roots roots = { 0 };
        struct ws_dest dest;
        int r = ws_roots_add(&roots, root, "the session's workspace", ret_err);
        for (size_t i = 0; r == 0 && i < cfg->n_binds; i++)
                if (cfg->binds[i].writable)
                        r = ws_roots_add(&roots, cfg->binds[i].src, "a writable bind of the session", ret_err);
        if (r == 0)
                r = ws_dest_open(path, WS_DEST_FILE, "the archive", &roots, &dest, ret_err);
        ws_roots_release(&roots);
        if (r < 0)
                return -1;
        /* The session has no staged inputs: input/ is a directory like the
         * rest, and all of it is archived. */
        struct workspace ws = { .root = (char *)root };
        ws.root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (ws.root_fd < 0) {
                ws_dest_release(&dest);
                return corral_fail(ret_err, errno, "cannot open the session's workspace '%s'", root);
        }
        struct ws_archive_opts opts = { .include_inputs = true, .run_json = text, .meta_name = "session.json" };
        r = workspace_archive(&ws, &dest, &opts, ret_report, ret_err);
        close(ws.root_fd);
        ws_dest_release(&dest);
        return r;
}

/* A string of the archive's session.json, if it is one and short: it is
 * as hostile as the rest of the archive. */
static void keep_string(json_t *out, json_t *in, const char *key)
{
        json_t *v = json_object_get(in, key);
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 64)
                return;
        cleanup_free char *clean = utf8_sanitize(json_string_value(v), json_string_length(v), NULL);
        if (clean == NULL)
                return;
        for (char *p = clean; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = '?';
        json_object_set_new(out, key, json_string(clean));
}

json_t *session_origin(const char *archive, const char *dir)
{
        json_t *out = json_pack("{s:s}", "archive", archive);
        if (out == NULL)
                return NULL;
        /* By fds, never through a symlink: the tree came from the archive. */
        cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cleanup_close int cfd = dfd < 0 ? -1 : openat(dfd, ".corral", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        cleanup_close int fd = cfd < 0 ? -1 : openat(cfd, "session.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SESSION_JSON_MAX)
                return out;
        char buf[SESSION_JSON_MAX];
        size_t got = 0;
        while (got < sizeof(buf)) {
                ssize_t n = read(fd, buf + got, sizeof(buf) - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t)n;
        }
        json_t *meta = json_loadb(buf, got, 0, NULL);
        if (json_is_object(meta)) {
                const char *keys[] = { "session", "created", "archived", "corral_version" };
                for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                        keep_string(out, meta, keys[i]);
                json_t *steps = json_object_get(meta, "steps");
                if (json_is_integer(steps) && json_integer_value(steps) >= 0)
                        json_object_set(out, "steps", steps);
        }
        json_decref(meta);
        return out;
}

int session_restore(const char *archive, const char *dir, json_t **ret_from, corral_error **ret_err)
{
        if (archive == NULL || dir == NULL)
                return corral_usage(ret_err, "resuming a session needs an archive and a workspace directory");
        if (archive_extract(archive, dir, NULL, NULL, ret_err) < 0)
                return -1;
        if (ret_from)
                *ret_from = session_origin(archive, dir);
        return 0;
}

void session_restore_undo(const char *dir, bool keep_dir)
{
        if (dir == NULL)
                return;
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return;
        (void)ws_remove_contents(fd);
        close(fd);
        if (!keep_dir)
                (void)rmdir(dir);
}
