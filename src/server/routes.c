/* routes.c: the API's answers (docs/api.md): sandboxes (pause and resume
 * too), steps in Python or bash (whole or streamed as NDJSON or server-sent
 * events), interrupts, and files one by one or as a tar.  server.c has
 * already checked the Host, the Origin, the token, the rate and the body's
 * size. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../workspace/archive.h"
#include "server-internal.h"

#define PREFIX "/v1/sandboxes"

/* "/v1/sandboxes/ID/REST": ID into id, *ret_rest the part after it ("" or
 * "/exec", "/files/a/b"); false when path is not one. */
static bool split_path(const char *path, char id[SESSION_ID_LEN + 1], const char **ret_rest)
{
        if (strncmp(path, PREFIX "/", sizeof(PREFIX)) != 0)
                return false;
        const char *p = path + sizeof(PREFIX);
        size_t n = strcspn(p, "/");
        if (n != SESSION_ID_LEN)
                return false;
        memcpy(id, p, n);
        id[n] = '\0';
        *ret_rest = p + n;
        return session_id_valid(id);
}

static json_t *parse_body(struct request *rq, corral_error **ret_err)
{
        if (rq->len == 0)
                return json_object();
        json_error_t je;
        json_t *j = json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, &je);
        if (j == NULL)
                corral_usage(ret_err, "the body is not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
        return j;
}

static enum MHD_Result answer_status(struct request *rq, unsigned status, const char *id)
{
        if (status == 403) {
                count_rejected(rq->s, "not_yours");
                return reply_error(rq, 403, "forbidden", "sandbox '%s' belongs to another token", id);
        }
        return reply_error(rq, 404, "not_found", "no sandbox '%s' (it may have ended: see GET /v1/sandboxes)", id);
}

/* ---- steps ---- */

int fields_known(json_t *obj, const char *const *known, size_t n, const char *prefix, const char *what,
                 const char *field, corral_error **ret_err)
{
        const char *key;
        json_t *v;
        json_object_foreach(obj, key, v) {
                bool ok = false;
                for (size_t i = 0; i < n && !ok; i++)
                        ok = strcmp(key, known[i]) == 0;
                if (ok)
                        continue;
                char list[512] = "";
                for (size_t i = 0, len = 0; i < n && len < sizeof(list); i++)
                        len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", known[i]);
                return corral_usage_field(ret_err, field, "'%s%s' is not %s (%s)", prefix, key, what, list);
        }
        return 0;
}

void step_request_release(struct step_request *sr)
{
        free(TAKE_PTR(sr->code));
        free(TAKE_PTR(sr->context));
        sr->lim.context = NULL;
        json_decref(sr->env);
        sr->env = NULL;
        sr->lim.env = NULL;
}

