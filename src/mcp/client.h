/* client.h: corral's agent's side of MCP (docs/mcp.md, "MCP tools for
 * corral run"): a client of one MCP server, over the server's stdin and
 * stdout (newline-delimited JSON-RPC; servers.c starts such a server in a
 * jail of its own) or over Streamable HTTP (a URL, by libcurl).
 *
 * Opening a client runs the initialize handshake (protocol 2025-11-25, or
 * the earlier revision the server answers with) and lists the server's
 * tools; a client then calls tools, one call at a time (calls from other
 * threads wait), each with a time limit and a cancel fd: a call given up
 * is cancelled at the server (notifications/cancelled).  Requests the
 * server makes of the client (ping; roots, sampling and elicitation, which
 * corral does not offer) are answered.
 *
 * Nothing from the server is trusted: lines over a cap end the connection,
 * results are JSON checked for shape, and what the model and the trace get
 * of them is text made by servers.c.
 *
 * Internal to src/mcp/ (servers.c).
 */
#ifndef CORRAL_MCP_CLIENT_H
#define CORRAL_MCP_CLIENT_H

#include <jansson.h>

#include "../lib/util.h"

struct mcp_client;

/* A client over a server's stdio: to_server is its stdin, from_server its
 * stdout, log_fd (-1: none) its stderr, whose last KiB says why a server
 * that failed did (mcp_client_log_tail).  The fds are the client's from
 * here on, even on failure.  name names the server in messages;
 * timeout_s bounds the handshake. */
CORRAL_HIDDEN int mcp_client_open_fds(const char *name, int to_server, int from_server, int log_fd, double timeout_s,
                                      struct mcp_client **ret, corral_error **ret_err);

/* A client of a Streamable HTTP endpoint: headers are "Name: value" lines
 * sent with every request (NULL-terminated, may be NULL). */
CORRAL_HIDDEN int mcp_client_open_http(const char *name, const char *url, const char *const *headers,
                                       double timeout_s, struct mcp_client **ret, corral_error **ret_err);

/* The server's tools (tools/list's array, every page; borrowed). */
CORRAL_HIDDEN json_t *mcp_client_tools(const struct mcp_client *c);

/* tools/call: *ret_result is the server's CallToolResult (an object with a
 * "content" array; "isError" true for a tool's failure).  -1 with err when
 * no result came: the server gone or answering with a JSON-RPC error
 * (usage), the time limit (timeout), cancel_fd readable (cancelled). */
CORRAL_HIDDEN int mcp_client_call(struct mcp_client *c, const char *tool, json_t *arguments, double timeout_s,
                                  int cancel_fd, json_t **ret_result, corral_error **ret_err);

/* What a stdio server last wrote to its stderr (at most 1 KiB, malloc'd),
 * or NULL. */
CORRAL_HIDDEN char *mcp_client_log_tail(struct mcp_client *c);

/* Close the connection (a stdio server's stdin: it exits; an HTTP
 * session: DELETE). */
CORRAL_HIDDEN void mcp_client_close(struct mcp_client *c);

#endif
