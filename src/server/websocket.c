/* websocket.c: GET /v1/sandboxes/{id}/ws, steps, interrupts and their
 * output over one WebSocket (docs/api.md, "WebSocket").
 *
 * libmicrohttpd upgrades the connection and hands us its socket on the
 * connection's own thread, where this loop runs; wslay frames the messages.
 * wslay is not thread-safe, so only this loop touches it: each step runs on
 * a worker thread of its own and queues its events in an outbox, which an
 * eventfd makes the loop send.  A client that goes away interrupts its
 * steps; the server's stop ends the loop with a close frame (1001) once the
 * steps have sent their results.
 *
 * The handshake, the upgrade's lifecycle and wslay's socket callbacks are
 * shared with the runs' events (websocket_upgrade(), runs.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nettle/base64.h>
#include <nettle/sha1.h>

#include "server-internal.h"

#define WS_MAX_INFLIGHT 16 /* steps one connection may have queued or running */
#define WS_ID_MAX 64

struct ws_msg {
        struct ws_msg *next;
        char *text;
        size_t len;
};

struct ws_step;

struct ws {
        struct ws_io io;         /* first: wslay's user_data */
        struct server *s;
        struct sandbox *sb;
        wslay_event_context_ptr ctx;
        int wake;                /* eventfd: the outbox has messages */
        pthread_mutex_t lock;    /* the outbox and the steps */
        struct ws_msg *out, **out_tail;
        struct ws_step *steps;
        unsigned running;
        bool closing;
};

struct ws_step {
        struct ws_step *next;
        struct ws *w;
        char id[WS_ID_MAX + 1];
        struct step_request sr;
        struct step_ctx ctx;
        pthread_t thread;
        bool done;
};

/* ---- the outbox (any thread) ---- */

static void ws_send(struct ws *w, const char *type, const char *id, json_t *payload)
{
        if (payload == NULL)
                return;
        json_object_set_new(payload, "type", json_string(type));
        if (id)
                json_object_set_new(payload, "id", json_string(id));
        char *text = json_dumps(payload, JSON_COMPACT | JSON_REAL_PRECISION(15));
        json_decref(payload);
        struct ws_msg *m = text ? calloc(1, sizeof(*m)) : NULL;
        if (m == NULL) {
                free(text);
                return;
        }
        m->text = text;
        m->len = strlen(text);
        pthread_mutex_lock(&w->lock);
        *w->out_tail = m;
        w->out_tail = &m->next;
        pthread_mutex_unlock(&w->lock);
        uint64_t one = 1;
        if (write(w->wake, &one, sizeof(one)) < 0) {
                /* the counter cannot overflow from this */
        }
}

static void ws_error(struct ws *w, const char *id, const char *kind, const char *msg)
{
        ws_send(w, "error", id, json_pack("{s:{s:s,s:s}}", "error", "kind", kind, "message", msg));
}

/* ---- steps (worker threads) ---- */

static void step_out(void *ud, int stream, const char *data, size_t len)
{
        struct ws_step *st = ud;
        size_t n;
        cleanup_free char *clean = utf8_sanitize(data, len, &n);
        if (clean)
                ws_send(st->w, stream == 2 ? "stderr" : "stdout", st->id, json_pack("{s:s%}", "data", clean, n));
}