int step_parse(json_t *body, struct step_request *sr, corral_error **ret_err)
{
        memset(sr, 0, sizeof(*sr));
        sr->lim.cancel_fd = -1;
        static const char *const known[] = { "code",       "language",   "timeout", "output_limit",
                                             "figure_png", "background", "env",     "context" };
        if (fields_known(body, known, ARRAY_SIZE(known), "", "a field of a step", "body", ret_err) < 0)
                return -1;
        json_t *code = json_object_get(body, "code");
        const char *lang = json_string_value(json_object_get(body, "language"));
        if (!json_is_string(code))
                return corral_usage_field(ret_err, "code", "code must be a string");
        if (json_object_get(body, "language") && (lang == NULL || (strcmp(lang, "python") != 0 &&
                                                                   strcmp(lang, "bash") != 0)))
                return corral_usage_field(ret_err, "language", "language must be \"python\" or \"bash\"");
        bool bash = lang && strcmp(lang, "bash") == 0;
        json_t *bg = json_object_get(body, "background");
        if (bg && (!json_is_boolean(bg) || (json_is_true(bg) && !bash)))
                return corral_usage_field(ret_err, "background",
                                          "background must be true or false, and true only for bash commands");
        json_t *t = json_object_get(body, "timeout");
        if (t && (!json_is_number(t) || !(json_number_value(t) > 0) || json_number_value(t) > 86400))
                return corral_usage_field(ret_err, "timeout", "timeout must be a number of seconds above 0");
        json_t *o = json_object_get(body, "output_limit");
        if (o && (!json_is_integer(o) || json_integer_value(o) <= 0))
                return corral_usage_field(ret_err, "output_limit", "output_limit must be a number of bytes above 0");
        json_t *f = json_object_get(body, "figure_png");
        if (f && !json_is_boolean(f))
                return corral_usage_field(ret_err, "figure_png", "figure_png must be true or false");
        sr->len = json_string_length(code);
        sr->code = strndup(json_string_value(code), sr->len);
        if (sr->code == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot take the code");
        sr->lim.timeout_s = t ? json_number_value(t) : 0;
        sr->lim.output_limit = o ? (uint64_t)json_integer_value(o) : 0;
        sr->lim.figure_png = json_is_true(f);
        sr->lim.language = bash ? "bash" : NULL;
        sr->lim.background = json_is_true(bg);
        json_t *ctx = json_object_get(body, "context");
        const char *ctx_name = json_string_value(ctx);
        if (ctx && (ctx_name == NULL || ctx_name[0] == '\0' || json_string_length(ctx) > 64 ||
                    strspn(ctx_name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
                            json_string_length(ctx) || bash)) {
                free(TAKE_PTR(sr->code));
                return corral_usage_field(ret_err, "context",
                                          "context must name a context of Python steps: 1 to 64 letters, digits, "
                                          "'_', '-' or '.'");
        }
        if (ctx_name && (sr->context = strdup(ctx_name)) == NULL) {
                free(TAKE_PTR(sr->code));
                return corral_fail(ret_err, ENOMEM, "cannot take the context");
        }
        sr->lim.context = sr->context;
        json_t *env = json_object_get(body, "env");
        if (env) {
                const char *name;
                json_t *value;
                bool ok = json_is_object(env) && json_object_size(env) <= 64;
                json_object_foreach(env, name, value) {
                        ok = ok && json_is_string(value) && name[0] && strlen(name) <= 256 &&
                             strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
                                     strlen(name) &&
                             json_string_length(value) <= 32768 &&
                             strlen(json_string_value(value)) == json_string_length(value);
                }
                if (!ok) {
                        step_request_release(sr);
                        return corral_usage_field(ret_err, "env",
                                                  "env must be an object of at most 64 NAME: \"value\" pairs (names "
                                                  "of letters, digits and _; values of at most 32 KiB, no NUL)");
                }
                sr->env = json_incref(env);
                sr->lim.env = env;
        }
        return 0;
}

static void step_output(void *userdata, int stream, const char *data, size_t len)
{
        struct step_ctx *c = userdata;
        if (c->out)
                c->out(c->ud, stream, data, len);
}

/* The interrupt route wrote to the sandbox's eventfd: drain it and
 * interrupt (KeyboardInterrupt, the state kept). */
static bool step_interrupt(void *userdata)
{
        struct step_ctx *c = userdata;
        uint64_t n;
        return read(c->sb->interrupt_fd, &n, sizeof(n)) == (ssize_t)sizeof(n);
}

static void count_step(struct server *s, json_t *result, const char *language, double started_ms)
{
        const char *status = json_string_value(json_object_get(result, "status"));
        metrics_add(s->metrics, "corral_executions_total", status ? status : "failed", 1);
        metrics_observe(s->metrics, "corral_execution_seconds", language ? language : "python",
                        (monotonic_ms() - started_ms) / 1000);
}

int step_run(struct server *s, struct sandbox *sb, struct step_request *sr, struct step_ctx *ctx,
                    json_t **ret_result, corral_error **ret_err)
{
        uint64_t stale;
        while (read(sb->interrupt_fd, &stale, sizeof(stale)) == (ssize_t)sizeof(stale))
                ; /* an interrupt meant for an earlier step */
        ctx->sb = sb;
        struct session_callbacks cb = { .on_output = step_output, .userdata = ctx, .interrupt_fd = sb->interrupt_fd,
                                        .on_interrupt_fd = step_interrupt };
        double t0 = monotonic_ms();
        pthread_mutex_lock(&s->lock);
        sb->stepping = true;
        pthread_mutex_unlock(&s->lock);
        *ret_result = NULL;
        int rc = session_host_exec(s->host, sb->id, sr->code, sr->len, &sr->lim, &cb, NULL, ret_result, ret_err);
        pthread_mutex_lock(&s->lock);
        sb->stepping = false;
        pthread_mutex_unlock(&s->lock);
        if (rc == 0) {
                json_object_del(*ret_result, "session");
                /* Figures by their place in the sandbox, not the host's. */
                size_t i;
                json_t *f;
                json_array_foreach(json_object_get(*ret_result, "figures"), i, f)
                        json_object_del(f, "host_path");
                count_step(s, *ret_result, sr->lim.language, t0);
        } else {
                metrics_add(s->metrics, "corral_executions_total", "failed", 1);
        }
        return rc;
}

/* ---- a streamed step ---- */

struct stream {
        struct server *s;
        struct sandbox *sb;
        struct step_request sr;
        struct step_ctx ctx;
        bool sse;
        struct body_stream *bs;
};

static void stream_event(struct stream *st, const char *type, json_t *payload)
{
        char *text = payload ? json_dumps(payload, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
        json_decref(payload);
        if (text == NULL)
                return;
        char *line = NULL;
        int n = st->sse ? asprintf(&line, "event: %s\ndata: %s\n\n", type, text) : asprintf(&line, "%s\n", text);
        free(text);
        if (n >= 0)
                body_stream_write(st->bs, line, (size_t)n);
        free(line);
}

static void stream_output(void *ud, int stream, const char *data, size_t len)
{
        struct stream *st = ud;
        size_t clean_len;
        cleanup_free char *clean = utf8_sanitize(data, len, &clean_len);
        const char *type = stream == 2 ? "stderr" : "stdout";
        if (clean)
                stream_event(st, type, json_pack("{s:s,s:s%}", "type", type, "data", clean, clean_len));
}

static void stream_run(struct body_stream *bs, void *ud)
{
        struct stream *st = ud;
        st->bs = bs;
        json_t *result = NULL;
        corral_error *err = NULL;
        if (step_run(st->s, st->sb, &st->sr, &st->ctx, &result, &err) == 0) {
                size_t i;
                json_t *f;
                json_array_foreach(json_object_get(result, "figures"), i, f)
                        stream_event(st, "figure", json_pack("{s:s,s:O}", "type", "figure", "figure", f));
                stream_event(st, "result", json_pack("{s:s,s:o}", "type", "result", "result", result));
        } else {
                int kind = err ? err->kind : CORRAL_ERR_INTERNAL;
                stream_event(st, "error", json_pack("{s:s,s:{s:s,s:s}}", "type", "error", "error", "kind",
                                                    corral_error_kind_to_string(kind), "message",
                                                    err ? err->msg : "the step failed"));
                corral_error_free(err);
        }
        step_end(st->s, st->sb);
}

/* A client gone before the end: the step is interrupted, as by POST
 * .../interrupt (the state kept; killed after the grace). */
static void stream_hangup(void *ud)
{
        struct stream *st = ud;
        sandbox_interrupt(st->sb);
}

static void stream_release(void *ud)
{
        struct stream *st = ud;
        if (st->bs == NULL)
                step_end(st->s, st->sb); /* it never ran */
        sandbox_put(st->s, st->sb);
        step_request_release(&st->sr);
        free(st);
}

/* Start the step on its own thread and answer with its events.  The
 * stream takes sr's code and the reference on sb, even on failure. */
static enum MHD_Result exec_streamed(struct request *rq, struct sandbox *sb, struct step_request *sr, bool sse)
{
        struct stream *st = calloc(1, sizeof(*st));
        if (st == NULL) {
                step_end(rq->s, sb);
                step_request_release(sr);
                sandbox_put(rq->s, sb);
                return MHD_NO;
        }
        st->s = rq->s;
        st->sb = sb;
        st->sr = *sr;
        st->sse = sse;
        st->ctx.out = stream_output;
        st->ctx.ud = st;
        static const struct body_stream_hooks hooks = { .run = stream_run, .hangup = stream_hangup,
                                                        .release = stream_release };
        return body_stream_reply(rq, MHD_HTTP_OK, sse ? "text/event-stream" : "application/x-ndjson", &hooks, st);
}

static enum MHD_Result route_exec(struct request *rq, struct sandbox *sb)
{
        struct server *s = rq->s;
        corral_error *err = NULL;
        json_t *body = parse_body(rq, &err);
        struct step_request sr;
        if (body == NULL || step_parse(body, &sr, &err) < 0) {
                json_decref(body);
                enum MHD_Result r = reply_corral_error(rq, err);
                corral_error_free(err);
                sandbox_put(s, sb);
                return r;
        }
        json_decref(body);
        if (!step_begin(s, sb)) {
                step_request_release(&sr);
                sandbox_put(s, sb);
                count_rejected(s, "steps");
                return reply_error(rq, MHD_HTTP_TOO_MANY_REQUESTS, "limit",
                                   "this token runs its most steps at once (%u): wait for one to end",
                                   s->cfg.max_execs_per_token);
        }
        const char *accept = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
        bool ndjson = accept && strstr(accept, "application/x-ndjson");
        bool sse = accept && strstr(accept, "text/event-stream");
        if (ndjson || sse)
                return exec_streamed(rq, sb, &sr, sse && !ndjson);
        struct step_ctx ctx = { 0 };
        json_t *result = NULL;
        int rc = step_run(s, sb, &sr, &ctx, &result, &err);
        step_end(s, sb);
        step_request_release(&sr);
        sandbox_put(s, sb);
        if (rc < 0) {
                enum MHD_Result r = reply_corral_error(rq, err);
                corral_error_free(err);
                return r;
        }
        return reply_json(rq, MHD_HTTP_OK, result);
}

/* ---- background commands ---- */

/* "/commands/PID" and what follows; false when rest is not one. */
static bool command_pid(const char *rest, long *ret_pid, const char **ret_tail)
{
        if (strncmp(rest, "/commands/", 10) != 0)
                return false;
        char *end;
        errno = 0;
        long pid = strtol(rest + 10, &end, 10);
        /* Never 1: "kill -- -1" would be every process of the sandbox. */
        if (errno || end == rest + 10 || pid <= 1 || pid > 4194304 || (*end && *end != '/'))
                return false;
        *ret_pid = pid;
        *ret_tail = end;
        return true;
}

/* GET .../commands/PID: what its files in the workspace say (no step is
 * needed, so a running step does not hold it up). */
static enum MHD_Result command_status(struct request *rq, struct sandbox *sb, long pid)
{
        corral_error *err = NULL;
        struct workspace *ws = NULL;
        char log[64], ex[64];
        snprintf(log, sizeof(log), ".corral/commands/%ld.log", pid);
        snprintf(ex, sizeof(ex), ".corral/commands/%ld.exit", pid);
        struct stat st;
        enum MHD_Result r;
        if (workspace_attach(sb->workspace, &ws, &err) < 0) {
                r = reply_corral_error(rq, err);
                goto out;
        }
        int fd = workspace_open_file(ws, log, &st, &err);
        if (fd < 0) {
                r = err && err->kind == CORRAL_ERR_NOT_FOUND
                            ? reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no background command %ld", pid)
                            : reply_corral_error(rq, err);
                goto out;
        }
        close(fd);
        char *text = NULL;
        json_t *exit_code = json_null();
        corral_error_clear(&err);
        if (workspace_read_file(ws, ex, 32, &text, NULL, NULL, &err) == 0) {
                char *end;
                long v = strtol(text, &end, 10);
                if (end != text && v >= 0 && v < 256)
                        exit_code = json_integer(v);
                free(text);
        }
        r = reply_json(rq, MHD_HTTP_OK, json_pack("{s:I,s:b,s:o,s:s,s:I}", "pid", (json_int_t)pid, "running",
                                                  json_is_null(exit_code), "exit_code", exit_code, "log",
                                                  log, "log_bytes", (json_int_t)st.st_size));
out:
        corral_error_free(err);
        workspace_close(ws, false);
        return r;
}

/* POST .../commands/PID/signal {"signal": "TERM"}: kill(1) on its process
 * group, in a bash step (it waits for a running step). */
/* Whether pid is a background command this sandbox started (its log). */
static bool is_command(struct sandbox *sb, long pid)
{
        struct workspace *ws = NULL;
        char log[64];
        struct stat st;
        snprintf(log, sizeof(log), ".corral/commands/%ld.log", pid);
        int fd = workspace_attach(sb->workspace, &ws, NULL) == 0 ? workspace_open_file(ws, log, &st, NULL) : -1;
        if (fd >= 0)
                close(fd);
        workspace_close(ws, false);
        return fd >= 0;
}

static enum MHD_Result command_signal(struct request *rq, struct sandbox *sb, long pid)
{
        if (!is_command(sb, pid))
                return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no background command %ld", pid);
        static const char *const names[] = { "TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2", "STOP", "CONT" };
        corral_error *err = NULL;
        json_t *body = parse_body(rq, &err);
        const char *asked = json_string_value(json_object_get(body, "signal"));
        const char *sig = asked == NULL && json_object_get(body, "signal") == NULL ? "TERM" : NULL;
        for (size_t i = 0; asked && i < ARRAY_SIZE(names); i++)
                if (strcmp(asked, names[i]) == 0)
                        sig = names[i]; /* ours: the body is freed below */
        bool known = sig != NULL;
        if (body == NULL || !known) {
                json_decref(body);
                if (err == NULL)
                        corral_usage_field(&err, "signal", "signal must be one of TERM (the default), KILL, INT, "
                                                           "HUP, QUIT, USR1, USR2, STOP, CONT");
                enum MHD_Result r = reply_corral_error(rq, err);
                corral_error_free(err);
                return r;
        }
        struct step_request sr = { 0 };
        sr.lim.cancel_fd = -1;
        sr.lim.language = "bash";
        sr.lim.timeout_s = 10;
        if (asprintf(&sr.code, "kill -s %s -- -%ld 2>/dev/null", sig, pid) < 0)
                sr.code = NULL;
        json_decref(body);
        if (sr.code == NULL)
                return MHD_NO;
        sr.len = strlen(sr.code);
        if (!step_begin(rq->s, sb)) {
                step_request_release(&sr);
                return reply_error(rq, MHD_HTTP_TOO_MANY_REQUESTS, "limit",
                                   "this token runs its most steps at once: wait for one to end");
        }
        struct step_ctx ctx = { 0 };
        json_t *result = NULL;
        int rc = step_run(rq->s, sb, &sr, &ctx, &result, &err);
        step_end(rq->s, sb);
        step_request_release(&sr);
        if (rc < 0) {
                enum MHD_Result r = reply_corral_error(rq, err);
                corral_error_free(err);
                return r;
        }
        bool sent = json_integer_value(json_object_get(result, "exit_code")) == 0;
        json_decref(result);
        if (!sent)
                return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no running background command %ld", pid);
        return reply_json(rq, MHD_HTTP_OK, json_pack("{s:I,s:s}", "signalled", (json_int_t)pid, "signal", sig));
}

static enum MHD_Result route_interrupt(struct request *rq, struct sandbox *sb)
{
        struct server *s = rq->s;
        pthread_mutex_lock(&s->lock);
        bool running = sb->stepping;
        pthread_mutex_unlock(&s->lock);
        uint64_t one = 1;
        bool sent = running && write(sb->interrupt_fd, &one, sizeof(one)) == (ssize_t)sizeof(one);
        sandbox_put(s, sb);
        if (!sent)
                return reply_error(rq, MHD_HTTP_CONFLICT, "busy", "no step is running in this sandbox");
        return reply_json(rq, MHD_HTTP_ACCEPTED, json_pack("{s:b}", "interrupted", 1));
}

/* ---- files ---- */

static bool is_tar(struct request *rq)
{
        const char *ct = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        const char *fmt = http_lib.MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, "format");
        return (ct && strncasecmp(ct, "application/x-tar", 17) == 0) || (fmt && strcmp(fmt, "tar") == 0);
}

/* GET .../files?format=tar: the workspace as the session host archives it
 * (between steps: a running one is waited for), from a file of ours that
 * is gone from the directory before a byte is sent. */
static enum MHD_Result download_tar(struct request *rq, struct sandbox *sb)
{
        corral_error *err = NULL;
        cleanup_free char *name = NULL;
        cleanup_free char *path = asprintf(&name, "download-%s-%d.tar", sb->id, (int)gettid()) < 0
                                          ? NULL
                                          : server_work_path(rq->s, name);
        json_t *report = NULL;
        if (path == NULL || session_host_archive(rq->s->host, sb->id, path, false, NULL, NULL, &report, &err) < 0) {
                enum MHD_Result r = err ? reply_corral_error(rq, err) : MHD_NO;
                corral_error_free(err);
                if (path)
                        unlink(path);
                return r;
        }
        json_decref(report);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        unlink(path);
        if (fd < 0 || fstat(fd, &st) < 0) {
                if (fd >= 0)
                        close(fd);
                return reply_error(rq, 500, "internal", "cannot read the archive just written");
        }
        struct MHD_Response *r = http_lib.MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
        if (r == NULL) {
                close(fd);
                return MHD_NO;
        }
        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-tar");
        return reply(rq, MHD_HTTP_OK, r);
}

/* PUT .../files with a tar: extracted into the workspace, new top-level
 * entries only (workspace_restore(): nothing out of the tree, no links out,
 * no devices, no bombs; a refused archive leaves nothing). */
static enum MHD_Result extract_tar(struct request *rq, struct sandbox *sb)
{
        corral_error *err = NULL;
        struct workspace *ws = NULL;
        json_t *report = NULL;
        struct archive_limits lim = { .max_bytes = sb->max_upload };
        close(TAKE_FD(rq->tar_fd));
        enum MHD_Result r;
        if (workspace_attach(sb->workspace, &ws, &err) < 0 || workspace_restore(ws, rq->tar_path, &lim, &report, &err) < 0) {
                r = reply_corral_error(rq, err);
        } else {
                json_t *out = json_pack("{s:O*,s:O*,s:O*}", "entries", json_object_get(report, "entries"), "files",
                                        json_object_get(report, "files"), "bytes", json_object_get(report, "bytes"));
                r = reply_json(rq, MHD_HTTP_CREATED, out);
        }
        json_decref(report);
        corral_error_free(err);
        workspace_close(ws, false);
        return r;
}

static enum MHD_Result route_files(struct request *rq, const char *method, struct sandbox *sb, const char *rel)
{
        struct server *s = rq->s;
        struct workspace *ws = NULL;
        corral_error *err = NULL;
        enum MHD_Result ret;
        if (strcmp(method, "PUT") == 0 && rel[0] == '\0' && rq->tar_fd >= 0 && rq->upload_status == 0) {
                ret = extract_tar(rq, sb);
                sandbox_put(s, sb);
                return ret;
        }
        if (strcmp(method, "PUT") == 0) {
                if (rq->upload_status == MHD_HTTP_CONTENT_TOO_LARGE) {
                        count_rejected(s, "too_large");
                        ret = reply_error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "limit",
                                          "the file is larger than the %ju bytes this sandbox takes",
                                          (uintmax_t)sb->max_upload);
                } else if (rq->upload_status || !rq->uploading) {
                        ret = rq->upload_err ? reply_corral_error(rq, rq->upload_err)
                                             : reply_error(rq, rq->upload_status >= 500 ? 500 : 400,
                                                           rq->upload_status >= 500 ? "internal" : "usage",
                                                           "the upload could not be written");
                } else if (rq->uploading = false, workspace_upload_commit(&rq->up, &err) < 0) {
                        goto fail;
                } else {
                        ret = reply_json(rq, MHD_HTTP_CREATED, json_pack("{s:s,s:I}", "path", rel, "size",
                                                                         (json_int_t)rq->up.written));
                }
                sandbox_put(s, sb);
                return ret;
        }
        if (sandbox_live(s, sb, &err) < 0)
                goto fail;
        if (strcmp(method, "GET") == 0 && rel[0] == '\0' && is_tar(rq)) {
                ret = download_tar(rq, sb);
                sandbox_put(s, sb);
                return ret;
        }
        if (workspace_attach(sb->workspace, &ws, &err) < 0)
                goto fail;
        if (strcmp(method, "GET") == 0 && rel[0] == '\0') {
                const char *path = http_lib.MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, "path");
                const char *depth = http_lib.MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, "depth");
                json_t *list = NULL;
                if (workspace_list_files(ws, path ? path : "", depth ? (unsigned)strtoul(depth, NULL, 10) : 0, 0,
                                         &list, &err) < 0)
                        goto fail;
                ret = reply_json(rq, MHD_HTTP_OK, json_pack("{s:o}", "files", list));
        } else if (strcmp(method, "GET") == 0) {
                struct stat st;
                int fd = workspace_open_file(ws, rel, &st, &err);
                if (fd < 0)
                        goto fail;
                /* Read by libmicrohttpd: blocking reads from now on. */
                fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
                struct MHD_Response *r = http_lib.MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
                if (r == NULL) {
                        close(fd);
                        ret = MHD_NO;
                } else {
                        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
                        ret = reply(rq, MHD_HTTP_OK, r);
                }
        } else if (strcmp(method, "DELETE") == 0 && rel[0]) {
                if (workspace_remove_file(ws, rel, &err) < 0)
                        goto fail;
                ret = reply_json(rq, MHD_HTTP_OK, json_pack("{s:s}", "removed", rel));
        } else {
                ret = reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage",
                                  "files take GET (a file, or the listing without a path), PUT and DELETE");
        }
        workspace_close(ws, false);
        sandbox_put(s, sb);
        return ret;
