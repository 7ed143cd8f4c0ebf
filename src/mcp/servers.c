/* servers.c: the config file's MCP servers as tools of the agent
 * (servers.h, docs/mcp.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../agent/toolbox.h"
#include "../model/provider.h"
#include "client.h"
#include "jailed.h"
#include "servers.h"

#define MAX_SERVERS 16
#define NAME_MAX_LEN 32           /* a server's name: the prefix of its tools' names */
#define TOOL_NAME_MAX 64          /* OpenAI's limit on a function's name */
#define DESCRIPTION_MAX 1024      /* of a tool's description, as the model reads it */
#define RESULT_MAX (16u << 10)    /* an observation's text from one call */
#define DEFAULT_START_MS 20000    /* a jailed Node server takes a second or two to answer */
#define DEFAULT_CALL_MS 120000

struct server {
        char *name;
        struct mcp_client *client;
        double call_timeout_s;
        /* a local server's jail, run on a thread of its own */
        corral_jail_config jail;
        bool jail_set;
        pthread_t runner;
        bool running;
        int stop_fd;              /* eventfd: end the jail */
        int fds[3];               /* its stdin, stdout, stderr: the runner's ends */
        corral_error *run_err;
};

struct tool_route {
        char *exposed;            /* SERVER_TOOL */
        const char *tool;         /* the server's name for it (in its client's tools) */
        struct server *server;
};

struct mcp_servers {
        struct server servers[MAX_SERVERS];
        size_t n;
        struct tool_route *routes;
        size_t n_routes;
        json_t *schemas, *describe;
        char *prompt;
        struct agent_tools tools;
};

static const char *const entry_keys[] = { "type", "command", "environment", "enabled", "timeout", "url",
                                          "headers", "jail", "callTimeout", NULL };
static const char *const jail_keys[] = { "allowRead", "allowWrite", "net", "resolve", "secrets", "upstreamCa",
                                          "memory", "pids", "disk", NULL };

/* ---- a local server's jail ---- */

static void *run_jail(void *arg)
{
        struct server *s = arg;
        corral_jail_result res = { 0 };
        if (mcp_jail_run(&s->jail, s->fds[0], s->fds[1], s->fds[2], s->stop_fd, &res, &s->run_err) == 0) {
                /* Why it ended, for a server that ended before it answered. */
                if (res.reason)
                        corral_usage(&s->run_err, "%s (exit status %d)", res.reason, res.exit_code);
                else
                        corral_usage(&s->run_err, "it exited with status %d", res.exit_code);
                corral_jail_result_release(&res);
        }
        /* Its ends closed: the client reads the end of its stdout. */
        for (int i = 0; i < 3; i++) {
                close(s->fds[i]);
                s->fds[i] = -1;
        }
        return NULL;
}

static void server_stop(struct server *s)
{
        mcp_client_close(s->client); /* its stdin closed: a server exits */
        s->client = NULL;
        if (s->running) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += 3;
                if (pthread_timedjoin_np(s->runner, NULL, &until) != 0) {
                        uint64_t one = 1;
                        if (write(s->stop_fd, &one, sizeof(one)) < 0) {
                                /* an eventfd's counter does not overflow from this */
                        }
                        pthread_join(s->runner, NULL);
                }
                s->running = false;
        }
        for (int i = 0; i < 3; i++)
                if (s->fds[i] >= 0)
                        close(s->fds[i]);
        if (s->stop_fd >= 0)
                close(s->stop_fd);
        if (s->jail_set)
                corral_jail_config_release(&s->jail);
        corral_error_free(s->run_err);
        free(s->name);
}

static int config_error(corral_error **err, const char *path, const char *name, const char *fmt, ...)
        CORRAL_PRINTF(4, 5);
static int config_error(corral_error **err, const char *path, const char *name, const char *fmt, ...)
{
        cleanup_free char *what = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&what, fmt, ap) < 0)
                what = NULL;
        va_end(ap);
        return corral_usage(err, "config file '%s': mcp.%s: %s", path, name, what ? what : "invalid");
}

