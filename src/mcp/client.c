/* client.c: an MCP client of one server, over its stdio or Streamable HTTP
 * (client.h, docs/mcp.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../model/curl-dl.h"
#include "../model/sse.h"
#include "client.h"

#define PROTOCOL "2025-11-25"
#define MESSAGE_MAX (16u << 20) /* a line or a body from the server; more ends the connection */
#define LOG_TAIL 1024
#define MAX_TOOLS 256           /* a server listing more is cut (the model's tool list is finite) */
#define MAX_PAGES 16

static const char *const known_protocols[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };

struct mcp_client {
        char *name;
        bool http;
        pthread_mutex_t call_lock; /* one request at a time */
        json_int_t next_id;
        json_t *tools;
        char *protocol;            /* what initialize agreed */

        /* stdio */
        int to_fd, from_fd, log_fd;
        int stop_fd;               /* eventfd: the reader ends */
        int answer_fd;             /* eventfd: the reader has the answer, or the server is gone */
        pthread_t reader;
        bool reader_started;
        pthread_mutex_t lock;      /* the fields below and the writes to to_fd */
        json_int_t waiting_id;
        json_t *answer;
        bool gone;
        char tail[LOG_TAIL];
        size_t tail_len;

        /* http */
        char *url;
        struct curl_slist *headers;
        char *session_id;
        bool session_ended;        /* the server answered 404 to it */
};

/* ---- stdio ---- */

static void keep_tail(struct mcp_client *c, const char *buf, size_t n)
{
        if (n >= LOG_TAIL) {
                memcpy(c->tail, buf + n - LOG_TAIL, LOG_TAIL);
                c->tail_len = LOG_TAIL;
                return;
        }
        if (c->tail_len + n > LOG_TAIL) {
                size_t drop = c->tail_len + n - LOG_TAIL;
                memmove(c->tail, c->tail + drop, c->tail_len - drop);
                c->tail_len -= drop;
        }
        memcpy(c->tail + c->tail_len, buf, n);
        c->tail_len += n;
}

static void wake(int fd)
{
        uint64_t one = 1;
        if (write(fd, &one, sizeof(one)) < 0) {
                /* an eventfd's counter does not overflow from this */
        }
}

static int write_line(struct mcp_client *c, json_t *msg)
{
        char *text = json_dumps(msg, JSON_COMPACT);
        json_decref(msg);
        if (text == NULL)
                return -1;
        size_t n = strlen(text);
        text[n] = '\n'; /* over the NUL: a message a line */
        pthread_mutex_lock(&c->lock);
        int r = c->gone ? -1 : write_all(c->to_fd, text, n + 1);
        pthread_mutex_unlock(&c->lock);
        free(text);
        return r;
}

/* A message from the server: the answer awaited, a request of its own
 * (answered), or a notification (nothing to do). */
static void on_line(struct mcp_client *c, const char *line, size_t len)
{
        json_t *msg = json_loadb(line, len, 0, NULL);
        if (!json_is_object(msg)) {
                json_decref(msg);
                return; /* not JSON-RPC (a server printing to stdout): skipped */
        }
        json_t *id = json_object_get(msg, "id");
        const char *method = json_string_value(json_object_get(msg, "method"));
        if (method && id) {
                /* ping is answered; roots, sampling and elicitation are
                 * capabilities corral's client does not declare. */
                json_t *reply = strcmp(method, "ping") == 0
                                        ? json_pack("{s:s,s:O,s:{}}", "jsonrpc", "2.0", "id", id, "result")
                                        : json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error",
                                                    "code", -32601, "message", "Method not found");
                write_line(c, reply);
        } else if (method == NULL && json_is_integer(id)) {
                pthread_mutex_lock(&c->lock);
                if (json_integer_value(id) == c->waiting_id && c->answer == NULL) {
                        /* Handed over, not shared: jansson's reference
                         * counts are not for two threads at once. */
                        c->answer = TAKE_PTR(msg);
                        wake(c->answer_fd);
                }
                pthread_mutex_unlock(&c->lock);
        }
        json_decref(msg);
}

