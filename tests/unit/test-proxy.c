/* test-proxy.c: the pure parts of the --net allow proxy (src/lib/proxy.c):
 * allow-list entries and their matching (wildcards, ports, IP literals),
 * request heads, the TLS server name, the restricted-address rule, and the
 * config's allow-list and resolve map (copy, validate), and the masker of
 * brokered credentials. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corral/jail.h>

#include "harness.h"
#include "proxy.h"

__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

static bool allows(const char *entry, const char *host, uint16_t port)
{
        struct net_allow_entry e;
        if (net_allow_parse(entry, &e, NULL) < 0)
                return false;
        return net_allow_matches(&e, host, port);
}

static bool entry_ok(const char *entry)
{
        struct net_allow_entry e;
        corral_error *err = NULL;
        int r = net_allow_parse(entry, &e, &err);
        /* A refusal quotes the entry (no CHECK here: this runs inside one). */
        bool quoted = r == 0 ? err == NULL : err != NULL && strstr(err->msg, entry) != NULL;
        corral_error_free(err);
        return r == 0 && quoted;
}

TEST(allow_entries)
{
        CHECK(entry_ok("example.com"));
        CHECK(entry_ok("Example.COM:8443"));
        CHECK(entry_ok("*.example.com"));
        CHECK(entry_ok("10.1.2.3:80"));
        CHECK(entry_ok("[::1]:8080"));
        CHECK(entry_ok("[2001:db8::1]"));
        CHECK(!entry_ok(""));
        corral_error *err = NULL;
        CHECK(net_allow_parse("a b", &(struct net_allow_entry){ 0 }, &err) < 0 && strstr(err->msg, "'a b'"));
        corral_error_free(err);
        CHECK(!entry_ok("*.com"));
        CHECK(!entry_ok("*.10.0.0.1"));
        CHECK(!entry_ok("a.com:0"));
        CHECK(!entry_ok("a.com:65536"));
        CHECK(!entry_ok("a.com:"));
        CHECK(!entry_ok("a b.com"));
        CHECK(!entry_ok("a..com"));
        CHECK(!entry_ok(".a.com"));
        CHECK(!entry_ok("::1"));
        CHECK(!entry_ok("[::1"));
        CHECK(!entry_ok("[a.com]:80"));
        CHECK(!entry_ok("http://a.com"));
        CHECK(!entry_ok("a.com/path"));
        CHECK(!entry_ok("*"));
}

TEST(allow_matching)
{
        /* No port: 80 and 443 only. */
        CHECK(allows("example.com", "example.com", 443));
        CHECK(allows("example.com", "example.com", 80));
        CHECK(!allows("example.com", "example.com", 8080));
        CHECK(allows("example.com:8080", "example.com", 8080));
        CHECK(!allows("example.com:8080", "example.com", 443));
        CHECK(allows("EXAMPLE.com", "example.com", 443));
        CHECK(!allows("example.com", "www.example.com", 443));
        CHECK(!allows("example.com", "example.com.evil.org", 443));
        CHECK(!allows("example.com", "badexample.com", 443));
        /* A wildcard: any subdomain, not the domain itself. */
        CHECK(allows("*.example.com", "www.example.com", 443));
        CHECK(allows("*.example.com", "a.b.example.com", 443));
        CHECK(!allows("*.example.com", "example.com", 443));
        CHECK(!allows("*.example.com", "badexample.com", 443));
        CHECK(!allows("*.example.com", "example.com.evil.org", 443));
        CHECK(!allows("*.example.com:8443", "www.example.com", 443));
        /* Literals match literals only, by address. */
        CHECK(allows("10.0.0.1", "10.0.0.1", 80));
        CHECK(!allows("10.0.0.1", "10.0.0.2", 80));
        CHECK(allows("[2001:db8::1]:8080", "2001:db8:0::1", 8080));
        CHECK(!allows("example.com", "93.184.216.34", 443));
        CHECK(net_host_is_literal("127.0.0.1"));
        CHECK(net_host_is_literal("::1"));
        CHECK(!net_host_is_literal("localhost"));
}

static int parse(const char *head, struct net_request *rq, const char **why)
{
        *why = NULL;
        return net_request_parse(head, strlen(head), rq, why);
}