/* The jail of a local server: mcp-jail's defaults, the entry's command,
 * environment, paths, network and limits. */
static int local_jail(struct server *s, const json_t *e, const char *path, corral_error **err)
{
        corral_jail_config *j = &s->jail;
        mcp_jail_config_init(j);
        s->jail_set = true;
        const char *name = s->name;
        json_t *command = json_object_get(e, "command"), *v;
        size_t n = json_array_size(command), i;
        if (!json_is_array(command) || n == 0)
                return config_error(err, path, name, "\"command\" must be the server's command line as an array "
                                                     "of strings, e.g. [\"python3\", \"server.py\"]");
        cleanup_free char **argv = calloc(n + 1, sizeof(*argv));
        if (argv == NULL)
                return corral_fail(err, ENOMEM, "cannot start the MCP servers");
        json_array_foreach(command, i, v) {
                if (!json_is_string(v) || json_string_length(v) == 0)
                        return config_error(err, path, name, "\"command\"[%zu] must be a non-empty string", i);
                argv[i] = (char *)json_string_value(v);
        }
        if (corral_jail_config_set_argv(j, argv, err) < 0)
                return -1;
        const char *key;
        json_object_foreach ((json_t *)json_object_get(e, "environment"), key, v) {
                cleanup_free char *where = NULL, *value = NULL, *assignment = NULL;
                if (!json_is_string(v))
                        return config_error(err, path, name, "environment.%s must be a string", key);
                if (asprintf(&where, "mcp.%s.environment.%s", name, key) < 0 ||
                    provider_config_expand(path, where, json_string_value(v), &value, err) < 0 ||
                    asprintf(&assignment, "%s=%s", key, value) < 0)
                        return *err ? -1 : corral_fail(err, ENOMEM, "cannot start the MCP servers");
                if (corral_jail_config_add_env(j, assignment, err) < 0)
                        return corral_error_prefix(err, "config file '%s': mcp.%s.environment", path, name);
        }
        json_t *jail = json_object_get(e, "jail");
        if (jail && !json_is_object(jail))
                return config_error(err, path, name, "\"jail\" must be an object");
        cleanup_free char *where = NULL;
        if (asprintf(&where, "mcp.%s.jail", name) < 0)
                return corral_fail(err, ENOMEM, "cannot start the MCP servers");
        if (jail && provider_config_check_keys(path, where, jail, jail_keys, err) < 0)
                return -1;
        for (int w = 0; w < 2; w++) {
                const char *k = w ? "allowWrite" : "allowRead";
                json_t *paths = json_object_get(jail, k);
                if (paths && !json_is_array(paths))
                        return config_error(err, path, name, "jail.%s must be an array of host paths", k);
                json_array_foreach(paths, i, v) {
                        const char *p = json_string_value(v);
                        if (p == NULL || p[0] != '/')
                                return config_error(err, path, name, "jail.%s[%zu] must be an absolute host path", k,
                                                    i);
                        if (corral_jail_config_add_bind_at(j, p, p, w == 1, err) < 0)
                                return corral_error_prefix(err, "config file '%s': mcp.%s.jail.%s", path, name, k);
                }
        }
        json_t *net = json_object_get(jail, "net");
        if (net) {
                const char *nv = json_string_value(net);
                if (nv && strcmp(nv, "none") == 0)
                        j->net = CORRAL_NET_NONE;
                else if (nv && strcmp(nv, "host") == 0)
                        j->net = CORRAL_NET_HOST;
                else if (nv && strncmp(nv, "allow=", 6) == 0) {
                        j->net = CORRAL_NET_ALLOW;
                        if (corral_jail_config_add_net_allow(j, nv + 6, err) < 0)
                                return corral_error_prefix(err, "config file '%s': mcp.%s.jail.net", path, name);
                } else
                        return config_error(err, path, name, "jail.net must be \"none\", \"host\" or "
                                                             "\"allow=HOST[:PORT],...\"");
        }
        json_t *resolve = json_object_get(jail, "resolve");
        if (resolve && !json_is_array(resolve))
                return config_error(err, path, name, "jail.resolve must be an array of \"HOST:ADDR\"");
        json_array_foreach(resolve, i, v) {
                if (!json_is_string(v) || corral_jail_config_add_net_resolve(j, json_string_value(v), err) < 0)
                        return *err ? corral_error_prefix(err, "config file '%s': mcp.%s.jail.resolve", path, name)
                                    : config_error(err, path, name, "jail.resolve[%zu] must be \"HOST:ADDR\"", i);
        }
        /* Brokered credentials: "HOST=HEADER:ENV", the value from corral's
         * environment, never written in the file (docs/network.md). */
        json_t *secrets = json_object_get(jail, "secrets");
        if (secrets && !json_is_array(secrets))
                return config_error(err, path, name, "jail.secrets must be an array of \"HOST=HEADER:ENV\"");
        json_array_foreach(secrets, i, v) {
                if (!json_is_string(v) || corral_jail_config_add_net_secret_env(j, json_string_value(v), err) < 0)
                        return *err ? corral_error_prefix(err, "config file '%s': mcp.%s.jail.secrets", path, name)
                                    : config_error(err, path, name, "jail.secrets[%zu] must be \"HOST=HEADER:ENV\"",
                                                   i);
        }
        json_t *uca = json_object_get(jail, "upstreamCa");
        if (uca) {
                const char *u = json_string_value(uca);
                if (u == NULL || u[0] != '/')
                        return config_error(err, path, name, "jail.upstreamCa must be an absolute host path");
                free(j->net_upstream_ca);
                if ((j->net_upstream_ca = strdup(u)) == NULL)
                        return corral_fail(err, ENOMEM, "cannot start the MCP servers");
        }
        static const struct {
                const char *key;
                bool count;
        } sizes[] = { { "memory", false }, { "disk", false }, { "pids", true } };
        for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
                v = json_object_get(jail, sizes[k].key);
                if (v == NULL)
                        continue;
                char text[32];
                if (json_is_integer(v))
                        snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(v));
                else if (json_is_string(v))
                        snprintf(text, sizeof(text), "%.31s", json_string_value(v));
                else
                        return config_error(err, path, name, "jail.%s must be a number or a size such as \"1G\"",
                                            sizes[k].key);
                uint64_t value = 0;
                int r = sizes[k].count ? corral_parse_count(text, &value, err) : corral_parse_size(text, &value, err);
                if (r < 0)
                        return corral_error_prefix(err, "config file '%s': mcp.%s.jail.%s", path, name, sizes[k].key);
                if (strcmp(sizes[k].key, "memory") == 0)
                        j->memory_bytes = value;
                else if (strcmp(sizes[k].key, "disk") == 0)
                        j->disk_bytes = value;
                else
                        j->pids = value;
        }
        if (corral_jail_config_validate(j, err) < 0)
                return corral_error_prefix(err, "config file '%s': mcp.%s", path, name);
        return 0;
}

