/* test-mcp-client.c: the MCP client of corral's agent (src/mcp/client.h)
 * against a scripted server on the other end of two pipes: the handshake
 * (a notification and a ping of the server's before the answer, tools/list
 * in pages), answers with the wrong id ignored, the time limit and the
 * cancel fd (each followed by notifications/cancelled), a protocol revision
 * it does not speak, and a server that dies (its last words in the error).
 * The stdio servers of the end-to-end tests are real programs in real jails
 * (tests/e2e/test_run_mcp.py). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <jansson.h>

#include "../../src/lib/util.h"
#include "../../src/mcp/client.h"
#include "harness.h"

__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

/* The server's side: it reads the client's lines from in, writes to out
 * and log. */
struct fake {
        FILE *in;
        int out, log;
        const char *version;     /* what initialize answers */
        int scenario;
        char seen[8][256];       /* methods (and a cancel's requestId) the server read after the handshake */
        int n_seen;
};

static json_t *read_msg(struct fake *f)
{
        char *line = NULL;
        size_t cap = 0;
        if (getline(&line, &cap, f->in) < 0) {
                free(line);
                return NULL;
        }
        json_t *m = json_loads(line, 0, NULL);
        free(line);
        return m;
}

static void say(struct fake *f, const char *fmt, ...) CORRAL_PRINTF(2, 3);
static void say(struct fake *f, const char *fmt, ...)
{
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
        va_end(ap);
        buf[n] = '\n';
        if (write(f->out, buf, (size_t)n + 1) < 0)
                return;
}

static json_int_t id_of(json_t *m)
{
        return json_integer_value(json_object_get(m, "id"));
}

static void *serve(void *arg)
{
        struct fake *f = arg;
        json_t *m = read_msg(f); /* initialize */
        if (m == NULL)
                return NULL;
        /* Before its answer: a notification, and a request of its own. */
        say(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\"}}");
        say(f, "{\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}");
        json_t *pong = read_msg(f);
        bool pong_ok = pong && strcmp(json_string_value(json_object_get(pong, "id")) ?: "", "srv-1") == 0 &&
                       json_is_object(json_object_get(pong, "result"));
        json_decref(pong);
        say(f, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"protocolVersion\":\"%s\",\"capabilities\":{}}}",
            (long long)id_of(m), pong_ok ? f->version : "ping-not-answered");
        json_decref(m);
        if (strcmp(f->version, "2025-06-18") != 0 && strcmp(f->version, "2025-11-25") != 0)
                return NULL;
        json_decref(read_msg(f)); /* notifications/initialized */
        m = read_msg(f);          /* tools/list, page 1 */
        say(f, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"tools\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
               "\"nextCursor\":\"p2\"}}",
            (long long)id_of(m));
        json_decref(m);
        m = read_msg(f); /* page 2: the cursor sent back */
        bool cursor = strcmp(json_string_value(json_object_get(json_object_get(m, "params"), "cursor")) ?: "", "p2") == 0;
        say(f, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"tools\":[{\"name\":\"%s\"},{\"nameless\":1}]}}",
            (long long)id_of(m), cursor ? "c" : "no-cursor");
        json_decref(m);
        for (;;) {
                m = read_msg(f);
                if (m == NULL)
                        break;
                const char *method = json_string_value(json_object_get(m, "method")) ?: "?";
                if (f->n_seen < 8) {
                        json_t *rid = json_object_get(json_object_get(m, "params"), "requestId");
                        if (rid)
                                snprintf(f->seen[f->n_seen++], 256, "%s %lld", method,
                                         (long long)json_integer_value(rid));
                        else
                                snprintf(f->seen[f->n_seen++], 256, "%s", method);
                }
                if (strcmp(method, "tools/call") != 0) {
                        json_decref(m);
                        continue;
                }
                const char *tool = json_string_value(json_object_get(json_object_get(m, "params"), "name")) ?: "";
                if (strcmp(tool, "a") == 0) {
                        /* An answer to another request first: ignored. */
                        say(f, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"content\":[]}}",
                            (long long)id_of(m) + 100);
                        say(f, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
                               "\"from a\"}]}}",
                            (long long)id_of(m));
                } else if (strcmp(tool, "die") == 0) {
                        if (write(f->log, "Traceback: it broke\n", 20) < 0) {
                                /* the test sees the words missing */
                        }
                        json_decref(m);
                        close(f->out); /* its stdout ends: the process is gone */
                        close(f->log);
                        f->out = f->log = -1;
                        break;
                }
                /* "slow": no answer */
                json_decref(m);
        }
        return NULL;
}

