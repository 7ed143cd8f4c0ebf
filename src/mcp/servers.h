/* servers.h: the MCP servers of the config file as tools of corral run's
 * agent (docs/mcp.md, "MCP tools for corral run").
 *
 * The config file's "mcp" section is opencode.json's, so that a section
 * written for OpenCode works here as it is:
 *   "mcp": {
 *     "notes": {"type": "local", "command": ["python3", "/opt/notes/server.py"],
 *               "environment": {"NOTES_TOKEN": "{env:NOTES_TOKEN}"},
 *               "jail": {"allowRead": ["/opt/notes"], "net": "none"}},
 *     "search": {"type": "remote", "url": "http://127.0.0.1:9000/mcp",
 *                "headers": {"Authorization": "Bearer {env:SEARCH_TOKEN}"}}
 *   }
 * A local (stdio) server always runs in a jail of its own, as corral
 * mcp-jail runs one (mcp/jailed.h): only the paths of "jail" are visible,
 * no network unless "net" says "host", no environment but "environment".
 * A server that should run outside any jail is run by its owner as an
 * HTTP server and named by its URL.
 *
 * Each server's tools are offered to the model as SERVER_TOOL beside the
 * built-in ones (a name taken twice is an error naming both); a call is
 * routed to its server, its result becomes the observation (text; images
 * and resources named, not inlined) and the trace's tool events.
 */
#ifndef CORRAL_MCP_SERVERS_H
#define CORRAL_MCP_SERVERS_H

#include <jansson.h>

#include "../agent/agent.h"

struct mcp_servers;

/* Start the enabled servers of the config document's "mcp" section (doc
 * and path from provider_config_load(); none or no section: *ret NULL and
 * 0) and list their tools.  A server that cannot start is an error naming
 * it, with what it said on stderr; nothing stays running. */
CORRAL_HIDDEN int mcp_servers_open(const json_t *doc, const char *path, struct mcp_servers **ret,
                                   corral_error **ret_err);
/* Their tools, for agent_config.tools (valid while the servers are open). */
CORRAL_HIDDEN const struct agent_tools *mcp_servers_tools(struct mcp_servers *s);
/* How many servers and tools, for a front end's summary. */
CORRAL_HIDDEN size_t mcp_servers_count(const struct mcp_servers *s, size_t *ret_tools);
/* Stop them all (each asked to exit by closing its stdin, then ended). */
CORRAL_HIDDEN void mcp_servers_close(struct mcp_servers *s);

#endif