TEST(request_heads)
{
        struct net_request rq;
        const char *why;
        const char *get = "GET http://Api.Test:8080/a/b?c HTTP/1.1\r\nHost: api.test\r\n\r\nBODY";
        CHECK_INT(parse(get, &rq, &why), 1);
        CHECK_STR(rq.method, "GET");
        CHECK_STR(rq.host, "api.test");
        CHECK_INT(rq.port, 8080);
        CHECK(!rq.connect);
        CHECK_INT(rq.minor, 1);
        CHECK(strncmp(get + rq.target_off, "/a/b?c", rq.target_len) == 0 && rq.target_len == 6);
        CHECK(strcmp(get + rq.head_len, "BODY") == 0);
        CHECK(strncmp(get + rq.line_end, "Host:", 5) == 0);

        CHECK_INT(parse("GET http://a.test HTTP/1.0\r\n\r\n", &rq, &why), 1);
        CHECK_INT(rq.port, 80);
        CHECK_INT(rq.target_len, 0);

        CHECK_INT(parse("CONNECT a.test:443 HTTP/1.1\r\n\r\n", &rq, &why), 1);
        CHECK(rq.connect);
        CHECK_INT(rq.port, 443);
        CHECK_INT(parse("CONNECT [::1]:443 HTTP/1.1\r\n\r\n", &rq, &why), 1);
        CHECK_STR(rq.host, "::1");

        CHECK_INT(parse("GET http://a.test/ HTTP/1.1\r\nHost: a", &rq, &why), 0);
        CHECK_INT(parse("", &rq, &why), 0);
        CHECK_INT(parse("CONNECT a.test HTTP/1.1\r\n\r\n", &rq, &why), -1);
        CHECK_STR(why, "CONNECT needs HOST:PORT");
        CHECK_INT(parse("GET /x HTTP/1.1\r\n\r\n", &rq, &why), -1);
        CHECK_INT(parse("GET https://a.test/ HTTP/1.1\r\n\r\n", &rq, &why), -1);
        CHECK_STR(why, "https:// URLs go through CONNECT");
        CHECK_INT(parse("GET http://u:p@a.test/ HTTP/1.1\r\n\r\n", &rq, &why), -1);
        CHECK_INT(parse("GET http://a.test:99999/ HTTP/1.1\r\n\r\n", &rq, &why), -1);
        CHECK_INT(parse("GET http://a.test/ HTTP/2.0\r\n\r\n", &rq, &why), -1);
        CHECK_INT(parse("GET  http://a.test/ HTTP/1.1\r\n\r\n", &rq, &why), -1);
        CHECK_INT(parse("G(T http://a.test/ HTTP/1.1\r\n\r\n", &rq, &why), -1);
        CHECK_INT(parse("GET http://a\x01.test/ HTTP/1.1\r\n\r\n", &rq, &why), -1);
        char *big = malloc(NET_HEAD_MAX + 1);
        memset(big, 'a', NET_HEAD_MAX);
        big[NET_HEAD_MAX] = '\0';
        CHECK_INT(parse(big, &rq, &why), -1);
        CHECK_STR(why, "the request head is too long");
        free(big);
}

/* A minimal ClientHello with the given server name (NULL: no SNI). */
static size_t hello(uint8_t *b, const char *name)
{
        uint8_t body[512];
        size_t n = 0;
        body[n++] = 3;
        body[n++] = 3; /* client version */
        memset(body + n, 7, 32);
        n += 32;
        body[n++] = 0;   /* session id */
        body[n++] = 0;
        body[n++] = 2;   /* cipher suites */
        body[n++] = 0x13;
        body[n++] = 0x01;
        body[n++] = 1;   /* compression */
        body[n++] = 0;
        size_t ext_at = n;
        n += 2;
        /* an unrelated extension first */
        body[n++] = 0;
        body[n++] = 10;
        body[n++] = 0;
        body[n++] = 2;
        body[n++] = 0;
        body[n++] = 0;
        if (name) {
                size_t l = strlen(name);
                body[n++] = 0;
                body[n++] = 0;
                body[n++] = (uint8_t)((l + 5) >> 8);
                body[n++] = (uint8_t)(l + 5);
                body[n++] = (uint8_t)((l + 3) >> 8);
                body[n++] = (uint8_t)(l + 3);
                body[n++] = 0;
                body[n++] = (uint8_t)(l >> 8);
                body[n++] = (uint8_t)l;
                memcpy(body + n, name, l);
                n += l;
        }
        size_t ext = n - ext_at - 2;
        body[ext_at] = (uint8_t)(ext >> 8);
        body[ext_at + 1] = (uint8_t)ext;
        b[0] = 22;
        b[1] = 3;
        b[2] = 1;
        b[3] = (uint8_t)((n + 4) >> 8);
        b[4] = (uint8_t)(n + 4);
        b[5] = 1;
        b[6] = 0;
        b[7] = (uint8_t)(n >> 8);
        b[8] = (uint8_t)n;
        memcpy(b + 9, body, n);
        return n + 9;
}

