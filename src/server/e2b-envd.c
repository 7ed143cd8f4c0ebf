/* e2b-envd.c: what E2B's in-sandbox daemon (envd) serves, over a corral
 * sandbox (e2b.h, docs/e2b.md): files by path (GET, and POST as multipart
 * or a raw body) and Connect RPCs in their JSON encoding: the file
 * system's Stat, ListDir, MakeDir, Move and Remove, and the processes'
 * Start, Connect, List and SendSignal.  Every path is resolved beneath the
 * workspace without following links (workspace.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/base64.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "e2b.h"

#define COMMANDS_DIR ".corral/commands"

static enum MHD_Result fail(struct request *rq, corral_error *err)
{
        enum MHD_Result r = reply_corral_error(rq, err);
        corral_error_free(err);
        return r;
}

static const char *query(struct request *rq, const char *name)
{
        return http_lib.MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* ---- entries as E2B describes them ---- */

static void rfc3339(double t, char out[40])
{
        struct tm tm;
        time_t sec = (time_t)t;
        strftime(out, 40, "%Y-%m-%dT%H:%M:%S", gmtime_r(&sec, &tm));
        snprintf(out + strlen(out), 40 - strlen(out), ".%09ldZ", (long)((t - (double)sec) * 1e9));
}

/* A listing entry of workspace_list_files() as envd's EntryInfo; NULL for
 * what E2B has no type for (a FIFO, a socket). */
static json_t *entry_info(json_t *e)
{
        const char *type = json_string_value(json_object_get(e, "type"));
        const char *ftype = !type                         ? NULL
                            : strcmp(type, "file") == 0    ? "FILE_TYPE_FILE"
                            : strcmp(type, "dir") == 0     ? "FILE_TYPE_DIRECTORY"
                            : strcmp(type, "symlink") == 0 ? "FILE_TYPE_SYMLINK"
                                                           : NULL;
        const char *rel = json_string_value(json_object_get(e, "path"));
        if (ftype == NULL || rel == NULL)
                return NULL;
        cleanup_free char *shown = e2b_shown_path(rel);
        const char *slash = strrchr(rel, '/');
        int mode = (int)json_integer_value(json_object_get(e, "mode"));
        char perms[11] = "----------";
        perms[0] = ftype[10] == 'D' ? 'd' : ftype[10] == 'S' ? 'l' : '-';
        for (int i = 0; i < 9; i++)
                if (mode & (0400 >> i))
                        perms[1 + i] = "rwxrwxrwx"[i];
        char size[32], when[40];
        snprintf(size, sizeof(size), "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(e, "size")));
        rfc3339(json_number_value(json_object_get(e, "mtime")), when);
        json_t *info = json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:s,s:s,s:s}", "name", slash ? slash + 1 : rel, "type",
                                 ftype, "path", shown ? shown : rel, "size", size, "mode", mode, "permissions", perms,
                                 "owner", "user", "group", "user", "modifiedTime", when);
        json_t *target = json_object_get(e, "target");
        if (info && json_is_string(target))
                json_object_set(info, "symlinkTarget", target);
        return info;
}

/* The entry of rel itself: from its parent's listing. */
static int stat_entry(struct workspace *ws, const char *rel, json_t **ret, corral_error **ret_err)
{
        if (strcmp(rel, ".") == 0) {
                *ret = json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:s,s:s}", "name", "user", "type", "FILE_TYPE_DIRECTORY",
                                 "path", E2B_HOME, "size", "0", "mode", 0755, "permissions", "drwxr-xr-x", "owner",
                                 "user", "group", "user");
                return 0;
        }
        cleanup_free char *parent = strdup(rel);
        if (parent == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot stat '%s'", rel);
        char *slash = strrchr(parent, '/');
        if (slash)
                *slash = '\0';
        json_t *list = NULL;
        if (workspace_list_files(ws, slash ? parent : "", 1, 0, &list, ret_err) < 0)
                return -1;
        size_t i;
        json_t *e;
        *ret = NULL;
        json_array_foreach(list, i, e)
                if (strcmp(json_string_value(json_object_get(e, "path")) ?: "", rel) == 0)
                        *ret = entry_info(e);
        json_decref(list);
        if (*ret == NULL)
                return corral_make_error(ret_err, CORRAL_ERR_NOT_FOUND, ENOENT, "no such file or directory: %s",
                                         rel);
        return 0;
}

