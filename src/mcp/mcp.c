/* mcp.c: the MCP server over the agent's toolbox (mcp.h, docs/mcp.md): the
 * protocol's core, a session that reads JSON-RPC messages and hands every
 * message it sends to its transport, and the stdio transport over it
 * (mcp_serve()).  The Streamable HTTP transport is corral serve's
 * (src/server/mcp-http.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <nettle/base64.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../agent/agent.h"
#include "../agent/toolbox.h"
#include "../workspace/workspace.h"
#include "mcp.h"

#define PROTOCOL_LATEST "2025-11-25"
#define LINE_MAX_BYTES (64u << 20) /* a message: code and files up to the tools' own caps */
#define PROGRESS_EVERY_S 5

/* JSON-RPC's codes. */
enum {
        RPC_PARSE_ERROR = MCP_RPC_PARSE_ERROR,
        RPC_INVALID_REQUEST = MCP_RPC_INVALID_REQUEST,
        RPC_METHOD_NOT_FOUND = MCP_RPC_METHOD_NOT_FOUND,
        RPC_INVALID_PARAMS = MCP_RPC_INVALID_PARAMS,
};

static const char *const protocols[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };

/* The tools, as MCP lists them.  run_python and run_shell declare what
 * their structuredContent holds. */
static const char tools_json[] =
        "["
        "{\"name\":\"run_python\",\"title\":\"Run Python\","
        "\"description\":\"Run Python code in a sandbox (no network, no host files) with numpy, pandas, "
        "matplotlib and scipy. State persists between calls; files live in /workspace. The value of the last "
        "expression is returned; matplotlib figures left open come back as images.\","
        "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\",\"description\":"
        "\"the Python code\"},\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":"
        "\"seconds this call may run (default: the server's step limit)\"}},\"required\":[\"code\"]},"
        "\"outputSchema\":{\"$ref\":\"#/$defs/execution\"}},"
        "{\"name\":\"run_shell\",\"title\":\"Run a shell command\","
        "\"description\":\"Run a bash command in a fresh sandbox over the same /workspace (no network, no host "
        "files).\","
        "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"},\"timeout\":"
        "{\"type\":\"number\",\"exclusiveMinimum\":0}},\"required\":[\"command\"]},"
        "\"outputSchema\":{\"$ref\":\"#/$defs/execution\"}},"
        "{\"name\":\"read_file\",\"title\":\"Read a file\","
        "\"description\":\"Read a file of /workspace (a path relative to it, or absolute under it). PNG and JPEG "
        "files come back as images.\","
        "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":"
        "[\"path\"]},\"annotations\":{\"readOnlyHint\":true}},"
        "{\"name\":\"write_file\",\"title\":\"Write a file\","
        "\"description\":\"Write a text file in /workspace (parents are made; an existing file is replaced).\","
        "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":"
        "{\"type\":\"string\"}},\"required\":[\"path\",\"content\"]}},"
        "{\"name\":\"list_files\",\"title\":\"List files\","
        "\"description\":\"List the files of /workspace, or of a directory in it.\","
        "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}},"
        "\"annotations\":{\"readOnlyHint\":true}},"
        "{\"name\":\"reset_session\",\"title\":\"Reset the Python session\","
        "\"description\":\"Start a new Python interpreter: every variable and import is gone; files stay.\","
        "\"inputSchema\":{\"type\":\"object\",\"properties\":{}}}"
        "]";

/* What structuredContent holds for run_python and run_shell (spelt out in
 * each tool: clients do not resolve $ref across tools). */
static const char execution_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"status\":{\"type\":\"string\",\"description\":\"ok, error, timeout, lost, cancelled, rejected\"},"
        "\"exit_code\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]},"
        "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
        "\"value\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]},"
        "\"error\":{\"anyOf\":[{\"type\":\"object\"},{\"type\":\"null\"}]},\"figures\":{\"type\":\"integer\"}},"
        "\"required\":[\"status\",\"stdout\",\"stderr\"]}";

struct call {
        struct call *next;
        json_t *id;
        char *name;
        json_t *args;
        json_t *progress_token;  /* or NULL */
        double started_ms;
        bool cancelled;
};

