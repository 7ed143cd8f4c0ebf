/* server.c: `corral serve`'s HTTP side (server.h, docs/api.md): the
 * listening socket, libmicrohttpd, the gate every request passes (Host,
 * Origin, token, size) and the answers' common shape.
 *
 * Why libmicrohttpd (with wslay for WebSocket framing): the engine's calls
 * block (a step runs until it ends), and libmicrohttpd's thread per
 * connection lets a step block its connection's thread and a streamed
 * response read from a queue the step fills, with keep-alive, chunked
 * encoding, connection and header-size limits and timeouts built in; it is
 * GNU's, fuzzed in OSS-Fuzz, and in Debian.  libwebsockets was the other
 * candidate: its single event loop would have needed a pool of workers and
 * cross-thread wake-ups around every engine call.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../session/warm.h"
#include "e2b.h"
#include "server-internal.h"

void server_config_init(struct server_config *cfg)
{
        memset(cfg, 0, sizeof(*cfg));
        cfg->listen = "127.0.0.1:8745";
        cfg->max_sandboxes = 64;
        cfg->max_sandboxes_per_token = 16;
        cfg->max_execs_per_token = 8;
        cfg->max_connections = 256;
        cfg->max_body = 1 << 20;
        cfg->max_upload = 256u << 20;
        cfg->request_timeout_s = 60;
        cfg->max_lifetime_s = 86400;
        cfg->max_rate = 1000;
        cfg->max_mcp_sessions = 64;
        cfg->max_mcp_sessions_per_token = 16;
        cfg->mcp_idle_timeout_s = 1800;
        cfg->max_runs = 4;
        cfg->max_runs_per_token = 4;
}

/* ---- answers ---- */

void count_rejected(struct server *s, const char *reason)
{
        metrics_add(s->metrics, "corral_rejected_requests_total", reason, 1);
}

enum MHD_Result reply(struct request *rq, unsigned status, struct MHD_Response *r)
{
        if (r == NULL)
                return MHD_NO;
        /* Nothing a browser should sniff, cache or frame. */
        http_lib.MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
        http_lib.MHD_add_response_header(r, "Cache-Control", "no-store");
        http_lib.MHD_add_response_header(r, "X-Frame-Options", "DENY");
        if (status == MHD_HTTP_TOO_MANY_REQUESTS || status == MHD_HTTP_SERVICE_UNAVAILABLE)
                http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        char code[8];
        snprintf(code, sizeof(code), "%u", status);
        metrics_add(rq->s->metrics, "corral_http_responses_total", code, 1);
        enum MHD_Result ret = http_lib.MHD_queue_response(rq->conn, status, r);
        http_lib.MHD_destroy_response(r);
        return ret;
}

struct MHD_Response *json_text_response(char *text)
{
        size_t len = strlen(text);
        char *with_nl = realloc(text, len + 2);
        if (with_nl == NULL) {
                free(text);
                return NULL;
        }
        with_nl[len] = '\n';
        with_nl[len + 1] = '\0';
        struct MHD_Response *r = http_lib.MHD_create_response_from_buffer(len + 1, with_nl, MHD_RESPMEM_MUST_FREE);
        if (r == NULL) {
                free(with_nl);
                return NULL;
        }
        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        return r;
}

enum MHD_Result reply_json(struct request *rq, unsigned status, json_t *body)
{
        char *text = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
        json_decref(body);
        struct MHD_Response *r = text ? json_text_response(text) : NULL;
        return r ? reply(rq, status, r) : MHD_NO;
}

const char *connect_code(unsigned status)
{
        switch (status) {
        case 400: return "invalid_argument";
        case 401: return "unauthenticated";
        case 403: return "permission_denied";
        case 404: return "not_found";
        case 409: return "already_exists";
        case 413:
        case 429: return "resource_exhausted";
        case 499: return "canceled";
        case 501: return "unimplemented";
        case 502:
        case 503: return "unavailable";
        case 504: return "deadline_exceeded";
        default: return status >= 500 ? "internal" : "unknown";
        }
}

/* An error in the shape the caller's protocol reads: ours, E2B's REST
 * ({"code": 404, "message"}) or Connect's ({"code": "not_found", ...}). */
static enum MHD_Result reply_shaped(struct request *rq, unsigned status, const char *message)
{
        if (rq->shape == REPLY_E2B)
                return reply_json(rq, status, json_pack("{s:i,s:s}", "code", (int)status, "message", message));
        return reply_json(rq, status, json_pack("{s:s,s:s}", "code", connect_code(status), "message", message));
}