/* ---- GET and POST /files ---- */

struct e2b_upload {
        struct sandbox *sb;
        struct workspace *ws;
        struct MHD_PostProcessor *pp;
        struct ws_upload up;
        bool open;
        char *path;              /* the file being written (workspace path) */
        char *part_name;         /* its part's filename, as sent */
        uint64_t part_bytes;     /* of that part so far */
        json_t *written;         /* [{"name","type","path"}] */
        uint64_t total;
        corral_error *err;
        unsigned status;         /* the first error's HTTP status, 0 none */
};

static void upload_error(struct e2b_upload *u, unsigned status, corral_error *err)
{
        if (u->status == 0) {
                u->status = status;
                u->err = err;
        } else {
                corral_error_free(err);
        }
}

static void upload_finish_file(struct e2b_upload *u)
{
        if (!u->open)
                return;
        u->open = false;
        corral_error *err = NULL;
        if (u->status) {
                workspace_upload_abort(&u->up);
                return;
        }
        if (workspace_upload_commit(&u->up, &err) < 0) {
                upload_error(u, 400, err);
                return;
        }
        cleanup_free char *shown = e2b_shown_path(u->path);
        const char *slash = strrchr(u->path, '/');
        json_array_append_new(u->written, json_pack("{s:s,s:s,s:s}", "name", slash ? slash + 1 : u->path, "type",
                                                    "file", "path", shown ? shown : u->path));
}

static void upload_start_file(struct e2b_upload *u, const char *where)
{
        corral_error *err = NULL;
        free(u->path);
        u->path = NULL;
        if (e2b_path(where, &u->path, &err) < 0 || workspace_upload_begin(u->ws, u->path, &u->up, &err) < 0) {
                upload_error(u, 400, err);
                return;
        }
        u->open = true;
}

static void upload_bytes(struct e2b_upload *u, const char *data, size_t len)
{
        corral_error *err = NULL;
        if (u->status || !u->open)
                return;
        u->total += len;
        if (u->total > u->sb->max_upload) {
                corral_make_error(&err, CORRAL_ERR_LIMIT, 0, "the upload is larger than the %ju bytes this sandbox takes",
                                  (uintmax_t)u->sb->max_upload);
                upload_error(u, MHD_HTTP_CONTENT_TOO_LARGE, err);
                return;
        }
        if (workspace_upload_write(&u->up, data, len, &err) < 0) {
                u->open = false; /* the failed write aborted it */
                upload_error(u, 400, err);
        }
}

/* multipart/form-data: each part a file, its filename the path (E2B's
 * SDK writes several files in one request so). */
static enum MHD_Result upload_part(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                                   const char *content_type, const char *transfer_encoding, const char *data,
                                   uint64_t off, size_t size)
{
        (void)kind;
        (void)key;
        (void)content_type;
        (void)transfer_encoding;
        struct request *rq = cls;
        struct e2b_upload *u = rq->e2b_up;
        const char *target = filename && filename[0] ? filename : query(rq, "path");
        /* A part begins at offset 0, but libmicrohttpd may call twice
         * there (first with no bytes): the same part while nothing of it
         * has come yet. */
        bool same = u->open && u->part_bytes == 0 && u->part_name && target && strcmp(u->part_name, target) == 0;
        if (off == 0 && !same) {
                upload_finish_file(u);
                free(u->part_name);
                u->part_name = target ? strdup(target) : NULL;
                u->part_bytes = 0;
                if (u->status == 0)
                        upload_start_file(u, target);
        }
        u->part_bytes += size;
        if (size)
                upload_bytes(u, data, size);
        return MHD_YES;
}

int e2b_upload_begin(struct request *rq, const char *method, const char *path)
{
        if (rq->e2b_sb == NULL || strcmp(method, "POST") != 0 || strcmp(path, "/files") != 0)
                return 0;
        struct e2b_upload *u = calloc(1, sizeof(*u));
        if (u == NULL)
                return 0; /* then answered as a JSON body too large, or refused below */
        rq->e2b_up = u;
        u->sb = rq->e2b_sb;
        u->written = json_array();
        corral_error *err = NULL;
        if (sandbox_live(rq->s, u->sb, &err) < 0 || workspace_attach(u->sb->workspace, &u->ws, &err) < 0) {
                upload_error(u, err && err->kind == CORRAL_ERR_BUSY ? 409 : 500, err);
                return 1;
        }
        const char *ct = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
                u->pp = http_lib.MHD_create_post_processor(rq->conn, 64 << 10, upload_part, rq);
                if (u->pp == NULL) {
                        corral_usage(&err, "the multipart body has no boundary");
                        upload_error(u, 400, err);
                }
        } else {
                upload_start_file(u, query(rq, "path")); /* the raw body is the file */
        }
        return 1;
}

