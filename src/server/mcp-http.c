/* mcp-http.c: MCP's Streamable HTTP transport at /mcp (docs/mcp.md,
 * "Streamable HTTP"): the sessions of mcp/mcp.h behind corral serve's gate
 * (its tokens, Host and Origin checks, rate and body caps).
 *
 * A POST carries one JSON-RPC message.  initialize makes a session, named
 * by a random id in the Mcp-Session-Id header that every later request
 * carries; a request is answered in its POST's response (JSON, or for a
 * tools/call a server-sent-event stream: progress, then the response),
 * notifications and responses get 202.  DELETE ends a session; there is no
 * GET stream (405).  A session is its token's: another token's request for
 * it finds nothing (404).
 *
 * Each answer is an exchange: the session's send function (called by the
 * session's threads) only appends to the exchange under the lock and
 * signals; the response's own thread (stream.c) writes to the client.  A
 * slow or vanished client holds nobody up: the call runs on, its answer is
 * dropped.  Sessions end on DELETE, after an idle time (the expiry thread of
 * sandbox.c asks mcp_http_expire()), or when the server stops; a session's
 * memory goes with its last reference (the registry's, and each request's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mcp/mcp.h"
#include "../review/review.h"
#include "server-internal.h"

/* The code the SDKs' own servers answer an unknown session with. */
#define RPC_SESSION_NOT_FOUND -32001
/* A server-side failure (the session cap, shutting down). */
#define RPC_SERVER_ERROR -32000
/* A call's default time limit: clients give up on a call after a minute. */
#define MCP_DEFAULT_TIMEOUT_S 50

struct mcp_http_session;

/* One request waiting for its answer. */
struct exchange {
        struct exchange *next;
        struct mcp_http_session *ms;  /* with a reference */
        char *id;                /* the request's id as JSON text */
        bool sse;                /* answered as server-sent events, else JSON */
        /* Under the registry's lock: */
        char *events;            /* SSE events not yet written */
        size_t len;
        char *response;          /* the response's JSON text */
        bool done;               /* answered, or never will be (cancelled) */
        bool gone;               /* the client hung up */
};

struct mcp_http_session {
        struct mcp_http_session *next;
        char id[65];             /* Mcp-Session-Id: 64 random hex digits */
        int owner;               /* the principal (auth.h) */
        struct mcp_http *h;
        struct mcp_session *core;
        /* Under the registry's lock: */
        unsigned refs;           /* the registry's and each request's */
        unsigned open;           /* exchanges not ended: not idle */
        double last_ms;          /* the last request's end (monotonic) */
        bool ended;
        struct exchange *exchanges;
};

struct mcp_http {
        struct mcp_config cfg;   /* every session's */
        corral_jail_config jail;
        struct review_policy *review;
        pthread_mutex_t lock;    /* the fields below, and the sessions' and exchanges' marked so */
        pthread_cond_t changed;  /* an exchange moved on */
        struct mcp_http_session *sessions;
        unsigned n;
        unsigned *held;          /* sessions per principal (the last: the unnamed) */
        size_t n_principals;
        bool stopping;
};

/* The count of WHO's sessions (h->lock held). */
static unsigned *held_by(struct mcp_http *h, int who)
{
        return &h->held[who >= 0 && (size_t)who < h->n_principals ? (size_t)who : h->n_principals];
}

