/* mcp.h: corral as the sandbox of an MCP client (docs/mcp.md): a Model
 * Context Protocol server over a pair of file descriptors (the CLI gives it
 * stdin and stdout), whose tools are the agent's toolbox (agent/toolbox.h):
 * run_python in one session per connection, run_shell, read_file,
 * write_file, list_files, and reset_session.
 *
 * Protocol revision 2025-11-25 with the initialize handshake (earlier
 * revisions echoed to clients that ask for them); anything before it, as
 * the server/discover probe of clients trying the 2026-07-28 revision, is
 * answered at once with "method not found", and the server goes on.  No
 * jail is set up before the first tool call: clients that start a server
 * as a throwaway probe cost nothing.  Newline-delimited JSON-RPC; only
 * protocol messages are written to out_fd.
 *
 * Threads: mcp_serve() reads on the caller's thread and runs tool calls on
 * one of its own, one at a time, so that notifications/cancelled can stop
 * the running one.
 */
#ifndef CORRAL_MCP_H
#define CORRAL_MCP_H

#include <stdbool.h>

#include <corral/jail.h>

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
};
CORRAL_HIDDEN void mcp_config_init(struct mcp_config *c);

/* Serve one client until in_fd reaches its end (or cancel_fd, if >= 0,
 * becomes readable): 0, or -1 with err when the workspace could not be
 * made. */
CORRAL_HIDDEN int mcp_serve(const struct mcp_config *cfg, int in_fd, int out_fd, int cancel_fd,
                            corral_error **ret_err);

#endif