static int start_local(struct server *s, const json_t *e, const char *path, double timeout_s, corral_error **err)
{
        if (local_jail(s, e, path, err) < 0)
                return -1;
        int in[2], out[2], log[2];
        if (pipe2(in, O_CLOEXEC) < 0)
                return corral_fail(err, errno, "cannot start the MCP server '%s'", s->name);
        if (pipe2(out, O_CLOEXEC) < 0) {
                close(in[0]), close(in[1]);
                return corral_fail(err, errno, "cannot start the MCP server '%s'", s->name);
        }
        if (pipe2(log, O_CLOEXEC) < 0) {
                close(in[0]), close(in[1]), close(out[0]), close(out[1]);
                return corral_fail(err, errno, "cannot start the MCP server '%s'", s->name);
        }
        s->fds[0] = in[0];
        s->fds[1] = out[1];
        s->fds[2] = log[1];
        s->stop_fd = eventfd(0, EFD_CLOEXEC);
        if (s->stop_fd < 0 || pthread_create(&s->runner, NULL, run_jail, s) != 0) {
                close(in[1]), close(out[0]), close(log[0]);
                return corral_fail(err, errno ? errno : ENOMEM, "cannot start the MCP server '%s'", s->name);
        }
        s->running = true;
        if (mcp_client_open_fds(s->name, in[1], out[0], log[0], timeout_s, &s->client, err) == 0)
                return 0;
        /* The jail's own error says more than "it is gone". */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        if (pthread_timedjoin_np(s->runner, NULL, &until) == 0) {
                s->running = false;
                if (s->run_err) {
                        /* "cannot execute 'x': No such file or directory (exit
                         * status 127)", with what it said on stderr. */
                        const char *words = strstr((*err)->msg, "; its last words: ");
                        cleanup_free char *tail = words ? strdup(words) : NULL;
                        corral_error_free(*err);
                        *err = NULL;
                        corral_make_error(err, s->run_err->kind, 0, "%s%s", s->run_err->msg, tail ? tail : "");
                }
        }
        return corral_error_prefix(err, "config file '%s': the MCP server '%s' could not start", path, s->name);
}