enum MHD_Result reply_error(struct request *rq, unsigned status, const char *kind, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        cleanup_free char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (rq->shape != REPLY_CORRAL)
                return reply_shaped(rq, status, msg ? msg : "error");
        return reply_json(rq, status, json_pack("{s:{s:s,s:s}}", "error", "kind", kind, "message",
                                                msg ? msg : "error"));
}

enum MHD_Result reply_corral_error(struct request *rq, const corral_error *err)
{
        int kind = err ? err->kind : CORRAL_ERR_INTERNAL;
        if (rq->shape != REPLY_CORRAL)
                return reply_shaped(rq, (unsigned)corral_error_kind_http_status(kind), err ? err->msg : "internal error");
        json_t *e = json_pack("{s:s,s:s}", "kind", corral_error_kind_to_string(kind), "message",
                              err ? err->msg : "internal error");
        if (e && err && err->field)
                json_object_set_new(e, "field", json_string(err->field));
        return reply_json(rq, (unsigned)corral_error_kind_http_status(kind), json_pack("{s:o}", "error", e));
}

/* ---- the gate ---- */

/* The host name of "name[:port]" or "[v6]:port", lowercased, in buf. */
static bool host_name(const char *hostport, char *buf, size_t size)
{
        const char *end;
        if (hostport[0] == '[') {
                end = strchr(hostport, ']');
                if (end == NULL)
                        return false;
                end++;
        } else {
                end = strchr(hostport, ':');
                if (end == NULL)
                        end = hostport + strlen(hostport);
        }
        size_t n = (size_t)(end - hostport);
        if (n == 0 || n >= size)
                return false;
        for (size_t i = 0; i < n; i++)
                buf[i] = (char)tolower((unsigned char)hostport[i]);
        buf[n] = '\0';
        return *end == '\0' || (*end == ':' && strspn(end + 1, "0123456789") == strlen(end + 1));
}

static bool host_allowed(struct server *s, const char *hostport)
{
        char name[256];
        if (hostport == NULL || !host_name(hostport, name, sizeof(name)))
                return false;
        for (char **h = s->hosts; *h; h++)
                if (strcmp(*h, "*") == 0 || strcmp(*h, name) == 0)
                        return true;
        return false;
}

/* DNS rebinding and cross-site requests: the Host must be one of ours, and
 * a browser's Origin (sent with every cross-site or state-changing
 * request) must be this very server. */
static const char *gate_origin(struct request *rq)
{
        struct server *s = rq->s;
        const char *host = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
        if (!s->unix_socket && !host_allowed(s, host))
                return "host";
        const char *origin = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Origin");
        if (origin == NULL)
                return NULL;
        const char *authority = strncmp(origin, "http://", 7) == 0    ? origin + 7
                                : strncmp(origin, "https://", 8) == 0 ? origin + 8
                                                                      : NULL;
        if (authority == NULL || host == NULL || strcasecmp(authority, host) != 0)
                return "origin";
        return NULL;
}

/* The token of "Authorization: Bearer T", else of the login cookie. */
static const char *presented_token(struct request *rq, size_t *ret_len)
{
        const char *a = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        if (a && strncasecmp(a, "Bearer ", 7) == 0) {
                a += 7;
                a += strspn(a, " ");
                *ret_len = strcspn(a, " \t");
                return a;
        }
        const char *c = http_lib.MHD_lookup_connection_value(rq->conn, MHD_COOKIE_KIND, "corral_token");
        if (c)
                *ret_len = strlen(c);
        return c;
}

/* GET /?token=T: the browser's login (EventSource and browser WebSockets
 * send no Authorization header).  The cookie is HttpOnly and
 * SameSite=Strict, and the token leaves the address bar at once. */
static enum MHD_Result login(struct request *rq, const char *token)
{
        int who = auth_check(rq->s->auth, token, strlen(token));
        if (who < 0) {
                count_rejected(rq->s, "token");
                return reply_error(rq, MHD_HTTP_UNAUTHORIZED, "unauthorized", "the token is not valid");
        }
        struct MHD_Response *r = http_lib.MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        cleanup_free char *cookie = NULL;
        if (r == NULL || asprintf(&cookie, "corral_token=%s; Path=/; HttpOnly; SameSite=Strict", token) < 0) {
                if (r)
                        http_lib.MHD_destroy_response(r);
                return MHD_NO;
        }
        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, cookie);
        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, "/");
        return reply(rq, MHD_HTTP_SEE_OTHER, r);
}