TEST(tls_server_name)
{
        uint8_t b[600];
        char name[256];
        size_t n = hello(b, "secure.test");
        CHECK_INT(net_tls_sni(b, n, name, sizeof(name)), 1);
        CHECK_STR(name, "secure.test");
        for (size_t cut = 0; cut < n; cut++)
                CHECK(net_tls_sni(b, cut, name, sizeof(name)) == 0);
        CHECK_INT(net_tls_sni(b, n, name, 5), -2);
        n = hello(b, NULL);
        CHECK_INT(net_tls_sni(b, n, name, sizeof(name)), -2);
        n = hello(b, "bad name");
        CHECK_INT(net_tls_sni(b, n, name, sizeof(name)), -2);
        CHECK_INT(net_tls_sni((const uint8_t *)"GET / HTTP/1.0\r\n", 16, name, sizeof(name)), -1);
        n = hello(b, "secure.test");
        b[5] = 2; /* not a ClientHello */
        CHECK_INT(net_tls_sni(b, n, name, sizeof(name)), -1);
}

static bool restricted(const char *addr)
{
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof(ss));
        struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)&ss;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)&ss;
        if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1)
                s4->sin_family = AF_INET;
        else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1)
                s6->sin6_family = AF_INET6;
        return net_addr_is_restricted((struct sockaddr *)&ss);
}

TEST(restricted_addresses)
{
        static const char *const bad[] = { "127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "172.31.255.255",
                                           "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
                                           "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1",
                                           "fd12::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
                                           "64:ff9b::a00:1" };
        static const char *const good[] = { "93.184.216.34", "1.1.1.1", "172.32.0.1", "100.128.0.1",
                                            "2606:4700::1111", "::ffff:93.184.216.34" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                CHECK(restricted(bad[i]));
                if (!restricted(bad[i]))
                        printf("#   %s\n", bad[i]);
        }
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                CHECK(!restricted(good[i]));
                if (restricted(good[i]))
                        printf("#   %s\n", good[i]);
        }
}

TEST(config)
{
        corral_jail_config cfg, copy;
        corral_jail_config_init(&cfg);
        char *argv[] = { "true", NULL };
        CHECK(corral_jail_config_set_argv(&cfg, argv, NULL) == 0);
        CHECK_INT(cfg.net_bytes, 1ull << 30);
        CHECK_INT(cfg.net_conns, 32);
        cfg.net = CORRAL_NET_ALLOW;
        corral_error *err = NULL;
        CHECK(corral_jail_config_validate(&cfg, &err) < 0);
        CHECK(err && strstr(err->msg, "allow-list is empty"));
        corral_error_free(err);
        err = NULL;
        CHECK(corral_jail_config_add_net_allow(&cfg, "a.test,*.b.test:8443,10.0.0.1", &err) == 0);
        CHECK(corral_jail_config_add_net_allow(&cfg, "a.test,bad host", &err) < 0);
        corral_error_free(err);
        err = NULL;
        CHECK(corral_jail_config_add_net_resolve(&cfg, "a.test:127.0.0.2", NULL) == 0);
        CHECK(corral_jail_config_add_net_resolve(&cfg, "b.test:[::1]", NULL) == 0);
        CHECK(corral_jail_config_add_net_resolve(&cfg, "b.test:x", NULL) < 0);
        CHECK(corral_jail_config_add_net_resolve(&cfg, "10.0.0.1:10.0.0.2", NULL) < 0);
        CHECK(corral_jail_config_add_net_resolve(&cfg, "b.test", NULL) < 0);
        CHECK(corral_jail_config_validate(&cfg, NULL) == 0);
        CHECK(corral_jail_config_copy(&copy, &cfg, NULL) == 0);
        CHECK_STR(copy.net_allow[1], "*.b.test:8443");
        CHECK(copy.net_allow[1] != cfg.net_allow[1]);
        CHECK(copy.net_allow[3] == NULL); /* nothing of the refused list went in */
        CHECK_STR(copy.net_resolve[1], "b.test:[::1]");
        copy.net_conns = 0;
        CHECK(corral_jail_config_validate(&copy, NULL) < 0);
        corral_jail_config_release(&copy);
        corral_jail_config_release(&cfg);
}

/* The masker over text fed in pieces of `step` bytes (0: all at once),
 * then flushed: a malloc'd copy of all that went on. */