static int start_remote(struct server *s, const json_t *e, const char *path, double timeout_s, corral_error **err)
{
        const char *url = json_string_value(json_object_get(e, "url"));
        if (url == NULL || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
                return config_error(err, path, s->name, "a remote server needs \"url\": its http:// or https:// "
                                                        "Streamable HTTP endpoint");
        json_t *hs = json_object_get(e, "headers"), *v;
        if (hs && !json_is_object(hs))
                return config_error(err, path, s->name, "\"headers\" must be an object of header names and values");
        char **headers = calloc(json_object_size(hs) + 1, sizeof(*headers));
        if (headers == NULL)
                return corral_fail(err, ENOMEM, "cannot start the MCP servers");
        const char *key;
        size_t n = 0;
        int r = 0;
        json_object_foreach (hs, key, v) {
                cleanup_free char *where = NULL, *value = NULL;
                if (!json_is_string(v) || strpbrk(key, ":\r\n") || strpbrk(json_string_value(v), "\r\n")) {
                        r = config_error(err, path, s->name, "headers.%s must be a one-line string", key);
                        break;
                }
                if (asprintf(&where, "mcp.%s.headers.%s", s->name, key) < 0 ||
                    provider_config_expand(path, where, json_string_value(v), &value, err) < 0 ||
                    asprintf(&headers[n++], "%s: %s", key, value) < 0) {
                        r = *err ? -1 : corral_fail(err, ENOMEM, "cannot start the MCP servers");
                        break;
                }
        }
        if (r == 0)
                r = mcp_client_open_http(s->name, url, (const char *const *)headers, timeout_s, &s->client, err);
        if (r < 0 && *err && (*err)->kind != CORRAL_ERR_USAGE)
                (*err)->kind = CORRAL_ERR_USAGE;
        if (r < 0)
                corral_error_prefix(err, "config file '%s': the MCP server '%s' could not start", path, s->name);
        for (size_t i = 0; i < n; i++)
                free(headers[i]);
        free(headers);
        return r;
}

/* ---- the tools, as the model sees them ---- */

static bool name_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int add_tools(struct mcp_servers *m, struct server *s, const char *path, corral_error **err)
{
        json_t *tools = mcp_client_tools(s->client), *t;
        size_t i;
        const char *builtin = toolbox_names();
        json_array_foreach(tools, i, t) {
                const char *tool = json_string_value(json_object_get(t, "name"));
                char exposed[TOOL_NAME_MAX + 1];
                int len = snprintf(exposed, sizeof(exposed), "%s_%s", s->name, tool);
                if (len < 0 || (size_t)len >= sizeof(exposed))
                        return corral_usage(err, "config file '%s': the MCP server '%s' has a tool '%.80s' whose "
                                                 "name with the server's is over %d characters: give the server a "
                                                 "shorter name",
                                            path, s->name, tool, TOOL_NAME_MAX);
                for (char *p = exposed; *p; p++)
                        if (!name_char(*p))
                                *p = '_'; /* "files.read" -> "files_read": what function names may hold */
                for (size_t k = 0; k < m->n_routes; k++)
                        if (strcmp(m->routes[k].exposed, exposed) == 0)
                                return corral_usage(err, "config file '%s': the tools '%s' of the MCP server '%s' "
                                                         "and '%s' of '%s' have one name, %s: rename a server",
                                                    path, tool, s->name, m->routes[k].tool, m->routes[k].server->name,
                                                    exposed);
                for (const char *b = builtin; (b = strstr(b, exposed)) != NULL; b++) {
                        size_t el = strlen(exposed);
                        if ((b == builtin || b[-1] == ' ') && (b[el] == ',' || b[el] == '\0'))
                                return corral_usage(err, "config file '%s': the MCP server '%s''s tool '%s' would be "
                                                         "named %s, one of corral's own tools: rename the server",
                                                    path, s->name, tool, exposed);
                }
                struct tool_route *r = reallocarray(m->routes, m->n_routes + 1, sizeof(*r));
                if (r == NULL)
                        return corral_fail(err, ENOMEM, "cannot start the MCP servers");
                m->routes = r;
                r = &m->routes[m->n_routes];
                if ((r->exposed = strdup(exposed)) == NULL)
                        return corral_fail(err, ENOMEM, "cannot start the MCP servers");
                r->tool = tool;
                r->server = s;
                m->n_routes++;
                json_t *schema = json_object_get(t, "inputSchema");
                const char *d = json_string_value(json_object_get(t, "description"));
                cleanup_free char *description = NULL;
                if (asprintf(&description, "%.*s (a tool of the MCP server '%s')", DESCRIPTION_MAX, d ? d : tool,
                             s->name) < 0)
                        return corral_fail(err, ENOMEM, "cannot start the MCP servers");
                json_array_append_new(m->schemas,
                                      json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "function", "function", "name",
                                                exposed, "description", description, "parameters",
                                                json_is_object(schema) ? json_incref(schema)
                                                                       : json_pack("{s:s,s:{}}", "type", "object",
                                                                                   "properties")));
        }
        return 0;
}