static void *reader(void *arg)
{
        struct mcp_client *c = arg;
        char *buf = NULL;
        size_t len = 0, cap = 0;
        char chunk[4096];
        for (;;) {
                struct pollfd p[3] = { { .fd = c->from_fd, .events = POLLIN },
                                       { .fd = c->stop_fd, .events = POLLIN },
                                       { .fd = c->log_fd, .events = POLLIN } };
                if (poll(p, 3, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[1].revents)
                        break;
                if (p[2].revents) {
                        ssize_t n = read(c->log_fd, chunk, sizeof(chunk));
                        if (n > 0) {
                                pthread_mutex_lock(&c->lock);
                                keep_tail(c, chunk, (size_t)n);
                                pthread_mutex_unlock(&c->lock);
                        } else if (n == 0 || errno != EINTR) {
                                close(c->log_fd);
                                c->log_fd = -1; /* poll skips a negative fd */
                        }
                }
                if (!p[0].revents)
                        continue;
                if (cap - len < sizeof(chunk)) {
                        size_t ncap = cap ? cap * 2 : 1 << 16;
                        char *nb = ncap <= MESSAGE_MAX + sizeof(chunk) ? realloc(buf, ncap) : NULL;
                        if (nb == NULL)
                                break; /* a line over the cap: the server is not one we can talk to */
                        buf = nb;
                        cap = ncap;
                }
                ssize_t n = read(c->from_fd, buf + len, cap - len);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
                char *start = buf, *nl;
                while ((nl = memchr(start, '\n', len - (size_t)(start - buf))) != NULL) {
                        on_line(c, start, (size_t)(nl - start));
                        start = nl + 1;
                }
                len -= (size_t)(start - buf);
                memmove(buf, start, len);
        }
        free(buf);
        /* Its stderr's last words, for the message that says it is gone. */
        while (c->log_fd >= 0) {
                struct pollfd p = { .fd = c->log_fd, .events = POLLIN };
                ssize_t n = poll(&p, 1, 200) == 1 ? read(c->log_fd, chunk, sizeof(chunk)) : 0;
                if (n <= 0)
                        break;
                pthread_mutex_lock(&c->lock);
                keep_tail(c, chunk, (size_t)n);
                pthread_mutex_unlock(&c->lock);
        }
        pthread_mutex_lock(&c->lock);
        c->gone = true;
        wake(c->answer_fd);
        pthread_mutex_unlock(&c->lock);
        return NULL;
}

static int gone_error(struct mcp_client *c, corral_error **err)
{
        cleanup_free char *tail = mcp_client_log_tail(c);
        if (tail && *tail)
                return corral_usage(err, "the MCP server '%s' is gone (it exited or wrote what is not JSON-RPC); "
                                         "its last words: %s",
                                    c->name, tail);
        return corral_usage(err, "the MCP server '%s' is gone (it exited or wrote what is not JSON-RPC)", c->name);
}

/* Send a request and wait for its answer.  -1: err. */
static int rpc_stdio(struct mcp_client *c, json_t *request, json_int_t id, double timeout_s, int cancel_fd,
                     json_t **ret, corral_error **err)
{
        uint64_t stale;
        while (read(c->answer_fd, &stale, sizeof(stale)) == (ssize_t)sizeof(stale))
                ;
        pthread_mutex_lock(&c->lock);
        c->waiting_id = id;
        json_decref(c->answer);
        c->answer = NULL;
        pthread_mutex_unlock(&c->lock);
        if (write_line(c, request) < 0)
                return gone_error(c, err);
        double until = monotonic_ms() + timeout_s * 1000;
        for (;;) {
                pthread_mutex_lock(&c->lock);
                json_t *answer = TAKE_PTR(c->answer);
                bool gone = c->gone;
                pthread_mutex_unlock(&c->lock);
                if (answer) {
                        *ret = answer;
                        return 0;
                }
                if (gone)
                        return gone_error(c, err);
                double left = until - monotonic_ms();
                if (left <= 0)
                        return corral_make_error(err, CORRAL_ERR_TIMEOUT, 0,
                                                 "the MCP server '%s' did not answer within %g s", c->name, timeout_s);
                struct pollfd p[2] = { { .fd = c->answer_fd, .events = POLLIN }, { .fd = cancel_fd, .events = POLLIN } };
                if (poll(p, cancel_fd >= 0 ? 2 : 1, (int)(left < 1 ? 1 : left)) > 0) {
                        if (cancel_fd >= 0 && p[1].revents)
                                return corral_make_error(err, CORRAL_ERR_CANCELLED, 0, "cancelled");
                        while (read(c->answer_fd, &stale, sizeof(stale)) == (ssize_t)sizeof(stale))
                                ;
                }
        }
}

/* ---- Streamable HTTP ---- */

struct http_exchange {
        struct mcp_client *c;
        struct capbuf body;
        bool sse;
        struct sse_parser parser;
        json_int_t id;
        json_t *answer;
        char *session_id;
        int cancel_fd;
        corral_error *err;
};

static int on_sse_event(void *userdata, const char *event, const char *data, size_t len)
{
        struct http_exchange *x = userdata;
        if (*event && strcmp(event, "message") != 0)
                return 0;
        json_t *msg = json_loadb(data, len, 0, NULL);
        json_t *id = json_object_get(msg, "id");
        if (json_is_integer(id) && json_integer_value(id) == x->id && json_object_get(msg, "method") == NULL &&
            x->answer == NULL) {
                x->answer = msg;
                return 0;
        }
        json_decref(msg); /* progress and other notifications */
        return 0;
}

static size_t on_http_body(char *data, size_t size, size_t n, void *userdata)
{
        struct http_exchange *x = userdata;
        size_t len = size * n;
        if (x->sse)
                return sse_parser_feed(&x->parser, data, len, &x->err) == 0 ? len : 0;
        /* Over the cap: the transfer fails (a body cut short is no answer). */
        return capbuf_append(&x->body, data, len) == len ? len : 0;
}

static size_t on_http_header(char *line, size_t size, size_t n, void *userdata)
{
        struct http_exchange *x = userdata;
        size_t len = size * n;
        if (len > 15 && strncasecmp(line, "mcp-session-id:", 15) == 0) {
                const char *v = line + 15;
                size_t vl = len - 15;
                while (vl && (*v == ' ' || *v == '\t'))
                        v++, vl--;
                while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
                        vl--;
                free(x->session_id);
                x->session_id = strndup(v, vl);
        } else if (len > 13 && strncasecmp(line, "content-type:", 13) == 0) {
                x->sse = memmem(line, len, "text/event-stream", 17) != NULL;
        }
        return len;
}

static int on_http_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
        struct http_exchange *x = userdata;
        (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
        struct pollfd p = { .fd = x->cancel_fd, .events = POLLIN };
        return x->cancel_fd >= 0 && poll(&p, 1, 0) > 0 ? 1 : 0;
}

/* POST one message; a request's answer in *ret (NULL for a notification). */
static int rpc_http(struct mcp_client *c, json_t *message, json_int_t id, double timeout_s, int cancel_fd,
                    json_t **ret, corral_error **err)
{
        const struct curl_api *api = curl_api_get(err);
        cleanup_free char *body = json_dumps(message, JSON_COMPACT);
        json_decref(message);
        if (api == NULL)
                return -1;
        CURL *h = api->easy_init();
        if (h == NULL || body == NULL) {
                if (h)
                        api->easy_cleanup(h);
                return corral_fail(err, ENOMEM, "cannot call the MCP server '%s'", c->name);
        }
        struct http_exchange x = { .c = c, .id = id, .cancel_fd = cancel_fd };
        x.body.cap = MESSAGE_MAX;
        sse_parser_init(&x.parser, MESSAGE_MAX, on_sse_event, &x);
        struct curl_slist *headers = NULL;
        for (const struct curl_slist *l = c->headers; l; l = l->next)
                headers = api->slist_append(headers, l->data);
        headers = api->slist_append(headers, "Content-Type: application/json");
        headers = api->slist_append(headers, "Accept: application/json, text/event-stream");
        cleanup_free char *sid = NULL, *ver = NULL;
        if (c->session_id && asprintf(&sid, "Mcp-Session-Id: %s", c->session_id) > 0)
                headers = api->slist_append(headers, sid);
        if (c->protocol && asprintf(&ver, "MCP-Protocol-Version: %s", c->protocol) > 0)
                headers = api->slist_append(headers, ver);
        api->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        api->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        api->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        api->easy_setopt(h, CURLOPT_URL, c->url);
        api->easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        api->easy_setopt(h, CURLOPT_POSTFIELDS, body);
        api->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
        api->easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
        api->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        api->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_http_body);
        api->easy_setopt(h, CURLOPT_WRITEDATA, &x);
        api->easy_setopt(h, CURLOPT_HEADERFUNCTION, on_http_header);
        api->easy_setopt(h, CURLOPT_HEADERDATA, &x);
        api->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        api->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_http_progress);
        api->easy_setopt(h, CURLOPT_XFERINFODATA, &x);
        api->easy_setopt(h, CURLOPT_USERAGENT, "corral/" CORRAL_VERSION_STRING);
        CURLcode rc = api->easy_perform(h);
        long status = 0;
        api->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        api->slist_free_all(headers);
        api->easy_cleanup(h);
        int r = 0;
        if (rc == CURLE_ABORTED_BY_CALLBACK) {
                r = corral_make_error(err, CORRAL_ERR_CANCELLED, 0, "cancelled");
        } else if (rc == CURLE_OPERATION_TIMEDOUT) {
                r = corral_make_error(err, CORRAL_ERR_TIMEOUT, 0,
                                      "the MCP server '%s' did not answer within %g s", c->name, timeout_s);
        } else if (rc != CURLE_OK) {
                r = x.err ? (*err = TAKE_PTR(x.err), -1)
                          : corral_usage(err, "cannot reach the MCP server '%s' at %s: %s", c->name, c->url,
                                         api->easy_strerror(rc));
        } else if (status == 404 && c->session_id) {
                c->session_ended = true;
                r = corral_usage(err, "the MCP server '%s' ended the session", c->name);
        } else if (status < 200 || status >= 300) {
                r = corral_usage(err, "the MCP server '%s' answered HTTP %ld", c->name, status);
        } else if (id == 0) {
                *ret = NULL;
        } else {
                if (x.sse)
                        sse_parser_finish(&x.parser, NULL);
                else
                        x.answer = json_loadb(x.body.data ? x.body.data : "", x.body.len, 0, NULL);
                if (x.answer == NULL)
                        r = corral_usage(err, "the MCP server '%s' sent no answer to a request", c->name);
                *ret = TAKE_PTR(x.answer);
        }
        if (r == 0 && x.session_id && c->session_id == NULL)
                c->session_id = TAKE_PTR(x.session_id);
        free(x.session_id);
        json_decref(x.answer);
        corral_error_free(x.err);
        capbuf_release(&x.body);
        sse_parser_release(&x.parser);
        return r;
}