fail:
        ret = reply_corral_error(rq, err);
        corral_error_free(err);
        workspace_close(ws, false);
        sandbox_put(s, sb);
        return ret;
}

int route_upload_begin(struct request *rq, const char *method, const char *path)
{
        char id[SESSION_ID_LEN + 1];
        const char *rest;
        if (strcmp(method, "PUT") != 0 || !split_path(path, id, &rest) ||
            (strncmp(rest, "/files/", 7) != 0 && strcmp(rest, "/files") != 0))
                return 0;
        unsigned status;
        rq->upload_sb = sandbox_get(rq->s, rq->who, id, &status);
        if (rq->upload_sb == NULL) {
                answer_status(rq, status, id);
                return -1;
        }
        if (sandbox_live(rq->s, rq->upload_sb, &rq->upload_err) < 0) {
                rq->upload_status = 409;
                return 1;
        }
        if (strcmp(rest, "/files") == 0) {
                /* A tar of many files: into a file of ours first, then
                 * extracted beneath the workspace with the archive checks. */
                if (!is_tar(rq)) {
                        rq->upload_status = 400;
                        corral_usage(&rq->upload_err, "PUT .../files takes a tar archive (Content-Type: "
                                                      "application/x-tar); one file goes to .../files/PATH");
                        return 1;
                }
                rq->tar_path = server_work_path(rq->s, "upload-XXXXXX");
                rq->tar_fd = rq->tar_path ? mkostemp(rq->tar_path, O_CLOEXEC) : -1;
                if (rq->tar_fd < 0) {
                        free(TAKE_PTR(rq->tar_path));
                        rq->upload_status = 500;
                        corral_fail(&rq->upload_err, errno, "cannot take the archive");
                }
                return 1;
        }
        struct workspace *ws = NULL;
        if (workspace_attach(rq->upload_sb->workspace, &ws, &rq->upload_err) < 0 ||
            workspace_upload_begin(ws, rest + 7, &rq->up, &rq->upload_err) < 0)
                rq->upload_status = 400;
        else
                rq->uploading = true;
        workspace_close(ws, false); /* the upload holds its own directory fd */
        return 1;
}