int mcp_http_init(struct server *s, corral_error **ret_err)
{
        struct mcp_http *h = calloc(1, sizeof(*h));
        if (h == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the server");
        pthread_mutex_init(&h->lock, NULL);
        pthread_cond_init(&h->changed, NULL);
        corral_jail_config_init(&h->jail);
        s->mcp = h;
        h->n_principals = auth_count(s->auth);
        h->held = calloc(h->n_principals + 1, sizeof(*h->held));
        if (h->held == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the server");
        if (corral_jail_config_copy(&h->jail, &s->limits, ret_err) < 0)
                return -1;
        /* The server's step limit is the most a call may ask for; the
         * default is at most what clients wait for. */
        double most = s->limits.timeout_s;
        h->jail.timeout_s = most > 0 && most < MCP_DEFAULT_TIMEOUT_S ? most : MCP_DEFAULT_TIMEOUT_S;
        /* As `corral mcp` does by default: each step reviewed first. */
        h->review = review_policy_new(REVIEW_LEVEL_STANDARD);
        if (h->review == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the server");
        mcp_config_init(&h->cfg);
        h->cfg.jail = &h->jail;
        h->cfg.workspace = NULL;         /* a temporary one per session */
        h->cfg.no_session_host = true;   /* this process's warm pool, as the sandboxes' */
        h->cfg.review = h->review;
        h->cfg.max_timeout_s = most;
        return 0;
}

/* ---- sessions ---- */

static void session_put(struct mcp_http_session *ms)
{
        struct mcp_http *h = ms->h;
        pthread_mutex_lock(&h->lock);
        bool last = --ms->refs == 0;
        pthread_mutex_unlock(&h->lock);
        if (!last)
                return;
        mcp_session_free(ms->core); /* its running call interrupted, its workspace removed */
        free(ms);
}

/* Out of the registry (the registry's reference dropped): requests no
 * longer find it, its waiting answers end. */
static void session_end(struct mcp_http_session *ms)
{
        struct mcp_http *h = ms->h;
        bool was = false;
        pthread_mutex_lock(&h->lock);
        if (!ms->ended) {
                ms->ended = was = true;
                for (struct mcp_http_session **p = &h->sessions; *p; p = &(*p)->next)
                        if (*p == ms) {
                                *p = ms->next;
                                break;
                        }
                h->n--;
                (*held_by(h, ms->owner))--;
                pthread_cond_broadcast(&h->changed);
        }
        pthread_mutex_unlock(&h->lock);
        if (was)
                session_put(ms);
}

/* who's session id, with a reference; NULL when there is none (ended,
 * expired, another token's). */
static struct mcp_http_session *session_get(struct mcp_http *h, const char *id, int who)
{
        struct mcp_http_session *found = NULL;
        pthread_mutex_lock(&h->lock);
        for (struct mcp_http_session *ms = h->sessions; ms && !found; ms = ms->next)
                if (ms->owner == who && auth_equal(ms->id, strlen(ms->id), id, strlen(id)))
                        found = ms;
        if (found) {
                found->refs++;
                found->last_ms = monotonic_ms();
        }
        pthread_mutex_unlock(&h->lock);
        return found;
}

/* The session's send function: the message goes to the exchange of its
 * request, if one waits; nothing here blocks on a client. */
static int on_send(void *userdata, json_t *msg, json_t *for_request)
{
        struct mcp_http_session *ms = userdata;
        struct mcp_http *h = ms->h;
        if (for_request == NULL)
                return 0; /* a parse error's answer: the POST answered it already */
        char *id = json_dumps(for_request, JSON_COMPACT | JSON_ENCODE_ANY);
        char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
        bool response = msg && json_object_get(msg, "method") == NULL;
        pthread_mutex_lock(&h->lock);
        struct exchange *x = ms->exchanges;
        while (x && (x->done || id == NULL || strcmp(x->id, id) != 0))
                x = x->next;
        if (x && msg == NULL) {
                x->done = true;
        } else if (x && response) {
                x->response = TAKE_PTR(text);
                x->done = true;
        } else if (x && x->sse && text && !x->gone) {
                /* A notification about the request (progress): an event
                 * of its stream; a JSON answer has no room for it. */
                static const char head[] = "event: message\ndata: ", tail[] = "\n\n";
                size_t n = strlen(text), add = sizeof(head) - 1 + n + sizeof(tail) - 1;
                char *e = realloc(x->events, x->len + add);
                if (e) {
                        memcpy(e + x->len, head, sizeof(head) - 1);
                        memcpy(e + x->len + sizeof(head) - 1, text, n);
                        memcpy(e + x->len + sizeof(head) - 1 + n, tail, sizeof(tail) - 1);
                        x->events = e;
                        x->len += add;
                }
        }
        pthread_cond_broadcast(&h->changed);
        pthread_mutex_unlock(&h->lock);
        free(id);
        free(text);
        return 0;
}

/* ---- answers ---- */

/* A JSON-RPC error as the answer (id NULL: null). */
static enum MHD_Result rpc_error(struct request *rq, unsigned status, json_t *id, int code, const char *fmt, ...)
        CORRAL_PRINTF(5, 6);
static enum MHD_Result rpc_error(struct request *rq, unsigned status, json_t *id, int code, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        cleanup_free char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        return reply_json(rq, status, mcp_error_message(id, code, msg ? msg : "error"));
}

static enum MHD_Result reply_empty(struct request *rq, unsigned status, const char *header, const char *value)
{
        struct MHD_Response *r = http_lib.MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (r && header)
                http_lib.MHD_add_response_header(r, header, value);
        return reply(rq, status, r);
}

/* A JSON body (text taken), with the session's header when session_id. */
static enum MHD_Result reply_text(struct request *rq, char *text, const char *session_id)
{
        struct MHD_Response *r = json_text_response(text);
        if (r == NULL)
                return MHD_NO;
        if (session_id)
                http_lib.MHD_add_response_header(r, "Mcp-Session-Id", session_id);
        return reply(rq, MHD_HTTP_OK, r);
}

/* ---- exchanges ---- */

static void exchange_end(struct exchange *x)
{
        struct mcp_http_session *ms = x->ms;
        struct mcp_http *h = ms->h;
        pthread_mutex_lock(&h->lock);
        for (struct exchange **p = &ms->exchanges; *p; p = &(*p)->next)
                if (*p == x) {
                        *p = x->next;
                        break;
                }
        ms->open--;
        ms->last_ms = monotonic_ms();
        pthread_mutex_unlock(&h->lock);
        free(x->id);
        free(x->events);
        free(x->response);
        free(x);
        session_put(ms);
}

/* The stream's thread: events as they come, then the response; or the
 * end, when the client hung up, the session ended or the server stops. */
static void exchange_run(struct body_stream *bs, void *ud)
{
        struct exchange *x = ud;
        struct mcp_http *h = x->ms->h;
        pthread_mutex_lock(&h->lock);
        for (;;) {
                size_t n = x->len;
                char *events = n ? TAKE_PTR(x->events) : NULL;
                x->len = 0;
                char *response = x->done ? TAKE_PTR(x->response) : NULL;
                bool end = x->done || x->gone || x->ms->ended || h->stopping;
                if (events == NULL && response == NULL && !end) {
                        pthread_cond_wait(&h->changed, &h->lock);
                        continue;
                }
                pthread_mutex_unlock(&h->lock);
                if (events)
                        body_stream_write(bs, events, n);
                free(events);
                if (response) {
                        /* One write: the event, or the JSON body and its newline. */
                        char *out = NULL;
                        int n_out = asprintf(&out, x->sse ? "event: message\ndata: %s\n\n" : "%s\n", response);
                        if (n_out > 0)
                                body_stream_write(bs, out, (size_t)n_out);
                        free(out);
                }
                free(response);
                pthread_mutex_lock(&h->lock);
                if (end)
                        break;
        }
        pthread_mutex_unlock(&h->lock);
}

static void exchange_hangup(void *ud)
{
        struct exchange *x = ud;
        struct mcp_http *h = x->ms->h;
        pthread_mutex_lock(&h->lock);
        x->gone = true;
        pthread_cond_broadcast(&h->changed);
        pthread_mutex_unlock(&h->lock);
}

static void exchange_release(void *ud)
{
        exchange_end(ud);
}

/* A request for ms (the reference taken over): handed to the session,
 * answered at once when the session has (every method but tools/call),
 * else by a stream that waits for the answer.  session_id: the header to
 * send (initialize). */
static enum MHD_Result exchange(struct request *rq, struct mcp_http_session *ms, json_t *id, const char *method,
                                const char *session_id)
{
        struct mcp_http *h = ms->h;
        struct exchange *x = calloc(1, sizeof(*x));
        char *idtext = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
        if (x == NULL || idtext == NULL) {
                free(x);
                free(idtext);
                session_put(ms);
                return MHD_NO;
        }
        x->ms = ms;
        x->id = idtext;
        const char *accept = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
        x->sse = strcmp(method, "tools/call") == 0 && accept && strstr(accept, "text/event-stream");
        pthread_mutex_lock(&h->lock);
        x->next = ms->exchanges;
        ms->exchanges = x;
        ms->open++;
        pthread_mutex_unlock(&h->lock);
        mcp_session_receive(ms->core, rq->body, rq->len);
        pthread_mutex_lock(&h->lock);
        bool done = x->done;
        char *response = done ? TAKE_PTR(x->response) : NULL;
        pthread_mutex_unlock(&h->lock);
        if (done) {
                /* Answered before the exchange ends (session_id is the
                 * session's); no answer: a request cancelled before it was
                 * made, nothing to say. */
                enum MHD_Result r = response ? reply_text(rq, response, session_id)
                                             : reply_empty(rq, MHD_HTTP_ACCEPTED, NULL, NULL);
                exchange_end(x);
                return r;
        }
        static const struct body_stream_hooks hooks = { exchange_run, exchange_hangup, exchange_release };
        return body_stream_reply(rq, MHD_HTTP_OK, x->sse ? "text/event-stream" : "application/json", &hooks, x);
}

/* initialize: a new session, its id in the answer's Mcp-Session-Id. */
static enum MHD_Result initialize(struct request *rq, json_t *id)
{
        struct server *s = rq->s;
        struct mcp_http *h = s->mcp;
        unsigned cap = s->cfg.max_mcp_sessions, token_cap = s->cfg.max_mcp_sessions_per_token;
        pthread_mutex_lock(&h->lock);
        bool stopping = h->stopping, full = h->n >= cap;
        bool token_full = !full && *held_by(h, rq->who) >= token_cap;
        if (!stopping && !full && !token_full) {
                h->n++; /* reserved */
                (*held_by(h, rq->who))++;
        }
        pthread_mutex_unlock(&h->lock);
        if (stopping || full || token_full)
                count_rejected(s, stopping ? "draining" : full ? "mcp_sessions" : "mcp_sessions_per_token");
        if (stopping)
                return rpc_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, id, RPC_SERVER_ERROR, "the server is shutting down");
        if (full)
                return rpc_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, id, RPC_SERVER_ERROR,
                                 "the server holds its most MCP sessions (%u): try again later, or end one "
                                 "(DELETE /mcp)",
                                 cap);
        /* One token does not take every session from the others. */
        if (token_full)
                return rpc_error(rq, MHD_HTTP_TOO_MANY_REQUESTS, id, RPC_SERVER_ERROR,
                                 "this token holds its most MCP sessions (%u): end one (DELETE /mcp) or let an "
                                 "idle one expire",
                                 token_cap);
        struct mcp_http_session *ms = calloc(1, sizeof(*ms));
        corral_error *err = NULL;
        if (ms) {
                ms->h = h;
                ms->owner = rq->who;
                ms->refs = 2; /* the registry's and this request's */
                ms->last_ms = monotonic_ms();
        }
        if (ms == NULL || auth_random_hex(ms->id, 32) < 0 ||
            mcp_session_new(&h->cfg, on_send, ms, &ms->core, &err) < 0) {
                pthread_mutex_lock(&h->lock);
                h->n--;
                (*held_by(h, rq->who))--;
                pthread_mutex_unlock(&h->lock);
                free(ms);
                enum MHD_Result r = rpc_error(rq, 500, id, RPC_SERVER_ERROR, "cannot start an MCP session: %s",
                                              err ? err->msg : "out of memory");
                corral_error_free(err);
                return r;
        }
        pthread_mutex_lock(&h->lock);
        stopping = h->stopping;
        if (!stopping) {
                ms->next = h->sessions;
                h->sessions = ms;
        } else {
                h->n--;
                (*held_by(h, rq->who))--;
                ms->ended = true;
                ms->refs = 1;
        }
        pthread_mutex_unlock(&h->lock);
        if (stopping) {
                session_put(ms);
                return rpc_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, id, RPC_SERVER_ERROR, "the server is shutting down");
        }
        sandboxes_expiry_moved(s); /* the expiry thread may sleep longer than its idle time */
        return exchange(rq, ms, id, "initialize", ms->id);
}