/* ---- requests ---- */

static int notify(struct mcp_client *c, const char *method, json_t *params)
{
        json_t *msg = json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
        if (params)
                json_object_set_new(msg, "params", params);
        if (c->http) {
                json_t *none = NULL;
                corral_error *err = NULL;
                int r = rpc_http(c, msg, 0, 5, -1, &none, &err);
                corral_error_free(err);
                return r;
        }
        return write_line(c, msg);
}

/* A request; *ret its "result".  A JSON-RPC error is a usage error naming
 * the server and its message. */
static int request(struct mcp_client *c, const char *method, json_t *params, double timeout_s, int cancel_fd,
                   json_t **ret, corral_error **err)
{
        json_int_t id = ++c->next_id;
        json_t *msg = json_pack("{s:s,s:I,s:s,s:o}", "jsonrpc", "2.0", "id", id, "method", method, "params",
                                params ? params : json_object());
        json_t *answer = NULL;
        int r = c->http ? rpc_http(c, msg, id, timeout_s, cancel_fd, &answer, err)
                        : rpc_stdio(c, msg, id, timeout_s, cancel_fd, &answer, err);
        if (r < 0) {
                /* A request given up on is cancelled at the server. */
                if ((*err)->kind == CORRAL_ERR_CANCELLED || (*err)->kind == CORRAL_ERR_TIMEOUT)
                        notify(c, "notifications/cancelled",
                               json_pack("{s:I,s:s}", "requestId", id, "reason",
                                         (*err)->kind == CORRAL_ERR_CANCELLED ? "cancelled" : "timed out"));
                return -1;
        }
        json_t *e = json_object_get(answer, "error");
        json_t *result = json_object_get(answer, "result");
        if (!json_is_object(e) && !json_is_object(result)) {
                r = corral_usage(err, "the MCP server '%s' answered %s with what is not a JSON-RPC response%s",
                                 c->name, method, c->http ? " (is the URL its MCP endpoint?)" : "");
        } else if (e || !json_is_object(result)) {
                const char *m = json_string_value(json_object_get(e, "message"));
                r = corral_usage(err, "the MCP server '%s' refused %s: %.400s (code %lld)", c->name, method,
                                 m ? m : "no result", (long long)json_integer_value(json_object_get(e, "code")));
        } else {
                *ret = json_incref(result);
        }
        json_decref(answer);
        return r;
}