static char *mask_in_pieces(const char *const *values, size_t n_values, const char *text, size_t step)
{
        struct net_masker m = { .values = values, .n_values = n_values };
        size_t len = strlen(text), got = 0;
        char *res = calloc(1, len + 1), *out = malloc(NET_SECRET_MAX + len + 1);
        for (size_t off = 0; off < len;) {
                size_t k = step && len - off > step ? step : len - off;
                size_t n = net_mask_feed(&m, text + off, k, out, false);
                memcpy(res + got, out, n);
                got += n;
                off += k;
        }
        size_t n = net_mask_feed(&m, "", 0, out, true);
        memcpy(res + got, out, n);
        res[got + n] = '\0';
        free(out);
        return res;
}

TEST(masking)
{
        const char *v[] = { "s3cret-token", "abcab" };
        /* the same answer however the stream is cut */
        for (size_t step = 0; step < 16; step++) {
                char *r = mask_in_pieces(v, 2, "x s3cret-token y s3cret-tokens3cret-token abcabcab s3cret-toke", step);
                CHECK_STR(r, "x ************ y ************************ *****cab s3cret-toke");
                free(r);
        }
        /* only a tail that may begin a value is held, and only until it cannot */
        struct net_masker m = { .values = v, .n_values = 1 };
        char out[NET_SECRET_MAX + 64];
        CHECK(net_mask_feed(&m, "abc s3cr", 8, out, false) == 4);
        CHECK(net_mask_feed(&m, "X", 1, out, false) == 5 && memcmp(out, "s3crX", 5) == 0);
        CHECK(net_mask_feed(&m, "plain", 5, out, false) == 5 && m.hold_len == 0);
}

TEST(secrets_config)
{
        corral_jail_config cfg, copy;
        corral_jail_config_init(&cfg);
        char *argv[] = { "true", NULL };
        CHECK(corral_jail_config_set_argv(&cfg, argv, NULL) == 0);
        cfg.net = CORRAL_NET_ALLOW;
        CHECK(corral_jail_config_add_net_allow(&cfg, "api.test,*.svc.test", NULL) == 0);
        corral_error *err = NULL;
        CHECK(corral_jail_config_add_net_secret(&cfg, "API.test", "Authorization", "Bearer t0ken", NULL) == 0);
        CHECK(corral_jail_config_add_net_secret(&cfg, "a.svc.test", "X-Key", "k3y-value", NULL) == 0);
        CHECK(corral_jail_config_add_net_secret(&cfg, "*.svc.test", "X-Key", "k3y-value", NULL) < 0);
        CHECK(corral_jail_config_add_net_secret(&cfg, "api.test:443", "X-Key", "k3y-value", NULL) < 0);
        CHECK(corral_jail_config_add_net_secret(&cfg, "api.test", "Bad Name", "k3y-value", NULL) < 0);
        CHECK(corral_jail_config_add_net_secret(&cfg, "api.test", "content-length", "k3y-value", NULL) < 0);
        CHECK(corral_jail_config_add_net_secret(&cfg, "api.test", "X-Key", "abc", NULL) < 0);
        /* a refusal names the host, never the value */
        CHECK(corral_jail_config_add_net_secret(&cfg, "api.test", "X-Key", "two\nlines", &err) < 0 && err &&
              strstr(err->msg, "api.test") && !strstr(err->msg, "lines"));
        corral_error_free(err);
        CHECK(cfg.n_net_secrets == 2);
        CHECK_STR(cfg.net_secrets[0].host, "api.test");
        CHECK(corral_jail_config_validate(&cfg, NULL) == 0);
        CHECK(corral_jail_config_copy(&copy, &cfg, NULL) == 0);
        CHECK(copy.n_net_secrets == 2 && copy.net_secrets[1].value != cfg.net_secrets[1].value);
        CHECK_STR(copy.net_secrets[1].value, "k3y-value");
        /* a credential for a host the jail cannot reach, or with no proxy at all */
        CHECK(corral_jail_config_add_net_secret(&copy, "other.test", "X-Key", "k3y-value", NULL) == 0);
        CHECK(corral_jail_config_validate(&copy, NULL) < 0);
        corral_jail_config_release(&copy);
        cfg.net = CORRAL_NET_NONE;
        CHECK(corral_jail_config_validate(&cfg, NULL) < 0);
        corral_jail_config_release(&cfg);
}

int main(void)
{
        RUN(allow_entries);
        RUN(allow_matching);
        RUN(request_heads);
        RUN(tls_server_name);
        RUN(masking);
        RUN(secrets_config);
        RUN(restricted_addresses);
        RUN(config);
        return DONE();
}