struct mcp_session {
        const struct mcp_config *cfg;
        mcp_send_fn send;
        void *send_ud;
        pthread_mutex_t lock;    /* the fields below */
        pthread_cond_t changed;
        struct call *queue, *running;
        bool ending;
        int step_cancel_fd;      /* eventfd: the toolbox's cancel fd */
        /* Made at the first tool call. */
        struct workspace *ws;
        corral_jail_config jail; /* cfg->jail's, its time limit each call's */
        bool jail_copied;
        struct agent_config ac;
        struct toolbox *tb;
        json_t *tools;
        char *instructions;      /* for initialize: what the sandbox is, its network included */
        pthread_t work, tick;
};

void mcp_config_init(struct mcp_config *c)
{
        memset(c, 0, sizeof(*c));
}

/* ---- writing ---- */

/* Hand msg (taken) to the transport, as the message of request id (NULL:
 * none).  A transport whose peer is gone ends the session. */
static void send_msg(struct mcp_session *m, json_t *msg, json_t *id)
{
        if (msg == NULL)
                return;
        int rc = m->send(m->send_ud, msg, id);
        json_decref(msg);
        if (rc < 0) {
                /* The client is gone: nothing more to answer. */
                pthread_mutex_lock(&m->lock);
                m->ending = true;
                pthread_cond_broadcast(&m->changed);
                pthread_mutex_unlock(&m->lock);
        }
}

static void send_result(struct mcp_session *m, json_t *id, json_t *result)
{
        send_msg(m, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result), id);
}

static void send_error(struct mcp_session *m, json_t *id, int code, const char *message)
{
        send_msg(m, mcp_error_message(id, code, message), id);
}

json_t *mcp_error_message(json_t *id, int code, const char *message)
{
        return json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", "code",
                         code, "message", message);
}

bool mcp_protocol_supported(const char *version)
{
        for (size_t i = 0; version && i < ARRAY_SIZE(protocols); i++)
                if (strcmp(version, protocols[i]) == 0)
                        return true;
        return false;
}

/* ---- the tools ---- */

static void call_free(struct call *c)
{
        if (c == NULL)
                return;
        json_decref(c->id);
        json_decref(c->args);
        json_decref(c->progress_token);
        free(c->name);
        free(c);
}

/* What the sandbox's network is, for the tools' descriptions and the
 * instructions: "no network", or with an allow-list (--net allow=, the
 * user's own names, never a client's) the hosts it reaches.  NULL on
 * ENOMEM; the caller frees. */
static char *network_phrase(const corral_jail_config *j)
{
        if (j == NULL || (j->net != CORRAL_NET_ALLOW && j->net != CORRAL_NET_HOST))
                return strdup("no network");
        if (j->net == CORRAL_NET_HOST)
                return strdup("the host's network");
        struct capbuf b = { .cap = 8192 };
        static const char head[] = "network only to ";
        capbuf_append(&b, head, sizeof(head) - 1);
        for (size_t i = 0; j->net_allow && j->net_allow[i]; i++) {
                if (i)
                        capbuf_append(&b, ", ", 2);
                capbuf_append(&b, j->net_allow[i], strlen(j->net_allow[i]));
        }
        static const char tail[] = " (HTTP and HTTPS through a proxy the environment names; other hosts get HTTP "
                                   "403, DNS does not resolve)";
        capbuf_append(&b, tail, sizeof(tail) - 1);
        capbuf_append(&b, "", 1);
        if (b.data == NULL || b.truncated) {
                capbuf_release(&b);
                return NULL;
        }
        return b.data;
}

/* s with "no network" replaced by net (once); NULL on ENOMEM. */
static char *with_network(const char *s, const char *net)
{
        const char *at = strstr(s, "no network");
        char *out = NULL;
        if (at == NULL)
                return strdup(s);
        if (asprintf(&out, "%.*s%s%s", (int)(at - s), s, net, at + strlen("no network")) < 0)
                return NULL;
        return out;
}

static json_t *tools_list(const corral_jail_config *jail)
{
        json_t *tools = json_loads(tools_json, 0, NULL);
        json_t *schema = json_loads(execution_schema, 0, NULL);
        cleanup_free char *net = network_phrase(jail);
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
                if (json_object_get(t, "outputSchema"))
                        json_object_set(t, "outputSchema", schema);
                const char *d = json_string_value(json_object_get(t, "description"));
                cleanup_free char *nd = d && net ? with_network(d, net) : NULL;
                if (nd == NULL || json_object_set_new(t, "description", json_string(nd)) < 0) {
                        json_decref(tools);
                        tools = NULL;
                        break;
                }
        }
        json_decref(schema);
        return tools;
}