static void *step_thread(void *arg)
{
        struct ws_step *st = arg;
        struct ws *w = st->w;
        json_t *result = NULL;
        corral_error *err = NULL;
        if (step_run(w->s, w->sb, &st->sr, &st->ctx, &result, &err) == 0) {
                size_t i;
                json_t *f;
                json_array_foreach(json_object_get(result, "figures"), i, f)
                        ws_send(w, "figure", st->id, json_pack("{s:O}", "figure", f));
                ws_send(w, "result", st->id, json_pack("{s:o}", "result", result));
        } else {
                ws_error(w, st->id, corral_error_kind_to_string(err ? err->kind : CORRAL_ERR_INTERNAL),
                         err ? err->msg : "the step failed");
                corral_error_free(err);
        }
        step_end(w->s, w->sb);
        pthread_mutex_lock(&w->lock);
        st->done = true;
        w->running--;
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

/* {"type": "exec", "id", "code", ...}: a worker runs it. */
static void start_step(struct ws *w, json_t *msg, const char *id)
{
        corral_error *err = NULL;
        json_t *body = json_deep_copy(msg);
        json_object_del(body, "type");
        json_object_del(body, "id");
        struct ws_step *st = calloc(1, sizeof(*st));
        if (st == NULL || body == NULL || step_parse(body, &st->sr, &err) < 0) {
                ws_error(w, id, err ? corral_error_kind_to_string(err->kind) : "internal",
                         err ? err->msg : "out of memory");
                corral_error_free(err);
                json_decref(body);
                free(st);
                return;
        }
        json_decref(body);
        snprintf(st->id, sizeof(st->id), "%s", id ? id : "");
        st->w = w;
        st->ctx.out = step_out;
        st->ctx.ud = st;
        pthread_mutex_lock(&w->lock);
        bool room = w->running < WS_MAX_INFLIGHT && !atomic_load(&w->s->draining);
        pthread_mutex_unlock(&w->lock);
        if (!room || !step_begin(w->s, w->sb)) {
                count_rejected(w->s, "steps");
                ws_error(w, id, atomic_load(&w->s->draining) ? "unavailable" : "limit",
                         atomic_load(&w->s->draining) ? "the server is shutting down"
                                                      : "too many steps at once: wait for one to end");
                step_request_release(&st->sr);
                free(st);
                return;
        }
        pthread_mutex_lock(&w->lock);
        w->running++;
        st->next = w->steps;
        w->steps = st;
        if (pthread_create(&st->thread, NULL, step_thread, st) != 0) {
                w->steps = st->next;
                w->running--;
                pthread_mutex_unlock(&w->lock);
                step_end(w->s, w->sb);
                ws_error(w, id, "internal", "cannot start the step");
                step_request_release(&st->sr);
                free(st);
                return;
        }
        pthread_mutex_unlock(&w->lock);
}

/* Join the workers that have ended (all, with wait: the loop is ending). */
static void reap_steps(struct ws *w, bool wait)
{
        pthread_mutex_lock(&w->lock);
        struct ws_step **p = &w->steps;
        while (*p) {
                struct ws_step *st = *p;
                if (!st->done && !wait) {
                        p = &st->next;
                        continue;
                }
                *p = st->next;
                pthread_mutex_unlock(&w->lock);
                pthread_join(st->thread, NULL);
                step_request_release(&st->sr);
                free(st);
                pthread_mutex_lock(&w->lock);
        }
        pthread_mutex_unlock(&w->lock);
}

static void interrupt_steps(struct ws *w)
{
        pthread_mutex_lock(&w->s->lock);
        bool stepping = w->sb->stepping;
        pthread_mutex_unlock(&w->s->lock);
        uint64_t one = 1;
        if (stepping && write(w->sb->interrupt_fd, &one, sizeof(one)) < 0) {
                /* as above */
        }
}

/* ---- wslay (the loop's thread only) ---- */

ssize_t ws_io_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user_data)
{
        (void)flags;
        struct ws_io *io = user_data;
        if (io->n_extra) {
                size_t n = io->n_extra < len ? io->n_extra : len;
                memcpy(buf, io->extra, n);
                io->extra += n;
                io->n_extra -= n;
                return (ssize_t)n;
        }
        ssize_t n = recv(io->sock, buf, len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                http_lib.wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
                return -1;
        }
        if (n <= 0) {
                http_lib.wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
                return -1;
        }
        return n;
}

ssize_t ws_io_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *user_data)
{
        (void)flags;
        struct ws_io *io = user_data;
        ssize_t n = send(io->sock, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                http_lib.wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
                return -1;
        }
        if (n < 0) {
                http_lib.wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
                return -1;
        }
        return n;
}

static void ws_message(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg, void *user_data)
{
        struct ws *w = user_data;
        if (arg->opcode != WSLAY_TEXT_FRAME) {
                if (arg->opcode == WSLAY_BINARY_FRAME)
                        ws_error(w, NULL, "usage", "messages are JSON text frames");
                return;
        }
        json_error_t je;
        json_t *msg = json_loadb((const char *)arg->msg, arg->msg_length, JSON_REJECT_DUPLICATES, &je);
        const char *type = json_string_value(json_object_get(msg, "type"));
        json_t *idv = json_object_get(msg, "id");
        const char *id = json_string_value(idv);
        if (msg == NULL || !json_is_object(msg)) {
                ws_error(w, NULL, "usage", "a message is a JSON object: {\"type\": \"exec\", \"id\", \"code\"} or "
                                           "{\"type\": \"interrupt\"}");
        } else if (idv && (id == NULL || strlen(id) > WS_ID_MAX)) {
                ws_error(w, NULL, "usage", "id must be a string of at most 64 bytes");
        } else if (type && strcmp(type, "exec") == 0) {
                start_step(w, msg, id);
        } else if (type && strcmp(type, "interrupt") == 0) {
                interrupt_steps(w);
        } else {
                ws_error(w, id, "usage", "type must be \"exec\" or \"interrupt\"");
        }
        json_decref(msg);
        (void)ctx;
}

