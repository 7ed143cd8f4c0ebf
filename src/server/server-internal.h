/* server-internal.h: what server.c (HTTP and the gate), sandbox.c (the
 * sandboxes each token owns), routes.c (the API's answers) and the other
 * protocols' files (e2b.c, mcp-http.c) share.
 * Internal to src/server/. */
#ifndef CORRAL_SERVER_INTERNAL_H
#define CORRAL_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <jansson.h>

#include "../session/host.h"
#include "../workspace/workspace.h"
#include "auth.h"
#include "http-dl.h"
#include "metrics.h"
#include "server.h"

struct sandbox {
        struct sandbox *next;
        char id[SESSION_ID_LEN + 1];
        int owner;               /* the principal (auth.h) */
        json_t *metadata;        /* the caller's, at most 4 KiB of JSON */
        json_t *limits;          /* as asked and granted, for GET */
        char *workspace;         /* the host directory (never shown to a caller) */
        uint64_t max_upload;     /* a PUT's cap: the server's and the sandbox's disk */
        double created;          /* CLOCK_REALTIME s */
        int interrupt_fd;        /* eventfd: POST .../interrupt */
        bool stepping;           /* a step of ours runs */
        /* Paused: the session stopped, its workspace in archive (in the
         * server's work directory), restarted from it by resume with the
         * same configuration. */
        corral_jail_config cfg;
        struct session_options opt;
        bool warm_asked;
        bool pausing, paused;
        char *archive;
        double paused_at;
        unsigned refs;           /* the registry's and each request's; under the server's lock */
        struct e2b_sandbox *e2b; /* made by E2B's API (e2b.h), or NULL */
        atomic_bool session_ended; /* its session has ended (killed, expired, paused): its commands too */
};

struct server {
        struct server_config cfg;
        corral_jail_config limits;
        struct auth *auth;
        const char *token;       /* the made one, or NULL */
        char *token_file;
        char *url;
        char **hosts;            /* Host names accepted (lowercase, no port) */
        bool unix_socket;
        char *socket_path, *socket_dir;
        int listen_fd;
        struct MHD_Daemon *mhd;
        struct session_host *host;
        struct metrics *metrics;
        char *data_dir;          /* resolved: masked in what runs' events say (runs.c) */
        char *data_dir_json;     /* the same as it stands inside a JSON string (escaped, no quotes) */
        char *work_dir;          /* ours alone (0700, flock-held): paused archives, tar transfers */
        int work_lock;

        pthread_mutex_t lock;    /* the fields below */
        pthread_cond_t changed;  /* steps ended */
        struct sandbox *sandboxes;
        unsigned n_sandboxes;
        unsigned *sandboxes_of; /* per principal, paused ones too */
        unsigned *steps_of;     /* per principal */
        double *bucket, *bucket_ms; /* per principal: request tokens left, when last filled */
        unsigned steps;
        unsigned streams;        /* streamed answers not yet sent whole, WebSockets open */
        atomic_bool draining;    /* no new step: steps end within the grace */
        atomic_bool stopping;    /* steps cancelled: WebSockets close */
        int stop_fd;             /* eventfd, readable once stopping */
        pthread_t expirer;       /* ends sandboxes at their idle timeout or lifetime */
        bool expirer_started;
        int expire_wake_fd;      /* eventfd: a deadline moved */
        struct mcp_http *mcp;    /* MCP's sessions at /mcp (mcp-http.c) */
        struct runs *runs;       /* agent runs at /v1/runs (runs.c) */
};

struct mcp_http;

/* A body without a length found over its cap is read on and dropped for
 * up to this many bytes more, then its connection is closed. */
#define BODY_DRAIN_MAX (16u << 20)

/* One request: the connection's state from its headers to the answer. */
struct request {
        struct server *s;
        struct MHD_Connection *conn;
        int who;                 /* principal, -1 before the gate */
        enum { REPLY_CORRAL, REPLY_E2B, REPLY_CONNECT } shape; /* of its errors (e2b.h) */
        struct sandbox *e2b_sb;  /* an E2B call's sandbox (its header named it), with a reference */
        struct e2b_upload *e2b_up; /* an E2B file upload */
        char *body;              /* a JSON body (NUL-terminated) */
        size_t len, cap;
        bool too_large;
        uint64_t dropped;        /* bytes read past the cap, to answer 413 at the body's end */
        struct ws_upload up;     /* a PUT of a file */
        bool uploading;
        int tar_fd;              /* a tar upload's temporary file, or -1 */
        char *tar_path;
        uint64_t tar_len;
        struct sandbox *upload_sb;
        int upload_status;       /* an upload's early error (0: none) */
        corral_error *upload_err;
        double started_ms;
};