/* A CallToolResult as the model reads it: its text blocks, what else it
 * holds named. */
static char *result_text(const json_t *result, bool *ret_error)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (f == NULL)
                return NULL;
        *ret_error = json_is_true(json_object_get(result, "isError"));
        json_t *b;
        size_t i;
        bool text = false;
        json_array_foreach(json_object_get(result, "content"), i, b) {
                const char *type = json_string_value(json_object_get(b, "type"));
                type = type ? type : "";
                if (strcmp(type, "text") == 0) {
                        fprintf(f, "%s%s", i ? "\n" : "", json_string_value(json_object_get(b, "text")) ?: "");
                        text = true;
                } else if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0) {
                        const char *data = json_string_value(json_object_get(b, "data"));
                        fprintf(f, "%s[%s %s, %zu bytes: not shown]", i ? "\n" : "", type,
                                json_string_value(json_object_get(b, "mimeType")) ?: "", data ? strlen(data) * 3 / 4 : 0);
                } else if (strcmp(type, "resource") == 0) {
                        json_t *r = json_object_get(b, "resource");
                        const char *t = json_string_value(json_object_get(r, "text"));
                        fprintf(f, "%s[resource %s]%s%s", i ? "\n" : "",
                                json_string_value(json_object_get(r, "uri")) ?: "", t ? "\n" : "", t ? t : "");
                } else if (strcmp(type, "resource_link") == 0) {
                        fprintf(f, "%s[resource link %s]", i ? "\n" : "",
                                json_string_value(json_object_get(b, "uri")) ?: "");
                }
        }
        json_t *structured = json_object_get(result, "structuredContent");
        if (!text && structured) {
                char *s = json_dumps(structured, JSON_COMPACT);
                fprintf(f, "%s", s ? s : "");
                free(s);
        }
        fclose(f);
        if (out && len > RESULT_MAX) {
                /* Cut on a character's start, not inside one. */
                size_t cut = RESULT_MAX;
                while (cut && ((unsigned char)out[cut] & 0xC0) == 0x80)
                        cut--;
                char *shorter = NULL;
                if (asprintf(&shorter, "%.*s\n[... %zu more bytes cut]", (int)cut, out, len - cut) > 0) {
                        free(out);
                        out = shorter;
                }
        }
        return out;
}