static enum MHD_Result health(struct request *rq, const char *path)
{
        if (strcmp(path, "/readyz") == 0 && atomic_load(&rq->s->draining))
                return reply_json(rq, MHD_HTTP_SERVICE_UNAVAILABLE, json_pack("{s:s}", "status", "draining"));
        return reply_json(rq, MHD_HTTP_OK, json_pack("{s:s}", "status", strcmp(path, "/readyz") == 0 ? "ready" : "ok"));
}

static enum MHD_Result index_page(struct request *rq)
{
        return reply_json(rq, MHD_HTTP_OK, json_pack("{s:s,s:s,s:s,s:s}", "name", "corral", "version",
                                                     CORRAL_VERSION_STRING, "api", "/v1", "docs", "docs/api.md"));
}

static enum MHD_Result metrics_page(struct request *rq)
{
        struct server *s = rq->s;
        pthread_mutex_lock(&s->lock);
        metrics_set(s->metrics, "corral_sandboxes", NULL, s->n_sandboxes);
        metrics_set(s->metrics, "corral_steps_running", NULL, s->steps);
        pthread_mutex_unlock(&s->lock);
        metrics_set(s->metrics, "corral_mcp_sessions", NULL, mcp_http_count(s));
        runs_metrics(s);
        char *text = metrics_render(s->metrics);
        struct MHD_Response *r =
                text ? http_lib.MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE) : NULL;
        if (r == NULL) {
                free(text);
                return MHD_NO;
        }
        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4");
        return reply(rq, MHD_HTTP_OK, r);
}

/* A token bucket per principal: max_rate requests a second, bursts of
 * twice that. */
static bool take_token(struct server *s, int who)
{
        double rate = s->cfg.max_rate, now = monotonic_ms();
        pthread_mutex_lock(&s->lock);
        double level = s->bucket_ms[who] == 0 ? 2 * rate
                                              : s->bucket[who] + (now - s->bucket_ms[who]) / 1000 * rate;
        if (level > 2 * rate)
                level = 2 * rate;
        bool ok = level >= 1;
        s->bucket[who] = ok ? level - 1 : level;
        s->bucket_ms[who] = now;
        pthread_mutex_unlock(&s->lock);
        return ok;
}

/* The first call of a request: everything that can be refused from the
 * headers alone is, before a byte of the body is read.  NULL: passed. */