/* The OpenAPI 3.1 description of the API (openapi.json, embedded). */
extern const char server_openapi[];

/* ---- the web view (web.c, docs/webview.md) ---- */
/* One file of the page, compiled in (scripts/embed-files.py). */
struct web_file {
        const char *name;        /* "index.html", "app.js", ...; NULL ends the table */
        const char *type;        /* its Content-Type */
        const unsigned char *data;
        size_t len;
};
extern const struct web_file web_files[];
/* Whether GET path is the web view's: "/" asked for as HTML, or "/ui/NAME". */
bool web_claims(struct request *rq, const char *method, const char *path);
/* The page or one of its files, with the Content-Security-Policy. */
enum MHD_Result web_route(struct request *rq, const char *path);

/* ---- answers (server.c) ---- */
/* A JSON answer of text (taken, a newline added), or NULL. */
struct MHD_Response *json_text_response(char *text);
enum MHD_Result reply_json(struct request *rq, unsigned status, json_t *body);     /* takes body */
enum MHD_Result reply_error(struct request *rq, unsigned status, const char *kind, const char *fmt, ...)
        CORRAL_PRINTF(4, 5);
/* err's kind as its HTTP status (corral_error_kind_http_status). */
enum MHD_Result reply_corral_error(struct request *rq, const corral_error *err);
/* Connect's name for an HTTP status ("not_found"). */
const char *connect_code(unsigned status);
/* Sets the common headers on r and queues it. */
enum MHD_Result reply(struct request *rq, unsigned status, struct MHD_Response *r);
void count_rejected(struct server *s, const char *reason);

/* ---- sandboxes (sandbox.c) ---- */
int sandboxes_init(struct server *s, corral_error **ret_err);
/* A sandbox's deadline moved (session_host_set_expiry()): look again. */
void sandboxes_expiry_moved(struct server *s);
/* Stop every sandbox (cancelling steps first) and free the registry. */
void sandboxes_end(struct server *s);
/* A sandbox from a POST's body; its description (201). */
int sandbox_create(struct server *s, int who, json_t *body, json_t **ret, corral_error **ret_err);
/* id when who owns it, with a reference (sandbox_put()); NULL with the
 * HTTP status to answer in *ret_status (404, or 403 for another's). */
struct sandbox *sandbox_get(struct server *s, int who, const char *id, unsigned *ret_status);
void sandbox_put(struct server *s, struct sandbox *sb);
json_t *sandbox_describe(struct server *s, struct sandbox *sb);
json_t *sandbox_list(struct server *s, int who);
int sandbox_delete(struct server *s, struct sandbox *sb, corral_error **ret_err);
/* Pause: the workspace archived (after a running step), the session
 * stopped; resume: a session again from the archive, files back, the
 * interpreter's state not.  0, or -1 with err (busy: already so). */
int sandbox_pause(struct server *s, struct sandbox *sb, corral_error **ret_err);
int sandbox_resume(struct server *s, struct sandbox *sb, corral_error **ret_err);
/* Interrupt the sandbox's running step, if any (as POST .../interrupt). */
void sandbox_interrupt(struct sandbox *sb);
/* A request for a paused sandbox's session: -1 with a busy error. */
int sandbox_live(struct server *s, struct sandbox *sb, corral_error **ret_err);
/* A path of the server's own for a temporary file (name: its last part). */
char *server_work_path(struct server *s, const char *name);
/* A step may start for who: false when the token's limit is reached
 * (then answer 429).  step_end() when it has ended. */
bool step_begin(struct server *s, struct sandbox *sb);
void step_end(struct server *s, struct sandbox *sb);

/* A body's "limits" (a profile's keys without host paths) onto cfg, a copy
 * of the server's: each at most the server's (usage error, field "limits"). */
int sandbox_apply_limits(struct server *s, corral_jail_config *cfg, json_t *limits, corral_error **ret_err);

/* Every key of obj one of known[0..n): else a usage error naming the key
 * ("'PREFIXkey' is not WHAT (the list)") and field. */
int fields_known(json_t *obj, const char *const *known, size_t n, const char *prefix, const char *what,
                 const char *field, corral_error **ret_err);

/* ---- steps (routes.c) ---- */
struct step_request {
        char *code;
        size_t len;
        json_t *env;             /* held for lim.env */
        char *context;           /* lim.context's */
        struct session_step_limits lim;
};
/* Free what step_parse() took. */
void step_request_release(struct step_request *sr);
/* A step's fields from a request ({"code", "language", "timeout",
 * "output_limit", "figure_png"}): sr->code is malloc'd. */
