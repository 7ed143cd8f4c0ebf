/* jailed.h: a third-party stdio MCP server run inside a jail, its stdio
 * proxied (`corral mcp-jail`, docs/mcp.md "Jailed MCP servers").
 *
 * The server is any program speaking MCP on stdin and stdout (Node, Python,
 * a binary).  mcp_jail_run() starts it in a jail, copies the client's bytes
 * into its stdin, writes its stdout to the client as it arrives (unchanged,
 * uncapped, never held in memory) and its stderr beside, and returns when
 * it has exited.  The protocol itself is not parsed: the jail is the
 * boundary, not a filter of messages.
 *
 * Threads: mcp_jail_run() is reentrant: each call owns its fds, one helper
 * thread and its jail; no process-wide state (no signal handlers, no
 * environment, no cwd).  Call it from a thread that lives until it returns
 * (the jail dies with the thread that spawned it).
 */
#ifndef CORRAL_MCP_JAILED_H
#define CORRAL_MCP_JAILED_H

#include <corral/error.h>
#include <corral/jail.h>

/* How long a server may take to exit after its stdin closed before it is
 * stopped (a server normally exits on stdin's end). */
#define MCP_JAIL_EOF_GRACE_S 5

/* The defaults of a jailed server, on top of corral_jail_config_init():
 * no wall-clock limit, streamed output uncapped, memory 1G, an address
 * space of 16G under the rlimit fallback (Node reserves far more than it
 * uses: see docs/mcp.md), 128 processes, stdin piped, no network. */
#define MCP_JAIL_MEMORY (1ull << 30)
#define MCP_JAIL_ADDRESS_SPACE (16ull << 30)
void mcp_jail_config_init(corral_jail_config *cfg);

/* Run the server cfg->argv in a jail of cfg, whose stdin_mode must be
 * CORRAL_STDIN_PIPE (mcp_jail_config_init() sets it).  Bytes read from in_fd go to the
 * server's stdin; in_fd's end closes it, and a server still running
 * MCP_JAIL_EOF_GRACE_S seconds later is stopped.  The server's stdout is
 * written to out_fd as it arrives; if out_fd cannot be written (the client
 * went away) the server is stopped.  Its stderr goes to err_fd, made inert
 * (term_filter) when err_fd is a terminal; err_fd -1 drops it.  cancel_fd
 * (-1: none) readable stops the server; it is watched, not read.  No fd
 * is closed.
 *
 * Returns 0 when the server ran, with ret_result filled (release it):
 * exit_code is its exit status (128+N for signal N); when corral stopped it
 * (cancel_fd, stdin's end, out_fd) limit is CORRAL_LIMIT_CANCELLED and
 * reason says which.  -1 with ret_err when the jail could not be set up
 * (nothing ran). */
int mcp_jail_run(const corral_jail_config *cfg, int in_fd, int out_fd, int err_fd, int cancel_fd,
                 corral_jail_result *ret_result, corral_error **ret_err);

#endif
