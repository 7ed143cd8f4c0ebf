/* server.h: `corral serve`, sandboxes over HTTP (docs/api.md).
 *
 * A server is a front end of the engine: it holds a session host in
 * process (session/host.h) and answers the API over libmicrohttpd, one
 * thread per connection (a step blocks its connection's thread, and a
 * streamed one a thread of its own that feeds the response).  It never
 * calls the CLI.  Every request but /healthz and /readyz carries a token
 * (auth.h); each token sees its own sandboxes only.  /mcp is MCP's
 * Streamable HTTP transport (docs/mcp.md) over the same gate.
 *
 *   server_config_init(&cfg);  ...
 *   server_start(&cfg, &srv, &err);        listening
 *   server_url(srv);                       where, with the token to log in
 *   server_shutdown(srv, grace_s);         stop accepting, finish or cancel steps
 *   server_free(srv);                      every sandbox gone
 *
 * Threads: server_shutdown() and server_url() may be called from any
 * thread; the rest from the one that started the server.
 */
#ifndef CORRAL_SERVER_H
#define CORRAL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corral/jail.h>
#include <jansson.h>

#include "../lib/util.h"

struct server_config {
        const char *listen;       /* "ADDR:PORT" ("[::1]:8080"); port 0 picks one; NULL with socket_path */
        const char *socket_path;  /* a unix socket (made 0700 in its own directory) instead of TCP */
        const char *tokens_file;  /* NULL: a token is made and written to data_dir/token */
        const char *data_dir;     /* the token file; default $XDG_STATE_HOME/corral/serve */
        const char *const *allowed_hosts; /* Host names besides loopback and the listen address; NULL-terminated */
        unsigned max_sandboxes;   /* all principals together (default 64) */
        unsigned max_sandboxes_per_token; /* default 16 */
        unsigned max_execs_per_token;     /* steps running at once (default 8) */
        unsigned max_rate;        /* requests a second per token, bursts of twice that (default 1000) */
        unsigned max_connections; /* default 256 */
        uint64_t max_body;        /* a JSON request (default 1 MiB) */
        uint64_t max_upload;      /* a file's PUT (default 256 MiB, and the sandbox's disk) */
        double request_timeout_s; /* an idle connection is closed after (default 60) */
        double max_lifetime_s;    /* the longest lifetime or idle timeout a sandbox may ask for (default 86400) */
        unsigned max_mcp_sessions; /* MCP sessions at /mcp at once, all tokens together (default 64) */
        unsigned max_mcp_sessions_per_token; /* ... and per token (default 16) */
        double mcp_idle_timeout_s; /* an MCP session unused this long ends (default 1800) */
        unsigned max_runs;        /* agent runs going at once, all tokens together (default 4) */
        unsigned max_runs_per_token; /* ... and per token (default 4) */
        unsigned run_retention;   /* finished runs whose records are kept, newest first (0: all) */
        double run_retention_age_s; /* finished runs older than this are removed (0: never) */
        /* Model endpoints a run's request may name as its base_url besides
         * the server's own ("any": every one); NULL-terminated or NULL.
         * Borrowed for the server's life. */
        const char *const *model_urls;
        /* Each sandbox's defaults, and the most a request may ask for:
         * borrowed for server_start() only. */
        const corral_jail_config *limits;
};
CORRAL_HIDDEN void server_config_init(struct server_config *cfg);

struct server;

CORRAL_HIDDEN int server_start(const struct server_config *cfg, struct server **ret, corral_error **ret_err);
/* "http://127.0.0.1:PORT/" or "unix:PATH"; with the made token, the URL
 * that logs a browser in ("...?token=T"), else without. */
CORRAL_HIDDEN const char *server_url(const struct server *s);
CORRAL_HIDDEN const char *server_token_file(const struct server *s);
/* Stop accepting requests (/readyz says 503), let running steps end for
 * grace_s and running agent runs for run_grace_s (from the same moment),
 * then cancel the rest (a run's record says "cancelled: server stopping")
 * and stop every sandbox.  Returns once nothing is left. */
CORRAL_HIDDEN void server_shutdown(struct server *s, double grace_s, double run_grace_s);
CORRAL_HIDDEN void server_free(struct server *s);

/* Add the check "libmicrohttpd" to a host report's checks (lib/probe.h):
 * whether the libraries a server loads when it starts are there. */
CORRAL_HIDDEN void server_probe(json_t *checks);

#endif