/* ---- the table ---- */

enum MHD_Result route_api(struct request *rq, const char *method, const char *path)
{
        struct server *s = rq->s;
        corral_error *err = NULL;
        if (strcmp(path, PREFIX) == 0) {
                if (strcmp(method, "GET") == 0)
                        return reply_json(rq, MHD_HTTP_OK, json_pack("{s:o}", "sandboxes", sandbox_list(s, rq->who)));
                if (strcmp(method, "POST") != 0)
                        return reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage", "%s takes GET and POST", PREFIX);
                json_t *body = parse_body(rq, &err);
                json_t *made = NULL;
                if (body == NULL || sandbox_create(s, rq->who, body, &made, &err) < 0) {
                        json_decref(body);
                        bool full = err && err->field && strcmp(err->field, "max_sandboxes") == 0;
                        if (err && err->kind == CORRAL_ERR_LIMIT)
                                count_rejected(s, full ? "capacity" : "sandboxes");
                        enum MHD_Result r = full ? reply_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "limit", "%s",
                                                               err->msg)
                                                 : reply_corral_error(rq, err);
                        corral_error_free(err);
                        return r;
                }
                json_decref(body);
                return reply_json(rq, MHD_HTTP_CREATED, made);
        }
        char id[SESSION_ID_LEN + 1];
        const char *rest;
        if (!split_path(path, id, &rest)) {
                if (strncmp(path, PREFIX "/", sizeof(PREFIX)) == 0)
                        return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found",
                                           "no sandbox there: an id is %d lowercase hex digits", SESSION_ID_LEN);
                return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no such route: %s (see docs/api.md)", path);
        }
        /* A PUT's upload holds the sandbox since its first call. */
        struct sandbox *sb = rq->upload_sb ? TAKE_PTR(rq->upload_sb) : NULL;
        long pid;
        const char *tail;
        unsigned status = 404;
        if (sb == NULL && (sb = sandbox_get(s, rq->who, id, &status)) == NULL)
                return answer_status(rq, status, id);
        if (rest[0] == '\0') {
                if (strcmp(method, "GET") == 0) {
                        json_t *d = sandbox_describe(s, sb);
                        sandbox_put(s, sb);
                        return reply_json(rq, MHD_HTTP_OK, d);
                }
                if (strcmp(method, "DELETE") == 0) {
                        int rc = sandbox_delete(s, sb, &err);
                        sandbox_put(s, sb);
                        if (rc < 0) {
                                enum MHD_Result r = reply_corral_error(rq, err);
                                corral_error_free(err);
                                return r;
                        }
                        return reply_json(rq, MHD_HTTP_OK, json_pack("{s:s}", "deleted", id));
                }
        } else if ((strcmp(rest, "/pause") == 0 || strcmp(rest, "/resume") == 0) && strcmp(method, "POST") == 0) {
                int rc = rest[1] == 'p' ? sandbox_pause(s, sb, &err) : sandbox_resume(s, sb, &err);
                json_t *d = rc == 0 ? sandbox_describe(s, sb) : NULL;
                sandbox_put(s, sb);
                if (rc < 0) {
                        bool full = err && err->field && strcmp(err->field, "max_sandboxes") == 0;
                        enum MHD_Result r = full ? reply_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "limit", "%s",
                                                               err->msg)
                                                 : reply_corral_error(rq, err);
                        corral_error_free(err);
                        return r;
                }
                return reply_json(rq, MHD_HTTP_OK, d);
        } else if ((strcmp(rest, "/exec") == 0 || strcmp(rest, "/interrupt") == 0 || strcmp(rest, "/ws") == 0 ||
                    strncmp(rest, "/commands/", 10) == 0) &&
                   sandbox_live(s, sb, &err) < 0) {
                sandbox_put(s, sb);
                enum MHD_Result r = reply_corral_error(rq, err);
                corral_error_free(err);
                return r;
        } else if (command_pid(rest, &pid, &tail) && (strcmp(tail, "") == 0 || strcmp(tail, "/signal") == 0)) {
                enum MHD_Result r;
                if (tail[0] == '\0' && strcmp(method, "GET") == 0)
                        r = command_status(rq, sb, pid);
                else if (tail[0] && strcmp(method, "POST") == 0)
                        r = command_signal(rq, sb, pid);
                else
                        r = reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage",
                                        "a command takes GET, and POST .../signal");
                sandbox_put(s, sb);
                return r;
        } else if (strcmp(rest, "/exec") == 0 && strcmp(method, "POST") == 0) {
                return route_exec(rq, sb);
        } else if (strcmp(rest, "/interrupt") == 0 && strcmp(method, "POST") == 0) {
                return route_interrupt(rq, sb);
        } else if (strcmp(rest, "/ws") == 0 && strcmp(method, "GET") == 0) {
                return websocket_open(rq, sb);
        } else if (strcmp(rest, "/files") == 0 || strncmp(rest, "/files/", 7) == 0) {
                return route_files(rq, method, sb, rest[6] ? rest + 7 : "");
        }
        sandbox_put(s, sb);
        return reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage", "%s %s is not a route (see docs/api.md)", method,
                           path);
}