void e2b_upload_take(struct request *rq, const char *data, size_t len)
{
        struct e2b_upload *u = rq->e2b_up;
        if (u->pp) {
                if (u->status == 0 && http_lib.MHD_post_process(u->pp, data, len) != MHD_YES) {
                        corral_error *err = NULL;
                        corral_usage(&err, "the multipart body is malformed");
                        upload_error(u, 400, err);
                }
        } else {
                upload_bytes(u, data, len);
        }
}

void e2b_upload_free(struct request *rq)
{
        struct e2b_upload *u = rq->e2b_up;
        if (u == NULL)
                return;
        if (u->pp)
                http_lib.MHD_destroy_post_processor(u->pp);
        if (u->open)
                workspace_upload_abort(&u->up);
        workspace_close(u->ws, false);
        json_decref(u->written);
        corral_error_free(u->err);
        free(u->path);
        free(u->part_name);
        free(u);
        rq->e2b_up = NULL;
}

static enum MHD_Result upload_answer(struct request *rq)
{
        struct e2b_upload *u = rq->e2b_up;
        if (u->pp && u->status == 0) {
                http_lib.MHD_destroy_post_processor(u->pp); /* its last part ends here */
                u->pp = NULL;
        }
        upload_finish_file(u);
        if (u->status) {
                enum MHD_Result r = reply_corral_error(rq, u->err);
                return r;
        }
        if (json_array_size(u->written) == 0)
                return reply_error(rq, MHD_HTTP_BAD_REQUEST, "usage", "the request carried no file");
        return reply_json(rq, MHD_HTTP_OK, json_incref(u->written));
}

enum MHD_Result e2b_files(struct request *rq, const char *method, struct sandbox *sb)
{
        if (strcmp(method, "POST") == 0 && rq->e2b_up)
                return upload_answer(rq);
        if (strcmp(method, "GET") != 0)
                return reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage", "/files takes GET and POST");
        corral_error *err = NULL;
        cleanup_free char *rel = NULL;
        struct workspace *ws = NULL;
        struct stat st;
        if (e2b_path(query(rq, "path"), &rel, &err) < 0 || workspace_attach(sb->workspace, &ws, &err) < 0)
                return fail(rq, err);
        int fd = workspace_open_file(ws, rel, &st, &err);
        workspace_close(ws, false);
        if (fd < 0)
                return fail(rq, err);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        struct MHD_Response *r = http_lib.MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
        if (r == NULL) {
                close(fd);
                return MHD_NO;
        }
        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
        return reply(rq, MHD_HTTP_OK, r);
}

/* ---- Connect: the file system ---- */