static enum MHD_Result gate(struct request *rq, const char *method, const char *path, bool *ret_answered)
{
        struct server *s = rq->s;
        *ret_answered = true;
        const char *why = gate_origin(rq);
        if (why) {
                count_rejected(s, why);
                return reply_error(rq, MHD_HTTP_FORBIDDEN, "forbidden",
                                   strcmp(why, "host") == 0
                                           ? "the Host header names no address this server answers to"
                                           : "requests from another site's pages are refused (the Origin is not "
                                             "this server)");
        }
        if (strcmp(path, "/v1/openapi.json") == 0 && strcmp(method, "GET") == 0) {
                struct MHD_Response *r = http_lib.MHD_create_response_from_buffer(
                        strlen(server_openapi), (void *)server_openapi, MHD_RESPMEM_PERSISTENT);
                if (r == NULL)
                        return MHD_NO;
                http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
                return reply(rq, MHD_HTTP_OK, r);
        }
        if (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0)
                return strcmp(method, "GET") == 0 ? health(rq, path)
                                                  : reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage",
                                                                "only GET");
        const char *login_token =
                strcmp(path, "/") == 0 ? http_lib.MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, "token")
                                       : NULL;
        if (login_token && strcmp(method, "GET") == 0)
                return login(rq, login_token);
        /* The web view's files need no token: they hold nothing of anyone's. */
        if (web_claims(rq, method, path))
                return web_route(rq, path);
        size_t len = 0;
        const char *token = NULL;
        if (e2b_claims(rq, path)) {
                const char *wrong = NULL;
                rq->who = e2b_principal(rq, path, &wrong);
                if (rq->who == -2)
                        /* What E2B answers for a sandbox that is gone (its SDK
                         * says the sandbox timed out or was killed). */
                        return reply_error(rq, MHD_HTTP_BAD_GATEWAY, "not_found",
                                           "sandbox %s not found: it was killed or timed out",
                                           http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND,
                                                                                "E2b-Sandbox-Id"));
                if (rq->who < 0) {
                        count_rejected(s, "token");
                        return reply_error(rq, MHD_HTTP_UNAUTHORIZED, "unauthorized", "%s", wrong);
                }
        } else {
                token = presented_token(rq, &len);
                rq->who = token ? auth_check(s->auth, token, len) : -1;
        }
        if (rq->who < 0) {
                count_rejected(s, token ? "token" : "no_token");
                json_t *e = json_pack("{s:{s:s,s:s}}", "error", "kind", "unauthorized", "message",
                                      token ? "the token is not valid"
                                            : "a token is needed: send 'Authorization: Bearer TOKEN' (corral serve "
                                              "printed where its token is)");
                char *text = e ? json_dumps(e, JSON_COMPACT) : NULL;
                json_decref(e);
                struct MHD_Response *r =
                        text ? http_lib.MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE)
                             : NULL;
                if (r == NULL) {
                        free(text);
                        return MHD_NO;
                }
                http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
                http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"corral\"");
                return reply(rq, MHD_HTTP_UNAUTHORIZED, r);
        }
        if (!take_token(s, rq->who)) {
                count_rejected(s, "rate");
                return reply_error(rq, MHD_HTTP_TOO_MANY_REQUESTS, "limit",
                                   "this token sends more than %u requests a second: slow down",
                                   s->cfg.max_rate);
        }
        if (atomic_load(&s->draining)) {
                count_rejected(s, "draining");
                return reply_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable", "the server is shutting down");
        }
        const char *cl =
                http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        int up = rq->shape == REPLY_CORRAL ? route_upload_begin(rq, method, path) : 0;
        if (up < 0)
                return MHD_YES; /* answered */
        if (rq->shape != REPLY_CORRAL)
                e2b_upload_begin(rq, method, path);
        uint64_t cap = up ? rq->upload_sb->max_upload : rq->e2b_up ? rq->e2b_sb->max_upload : s->cfg.max_body;
        uint64_t length = cl ? strtoull(cl, NULL, 10) : 0; /* libmicrohttpd refused a malformed one */
        if (length > cap) {
                count_rejected(s, "too_large");
                return reply_error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "limit",
                                   "the body is %ju bytes, more than the %ju this request may carry",
                                   (uintmax_t)length, (uintmax_t)cap);
        }
        *ret_answered = false;
        return MHD_YES;
}