/* initialize, and the notification that follows it. */
static int initialize(struct mcp_client *c, double timeout_s, corral_error **err)
{
        json_t *result = NULL;
        if (request(c, "initialize",
                    json_pack("{s:s,s:{},s:{s:s,s:s}}", "protocolVersion", PROTOCOL, "capabilities", "clientInfo",
                              "name", "corral", "version", CORRAL_VERSION_STRING),
                    timeout_s, -1, &result, err) < 0)
                return -1;
        const char *v = json_string_value(json_object_get(result, "protocolVersion"));
        size_t i = 0;
        while (v && i < ARRAY_SIZE(known_protocols) && strcmp(v, known_protocols[i]) != 0)
                i++;
        if (v == NULL || i == ARRAY_SIZE(known_protocols)) {
                corral_usage(err, "the MCP server '%s' speaks protocol revision %.40s, which corral does not (it "
                                  "speaks %s to %s)",
                             c->name, v ? v : "(none given)", known_protocols[ARRAY_SIZE(known_protocols) - 1],
                             PROTOCOL);
                json_decref(result); /* after the message: v is its string */
                return -1;
        }
        c->protocol = strdup(v);
        json_decref(result);
        if (notify(c, "notifications/initialized", NULL) < 0)
                return gone_error(c, err);
        return 0;
}