static enum MHD_Result filesystem(struct request *rq, const char *method, struct sandbox *sb, json_t *in)
{
        corral_error *err = NULL;
        struct workspace *ws = NULL;
        cleanup_free char *rel = NULL, *to = NULL;
        json_t *out = NULL;
        const char *path = json_string_value(json_object_get(in, strcmp(method, "Move") == 0 ? "source" : "path"));
        if (path == NULL)
                corral_usage_field(&err, "path", "the request names no path");
        if (err || e2b_path(path, &rel, &err) < 0 || workspace_attach(sb->workspace, &ws, &err) < 0)
                return fail(rq, err);
        int rc = 0;
        if (strcmp(method, "Stat") == 0) {
                json_t *e = NULL;
                rc = stat_entry(ws, rel, &e, &err);
                out = rc == 0 ? json_pack("{s:o}", "entry", e) : NULL;
        } else if (strcmp(method, "ListDir") == 0) {
                json_int_t depth = json_integer_value(json_object_get(in, "depth"));
                json_t *list = NULL;
                rc = workspace_list_files(ws, strcmp(rel, ".") == 0 ? "" : rel, depth > 0 ? (unsigned)depth : 1, 0,
                                          &list, &err);
                if (rc == 0) {
                        json_t *entries = json_array();
                        size_t i;
                        json_t *e;
                        json_array_foreach(list, i, e) {
                                const char *p = json_string_value(json_object_get(e, "path")) ?: "";
                                /* corral's own: the commands' logs. */
                                if (strcmp(p, ".corral") == 0 || strncmp(p, ".corral/", 8) == 0)
                                        continue;
                                json_t *info = entry_info(e);
                                if (info)
                                        json_array_append_new(entries, info);
                        }
                        json_decref(list);
                        out = json_pack("{s:o}", "entries", entries);
                }
        } else if (strcmp(method, "MakeDir") == 0) {
                rc = workspace_make_dir(ws, rel, &err);
                if (rc == 1)
                        rc = corral_make_error(&err, CORRAL_ERR_BUSY, EEXIST, "directory '%s' already exists",
                                               path);
                json_t *e = NULL;
                if (rc == 0 && (rc = stat_entry(ws, rel, &e, &err)) == 0)
                        out = json_pack("{s:o}", "entry", e);
        } else if (strcmp(method, "Remove") == 0) {
                rc = workspace_remove_file(ws, rel, &err);
                out = rc == 0 ? json_object() : NULL;
        } else if (strcmp(method, "Move") == 0) {
                const char *dest = json_string_value(json_object_get(in, "destination"));
                json_t *e = NULL;
                if (dest == NULL)
                        rc = corral_usage_field(&err, "destination", "Move names no destination");
                else if ((rc = e2b_path(dest, &to, &err)) == 0 && (rc = workspace_rename(ws, rel, to, &err)) == 0 &&
                         (rc = stat_entry(ws, to, &e, &err)) == 0)
                        out = json_pack("{s:o}", "entry", e);
        } else {
                workspace_close(ws, false);
                return reply_error(rq, MHD_HTTP_NOT_IMPLEMENTED, "usage",
                                   "corral does not serve filesystem.Filesystem/%s (docs/e2b.md)", method);
        }
        workspace_close(ws, false);
        if (rc < 0)
                return fail(rq, err);
        return reply_json(rq, MHD_HTTP_OK, out);
}

/* ---- Connect: processes ---- */

/* One command's output, followed from its log files as a server stream. */
struct follow {
        struct server *s;
        struct sandbox *sb;
        long pid;
        double deadline_ms;      /* Connect-Timeout-Ms, 0 none */
        struct body_stream *bs;
};

static void envelope(struct body_stream *bs, unsigned char flags, json_t *msg)
{
        char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
        json_decref(msg);
        if (text == NULL)
                return;
        size_t n = strlen(text);
        unsigned char head[5] = { flags };
        uint32_t be = htonl((uint32_t)n);
        memcpy(head + 1, &be, 4);
        body_stream_write(bs, head, sizeof(head));
        body_stream_write(bs, text, n);
        free(text);
}

static void data_event(struct body_stream *bs, const char *stream, const char *buf, size_t n)
{
        char *b64 = malloc(BASE64_ENCODE_RAW_LENGTH(n) + 1);
        if (b64 == NULL)
                return;
        base64_encode_raw(b64, n, (const uint8_t *)buf);
        b64[BASE64_ENCODE_RAW_LENGTH(n)] = '\0';
        envelope(bs, 0, json_pack("{s:{s:{s:s}}}", "event", "data", stream, b64));
        free(b64);
}

/* New bytes of a log since *off; false when it cannot be read (yet). */
static bool pump(struct follow *f, struct workspace *ws, int *fd, const char *name, const char *stream)
{
        if (*fd < 0) {
                char rel[128];
                snprintf(rel, sizeof(rel), COMMANDS_DIR "/%ld.%s", f->pid, name);
                struct stat st;
                *fd = workspace_open_file(ws, rel, &st, NULL);
                if (*fd < 0)
                        return false;
        }
        char buf[48 << 10];
        ssize_t n;
        while ((n = read(*fd, buf, sizeof(buf))) > 0)
                data_event(f->bs, stream, buf, (size_t)n);
        return true;
}