static void request_free(struct request *rq)
{
        if (rq == NULL)
                return;
        if (rq->uploading)
                workspace_upload_abort(&rq->up);
        if (rq->tar_fd >= 0)
                close(rq->tar_fd);
        if (rq->tar_path)
                unlink(rq->tar_path);
        free(rq->tar_path);
        if (rq->upload_sb)
                sandbox_put(rq->s, rq->upload_sb);
        e2b_upload_free(rq);
        if (rq->e2b_sb)
                sandbox_put(rq->s, rq->e2b_sb);
        corral_error_free(rq->upload_err);
        free(rq->body);
        free(rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
        (void)cls;
        (void)c;
        (void)why;
        request_free(*con_cls);
        *con_cls = NULL;
}

/* A chunk of the body: into the upload, or the JSON buffer up to its cap. */
static void take_body(struct request *rq, const char *data, size_t n)
{
        if (rq->e2b_up) {
                e2b_upload_take(rq, data, n);
                return;
        }
        if (rq->tar_fd >= 0) {
                if (rq->upload_status == 0 && rq->tar_len + n > rq->upload_sb->max_upload)
                        rq->upload_status = MHD_HTTP_CONTENT_TOO_LARGE;
                else if (rq->upload_status == 0 && write_all(rq->tar_fd, data, n) < 0)
                        rq->upload_status = 500;
                rq->tar_len += n;
                return;
        }
        if (rq->uploading) {
                if (rq->upload_status == 0 && rq->up.written + n > rq->upload_sb->max_upload)
                        rq->upload_status = MHD_HTTP_CONTENT_TOO_LARGE;
                if (rq->upload_status == 0 && workspace_upload_write(&rq->up, data, n, &rq->upload_err) < 0) {
                        rq->upload_status = 400;
                        rq->uploading = false; /* aborted by the failed write */
                }
                return;
        }
        if (rq->too_large || rq->len + n > rq->s->cfg.max_body) {
                rq->too_large = true;
                return;
        }
        if (rq->len + n + 1 > rq->cap) {
                size_t cap = rq->cap ? rq->cap : 4096;
                while (cap < rq->len + n + 1)
                        cap *= 2;
                char *b = realloc(rq->body, cap);
                if (b == NULL) {
                        rq->too_large = true;
                        return;
                }
                rq->body = b;
                rq->cap = cap;
        }
        memcpy(rq->body + rq->len, data, n);
        rq->len += n;
        rq->body[rq->len] = '\0';
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *data_size, void **con_cls)
{
        (void)version;
        struct request *rq = *con_cls;
        if (rq == NULL) {
                rq = calloc(1, sizeof(*rq));
                if (rq == NULL)
                        return MHD_NO;
                rq->s = cls;
                rq->conn = c;
                rq->who = -1;
                rq->tar_fd = -1;
                rq->up.fd = rq->up.dirfd = -1;
                rq->started_ms = monotonic_ms();
                *con_cls = rq;
                bool answered;
                enum MHD_Result r = gate(rq, method, url, &answered);
                if (answered)
                        rq->who = -2; /* the answer is queued: the rest of the body is dropped */
                return r;
        }
        if (rq->who == -2) {
                *data_size = 0;
                return MHD_YES;
        }
        if (*data_size) {
                bool over = rq->too_large || rq->upload_status == MHD_HTTP_CONTENT_TOO_LARGE;
                if (over)
                        rq->dropped += *data_size;
                take_body(rq, data, *data_size);
                *data_size = 0;
                /* Past the cap (a body sent without a Content-Length, which
                 * would have been refused with 413 before a byte was read):
                 * the rest is read and dropped, up to BODY_DRAIN_MAX more, so
                 * that the client gets its 413 at the body's end
                 * (libmicrohttpd sends no answer queued in the middle of a
                 * body); past that the connection is closed.  Either way the
                 * partial upload is removed. */
                if (rq->dropped <= BODY_DRAIN_MAX)
                        return MHD_YES;
                count_rejected(rq->s, "too_large");
                return MHD_NO;
        }
        if (rq->too_large) {
                count_rejected(rq->s, "too_large");
                return reply_error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "limit",
                                   "the body is larger than the %ju bytes a request may carry",
                                   (uintmax_t)rq->s->cfg.max_body);
        }
        if (rq->shape != REPLY_CORRAL)
                return route_e2b(rq, method, url);
        if (strcmp(url, "/") == 0)
                return index_page(rq);
        if (strcmp(url, "/metrics") == 0)
                return metrics_page(rq);
        if (strcmp(url, "/mcp") == 0)
                return mcp_http_route(rq, method);
        if (strcmp(url, "/v1/runs") == 0 || strncmp(url, "/v1/runs/", 9) == 0)
                return runs_route(rq, method, url);
        return route_api(rq, method, url);
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
        (void)cls;
        (void)fmt;
        (void)ap; /* libmicrohttpd's own notes (a client that reset) are not the operator's business */
}

/* ---- listening ---- */

static int listen_tcp(struct server *s, const char *spec, unsigned *ret_port, char **ret_host, corral_error **ret_err)
{
        cleanup_free char *copy = strdup(spec);
        if (copy == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot listen");
        char *host = copy, *port;
        if (host[0] == '[') {
                char *end = strchr(host, ']');
                if (end == NULL || end[1] != ':')
                        return corral_usage_field(ret_err, "listen", "the listen address '%s' is not [ADDR]:PORT",
                                                  spec);
                *end = '\0';
                host++;
                port = end + 2;
        } else {
                port = strrchr(host, ':');
                if (port == NULL)
                        return corral_usage_field(ret_err, "listen", "the listen address '%s' is not ADDR:PORT", spec);
                *port++ = '\0';
        }
        char *end;
        unsigned long p = strtoul(port, &end, 10);
        if (*port == '\0' || *end || p > 65535)
                return corral_usage_field(ret_err, "listen", "the listen address '%s' has no valid port", spec);
        struct sockaddr_storage ss = { 0 };
        socklen_t sl;
        struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        bool loopback;
        if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons((uint16_t)p);
                sl = sizeof(*in4);
                loopback = (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
        } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons((uint16_t)p);
                sl = sizeof(*in6);
                loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
        } else {
                return corral_usage_field(ret_err, "listen", "the listen address '%s' is not a numeric IPv4 or IPv6 "
                                                             "address", spec);
        }
        /* A code-execution service open to a network needs tokens of
         * the operator's choosing, not one a log may show. */
        if (!loopback && s->cfg.tokens_file == NULL)
                return corral_usage_field(ret_err, "tokens_file",
                                          "listening on '%s', beyond this machine, needs a tokens file", spec);
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 128) < 0) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                return corral_make_error(ret_err, e == EADDRINUSE || e == EADDRNOTAVAIL ? CORRAL_ERR_USAGE
                                                                                         : CORRAL_ERR_INTERNAL,
                                         e, "cannot listen on '%s'", spec);
        }
        sl = sizeof(ss);
        getsockname(fd, (struct sockaddr *)&ss, &sl);
        *ret_port = ntohs(ss.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
        *ret_host = ss.ss_family == AF_INET6 ? NULL : strdup(host);
        if (ss.ss_family == AF_INET6 && asprintf(ret_host, "[%s]", host) < 0)
                *ret_host = NULL;
        s->listen_fd = fd;
        return 0;
}