int step_parse(json_t *body, struct step_request *sr, corral_error **ret_err);
/* Where a step's output goes while it runs (out may be NULL). */
struct step_ctx {
        struct sandbox *sb;
        void (*out)(void *ud, int stream, const char *data, size_t len);
        void *ud;
};
/* Run the step on this thread (step_begin() done; the sandbox's
 * interrupt interrupts it).  0 with *ret_result (host paths taken out),
 * -1 with err. */
int step_run(struct server *s, struct sandbox *sb, struct step_request *sr, struct step_ctx *ctx,
             json_t **ret_result, corral_error **ret_err);

/* ---- the API (routes.c) ---- */
enum MHD_Result route_api(struct request *rq, const char *method, const char *path);
/* A PUT of a file: set up at the request's first call (1: uploading, 0:
 * not an upload, -1 answered an error early). */
int route_upload_begin(struct request *rq, const char *method, const char *path);

/* ---- answers written as they go (stream.c) ---- */
struct body_stream;
struct body_stream_hooks {
        /* On a thread of its own: writes the body; it ends when run returns. */
        void (*run)(struct body_stream *bs, void *ud);
        /* The client hung up before the end (libmicrohttpd's thread): make
         * run return soon.  May be NULL. */
        void (*hangup)(void *ud);
        /* After run has returned (or never ran: the reply failed). */
        void (*release)(void *ud);
};
/* Answer status with a body of content_type that hooks->run writes.
 * Takes ud: release is called in every case. */
enum MHD_Result body_stream_reply(struct request *rq, unsigned status, const char *content_type,
                                  const struct body_stream_hooks *hooks, void *ud);
void body_stream_write(struct body_stream *bs, const void *data, size_t len);
/* The client has hung up: nothing written reaches it any more. */
bool body_stream_gone(struct body_stream *bs);
/* Bytes written and not yet taken by the client. */
size_t body_stream_pending(struct body_stream *bs);

/* ---- MCP's Streamable HTTP transport at /mcp (mcp-http.c) ---- */
int mcp_http_init(struct server *s, corral_error **ret_err);
/* POST, DELETE (and GET, refused) /mcp, past the gate. */
enum MHD_Result mcp_http_route(struct request *rq, const char *method);
/* End the sessions idle for the server's MCP idle time; the next such
 * deadline (CLOCK_MONOTONIC ms; INFINITY: none).  The expiry thread's. */
double mcp_http_expire(struct server *s);
/* Sessions open now. */
unsigned mcp_http_count(struct server *s);
/* Every session ended (running calls interrupted, waiting answers ended),
 * no new one; mcp_http_free() once no request is left. */
void mcp_http_end_all(struct server *s);
void mcp_http_free(struct server *s);

/* ---- agent runs (runs.c) ---- */
struct runs;
/* The registry, with the runs recorded under DATA/runs (a run that was
 * going when an earlier server died is listed as "interrupted"). */
int runs_init(struct server *s, const char *data_dir, corral_error **ret_err);
/* /v1/runs and below, past the gate. */
enum MHD_Result runs_route(struct request *rq, const char *method, const char *path);
/* Gauges for /metrics (corral_runs by status). */
void runs_metrics(struct server *s);
/* Remove the finished runs past the retention (count, age) with their
 * records. */
void runs_prune(struct server *s);
/* Wait up to wait_s for the running runs to end. */
void runs_wait(struct server *s, double wait_s);
/* Cancel every run ("cancelled: server stopping") and wait for their
 * threads; runs_free() after. */
void runs_end(struct server *s);
void runs_free(struct server *s);

/* ---- WebSocket (websocket.c) ---- */
/* GET /v1/sandboxes/{id}/ws: the upgrade, or an error answer.  Takes the
 * reference on sb. */
enum MHD_Result websocket_open(struct request *rq, struct sandbox *sb);
/* An upgraded connection's socket, for wslay's callbacks: the first member
 * of the struct given to wslay as its user_data. */
struct ws_io {
        int sock;                /* non-blocking use only */
        const char *extra;       /* bytes libmicrohttpd read past the request */
        size_t n_extra;
};
/* wslay's recv and send callbacks over a struct ws_io (user_data). */
ssize_t ws_io_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user_data);
ssize_t ws_io_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *user_data);
struct ws_upgrade_hooks {
        /* On the connection's thread once upgraded: the connection is
         * closed when it returns. */
        void (*run)(void *ud, const struct ws_io *io);
        /* After run, or instead of it (the handshake was not one). */
        void (*release)(void *ud);
};
/* The request asks for a WebSocket (Upgrade: websocket). */
bool websocket_requested(struct request *rq);
/* Answer the handshake (101; a 400 when the headers are not one) and hand
 * the connection to hooks->run.  Takes ud: release is called in every case.
 * The connection counts in s->streams while it is open. */
enum MHD_Result websocket_upgrade(struct request *rq, const struct ws_upgrade_hooks *hooks, void *ud);

#endif