/* The workspace and the toolbox, at the first call: a client that only
 * probes the server never makes either. */
static int tools_ready(struct mcp_session *m, corral_error **ret_err)
{
        if (m->tb)
                return 0;
        const struct mcp_config *cfg = m->cfg;
        if (m->ws == NULL && workspace_open(cfg->workspace, &m->ws, ret_err) < 0)
                return -1;
        if (!m->jail_copied) {
                corral_jail_config_init(&m->jail);
                if (corral_jail_config_copy(&m->jail, cfg->jail, ret_err) < 0)
                        return -1;
                m->jail_copied = true;
        }
        agent_config_init(&m->ac);
        m->ac.ws = m->ws;
        m->ac.jail = &m->jail;
        m->ac.cold = cfg->cold;
        m->ac.session_host = !cfg->no_session_host;
        m->ac.review = cfg->review;
        m->ac.secrets = cfg->secrets;
        m->ac.cancel_fd = m->step_cancel_fd;
        m->ac.cancel_interrupts = true; /* a cancelled call keeps the session's state */
        /* A client shows what it is given: more than a model's 8 KiB. */
        m->ac.observation_bytes = 64 << 10;
        m->ac.read_bytes = 1 << 20;
        /* Every figure back as an image, each a rendering small enough for a
         * model's context. */
        m->ac.images = true;
        m->ac.images_per_step = AGENT_MAX_STEP_IMAGES;
        m->ac.images_per_run = UINT_MAX;
        m->ac.image_bytes = 1 << 20;
        m->ac.image_side = 1024;
        return toolbox_new(&m->ac, &m->tb, ret_err);
}

static json_t *text_block(const char *text)
{
        return json_pack("{s:s,s:s}", "type", "text", "text", text ? text : "");
}

static json_t *image_block(const unsigned char *png, size_t len, const char *mime)
{
        char *b64 = malloc(BASE64_ENCODE_RAW_LENGTH(len) + 1);
        if (b64 == NULL)
                return NULL;
        base64_encode_raw(b64, len, png);
        b64[BASE64_ENCODE_RAW_LENGTH(len)] = '\0';
        json_t *b = json_pack("{s:s,s:s,s:s}", "type", "image", "data", b64, "mimeType", mime);
        free(b64);
        return b;
}

/* structuredContent of run_python and run_shell, from the execution. */
static json_t *execution(const struct tool_result *r, size_t figures)
{
        json_t *x = r->exec;
        const char *status = json_string_value(json_object_get(x, "status"));
        json_t *code = json_object_get(x, "exit_code");
        json_t *value = json_object_get(x, "value");
        json_t *e = json_object_get(x, "error");
        json_t *out = json_pack("{s:s,s:s,s:s,s:I}", "status", status ? status : r->ok ? "ok" : "rejected", "stdout",
                                json_string_value(json_object_get(x, "stdout")) ?: "", "stderr",
                                json_string_value(json_object_get(x, "stderr")) ?: "", "figures",
                                (json_int_t)figures);
        json_object_set_new(out, "exit_code", json_is_integer(code) ? json_incref(code) : json_null());
        const char *text = json_string_value(json_object_get(value, "text"));
        json_object_set_new(out, "value", text ? json_string(text) : json_null());
        json_object_set_new(out, "error",
                            json_is_object(e) ? json_pack("{s:s,s:s,s:s}", "name",
                                                          json_string_value(json_object_get(e, "type")) ?: "",
                                                          "value", json_string_value(json_object_get(e, "message")) ?: "",
                                                          "traceback",
                                                          json_string_value(json_object_get(e, "traceback")) ?: "")
                                              : json_null());
        return out;
}

/* read_file of a PNG or JPEG: an image block; NULL for anything else. */
static json_t *read_image(struct mcp_session *m, const char *path)
{
        size_t n = strlen(path);
        const char *mime = n > 4 && strcasecmp(path + n - 4, ".png") == 0    ? "image/png"
                           : n > 4 && strcasecmp(path + n - 4, ".jpg") == 0  ? "image/jpeg"
                           : n > 5 && strcasecmp(path + n - 5, ".jpeg") == 0 ? "image/jpeg"
                                                                             : NULL;
        if (mime == NULL)
                return NULL;
        char *data = NULL;
        size_t len = 0;
        bool truncated = false;
        const char *rel = strncmp(path, "/workspace/", 11) == 0 ? path + 11 : path;
        if (workspace_read_file(m->ws, rel, 8 << 20, &data, &len, &truncated, NULL) < 0)
                return NULL; /* the toolbox says why */
        bool png = len > 8 && memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0;
        bool jpeg = len > 3 && memcmp(data, "\xff\xd8\xff", 3) == 0;
        json_t *b = !truncated && ((png && mime[6] == 'p') || (jpeg && mime[6] == 'j'))
                            ? image_block((const unsigned char *)data, len, mime)
                            : NULL;
        free(data);
        return b;
}