static enum MHD_Result post_message(struct request *rq, struct mcp_http *h, json_t *msg);

static enum MHD_Result post(struct request *rq)
{
        struct mcp_http *h = rq->s->mcp;
        json_error_t je;
        json_t *msg = rq->len ? json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, &je) : NULL;
        if (msg == NULL)
                return rpc_error(rq, MHD_HTTP_BAD_REQUEST, NULL, MCP_RPC_PARSE_ERROR, "Parse error: %s",
                                 rq->len ? je.text : "the body is empty");
        enum MHD_Result r = post_message(rq, h, msg);
        json_decref(msg);
        return r;
}

static enum MHD_Result post_message(struct request *rq, struct mcp_http *h, json_t *msg)
{
        json_t *id = json_object_get(msg, "id");
        const char *method = json_string_value(json_object_get(msg, "method"));
        const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
        bool valid_id = id == NULL || json_is_string(id) || json_is_integer(id);
        if (json_is_array(msg))
                return rpc_error(rq, MHD_HTTP_BAD_REQUEST, NULL, MCP_RPC_INVALID_REQUEST,
                                 "Invalid Request: batches are not supported");
        if (!json_is_object(msg) || version == NULL || strcmp(version, "2.0") != 0 || !valid_id)
                return rpc_error(rq, MHD_HTTP_BAD_REQUEST, valid_id ? id : NULL, MCP_RPC_INVALID_REQUEST,
                                 "Invalid Request: not a JSON-RPC 2.0 message");
        bool request = method && id;
        if (request && strcmp(method, "initialize") == 0)
                return initialize(rq, id);
        const char *sid = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Mcp-Session-Id");
        if (sid == NULL) {
                /* server/discover, the probe of clients trying the
                 * 2026-07-28 revision, is not served: they fall back to
                 * initialize. */
                if (request && strcmp(method, "server/discover") == 0)
                        return rpc_error(rq, MHD_HTTP_BAD_REQUEST, id, MCP_RPC_METHOD_NOT_FOUND, "Method not found");
                return rpc_error(rq, MHD_HTTP_BAD_REQUEST, request ? id : NULL, MCP_RPC_INVALID_REQUEST,
                                 "Bad Request: an Mcp-Session-Id header is needed (initialize first)");
        }
        const char *pv = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "MCP-Protocol-Version");
        if (pv && !mcp_protocol_supported(pv))
                return rpc_error(rq, MHD_HTTP_BAD_REQUEST, request ? id : NULL, MCP_RPC_INVALID_REQUEST,
                                 "Bad Request: unsupported MCP-Protocol-Version '%.64s' (supported: 2025-11-25, "
                                 "2025-06-18, 2025-03-26, 2024-11-05)",
                                 pv);
        struct mcp_http_session *ms = session_get(h, sid, rq->who);
        if (ms == NULL)
                return rpc_error(rq, MHD_HTTP_NOT_FOUND, request ? id : NULL, RPC_SESSION_NOT_FOUND,
                                 "Session not found: it ended or expired (initialize a new one)");
        if (!request) {
                /* A notification (notifications/cancelled stops its call
                 * here), or a response to a request we never send. */
                mcp_session_receive(ms->core, rq->body, rq->len);
                pthread_mutex_lock(&h->lock);
                ms->last_ms = monotonic_ms();
                pthread_mutex_unlock(&h->lock);
                session_put(ms);
                return reply_empty(rq, MHD_HTTP_ACCEPTED, NULL, NULL);
        }
        return exchange(rq, ms, id, method, NULL);
}