/* Move the outbox into wslay's queue. */
static void flush_outbox(struct ws *w)
{
        uint64_t n;
        if (read(w->wake, &n, sizeof(n)) < 0) {
                /* nothing new: EAGAIN */
        }
        pthread_mutex_lock(&w->lock);
        struct ws_msg *m = w->out;
        w->out = NULL;
        w->out_tail = &w->out;
        pthread_mutex_unlock(&w->lock);
        while (m) {
                struct ws_msg *next = m->next;
                struct wslay_event_msg em = { .opcode = WSLAY_TEXT_FRAME, .msg = (const uint8_t *)m->text,
                                              .msg_length = m->len };
                if (!w->closing)
                        http_lib.wslay_event_queue_msg(w->ctx, &em); /* copies the bytes */
                free(m->text);
                free(m);
                m = next;
        }
}

static void ws_loop(struct ws *w)
{
        bool stopping = false;
        for (;;) {
                /* running before the outbox: a step queues its last event
                 * before it stops counting, so with none running the
                 * outbox holds every end. */
                pthread_mutex_lock(&w->lock);
                unsigned running = w->running;
                pthread_mutex_unlock(&w->lock);
                flush_outbox(w);
                reap_steps(w, false);
                /* The server's stop: once our steps have sent their ends
                 * (wslay sends a queued close before queued messages). */
                if (!stopping && atomic_load(&w->s->stopping) && running == 0 &&
                    http_lib.wslay_event_get_queued_msg_count(w->ctx) == 0) {
                        stopping = true;
                        http_lib.wslay_event_queue_close(w->ctx, WSLAY_CODE_GOING_AWAY,
                                                         (const uint8_t *)"server stopping", 15);
                }
                if (!http_lib.wslay_event_want_read(w->ctx) && !http_lib.wslay_event_want_write(w->ctx))
                        break;
                struct pollfd p[3] = {
                        { .fd = w->io.sock,
                          .events = (short)((http_lib.wslay_event_want_read(w->ctx) ? POLLIN : 0) |
                                            (http_lib.wslay_event_want_write(w->ctx) ? POLLOUT : 0)) },
                        { .fd = w->wake, .events = POLLIN },
                        /* Readable for good once set: watched only when it can
                         * be acted on, or the loop would spin. */
                        { .fd = w->s->stop_fd, .events = !stopping && running == 0 ? POLLIN : 0 },
                };
                int timeout = running ? 200 : -1; /* a worker's end wakes no fd: look again soon */
                if (w->io.n_extra)
                        timeout = 0;
                if (poll(p, 3, timeout) < 0 && errno != EINTR)
                        break;
                if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) || w->io.n_extra) {
                        if (http_lib.wslay_event_recv(w->ctx) != 0)
                                break;
                }
                if ((p[0].revents & POLLOUT) && http_lib.wslay_event_send(w->ctx) != 0)
                        break;
                if (http_lib.wslay_event_want_write(w->ctx) && !(p[0].revents & POLLOUT)) {
                        /* queued by recv (a pong, a close) or the outbox: try now */
                        if (http_lib.wslay_event_send(w->ctx) != 0)
                                break;
                }
        }
}

/* The sandbox's WebSocket, on the connection's thread once upgraded. */
static void sandbox_ws_run(void *ud, const struct ws_io *io)
{
        struct ws *w = ud;
        w->io = *io;
        struct wslay_event_callbacks cb = { .recv_callback = ws_io_recv, .send_callback = ws_io_send,
                                            .on_msg_recv_callback = ws_message };
        if (http_lib.wslay_event_context_server_init(&w->ctx, &cb, w) == 0) {
                http_lib.wslay_event_config_set_max_recv_msg_length(w->ctx, w->s->cfg.max_body);
                ws_loop(w);
                /* The client is gone (or we are stopping): its steps are
                 * interrupted, and the workers joined before we leave. */
                w->closing = true;
                interrupt_steps(w);
                reap_steps(w, true);
                flush_outbox(w);
                http_lib.wslay_event_context_free(w->ctx);
        }
}