static json_t *run_call(struct mcp_session *m, struct call *c)
{
        corral_error *err = NULL;
        if (tools_ready(m, &err) < 0) {
                json_t *r = json_pack("{s:[o],s:b}", "content", text_block(err ? err->msg : "cannot set up"),
                                      "isError", 1);
                corral_error_free(err);
                return r;
        }
        uint64_t stale;
        while (read(m->step_cancel_fd, &stale, sizeof(stale)) == (ssize_t)sizeof(stale))
                ; /* a cancel meant for an earlier call */
        if (strcmp(c->name, "reset_session") == 0) {
                toolbox_reset(m->tb);
                return json_pack("{s:[o]}", "content",
                                 text_block("the Python session was reset: the next run_python starts a new "
                                            "interpreter (the files in /workspace stay)"));
        }
        if (strcmp(c->name, "read_file") == 0) {
                json_t *image = read_image(m, json_string_value(json_object_get(c->args, "path")));
                if (image)
                        return json_pack("{s:[o]}", "content", image);
        }
        /* The call's own time limit, longer or shorter than the default. */
        json_t *timeout = json_object_get(c->args, "timeout");
        m->jail.timeout_s = json_is_number(timeout) ? json_number_value(timeout) : m->cfg->jail->timeout_s;
        char *args = json_dumps(c->args, JSON_COMPACT);
        struct tool_result r = { 0 };
        toolbox_call(m->tb, c->name, args, &r);
        free(args);
        json_t *content = json_array();
        json_array_append_new(content, text_block(r.content));
        json_t *out = json_object();
        bool exec = strcmp(c->name, "run_python") == 0 || strcmp(c->name, "run_shell") == 0;
        size_t figures = 0;
        if (exec) {
                const struct toolbox_image *img;
                const char *note = NULL;
                figures = toolbox_images(m->tb, &img, &note);
                for (size_t i = 0; i < figures; i++)
                        json_array_append_new(content, image_block(img[i].png, img[i].len, "image/png"));
                toolbox_images_clear(m->tb);
                json_object_set_new(out, "structuredContent", execution(&r, figures));
        }
        json_object_set_new(out, "content", content);
        if (!r.ok)
                json_object_set_new(out, "isError", json_true());
        tool_result_release(&r);
        return out;
}

/* ---- the worker and the progress ---- */

/* Tell the transport that request id gets no answer (cancelled). */
static void send_none(struct mcp_session *m, json_t *id)
{
        if (m->send(m->send_ud, NULL, id) < 0) {
                pthread_mutex_lock(&m->lock);
                m->ending = true;
                pthread_cond_broadcast(&m->changed);
                pthread_mutex_unlock(&m->lock);
        }
}

static void *worker(void *arg)
{
        struct mcp_session *m = arg;
        for (;;) {
                pthread_mutex_lock(&m->lock);
                while (m->queue == NULL && !m->ending)
                        pthread_cond_wait(&m->changed, &m->lock);
                struct call *c = m->ending ? NULL : m->queue;
                if (c) {
                        m->queue = c->next;
                        c->started_ms = monotonic_ms();
                        m->running = c;
                }
                pthread_mutex_unlock(&m->lock);
                if (c == NULL)
                        return NULL;
                json_t *result = run_call(m, c);
                pthread_mutex_lock(&m->lock);
                m->running = NULL;
                bool cancelled = c->cancelled;
                pthread_mutex_unlock(&m->lock);
                /* A cancelled request gets no answer (the client has
                 * forgotten it): the transport is told so. */
                if (!cancelled) {
                        send_result(m, c->id, result);
                } else {
                        json_decref(result);
                        send_none(m, c->id);
                }
                call_free(c);
        }
}

/* notifications/progress every few seconds of a long call that asked for
 * them (clients give up on a silent call after about a minute). */