static bool owns(void *userdata, const char *name)
{
        struct mcp_servers *m = userdata;
        for (size_t i = 0; i < m->n_routes; i++)
                if (strcmp(m->routes[i].exposed, name) == 0)
                        return true;
        return false;
}

static void call(void *userdata, const char *name, const char *arguments, int cancel_fd, double deadline_ms,
                 struct tool_result *s)
{
        struct mcp_servers *m = userdata;
        struct tool_route *r = NULL;
        for (size_t i = 0; i < m->n_routes && r == NULL; i++)
                if (strcmp(m->routes[i].exposed, name) == 0)
                        r = &m->routes[i];
        const char *a = arguments && arguments[strspn(arguments, " \t\r\n")] ? arguments : "{}";
        s->args = json_loads(a, JSON_REJECT_DUPLICATES, NULL);
        if (r == NULL || !json_is_object(s->args)) {
                if (asprintf(&s->content, "error: the arguments of %s must be a JSON object", name) < 0)
                        s->content = NULL;
                return;
        }
        double timeout_s = r->server->call_timeout_s;
        if (deadline_ms > 0 && (deadline_ms - monotonic_ms()) / 1000 < timeout_s)
                timeout_s = (deadline_ms - monotonic_ms()) / 1000;
        if (timeout_s < 0.1)
                timeout_s = 0.1;
        json_t *result = NULL;
        corral_error *err = NULL;
        if (mcp_client_call(r->server->client, r->tool, s->args, timeout_s, cancel_fd, &result, &err) < 0) {
                s->cancelled = err->kind == CORRAL_ERR_CANCELLED;
                if (asprintf(&s->content, "error: %s", err->msg) < 0)
                        s->content = NULL;
                corral_error_free(err);
                return;
        }
        bool failed = false;
        cleanup_free char *text = result_text(result, &failed);
        json_decref(result);
        s->ok = !failed;
        if (asprintf(&s->content, "%s%s", failed ? "error: " : "", text && *text ? text : "(no output)") < 0)
                s->content = NULL;
}

/* ---- the set ---- */

static int open_all(struct mcp_servers *m, const json_t *section, const char *path, corral_error **err)
{
        const char *name;
        json_t *e;
        json_object_foreach ((json_t *)section, name, e) {
                if (!json_is_object(e))
                        return config_error(err, path, name, "must be an object");
                cleanup_free char *where = NULL;
                if (asprintf(&where, "mcp.%s", name) < 0)
                        return corral_fail(err, ENOMEM, "cannot start the MCP servers");
                if (provider_config_check_keys(path, where, e, entry_keys, err) < 0)
                        return -1;
                json_t *enabled = json_object_get(e, "enabled");
                if (enabled && !json_is_boolean(enabled))
                        return config_error(err, path, name, "\"enabled\" must be true or false");
                if (json_is_false(enabled))
                        continue;
                size_t nl = strlen(name), k = 0;
                while (k < nl && name_char(name[k]))
                        k++;
                if (nl == 0 || nl > NAME_MAX_LEN || k != nl)
                        return corral_usage(err, "config file '%s': the MCP server name '%.64s' must be 1 to %d "
                                                 "letters, digits, '_' or '-' (it prefixes its tools' names)",
                                            path, name, NAME_MAX_LEN);
                if (m->n == MAX_SERVERS)
                        return corral_usage(err, "config file '%s': more than %d MCP servers are enabled", path,
                                            MAX_SERVERS);
                double ms[2] = { DEFAULT_START_MS, DEFAULT_CALL_MS };
                const char *keys[2] = { "timeout", "callTimeout" };
                for (int t = 0; t < 2; t++) {
                        json_t *v = json_object_get(e, keys[t]);
                        if (v && !(json_is_number(v) && json_number_value(v) > 0 && json_number_value(v) <= 86400000))
                                return config_error(err, path, name, "\"%s\" must be milliseconds, above 0", keys[t]);
                        if (v)
                                ms[t] = json_number_value(v);
                }
                struct server *s = &m->servers[m->n++];
                s->fds[0] = s->fds[1] = s->fds[2] = s->stop_fd = -1;
                s->call_timeout_s = ms[1] / 1000;
                if ((s->name = strdup(name)) == NULL)
                        return corral_fail(err, ENOMEM, "cannot start the MCP servers");
                const char *type = json_string_value(json_object_get(e, "type"));
                int r;
                if (type && strcmp(type, "local") == 0)
                        r = start_local(s, e, path, ms[0] / 1000, err);
                else if (type && strcmp(type, "remote") == 0)
                        r = start_remote(s, e, path, ms[0] / 1000, err);
                else
                        r = config_error(err, path, name, "\"type\" must be \"local\" (a command) or \"remote\" (a "
                                                          "URL)");
                if (r < 0 || add_tools(m, s, path, err) < 0)
                        return -1;
        }
        return 0;
}