static int handshake(struct mcp_client *c, double timeout_s, corral_error **err)
{
        json_t *result = NULL;
        if (initialize(c, timeout_s, err) < 0)
                return -1;
        c->tools = json_array();
        json_t *cursor = NULL;
        for (int page = 0; page < MAX_PAGES; page++) {
                json_t *params = cursor ? json_pack("{s:O}", "cursor", cursor) : json_object();
                json_decref(cursor);
                cursor = NULL;
                if (request(c, "tools/list", params, timeout_s, -1, &result, err) < 0)
                        return -1;
                json_t *tools = json_object_get(result, "tools"), *t;
                size_t k;
                json_array_foreach(tools, k, t)
                        if (json_is_string(json_object_get(t, "name")) && json_array_size(c->tools) < MAX_TOOLS)
                                json_array_append(c->tools, t);
                cursor = json_incref(json_object_get(result, "nextCursor"));
                json_decref(result);
                if (!json_is_string(cursor))
                        break;
        }
        json_decref(cursor);
        return 0;
}

static struct mcp_client *client_new(const char *name)
{
        struct mcp_client *c = calloc(1, sizeof(*c));
        if (c == NULL || (c->name = strdup(name)) == NULL) {
                free(c);
                return NULL;
        }
        c->to_fd = c->from_fd = c->log_fd = c->stop_fd = c->answer_fd = -1;
        pthread_mutex_init(&c->call_lock, NULL);
        pthread_mutex_init(&c->lock, NULL);
        return c;
}