static void *ticker(void *arg)
{
        struct mcp_session *m = arg;
        long last = 0;
        pthread_mutex_lock(&m->lock);
        while (!m->ending) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += 1;
                pthread_cond_timedwait(&m->changed, &m->lock, &until);
                struct call *c = m->running;
                if (c == NULL || c->progress_token == NULL || c->cancelled)
                        continue;
                long s = (long)((monotonic_ms() - c->started_ms) / 1000);
                if (s < last + PROGRESS_EVERY_S || s < PROGRESS_EVERY_S) {
                        if (s < last)
                                last = 0; /* a new call */
                        continue;
                }
                last = s;
                char text[64];
                snprintf(text, sizeof(text), "%s running for %ld s", c->name, s);
                json_t *n = json_pack("{s:s,s:s,s:{s:o,s:I,s:s}}", "jsonrpc", "2.0", "method", "notifications/progress",
                                      "params", "progressToken", json_deep_copy(c->progress_token), "progress",
                                      (json_int_t)s, "message", text);
                json_t *id = json_deep_copy(c->id); /* c is the worker's once we unlock */
                pthread_mutex_unlock(&m->lock);
                send_msg(m, n, id);
                json_decref(id);
                pthread_mutex_lock(&m->lock);
        }
        pthread_mutex_unlock(&m->lock);
        return NULL;
}

/* ---- reading ---- */

static void cancel(struct mcp_session *m, json_t *id)
{
        if (id == NULL)
                return;
        pthread_mutex_lock(&m->lock);
        if (m->running && json_equal(m->running->id, id)) {
                m->running->cancelled = true;
                uint64_t one = 1;
                if (write(m->step_cancel_fd, &one, sizeof(one)) < 0) {
                        /* an eventfd's counter does not overflow from this */
                }
        }
        struct call *dropped = NULL;
        for (struct call **p = &m->queue; *p; p = &(*p)->next)
                if (json_equal((*p)->id, id)) {
                        dropped = *p;
                        *p = dropped->next;
                        break;
                }
        pthread_mutex_unlock(&m->lock);
        if (dropped)
                send_none(m, dropped->id);
        call_free(dropped);
}

/* A tools/call: checked here (an unknown tool or a missing argument is the
 * caller's error, -32602), run by the worker. */
static void tools_call(struct mcp_session *m, json_t *id, json_t *params)
{
        const char *name = json_string_value(json_object_get(params, "name"));
        json_t *args = json_object_get(params, "arguments");
        static const struct {
                const char *name, *required[2];
        } needs[] = { { "run_python", { "code" } },   { "run_shell", { "command" } },
                      { "read_file", { "path" } },    { "write_file", { "path", "content" } },
                      { "list_files", { NULL } },     { "reset_session", { NULL } } };
        size_t k = 0;
        while (name && k < ARRAY_SIZE(needs) && strcmp(needs[k].name, name) != 0)
                k++;
        char why[256] = "";
        if (name == NULL)
                snprintf(why, sizeof(why), "tools/call needs the name of a tool");
        else if (k == ARRAY_SIZE(needs))
                snprintf(why, sizeof(why), "Unknown tool: %.64s (the tools: run_python, run_shell, read_file, "
                                           "write_file, list_files, reset_session)",
                         name);
        else if (args && !json_is_object(args))
                snprintf(why, sizeof(why), "the arguments of %s must be an object", name);
        for (size_t i = 0; !why[0] && i < 2 && needs[k].required[i]; i++)
                if (!json_is_string(json_object_get(args, needs[k].required[i])))
                        snprintf(why, sizeof(why), "%s needs \"%s\" (a string)", name, needs[k].required[i]);
        json_t *timeout = json_object_get(args, "timeout");
        double most = m->cfg->max_timeout_s > 0 ? m->cfg->max_timeout_s : 86400;
        if (!why[0] && timeout &&
            !(json_is_number(timeout) && json_number_value(timeout) > 0 && json_number_value(timeout) <= most))
                snprintf(why, sizeof(why), "timeout must be a number of seconds above 0 and at most %g", most);
        if (why[0]) {
                send_error(m, id, RPC_INVALID_PARAMS, why);
                return;
        }
        struct call *c = calloc(1, sizeof(*c));
        if (c == NULL || (c->name = strdup(name)) == NULL) {
                free(c);
                send_error(m, id, -32603, "out of memory");
                return;
        }
        /* Copies: the message is the reader's, the call the worker's. */
        c->id = json_deep_copy(id);
        c->args = args ? json_deep_copy(args) : json_object();
        json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
        c->progress_token = token ? json_deep_copy(token) : NULL;
        pthread_mutex_lock(&m->lock);
        struct call **p = &m->queue;
        while (*p)
                p = &(*p)->next;
        *p = c;
        pthread_cond_broadcast(&m->changed);
        pthread_mutex_unlock(&m->lock);
}