/* The exit status the driver wrote when the command ended, or -1. */
static int exit_status(struct workspace *ws, long pid)
{
        char rel[128];
        snprintf(rel, sizeof(rel), COMMANDS_DIR "/%ld.exit", pid);
        cleanup_free char *text = NULL;
        if (workspace_read_file(ws, rel, 32, &text, NULL, NULL, NULL) < 0)
                return -1;
        char *end;
        long v = strtol(text, &end, 10);
        return end == text ? -1 : (int)v;
}

static int signal_command(struct server *s, struct sandbox *sb, long pid, const char *sig, corral_error **ret_err)
{
        char code[96];
        snprintf(code, sizeof(code), "kill -s %s -- -%ld 2>/dev/null", sig, pid);
        json_t *result = NULL;
        if (e2b_bash(s, sb, code, NULL, false, &result, ret_err) < 0)
                return -1;
        bool sent = json_integer_value(json_object_get(result, "exit_code")) == 0;
        json_decref(result);
        return sent ? 0 : corral_make_error(ret_err, CORRAL_ERR_NOT_FOUND, 0, "no running process %ld", pid);
}

static void follow_run(struct body_stream *bs, void *ud)
{
        struct follow *f = ud;
        f->bs = bs;
        envelope(bs, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", (int)f->pid));
        struct workspace *ws = NULL;
        int out = -1, err_fd = -1, status = -1;
        double wait_ms = 2, last_ms = monotonic_ms();
        json_t *end = NULL;
        if (workspace_attach(f->sb->workspace, &ws, NULL) < 0) {
                envelope(bs, 2, json_pack("{s:{s:s,s:s}}", "error", "code", "internal", "message",
                                          "cannot read the command's output"));
                return;
        }
        while (!body_stream_gone(bs)) {
                if (atomic_load(&f->sb->session_ended) || atomic_load(&f->s->stopping)) {
                        /* Its jail is gone, and the command with it: what it
                         * wrote is sent, then the stream ends, as envd's
                         * would when the sandbox goes. */
                        pump(f, ws, &out, "log", "stdout");
                        pump(f, ws, &err_fd, "err", "stderr");
                        end = json_pack("{s:{s:s,s:s}}", "error", "code", "unavailable", "message",
                                        atomic_load(&f->s->stopping) ? "the server is stopping"
                                                                     : "the sandbox has ended");
                        break;
                }
                /* The exit first, then the logs: what was written before it
                 * ended is all there once the exit is. */
                status = exit_status(ws, f->pid);
                bool got = pump(f, ws, &out, "log", "stdout");
                got |= pump(f, ws, &err_fd, "err", "stderr");
                (void)got;
                if (status >= 0)
                        break;
                double now = monotonic_ms();
                if (f->deadline_ms > 0 && now >= f->deadline_ms) {
                        signal_command(f->s, f->sb, f->pid, "KILL", NULL);
                        end = json_pack("{s:{s:s,s:s}}", "error", "code", "deadline_exceeded", "message",
                                        "the command ran past its time limit and was killed");
                        break;
                }
                if (now - last_ms > 50000) { /* as envd does: the client may drop a silent stream */
                        envelope(bs, 0, json_pack("{s:{s:{}}}", "event", "keepalive"));
                        last_ms = now;
                }
                struct timespec ts = { 0, (long)(wait_ms * 1e6) };
                nanosleep(&ts, NULL);
                wait_ms = wait_ms < 50 ? wait_ms * 1.5 : 50;
        }
        if (status >= 0) {
                char text[32];
                snprintf(text, sizeof(text), status > 128 ? "signal: %d" : "exit status %d",
                         status > 128 ? status - 128 : status);
                envelope(bs, 0, json_pack("{s:{s:{s:i,s:b,s:s}}}", "event", "end", "exitCode", status, "exited",
                                          status <= 128, "status", text));
        }
        envelope(bs, 2, end ? end : json_object());
        if (out >= 0)
                close(out);
        if (err_fd >= 0)
                close(err_fd);
        workspace_close(ws, false);
}

static void follow_release(void *ud)
{
        struct follow *f = ud;
        sandbox_put(f->s, f->sb);
        free(f);
}

static enum MHD_Result follow_reply(struct request *rq, struct sandbox *sb, long pid)
{
        struct follow *f = calloc(1, sizeof(*f));
        if (f == NULL)
                return MHD_NO;
        f->s = rq->s;
        f->sb = sb;
        f->pid = pid;
        const char *t = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Connect-Timeout-Ms");
        if (t && strtod(t, NULL) > 0)
                f->deadline_ms = monotonic_ms() + strtod(t, NULL);
        pthread_mutex_lock(&rq->s->lock);
        sb->refs++; /* the stream's own */
        pthread_mutex_unlock(&rq->s->lock);
        static const struct body_stream_hooks hooks = { .run = follow_run, .release = follow_release };
        return body_stream_reply(rq, MHD_HTTP_OK, "application/connect+json", &hooks, f);
}

/* One word for bash; false when it could not be made (no memory). */
static bool shell_quote(FILE *f, const char *text)
{
        cleanup_free char *w = e2b_shell_word(text);
        return w && fputs(w, f) >= 0;
}

/* The bash script of a Start: E2B's SDK sends bash -l -c SCRIPT; anything
 * else is run as its words.  Its stderr goes to a log of its own beside
 * the one the driver keeps of its stdout. */
static char *start_script(json_t *process, corral_error **ret_err)
{
        const char *cmd = json_string_value(json_object_get(process, "cmd"));
        json_t *args = json_object_get(process, "args");
        const char *cwd = json_string_value(json_object_get(process, "cwd"));
        if (cmd == NULL)
                return corral_usage(ret_err, "the process has no cmd"), NULL;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the process"), NULL;
        fputs("exec 2>>" COMMANDS_DIR "/$$.err\n", f);
        bool ok = true;
        if (cwd && cwd[0]) {
                fputs("cd ", f);
                ok = shell_quote(f, cwd);
                fputs(" || exit 1\n", f);
        } else {
                fputs("cd " E2B_HOME "\n", f);
        }
        size_t n = json_array_size(args), first = 0;
        bool shell = strcmp(cmd, "/bin/bash") == 0 || strcmp(cmd, "bash") == 0 || strcmp(cmd, "/bin/sh") == 0 ||
                     strcmp(cmd, "sh") == 0;
        while (shell && first < n && strcmp(json_string_value(json_array_get(args, first)) ?: "", "-l") == 0)
                first++;
        if (shell && n == first + 2 && strcmp(json_string_value(json_array_get(args, first)) ?: "", "-c") == 0 &&
            json_is_string(json_array_get(args, first + 1))) {
                fputs(json_string_value(json_array_get(args, first + 1)), f);
        } else {
                ok = ok && shell_quote(f, cmd);
                for (size_t i = 0; i < n; i++) {
                        fputc(' ', f);
                        ok = ok && shell_quote(f, json_string_value(json_array_get(args, i)) ?: "");
                }
        }
        fputc('\n', f);
        if (fclose(f) != 0 || !ok) {
                free(text);
                return corral_fail(ret_err, ENOMEM, "cannot start the process"), NULL;
        }
        return text;
}

static long selected_pid(json_t *in)
{
        json_t *p = json_object_get(json_object_get(in, "process"), "pid");
        return json_is_integer(p) ? (long)json_integer_value(p)
               : json_is_string(p) ? strtol(json_string_value(p), NULL, 10)
                                   : 0;
}

static bool ours(struct sandbox *sb, long pid)
{
        pthread_mutex_lock(&sb->e2b->lock);
        struct e2b_command *c = sb->e2b->commands;
        while (c && c->pid != pid)
                c = c->next;
        pthread_mutex_unlock(&sb->e2b->lock);
        return c != NULL;
}

static enum MHD_Result process(struct request *rq, const char *method, struct sandbox *sb, json_t *in)
{
        struct server *s = rq->s;
        corral_error *err = NULL;
        if (strcmp(method, "Start") == 0) {
                json_t *proc = json_object_get(in, "process");
                if (json_object_get(in, "pty"))
                        return reply_error(rq, MHD_HTTP_NOT_IMPLEMENTED, "usage",
                                           "corral does not give commands a terminal (pty)");
                json_t *envs = json_object_get(proc, "envs");
                cleanup_free char *script = start_script(proc, &err);
                json_t *env = script ? e2b_env(sb, json_is_object(envs) ? envs : NULL) : NULL;
                json_t *result = NULL;
                int rc = script ? e2b_bash(s, sb, script, env, true, &result, &err) : -1;
                json_decref(env);
                if (rc < 0)
                        return fail(rq, err);
                long pid = (long)json_integer_value(json_object_get(json_object_get(json_object_get(result, "value"),
                                                                                    "json"),
                                                                    "pid"));
                json_decref(result);
                if (pid <= 1)
                        return reply_error(rq, 500, "internal", "the command did not start");
                struct e2b_command *c = calloc(1, sizeof(*c));
                if (c) {
                        c->pid = pid;
                        c->config = json_deep_copy(proc);
                        const char *tag = json_string_value(json_object_get(in, "tag"));
                        c->tag = tag ? strdup(tag) : NULL;
                        pthread_mutex_lock(&sb->e2b->lock);
                        c->next = sb->e2b->commands;
                        sb->e2b->commands = c;
                        pthread_mutex_unlock(&sb->e2b->lock);
                }
                return follow_reply(rq, sb, pid);
        }
        if (strcmp(method, "Connect") == 0) {
                long pid = selected_pid(in);
                if (!ours(sb, pid))
                        return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "process with pid %ld not found", pid);
                return follow_reply(rq, sb, pid);
        }
        if (strcmp(method, "List") == 0) {
                struct workspace *ws = NULL;
                if (workspace_attach(sb->workspace, &ws, &err) < 0)
                        return fail(rq, err);
                json_t *list = json_array();
                pthread_mutex_lock(&sb->e2b->lock);
                for (struct e2b_command *c = sb->e2b->commands; c; c = c->next) {
                        if (exit_status(ws, c->pid) >= 0)
                                continue;
                        json_t *p = json_pack("{s:o,s:i}", "config", json_deep_copy(c->config), "pid", (int)c->pid);
                        if (p && c->tag)
                                json_object_set_new(p, "tag", json_string(c->tag));
                        json_array_append_new(list, p);
                }
                pthread_mutex_unlock(&sb->e2b->lock);
                workspace_close(ws, false);
                return reply_json(rq, MHD_HTTP_OK, json_pack("{s:o}", "processes", list));
        }
        if (strcmp(method, "SendSignal") == 0) {
                long pid = selected_pid(in);
                const char *sig = json_string_value(json_object_get(in, "signal"));
                const char *name = sig && strcmp(sig, "SIGNAL_SIGTERM") == 0 ? "TERM"
                                   : sig && strcmp(sig, "SIGNAL_SIGKILL") == 0 ? "KILL"
                                                                               : NULL;
                if (name == NULL)
                        return reply_error(rq, MHD_HTTP_BAD_REQUEST, "usage",
                                           "signal must be SIGNAL_SIGTERM or SIGNAL_SIGKILL");
                if (!ours(sb, pid))
                        return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "process with pid %ld not found", pid);
                if (signal_command(s, sb, pid, name, &err) < 0)
                        return fail(rq, err);
                return reply_json(rq, MHD_HTTP_OK, json_object());
        }
        return reply_error(rq, MHD_HTTP_NOT_IMPLEMENTED, "usage",
                           "corral does not serve process.Process/%s: commands have no stdin or terminal "
                           "(docs/e2b.md)",
                           method);
}