/* A unix socket in a directory of its own, 0700: only our uid reaches it. */
static int listen_unix(struct server *s, const char *path, corral_error **ret_err)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return corral_usage_field(ret_err, "socket_path", "the socket path '%s' is too long", path);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        cleanup_free char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (dir == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot listen");
        if (slash)
                *slash = '\0';
        const char *d = slash ? (dir[0] ? dir : "/") : ".";
        struct stat st;
        if (mkdir(d, 0700) < 0 && errno != EEXIST)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot make the socket's directory '%s'",
                                         d);
        if (lstat(d, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
                return corral_usage_field(ret_err, "socket_path",
                                          "the socket's directory '%s' must be a directory of yours that only you "
                                          "may enter (mode 0700)",
                                          d);
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return corral_usage_field(ret_err, "socket_path", "'%s' exists and is not a socket", path);
                unlink(path); /* a server's that was killed */
        }
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
            listen(fd, 128) < 0) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                return corral_make_error(ret_err, CORRAL_ERR_INTERNAL, e, "cannot listen on '%s'", path);
        }
        s->listen_fd = fd;
        s->unix_socket = true;
        s->socket_path = strdup(path);
        return 0;
}

static char *default_data_dir(void)
{
        const char *state = getenv("XDG_STATE_HOME");
        const char *home = getenv("HOME");
        char *out = NULL;
        if (state && state[0] == '/')
                return asprintf(&out, "%s/corral/serve", state) < 0 ? NULL : out;
        return asprintf(&out, "%s/.local/state/corral/serve", home && home[0] == '/' ? home : "/tmp") < 0 ? NULL
                                                                                                           : out;
}