struct pair {
        struct fake f;
        pthread_t t;
        struct mcp_client *c;
        corral_error *err;
};

static int start(struct pair *p, const char *version)
{
        int to_server[2], from_server[2], log[2];
        if (pipe2(to_server, O_CLOEXEC) < 0 || pipe2(from_server, O_CLOEXEC) < 0 || pipe2(log, O_CLOEXEC) < 0)
                return -1;
        memset(p, 0, sizeof(*p));
        p->f.in = fdopen(to_server[0], "r");
        p->f.out = from_server[1];
        p->f.log = log[1];
        p->f.version = version;
        pthread_create(&p->t, NULL, serve, &p->f);
        return mcp_client_open_fds("fake", to_server[1], from_server[0], log[0], 5, &p->c, &p->err);
}

static void finish(struct pair *p)
{
        mcp_client_close(p->c);
        /* The server's reads end with the client's pipe. */
        pthread_join(p->t, NULL);
        fclose(p->f.in);
        if (p->f.out >= 0)
                close(p->f.out);
        if (p->f.log >= 0)
                close(p->f.log);
        corral_error_free(p->err);
}

int main(void)
{
        struct pair p;
        CHECK(start(&p, "2025-06-18") == 0);
        json_t *tools = p.c ? mcp_client_tools(p.c) : NULL;
        /* Two pages, a nameless entry left out. */
        CHECK_INT((int)json_array_size(tools), 3);
        CHECK_STR(json_string_value(json_object_get(json_array_get(tools, 2), "name")), "c");

        json_t *result = NULL;
        corral_error *err = NULL;
        CHECK(mcp_client_call(p.c, "a", NULL, 5, -1, &result, &err) == 0);
        CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(result, "content"), 0), "text")),
                  "from a");
        json_decref(result);

        /* The time limit: an error of its kind, and the server told. */
        double t0 = monotonic_ms();
        CHECK(mcp_client_call(p.c, "slow", NULL, 0.2, -1, &result, &err) < 0);
        CHECK(err && err->kind == CORRAL_ERR_TIMEOUT);
        CHECK(err && strstr(err->msg, "did not answer within 0.2 s") != NULL);
        CHECK(monotonic_ms() - t0 < 2000);
        corral_error_free(err);
        err = NULL;

        /* The cancel fd. */
        int cancel = eventfd(1, EFD_CLOEXEC);
        CHECK(mcp_client_call(p.c, "slow", NULL, 5, cancel, &result, &err) < 0);
        CHECK(err && err->kind == CORRAL_ERR_CANCELLED);
        corral_error_free(err);
        err = NULL;
        close(cancel);

        /* A call after them still gets its own answer. */
        CHECK(mcp_client_call(p.c, "a", NULL, 5, -1, &result, &err) == 0);
        json_decref(result);

        /* The server dies: its last words in the error. */
        CHECK(mcp_client_call(p.c, "die", NULL, 5, -1, &result, &err) < 0);
        CHECK(err && strstr(err->msg, "the MCP server 'fake' is gone") != NULL);
        CHECK(err && strstr(err->msg, "its last words: Traceback: it broke") != NULL);
        corral_error_free(err);
        err = NULL;
        /* What the server read: each call, and a cancel naming the call
         * given up on. */
        CHECK_STR(p.f.seen[0], "tools/call");
        CHECK_STR(p.f.seen[1], "tools/call");
        CHECK(strncmp(p.f.seen[2], "notifications/cancelled ", 24) == 0);
        CHECK_STR(p.f.seen[3], "tools/call");
        CHECK(strncmp(p.f.seen[4], "notifications/cancelled ", 24) == 0);
        finish(&p);

        /* A revision it does not speak. */
        CHECK(start(&p, "1999-01-01") < 0);
        CHECK(p.err && strstr(p.err->msg, "speaks protocol revision 1999-01-01, which corral does not") != NULL);
        finish(&p);
        return DONE();
}