void mcp_session_receive(struct mcp_session *m, const char *text, size_t len)
{
        json_error_t je;
        json_t *msg = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (msg == NULL) {
                char why[256];
                snprintf(why, sizeof(why), "Parse error: %s", je.text);
                send_error(m, NULL, RPC_PARSE_ERROR, why);
                return;
        }
        json_t *id = json_object_get(msg, "id");
        const char *method = json_string_value(json_object_get(msg, "method"));
        json_t *params = json_object_get(msg, "params");
        bool valid_id = id == NULL || json_is_string(id) || json_is_integer(id);
        if (!json_is_object(msg) || !json_is_string(json_object_get(msg, "jsonrpc")) ||
            strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0 || !valid_id) {
                send_error(m, valid_id ? id : NULL, RPC_INVALID_REQUEST,
                           json_is_array(msg) ? "Invalid Request: batches are not supported"
                                              : "Invalid Request: not a JSON-RPC 2.0 message");
        } else if (method == NULL) {
                /* A response to a request of ours: we send none. */
        } else if (id == NULL) {
                if (strcmp(method, "notifications/cancelled") == 0)
                        cancel(m, json_object_get(params, "requestId"));
                /* notifications/initialized and the rest: nothing to do. */
        } else if (strcmp(method, "initialize") == 0) {
                const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
                const char *version = PROTOCOL_LATEST;
                for (size_t i = 0; asked && i < ARRAY_SIZE(protocols); i++)
                        if (strcmp(asked, protocols[i]) == 0)
                                version = protocols[i];
                send_result(m, id,
                            json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", version,
                                      "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "corral",
                                      "title", "corral sandbox", "version", CORRAL_VERSION_STRING, "instructions",
                                      m->instructions));
        } else if (strcmp(method, "ping") == 0) {
                send_result(m, id, json_object());
        } else if (strcmp(method, "tools/list") == 0) {
                send_result(m, id, json_pack("{s:o}", "tools", json_deep_copy(m->tools))); /* any thread's */
        } else if (strcmp(method, "tools/call") == 0) {
                tools_call(m, id, params);
        } else {
                /* server/discover (2026-07-28's probe) included: the
                 * client falls back to initialize on this same process. */
                send_error(m, id, RPC_METHOD_NOT_FOUND, "Method not found");
        }
        json_decref(msg);
}

/* ---- a session's life ---- */