enum MHD_Result mcp_http_route(struct request *rq, const char *method)
{
        if (strcmp(method, "POST") == 0)
                return post(rq);
        if (strcmp(method, "DELETE") != 0) {
                /* No stream of the server's own (GET): allowed by the
                 * transport, which then sends everything in POSTs' answers. */
                struct MHD_Response *r = http_lib.MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
                if (r)
                        http_lib.MHD_add_response_header(r, "Allow", "POST, DELETE");
                return reply(rq, MHD_HTTP_METHOD_NOT_ALLOWED, r);
        }
        const char *sid = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Mcp-Session-Id");
        if (sid == NULL)
                return reply_error(rq, MHD_HTTP_BAD_REQUEST, "usage", "DELETE /mcp needs the Mcp-Session-Id header");
        struct mcp_http_session *ms = session_get(rq->s->mcp, sid, rq->who);
        if (ms == NULL)
                return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no such MCP session: it ended or expired");
        session_end(ms);
        session_put(ms); /* the last: the session's Python and workspace go now, unless a stream still ends */
        return reply_empty(rq, MHD_HTTP_OK, NULL, NULL);
}

/* ---- expiry and the end ---- */

double mcp_http_expire(struct server *s)
{
        struct mcp_http *h = s->mcp;
        if (h == NULL || s->cfg.mcp_idle_timeout_s <= 0)
                return INFINITY;
        double idle_ms = s->cfg.mcp_idle_timeout_s * 1000, now = monotonic_ms(), next = INFINITY;
        struct mcp_http_session *idle[32];
        size_t n = 0;
        pthread_mutex_lock(&h->lock);
        for (struct mcp_http_session *ms = h->sessions; ms; ms = ms->next) {
                if (ms->open) {
                        /* A request is being answered: not idle; looked at
                         * again an idle time from now at the latest. */
                        next = min_double(next, now + idle_ms);
                        continue;
                }
                double at = ms->last_ms + idle_ms;
                if (at <= now && n < ARRAY_SIZE(idle)) {
                        ms->refs++;
                        idle[n++] = ms;
                } else {
                        next = min_double(next, at <= now ? now : at);
                }
        }
        pthread_mutex_unlock(&h->lock);
        for (size_t i = 0; i < n; i++) {
                session_end(idle[i]);
                session_put(idle[i]);
        }
        return next;
}