static void sandbox_ws_release(void *ud)
{
        struct ws *w = ud;
        sandbox_put(w->s, w->sb);
        close(w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
}

/* ---- the upgrade (shared: the sandboxes' and the runs' events) ---- */

struct ws_upgrade {
        struct server *s;
        struct ws_upgrade_hooks hooks;
        void *ud;
};

static void upgraded(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra, size_t n_extra,
                     MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
        (void)conn;
        (void)con_cls;
        struct ws_upgrade *u = cls;
        /* Each message is written whole and answered at once: Nagle's
         * wait for the peer's delayed ACK cost 40 ms a step. */
        int one = 1;
        (void)setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* fails harmlessly on a unix socket */
        struct ws_io io = { .sock = sock, .extra = extra, .n_extra = n_extra };
        u->hooks.run(u->ud, &io);
        http_lib.MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        pthread_mutex_lock(&u->s->lock);
        u->s->streams--;
        pthread_cond_broadcast(&u->s->changed);
        pthread_mutex_unlock(&u->s->lock);
        u->hooks.release(u->ud);
        free(u);
}

/* The handshake's Sec-WebSocket-Accept: base64(SHA-1(key + the RFC 6455 GUID)). */
static void accept_key(const char *key, char out[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) + 1])
{
        static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
        struct sha1_ctx c;
        uint8_t digest[SHA1_DIGEST_SIZE];
        sha1_init(&c);
        sha1_update(&c, strlen(key), (const uint8_t *)key);
        sha1_update(&c, sizeof(guid) - 1, (const uint8_t *)guid);
        sha1_digest(&c, sizeof(digest), digest);
        base64_encode_raw(out, sizeof(digest), digest);
        out[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE)] = '\0';
}

static bool header_has(struct MHD_Connection *c, const char *name, const char *token)
{
        const char *v = http_lib.MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
        size_t n = strlen(token);
        for (const char *p = v; p && *p;) {
                p += strspn(p, " \t,");
                size_t l = strcspn(p, ",");
                size_t t = l;
                while (t && (p[t - 1] == ' ' || p[t - 1] == '\t'))
                        t--;
                if (t == n && strncasecmp(p, token, n) == 0)
                        return true;
                p += l;
        }
        return false;
}

bool websocket_requested(struct request *rq)
{
        return header_has(rq->conn, MHD_HTTP_HEADER_UPGRADE, "websocket");
}

enum MHD_Result websocket_upgrade(struct request *rq, const struct ws_upgrade_hooks *hooks, void *ud)
{
        struct MHD_Connection *c = rq->conn;
        const char *key = http_lib.MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key");
        const char *version = http_lib.MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Version");
        if (!header_has(c, MHD_HTTP_HEADER_UPGRADE, "websocket") || !header_has(c, MHD_HTTP_HEADER_CONNECTION,
                                                                               "upgrade") ||
            key == NULL || strlen(key) != 24 || version == NULL || strcmp(version, "13") != 0) {
                hooks->release(ud);
                return reply_error(rq, MHD_HTTP_BAD_REQUEST, "usage",
                                   "this route is a WebSocket (version 13): send the upgrade headers");
        }
        struct ws_upgrade *u = calloc(1, sizeof(*u));
        if (u == NULL) {
                hooks->release(ud);
                return MHD_NO;
        }
        u->s = rq->s;
        u->hooks = *hooks;
        u->ud = ud;
        char accept[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) + 1];
        accept_key(key, accept);
        struct MHD_Response *r = http_lib.MHD_create_response_for_upgrade(upgraded, u);
        if (r == NULL) {
                free(u);
                hooks->release(ud);
                return MHD_NO;
        }
        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_UPGRADE, "websocket");
        http_lib.MHD_add_response_header(r, "Sec-WebSocket-Accept", accept);
        pthread_mutex_lock(&rq->s->lock);
        rq->s->streams++; /* ended by upgraded() */
        pthread_mutex_unlock(&rq->s->lock);
        return reply(rq, MHD_HTTP_SWITCHING_PROTOCOLS, r);
}

enum MHD_Result websocket_open(struct request *rq, struct sandbox *sb)
{
        struct ws *w = calloc(1, sizeof(*w));
        if (w == NULL || (w->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
                free(w);
                sandbox_put(rq->s, sb);
                return MHD_NO;
        }
        w->s = rq->s;
        w->sb = sb;
        w->io.sock = -1;
        w->out_tail = &w->out;
        pthread_mutex_init(&w->lock, NULL);
        static const struct ws_upgrade_hooks hooks = { .run = sandbox_ws_run, .release = sandbox_ws_release };
        return websocket_upgrade(rq, &hooks, w);
}