int mcp_client_open_fds(const char *name, int to_server, int from_server, int log_fd, double timeout_s,
                        struct mcp_client **ret, corral_error **err)
{
        *ret = NULL;
        struct mcp_client *c = client_new(name);
        if (c == NULL) {
                close(to_server);
                close(from_server);
                if (log_fd >= 0)
                        close(log_fd);
                return corral_fail(err, ENOMEM, "cannot start the MCP client");
        }
        c->to_fd = to_server;
        c->from_fd = from_server;
        c->log_fd = log_fd;
        c->stop_fd = eventfd(0, EFD_CLOEXEC);
        c->answer_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->stop_fd < 0 || c->answer_fd < 0 || pthread_create(&c->reader, NULL, reader, c) != 0) {
                mcp_client_close(c);
                return corral_fail(err, errno ? errno : ENOMEM, "cannot start the MCP client");
        }
        c->reader_started = true;
        if (handshake(c, timeout_s, err) < 0) {
                mcp_client_close(c);
                return -1;
        }
        *ret = c;
        return 0;
}

int mcp_client_open_http(const char *name, const char *url, const char *const *headers, double timeout_s,
                         struct mcp_client **ret, corral_error **err)
{
        *ret = NULL;
        const struct curl_api *api = curl_api_get(err);
        if (api == NULL)
                return -1;
        struct mcp_client *c = client_new(name);
        if (c == NULL || (c->url = strdup(url)) == NULL) {
                mcp_client_close(c);
                return corral_fail(err, ENOMEM, "cannot start the MCP client");
        }
        c->http = true;
        for (size_t i = 0; headers && headers[i]; i++)
                c->headers = api->slist_append(c->headers, headers[i]);
        if (handshake(c, timeout_s, err) < 0) {
                mcp_client_close(c);
                return -1;
        }
        *ret = c;
        return 0;
}

json_t *mcp_client_tools(const struct mcp_client *c)
{
        return c->tools;
}

/* A new session after the server ended the old one: initialize again,
 * without the old session's id. */
static int session_restart(struct mcp_client *c, double timeout_s, corral_error **err)
{
        c->session_ended = false;
        free(c->session_id);
        c->session_id = NULL;
        free(c->protocol);
        c->protocol = NULL;
        if (initialize(c, timeout_s, err) < 0)
                return corral_error_prefix(err, "the MCP server '%s' ended the session and a new one could not "
                                                "start", c->name);
        return 0;
}