static int add_host(struct server *s, size_t *n, const char *name)
{
        char **h = realloc(s->hosts, (*n + 2) * sizeof(*h));
        if (h == NULL)
                return -1;
        s->hosts = h;
        h[*n] = strdup(name);
        if (h[*n] == NULL)
                return -1;
        for (char *c = h[*n]; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        h[++*n] = NULL;
        return 0;
}

int server_start(const struct server_config *cfg, struct server **ret, corral_error **ret_err)
{
        *ret = NULL;
        if (http_api_load(ret_err) < 0)
                return -1;
        struct server *s = calloc(1, sizeof(*s));
        if (s == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the server");
        s->cfg = *cfg;
        s->listen_fd = -1;
        s->work_lock = -1;
        s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->changed, NULL);
        corral_jail_config_init(&s->limits);
        cleanup_free char *data = cfg->data_dir ? strdup(cfg->data_dir) : default_data_dir();
        cleanup_free char *listen_host = NULL;
        unsigned port = 0;
        size_t n_hosts = 0;
        if ((cfg->limits && corral_jail_config_copy(&s->limits, cfg->limits, ret_err) < 0) || data == NULL ||
            s->stop_fd < 0)
                goto fail_nomem;
        if (mkdir_p(data, 0700) < 0) {
                corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot make the data directory '%s'", data);
                corral_error_set_field(ret_err, "data_dir");
                goto fail;
        }
        /* A directory of our own in it for paused sandboxes and tar
         * transfers; one a killed server left is removed. */
        workspace_sweep(data);
        if (workspace_make_temporary(data, &s->work_dir, &s->work_lock, ret_err) < 0)
                goto fail;
        s->data_dir = realpath(data, NULL);
        if (s->data_dir) {
                json_t *dir = json_string(s->data_dir);
                char *quoted = dir ? json_dumps(dir, JSON_ENCODE_ANY) : NULL;
                json_decref(dir);
                if (quoted && strlen(quoted) > 2) {
                        quoted[strlen(quoted) - 1] = '\0';
                        s->data_dir_json = strdup(quoted + 1);
                }
                free(quoted);
        }
        if (cfg->tokens_file) {
                if (auth_load(cfg->tokens_file, &s->auth, ret_err) < 0) {
                        corral_error_set_field(ret_err, "tokens_file");
                        goto fail;
                }
        } else {
                if (asprintf(&s->token_file, "%s/token", data) < 0)
                        goto fail_nomem;
                if (auth_generate(s->token_file, &s->auth, &s->token, ret_err) < 0)
                        goto fail;
        }
        if (cfg->socket_path ? listen_unix(s, cfg->socket_path, ret_err) < 0
                             : listen_tcp(s, cfg->listen, &port, &listen_host, ret_err) < 0)
                goto fail;
        if (add_host(s, &n_hosts, "localhost") < 0 || add_host(s, &n_hosts, "127.0.0.1") < 0 ||
            add_host(s, &n_hosts, "[::1]") < 0 || (listen_host && add_host(s, &n_hosts, listen_host) < 0))
                goto fail_nomem;
        for (const char *const *h = cfg->allowed_hosts; h && *h; h++)
                if (add_host(s, &n_hosts, *h) < 0)
                        goto fail_nomem;
        if (s->unix_socket) {
                if (asprintf(&s->url, "unix:%s", s->socket_path) < 0)
                        s->url = NULL;
        } else if (asprintf(&s->url, "http://%s:%u/%s%s", listen_host && strcmp(listen_host, "0.0.0.0") != 0
                                                              ? listen_host
                                                              : "127.0.0.1",
                          port, s->token ? "?token=" : "", s->token ? s->token : "") < 0)
                s->url = NULL;
        if (s->url == NULL || (s->metrics = metrics_new()) == NULL)
                goto fail_nomem;
        metrics_define(s->metrics, "corral_sandboxes", METRIC_GAUGE, "Sandboxes alive.", NULL, NULL, 0);
        metrics_define(s->metrics, "corral_steps_running", METRIC_GAUGE, "Steps running now.", NULL, NULL, 0);
        metrics_define(s->metrics, "corral_mcp_sessions", METRIC_GAUGE, "MCP sessions open at /mcp.", NULL, NULL, 0);
        metrics_define(s->metrics, "corral_executions_total", METRIC_COUNTER, "Steps run, by their status.",
                       "status", NULL, 0);
        metrics_define(s->metrics, "corral_execution_seconds", METRIC_HISTOGRAM,
                       "Wall time of a step as the server saw it.", "language", NULL, 0);
        metrics_define(s->metrics, "corral_sandbox_start_seconds", METRIC_HISTOGRAM,
                       "Time to create a sandbox until its interpreter was ready.", "kind", NULL, 0);
        metrics_define(s->metrics, "corral_http_responses_total", METRIC_COUNTER, "Answers, by HTTP status.", "code",
                       NULL, 0);
        metrics_define(s->metrics, "corral_rejected_requests_total", METRIC_COUNTER,
                       "Requests refused before reaching a sandbox, by reason.", "reason", NULL, 0);
        /* What a server killed before us left: its temporary workspaces. */
        workspace_sweep(NULL);
        metrics_define(s->metrics, "corral_runs", METRIC_GAUGE, "Agent runs known, by status.", "status", NULL, 0);
        metrics_define(s->metrics, "corral_runs_started_total", METRIC_COUNTER, "Agent runs started.", NULL, NULL,
                       0);
        metrics_define(s->metrics, "corral_runs_total", METRIC_COUNTER, "Agent runs ended, by status.", "status",
                       NULL, 0);
        metrics_define(s->metrics, "corral_runs_removed_total", METRIC_COUNTER,
                       "Finished agent runs removed with their records by the retention.", NULL, NULL, 0);
        metrics_define(s->metrics, "corral_model_request_seconds", METRIC_HISTOGRAM,
                       "Time a run waited for the model's answer, per request.", NULL, NULL, 0);
        metrics_define(s->metrics, "corral_model_tokens_total", METRIC_COUNTER, "Tokens of runs' model requests.",
                       "kind", NULL, 0);
        if (mcp_http_init(s, ret_err) < 0 || sandboxes_init(s, ret_err) < 0 || runs_init(s, data, ret_err) < 0)
                goto fail;
        /* The zygote now, so that the first warm sandbox is as quick as the
         * rest (its imports take a second or two). */
        if (warm_supported(&s->limits, NULL) == 0)
                session_host_prewarm(s->host);
        unsigned timeout = cfg->request_timeout_s > 0 ? (unsigned)cfg->request_timeout_s : 60;
        s->mhd = http_lib.MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                                   MHD_USE_ITC | MHD_USE_POLL | MHD_ALLOW_UPGRADE,
                                           0, NULL, NULL, answer, s, MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
                                           MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections,
                                           MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                           (size_t)64 << 10, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                           MHD_OPTION_EXTERNAL_LOGGER, log_mhd, s, MHD_OPTION_END);
        if (s->mhd == NULL) {
                corral_fail(ret_err, 0, "cannot start the HTTP server (libmicrohttpd)");
                goto fail;
        }
        *ret = s;
        return 0;
fail_nomem:
        corral_fail(ret_err, ENOMEM, "cannot start the server");
fail:
        server_free(s);
        return -1;
}