int mcp_session_new(const struct mcp_config *cfg, mcp_send_fn send, void *userdata, struct mcp_session **ret,
                    corral_error **ret_err)
{
        *ret = NULL;
        struct mcp_session *m = calloc(1, sizeof(*m));
        if (m == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the MCP server");
        m->cfg = cfg;
        m->send = send;
        m->send_ud = userdata;
        pthread_mutex_init(&m->lock, NULL);
        pthread_cond_init(&m->changed, NULL);
        m->step_cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        m->tools = tools_list(cfg->jail);
        cleanup_free char *net = network_phrase(cfg->jail);
        m->instructions = net ? with_network("A sandbox: Python with numpy, pandas, matplotlib and scipy (state kept "
                                             "between run_python calls) and bash, over files in /workspace; no "
                                             "network, no host files.",
                                             net)
                              : NULL;
        errno = 0;
        bool threads = m->step_cancel_fd >= 0 && m->tools && m->instructions && pthread_create(&m->work, NULL, worker, m) == 0;
        if (threads && pthread_create(&m->tick, NULL, ticker, m) != 0) {
                pthread_mutex_lock(&m->lock);
                m->ending = true;
                pthread_cond_broadcast(&m->changed);
                pthread_mutex_unlock(&m->lock);
                pthread_join(m->work, NULL);
                threads = false;
        }
        if (!threads) {
                int e = errno ? errno : ENOMEM;
                if (m->step_cancel_fd >= 0)
                        close(m->step_cancel_fd);
                json_decref(m->tools);
                free(m->instructions);
                pthread_cond_destroy(&m->changed);
                pthread_mutex_destroy(&m->lock);
                free(m);
                return corral_fail(ret_err, e, "cannot start the MCP server");
        }
        *ret = m;
        return 0;
}

bool mcp_session_ended(struct mcp_session *m)
{
        pthread_mutex_lock(&m->lock);
        bool ending = m->ending;
        pthread_mutex_unlock(&m->lock);
        return ending;
}

void mcp_session_free(struct mcp_session *m)
{
        if (m == NULL)
                return;
        /* The end: the running call interrupted, the session and a
         * temporary workspace gone. */
        pthread_mutex_lock(&m->lock);
        m->ending = true;
        if (m->running) {
                m->running->cancelled = true;
                uint64_t one = 1;
                if (write(m->step_cancel_fd, &one, sizeof(one)) < 0) {
                        /* an eventfd's counter does not overflow from this */
                }
        }
        pthread_cond_broadcast(&m->changed);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->work, NULL);
        pthread_join(m->tick, NULL);
        while (m->queue) {
                struct call *c = m->queue;
                m->queue = c->next;
                call_free(c);
        }
        toolbox_free(m->tb);
        if (m->jail_copied)
                corral_jail_config_release(&m->jail);
        if (m->ws)
                workspace_close(m->ws, m->ws->created);
        json_decref(m->tools);
        free(m->instructions);
        close(m->step_cancel_fd);
        pthread_cond_destroy(&m->changed);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

/* ---- the stdio transport ---- */

struct stdio_out {
        int fd;
        pthread_mutex_t lock;    /* one message a line, whole */
};

static int stdio_send(void *userdata, json_t *msg, json_t *for_request)
{
        (void)for_request;
        struct stdio_out *o = userdata;
        if (msg == NULL)
                return 0; /* a cancelled request: nothing is written */
        char *text = json_dumps(msg, JSON_COMPACT);
        if (text == NULL)
                return 0;
        size_t n = strlen(text);
        text[n] = '\n'; /* over the NUL: one message a line (strings never hold a raw newline) */
        pthread_mutex_lock(&o->lock);
        int rc = write_all(o->fd, text, n + 1);
        pthread_mutex_unlock(&o->lock);
        free(text);
        return rc < 0 ? -1 : 0;
}

int mcp_serve(const struct mcp_config *cfg, int in_fd, int out_fd, int cancel_fd, corral_error **ret_err)
{
        struct stdio_out out = { .fd = out_fd };
        pthread_mutex_init(&out.lock, NULL);
        struct mcp_session *m = NULL;
        if (mcp_session_new(cfg, stdio_send, &out, &m, ret_err) < 0) {
                pthread_mutex_destroy(&out.lock);
                return -1;
        }
        char *buf = NULL;
        size_t len = 0, cap = 0;
        bool skipping = false; /* the rest of a line over the cap */
        while (!mcp_session_ended(m)) {
                struct pollfd p[2] = { { .fd = in_fd, .events = POLLIN }, { .fd = cancel_fd, .events = POLLIN } };
                if (poll(p, cancel_fd >= 0 ? 2 : 1, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (cancel_fd >= 0 && p[1].revents)
                        break;
                if (cap - len < 65536) {
                        size_t ncap = cap ? cap * 2 : 1 << 16;
                        char *nb = realloc(buf, ncap);
                        if (nb == NULL)
                                break;
                        buf = nb;
                        cap = ncap;
                }
                ssize_t n = read(in_fd, buf + len, cap - len);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0)
                        break; /* the client closed our stdin: done */
                len += (size_t)n;
                char *start = buf, *nl;
                while ((nl = memchr(start, '\n', len - (size_t)(start - buf))) != NULL) {
                        size_t l = (size_t)(nl - start);
                        if (!skipping && l && !(l == 1 && start[0] == '\r'))
                                mcp_session_receive(m, start, l);
                        skipping = false;
                        start = nl + 1;
                }
                len -= (size_t)(start - buf);
                memmove(buf, start, len);
                if (len > LINE_MAX_BYTES) {
                        if (!skipping) {
                                json_t *e = mcp_error_message(NULL, RPC_PARSE_ERROR,
                                                              "Parse error: a message over 64 MiB");
                                stdio_send(&out, e, NULL);
                                json_decref(e);
                        }
                        skipping = true;
                        len = 0;
                }
        }
        free(buf);
        mcp_session_free(m);
        pthread_mutex_destroy(&out.lock);
        return 0;
}