int mcp_servers_open(const json_t *doc, const char *path, struct mcp_servers **ret, corral_error **err)
{
        *ret = NULL;
        json_t *section = json_object_get(doc, "mcp");
        if (section == NULL)
                return 0;
        if (!json_is_object(section))
                return corral_usage(err, "config file '%s': \"mcp\" must be an object of MCP servers by name", path);
        struct mcp_servers *m = calloc(1, sizeof(*m));
        if (m == NULL || (m->schemas = json_array()) == NULL) {
                free(m);
                return corral_fail(err, ENOMEM, "cannot start the MCP servers");
        }
        if (open_all(m, section, path, err) < 0) {
                mcp_servers_close(m);
                return -1;
        }
        if (m->n == 0) {
                mcp_servers_close(m);
                return 0;
        }
        /* What the prompt and the trace say of them. */
        char *p = NULL;
        size_t plen = 0;
        FILE *f = open_memstream(&p, &plen);
        m->describe = json_array();
        for (size_t i = 0; f && i < m->n; i++) {
                json_t *names = json_array();
                size_t count = 0;
                for (size_t k = 0; k < m->n_routes; k++)
                        if (m->routes[k].server == &m->servers[i]) {
                                json_array_append_new(names, json_string(m->routes[k].exposed));
                                count++;
                        }
                fprintf(f, "- the MCP server '%s': %zu tool%s, named %s_...\n", m->servers[i].name, count,
                        count == 1 ? "" : "s", m->servers[i].name);
                json_array_append_new(m->describe, json_pack("{s:s, s:b, s:o}", "server", m->servers[i].name,
                                                             "jailed", m->servers[i].jail_set, "tools", names));
        }
        if (f) {
                fprintf(f, "They run outside this sandbox's files: call them for what they offer, not for the "
                           "workspace's files.\n");
                fclose(f);
        }
        m->prompt = p;
        m->tools = (struct agent_tools){ .schemas = m->schemas, .prompt = m->prompt, .describe = m->describe,
                                         .owns = owns, .call = call, .userdata = m };
        *ret = m;
        return 0;
}

const struct agent_tools *mcp_servers_tools(struct mcp_servers *m)
{
        return m ? &m->tools : NULL;
}

size_t mcp_servers_count(const struct mcp_servers *m, size_t *ret_tools)
{
        if (ret_tools)
                *ret_tools = m ? m->n_routes : 0;
        return m ? m->n : 0;
}

void mcp_servers_close(struct mcp_servers *m)
{
        if (m == NULL)
                return;
        for (size_t i = 0; i < m->n; i++)
                server_stop(&m->servers[i]);
        for (size_t i = 0; i < m->n_routes; i++)
                free(m->routes[i].exposed);
        free(m->routes);
        json_decref(m->schemas);
        json_decref(m->describe);
        free(m->prompt);
        free(m);
}