void mcp_http_end_all(struct server *s)
{
        struct mcp_http *h = s->mcp;
        if (h == NULL)
                return;
        pthread_mutex_lock(&h->lock);
        h->stopping = true;
        struct mcp_http_session *all = TAKE_PTR(h->sessions);
        for (struct mcp_http_session *ms = all; ms; ms = ms->next) {
                ms->ended = true;
                h->n--;
                (*held_by(h, ms->owner))--;
        }
        pthread_cond_broadcast(&h->changed);
        pthread_mutex_unlock(&h->lock);
        while (all) {
                struct mcp_http_session *next = all->next;
                session_put(all); /* the registry's reference */
                all = next;
        }
}

unsigned mcp_http_count(struct server *s)
{
        struct mcp_http *h = s->mcp;
        if (h == NULL)
                return 0;
        pthread_mutex_lock(&h->lock);
        unsigned n = h->n;
        pthread_mutex_unlock(&h->lock);
        return n;
}

void mcp_http_free(struct server *s)
{
        struct mcp_http *h = s->mcp;
        if (h == NULL)
                return;
        mcp_http_end_all(s);
        review_policy_free(h->review);
        corral_jail_config_release(&h->jail);
        pthread_cond_destroy(&h->changed);
        pthread_mutex_destroy(&h->lock);
        free(h->held);
        free(h);
        s->mcp = NULL;
}
