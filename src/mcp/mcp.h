/* mcp.h: corral as the sandbox of an MCP client (docs/mcp.md): a Model
 * Context Protocol server whose tools are the agent's toolbox
 * (agent/toolbox.h): run_python in one session per connection, run_shell,
 * read_file, write_file, list_files, and reset_session.  The protocol is a
 * session (mcp_session_*) that a transport feeds with messages and that
 * hands back every message it sends; two transports: stdio over a pair of
 * file descriptors (mcp_serve(): the CLI gives it stdin and stdout), and
 * corral serve's Streamable HTTP (src/server/mcp-http.c).
 *
 * Protocol revision 2025-11-25 with the initialize handshake (earlier
 * revisions echoed to clients that ask for them); anything before it, as
 * the server/discover probe of clients trying the 2026-07-28 revision, is
 * answered at once with "method not found", and the server goes on.  No
 * jail is set up before the first tool call: clients that start a server
 * as a throwaway probe cost nothing.  Newline-delimited JSON-RPC; only
 * protocol messages are written to out_fd.
 *
 * Threads: a session runs tool calls on a thread of its own, one at a time,
 * so that notifications/cancelled can stop the running one, and sends
 * progress from another; mcp_session_receive() may be called from any
 * thread, several at once.
 */
#ifndef CORRAL_MCP_H
#define CORRAL_MCP_H

#include <stdbool.h>

#include <corral/jail.h>
#include <jansson.h>

#include "../lib/util.h"

struct review_policy;

struct mcp_config {
        const corral_jail_config *jail;  /* limits of every step (timeout_s: a step's default); borrowed */
        const char *workspace;           /* a host directory as /workspace; NULL: a temporary one, removed
                                          * at the end */
        bool cold;                       /* the interpreter started afresh, not forked warm */
        bool no_session_host;            /* the session in this process, not the user's session host */
        const struct review_policy *review; /* NULL: no review */
        const char *const *secrets;      /* redacted from what the client reads */
        double max_timeout_s;            /* the most a call's "timeout" may ask for (0: 86400) */
};
CORRAL_HIDDEN void mcp_config_init(struct mcp_config *c);

/* JSON-RPC's error codes. */
enum {
        MCP_RPC_PARSE_ERROR = -32700,
        MCP_RPC_INVALID_REQUEST = -32600,
        MCP_RPC_METHOD_NOT_FOUND = -32601,
        MCP_RPC_INVALID_PARAMS = -32602,
};

/* How a session sends: msg (borrowed) is a response to, or a notification
 * about, request for_request (NULL: none, as a parse error's answer); a
 * NULL msg says that for_request gets no answer (it was cancelled).  Called
 * from the caller of mcp_session_receive() and from the session's threads,
 * never two at once for one request; it must not block for long (a slow
 * client must not hold the calls up).  -1: the peer is gone, the session
 * ends (mcp_session_ended()). */
typedef int (*mcp_send_fn)(void *userdata, json_t *msg, json_t *for_request);

struct mcp_session;

/* A session over cfg (borrowed for its life): threads started, no
 * workspace nor jail before the first tool call. */
CORRAL_HIDDEN int mcp_session_new(const struct mcp_config *cfg, mcp_send_fn send, void *userdata,
                                  struct mcp_session **ret, corral_error **ret_err);
/* One message from the client (JSON text of len bytes).  Requests other
 * than tools/call are answered before it returns; a tools/call is queued
 * for the session's thread (a bad one answered at once with -32602). */
CORRAL_HIDDEN void mcp_session_receive(struct mcp_session *s, const char *msg, size_t len);
/* The transport said its peer is gone. */
CORRAL_HIDDEN bool mcp_session_ended(struct mcp_session *s);
/* End the session: the running call interrupted (its request unanswered),
 * the queued ones dropped, the Python session and a temporary workspace
 * gone; the threads joined.  NULL is fine. */
CORRAL_HIDDEN void mcp_session_free(struct mcp_session *s);

/* A protocol revision served (as an MCP-Protocol-Version header may name). */
CORRAL_HIDDEN bool mcp_protocol_supported(const char *version);
/* {"jsonrpc": "2.0", "id": id (NULL: null), "error": {code, message}}. */
CORRAL_HIDDEN json_t *mcp_error_message(json_t *id, int code, const char *message);

/* The stdio transport: serve one client until in_fd reaches its end (or
 * cancel_fd, if >= 0, becomes readable): newline-delimited messages, each
 * answer one line on out_fd.  0, or -1 with err when the session could not
 * start. */
CORRAL_HIDDEN int mcp_serve(const struct mcp_config *cfg, int in_fd, int out_fd, int cancel_fd,
                            corral_error **ret_err);

#endif