int mcp_client_call(struct mcp_client *c, const char *tool, json_t *arguments, double timeout_s, int cancel_fd,
                    json_t **ret, corral_error **err)
{
        *ret = NULL;
        pthread_mutex_lock(&c->call_lock);
        json_t *result = NULL;
        int r = request(c, "tools/call",
                        json_pack("{s:s,s:o}", "name", tool, "arguments",
                                  arguments ? json_incref(arguments) : json_object()),
                        timeout_s, cancel_fd, &result, err);
        bool restarted = false;
        if (r < 0 && c->session_ended) {
                /* The server forgot the session (it restarted, or ended an
                 * idle one) and did not run the call: a client starts a new
                 * session with a new initialize (the transport's rule) and
                 * sends the call once more. */
                corral_error_free(*err);
                *err = NULL;
                r = session_restart(c, timeout_s, err);
                if (r == 0)
                        r = request(c, "tools/call",
                                    json_pack("{s:s,s:o}", "name", tool, "arguments",
                                              arguments ? json_incref(arguments) : json_object()),
                                    timeout_s, cancel_fd, &result, err);
                restarted = r == 0;
        }
        pthread_mutex_unlock(&c->call_lock);
        if (r < 0)
                return -1;
        json_t *content = json_object_get(result, "content");
        if (!json_is_array(content)) {
                json_decref(result);
                return corral_usage(err, "the MCP server '%s' answered %s without content", c->name, tool);
        }
        /* What the server kept for the old session (a sandbox's variables,
         * an open file) is gone: the model is told, not left to wonder. */
        if (restarted)
                json_array_append_new(content,
                                      json_pack("{s:s,s:s++}", "type", "text", "text", "(corral: the MCP server '",
                                                c->name, "' had ended its session; this call ran in a new one, so "
                                                         "what the server kept from earlier calls is gone)"));
        *ret = result;
        return 0;
}

char *mcp_client_log_tail(struct mcp_client *c)
{
        pthread_mutex_lock(&c->lock);
        char *t = c->tail_len ? strndup(c->tail, c->tail_len) : NULL;
        pthread_mutex_unlock(&c->lock);
        /* One line, trimmed: it goes into a message. */
        for (char *p = t; p && *p; p++)
                if (*p == '\n' || *p == '\r')
                        *p = ' ';
        for (size_t n = t ? strlen(t) : 0; n && t[n - 1] == ' '; n--)
                t[n - 1] = '\0';
        return t;
}

void mcp_client_close(struct mcp_client *c)
{
        if (c == NULL)
                return;
        if (c->http && c->session_id) {
                /* The session's end (best effort): a DELETE. */
                const struct curl_api *api = curl_api_get(NULL);
                CURL *h = api ? api->easy_init() : NULL;
                if (h) {
                        struct curl_slist *headers = NULL;
                        for (const struct curl_slist *l = c->headers; l; l = l->next)
                                headers = api->slist_append(headers, l->data);
                        cleanup_free char *sid = NULL;
                        if (asprintf(&sid, "Mcp-Session-Id: %s", c->session_id) > 0)
                                headers = api->slist_append(headers, sid);
                        api->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
                        api->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
                        api->easy_setopt(h, CURLOPT_URL, c->url);
                        api->easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
                        api->easy_setopt(h, CURLOPT_HTTPHEADER, headers);
                        api->easy_setopt(h, CURLOPT_TIMEOUT_MS, 3000L);
                        api->easy_perform(h);
                        api->slist_free_all(headers);
                        api->easy_cleanup(h);
                }
        }
        /* A stdio server: its stdin closed, it exits; the reader sees its
         * stdout end (or is told to stop). */
        if (c->to_fd >= 0)
                close(c->to_fd);
        if (c->reader_started) {
                wake(c->stop_fd);
                pthread_join(c->reader, NULL);
        }
        if (c->from_fd >= 0)
                close(c->from_fd);
        if (c->log_fd >= 0)
                close(c->log_fd);
        if (c->stop_fd >= 0)
                close(c->stop_fd);
        if (c->answer_fd >= 0)
                close(c->answer_fd);
        if (c->headers) {
                const struct curl_api *api = curl_api_get(NULL);
                if (api)
                        api->slist_free_all(c->headers);
        }
        json_decref(c->answer);
        json_decref(c->tools);
        free(c->protocol);
        free(c->session_id);
        free(c->url);
        free(c->name);
        pthread_mutex_destroy(&c->lock);
        pthread_mutex_destroy(&c->call_lock);
        free(c);
}
