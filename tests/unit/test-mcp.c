/* test-mcp.c: the MCP session's contract with its transports
 * (src/mcp/mcp.h): every message it sends goes through the send function,
 * tagged with the request it answers; the answers a client's mistakes get;
 * a peer gone ends the session.  No tool runs here (no jail): tool calls
 * are the end-to-end tests' (tests/mcp/client.test.mjs). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/mcp/mcp.h"
#include "harness.h"

__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

/* What the session sent: each message's text and the id it was for. */
struct sent {
        char *msg[32];
        char *for_id[32];        /* JSON text, or "-" for none */
        size_t n;
        int fail;                /* the send's answer: -1 plays a peer gone */
};

static int capture(void *userdata, json_t *msg, json_t *for_request)
{
        struct sent *s = userdata;
        if (s->n < 32) {
                s->msg[s->n] = msg ? json_dumps(msg, JSON_COMPACT | JSON_SORT_KEYS) : strdup("(none)");
                s->for_id[s->n] = for_request ? json_dumps(for_request, JSON_ENCODE_ANY) : strdup("-");
                s->n++;
        }
        return s->fail;
}

static void sent_clear(struct sent *s)
{
        for (size_t i = 0; i < s->n; i++) {
                free(s->msg[i]);
                free(s->for_id[i]);
        }
        s->n = 0;
}

static struct mcp_session *session(struct mcp_config *cfg, corral_jail_config *jail, struct sent *s)
{
        corral_jail_config_init(jail);
        jail->timeout_s = 5;
        mcp_config_init(cfg);
        cfg->jail = jail;
        cfg->max_timeout_s = 10;
        struct mcp_session *m = NULL;
        corral_error *err = NULL;
        if (mcp_session_new(cfg, capture, s, &m, &err) < 0)
                printf("# %s\n", err ? err->msg : "?");
        corral_error_free(err);
        return m;
}

static void receive(struct mcp_session *m, const char *text)
{
        mcp_session_receive(m, text, strlen(text));
}

TEST(answers_carry_their_request)
{
        struct mcp_config cfg;
        corral_jail_config jail;
        struct sent s = { 0 };
        struct mcp_session *m = session(&cfg, &jail, &s);
        CHECK(m != NULL);
        receive(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                   "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"0\"}}}");
        CHECK_INT(s.n, 1);
        CHECK_STR(s.for_id[0], "1");
        CHECK(strstr(s.msg[0], "\"protocolVersion\":\"2025-06-18\"") != NULL);
        receive(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        CHECK_INT(s.n, 1); /* a notification gets nothing */
        receive(m, "{\"jsonrpc\":\"2.0\",\"id\":\"str\",\"method\":\"ping\"}");
        CHECK_STR(s.for_id[1], "\"str\"");
        CHECK_STR(s.msg[1], "{\"id\":\"str\",\"jsonrpc\":\"2.0\",\"result\":{}}");
        receive(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        CHECK_STR(s.for_id[2], "2");
        CHECK(strstr(s.msg[2], "\"run_python\"") != NULL);
        sent_clear(&s);
        mcp_session_free(m);
}

TEST(mistakes_get_json_rpc_errors)
{
        struct mcp_config cfg;
        corral_jail_config jail;
        struct sent s = { 0 };
        struct mcp_session *m = session(&cfg, &jail, &s);
        receive(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":");
        CHECK_STR(s.for_id[0], "-"); /* a parse error is for no request */
        CHECK(strstr(s.msg[0], "\"code\":-32700") && strstr(s.msg[0], "\"id\":null"));
        receive(m, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
        CHECK(strstr(s.msg[1], "\"code\":-32600") != NULL);
        receive(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"server/discover\",\"params\":{}}");
        CHECK_STR(s.for_id[2], "3");
        CHECK(strstr(s.msg[2], "\"code\":-32601") != NULL);
        receive(m, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}");
        CHECK_STR(s.for_id[3], "4");
        CHECK(strstr(s.msg[3], "\"code\":-32602") != NULL);
        receive(m, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"run_python\","
                   "\"arguments\":{\"code\":\"1\",\"timeout\":11}}}");
        CHECK(strstr(s.msg[4], "\"code\":-32602") && strstr(s.msg[4], "at most 10"));
        CHECK_INT(s.n, 5);
        /* A cancel for nothing running: nothing said. */
        receive(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":9}}");
        CHECK_INT(s.n, 5);
        CHECK(!mcp_session_ended(m));
        sent_clear(&s);
        mcp_session_free(m);
}

TEST(a_peer_gone_ends_the_session)
{
        struct mcp_config cfg;
        corral_jail_config jail;
        struct sent s = { .fail = -1 };
        struct mcp_session *m = session(&cfg, &jail, &s);
        CHECK(!mcp_session_ended(m));
        receive(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
        CHECK(mcp_session_ended(m));
        sent_clear(&s);
        mcp_session_free(m);
        mcp_session_free(NULL);
}

TEST(protocol_versions)
{
        CHECK(mcp_protocol_supported("2025-11-25"));
        CHECK(mcp_protocol_supported("2024-11-05"));
        CHECK(!mcp_protocol_supported("2026-07-28"));
        CHECK(!mcp_protocol_supported(NULL));
}

int main(void)
{
        RUN(answers_carry_their_request);
        RUN(mistakes_get_json_rpc_errors);
        RUN(a_peer_gone_ends_the_session);
        RUN(protocol_versions);
        return DONE();
}