char *server_work_path(struct server *s, const char *name)
{
        char *out = NULL;
        return asprintf(&out, "%s/%s", s->work_dir, name) < 0 ? NULL : out;
}

const char *server_url(const struct server *s)
{
        return s->url;
}

const char *server_token_file(const struct server *s)
{
        return s->token_file;
}

/* Wait up to wait_s until no step runs (and with streams, no streamed
 * answer is still being sent). */
static void wait_quiet(struct server *s, double wait_s, bool streams)
{
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)wait_s;
        until.tv_nsec += (long)((wait_s - (double)(time_t)wait_s) * 1e9);
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&s->lock);
        while ((s->steps > 0 || (streams && s->streams > 0)) &&
               pthread_cond_timedwait(&s->changed, &s->lock, &until) == 0)
                ;
        pthread_mutex_unlock(&s->lock);
}

void server_shutdown(struct server *s, double grace_s, double run_grace_s)
{
        if (s == NULL || atomic_exchange(&s->draining, true))
                return;
        /* No new connection from now on; those open are answered 503. */
        if (s->mhd) {
                int fd = http_lib.MHD_quiesce_daemon(s->mhd);
                if (fd >= 0 && fd == s->listen_fd) {
                        close(fd);
                        s->listen_fd = -1;
                }
        }
        /* Running steps get the grace period to end on their own; then
         * they are cancelled, and their streams get a moment to send the
         * end before the connections close. */
        double t0 = monotonic_ms();
        wait_quiet(s, grace_s, false);
        if (s->host)
                session_host_cancel_all(s->host);
        /* Agent runs have what is left of theirs (followed meanwhile to
         * their ends); then they are cancelled (recorded as such). */
        runs_wait(s, run_grace_s - (monotonic_ms() - t0) / 1000);
        atomic_store(&s->stopping, true);
        /* MCP's sessions end here: their calls interrupted, their
         * streams ended. */
        mcp_http_end_all(s);
        runs_end(s);
        uint64_t one = 1;
        if (write(s->stop_fd, &one, sizeof(one)) < 0) {
                /* an eventfd written once does not fail */
        }
        wait_quiet(s, 10, true);
        if (s->mhd) {
                http_lib.MHD_stop_daemon(s->mhd); /* joins every connection's thread */
                s->mhd = NULL;
                s->listen_fd = -1; /* closed by it, when not quiesced */
        }
        sandboxes_end(s);
}

void server_free(struct server *s)
{
        if (s == NULL)
                return;
        server_shutdown(s, 0, 0);
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        if (s->socket_path)
                unlink(s->socket_path);
        free(s->socket_path);
        for (char **h = s->hosts; h && *h; h++)
                free(*h);
        free(s->hosts);
        mcp_http_free(s);
        runs_free(s);
        auth_free(s->auth);
        metrics_free(s->metrics);
        if (s->work_dir) {
                /* What is left: paused sandboxes' archives (they live as
                 * long as the server), a transfer cut short. */
                struct workspace *ws = NULL;
                if (workspace_attach(s->work_dir, &ws, NULL) == 0)
                        workspace_close(ws, true);
                free(s->work_dir);
        }
        if (s->work_lock >= 0)
                close(s->work_lock);
        corral_jail_config_release(&s->limits);
        free(s->data_dir);
        free(s->data_dir_json);
        free(s->token_file);
        free(s->url);
        if (s->stop_fd >= 0)
                close(s->stop_fd);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->changed);
        free(s);
}