enum MHD_Result e2b_connect(struct request *rq, const char *path, struct sandbox *sb)
{
        bool fs = strncmp(path, "/filesystem.Filesystem/", 23) == 0;
        const char *method = path + (fs ? 23 : 17);
        corral_error *err = NULL;
        /* A unary call's body is the message; a stream's, one envelope
         * (flags, big-endian length, message). */
        const char *ct = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        const char *msg = rq->body ? rq->body : "";
        size_t len = rq->len;
        if (ct && strncmp(ct, "application/connect+json", 24) == 0) {
                uint32_t be = 0;
                if (len >= 5)
                        memcpy(&be, msg + 1, 4);
                if (len < 5 || (msg[0] & 1) || ntohl(be) != len - 5)
                        return reply_error(rq, MHD_HTTP_BAD_REQUEST, "usage",
                                           "a stream's request must be one uncompressed envelope");
                msg += 5;
                len -= 5;
        }
        json_error_t je;
        json_t *in = len ? json_loadb(msg, len, 0, &je) : json_object();
        if (!json_is_object(in)) {
                json_decref(in);
                corral_usage(&err, "the message is not a JSON object");
                return fail(rq, err);
        }
        enum MHD_Result r = fs ? filesystem(rq, method, sb, in) : process(rq, method, sb, in);
        json_decref(in);
        return r;
}
