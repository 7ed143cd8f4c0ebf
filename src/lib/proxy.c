/* proxy.c: the host-side HTTP proxy of a CORRAL_NET_ALLOW jail.
 *
 * The jail's setup child makes a listening socket on its own loopback
 * (127.0.0.1:3128, in the jail's network namespace) and hands it over a unix
 * socket (enter.c); the proxy accepts on it here, on the host, so accepted
 * connections come from inside the jail and the proxy's own connections go
 * out from the host's network.  It serves two kinds of request: CONNECT
 * HOST:PORT (a tunnel, whose first bytes must be a TLS ClientHello naming
 * HOST) and plain HTTP in absolute form (http://HOST[:PORT]/path, sent on
 * with "Connection: close").  Everything else gets an HTTP error with the
 * reason, in the body and an X-Corral-Reason header.
 *
 * Threads: one accepts; each connection has its own (at most net_conns), so
 * that the host resolver and connect never hold up another connection.  An
 * eventfd written at stop wakes every poll(); stop waits for the connection
 * threads and joins the acceptor.  A name is resolved by getaddrinfo_a on a
 * thread of glibc's, which a connection stops waiting for at stop: a name
 * server that does not answer does not hold the jail's end.  It does not: proxy
 * anything but HTTP/1.x, keep connections alive.
 *
 * Brokered credentials (cfg->net_secrets): a request to such a host gets
 * the credential's header from here, and the answer comes back through a
 * masker (net_mask_feed).  A CONNECT to one is not a tunnel: the program's
 * TLS ends here with a leaf of the jail's CA (proxy-tls.c), and the proxy
 * speaks TLS of its own to the host, checking its certificate.
 *
 * The request head and the ClientHello are bytes from the sandboxed program:
 * both parsers are bounded (NET_HEAD_MAX, one TLS record) and fuzzed
 * (tests/fuzz/fuzz-proxy.c).  The head parser is a minimal one on purpose:
 * it reads the request line and nothing else; the proxy forwards the
 * program's header lines untouched but for the hop-by-hop ones it drops.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "jail-internal.h"
#include "proxy-tls.h"
#include "proxy.h"
#include "ssl-dl.h"

#define NET_IDLE_MS 60000        /* a connection with no bytes either way for this long is closed */
#define NET_HEAD_MS 30000        /* to send the request head, or the ClientHello */
#define NET_CONNECT_MS 10000     /* to connect to the allowed host */
#define NET_RESOLVE_MS 30000     /* to resolve its name */

/* ---- allow-list entries ---- */

bool net_host_is_literal(const char *host)
{
        unsigned char buf[sizeof(struct in6_addr)];
        return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* A DNS name: labels of letters, digits, '-' and '_', 1-63 bytes each. */
static bool name_valid(const char *s)
{
        size_t n = strlen(s), label = 0;
        if (n == 0 || n > NET_HOST_MAX || s[0] == '.' || s[n - 1] == '.')
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c == '.') {
                        if (label == 0)
                                return false;
                        label = 0;
                } else if (isalnum(c) || c == '-' || c == '_') {
                        if (++label > 63)
                                return false;
                } else {
                        return false;
                }
        }
        return true;
}

/* "PORT" of 1..65535 into *ret. */
static bool port_parse(const char *s, size_t n, uint16_t *ret)
{
        if (n == 0 || n > 5)
                return false;
        unsigned v = 0;
        for (size_t i = 0; i < n; i++) {
                if (!isdigit((unsigned char)s[i]))
                        return false;
                v = v * 10 + (unsigned)(s[i] - '0');
        }
        if (v == 0 || v > 65535)
                return false;
        *ret = (uint16_t)v;
        return true;
}

/* Split "HOST[:PORT]" or "[V6][:PORT]" (n bytes) into a lowercase host and
 * a port (0 when absent).  false when malformed. */
static bool split_authority(const char *s, size_t n, char *host, size_t host_len, uint16_t *port)
{
        const char *h = s, *colon = NULL;
        size_t hn;
        *port = 0;
        if (n > 0 && s[0] == '[') {
                const char *close = memchr(s, ']', n);
                if (close == NULL)
                        return false;
                h = s + 1;
                hn = (size_t)(close - h);
                size_t rest = n - (size_t)(close + 1 - s);
                if (rest > 0) {
                        if (close[1] != ':')
                                return false;
                        colon = close + 1;
                }
        } else {
                colon = memrchr(s, ':', n);
                if (colon && memchr(s, ':', (size_t)(colon - s)))
                        return false; /* IPv6 without brackets */
                hn = colon ? (size_t)(colon - s) : n;
        }
        if (hn == 0 || hn >= host_len)
                return false;
        for (size_t i = 0; i < hn; i++)
                host[i] = (char)tolower((unsigned char)h[i]);
        host[hn] = '\0';
        if (memchr(host, '\0', hn))
                return false;
        if (colon && !port_parse(colon + 1, n - (size_t)(colon + 1 - s), port))
                return false;
        if (s[0] == '[') {
                unsigned char buf[sizeof(struct in6_addr)];
                return inet_pton(AF_INET6, host, buf) == 1;
        }
        return net_host_is_literal(host) || name_valid(host);
}

int net_allow_parse(const char *text, struct net_allow_entry *ret, corral_error **ret_err)
{
        memset(ret, 0, sizeof(*ret));
        const char *s = text;
        if (strncmp(s, "*.", 2) == 0) {
                ret->wildcard = true;
                s += 2;
        }
        if (!split_authority(s, strlen(s), ret->host, sizeof(ret->host), &ret->port))
                return corral_usage(ret_err, "invalid allow-list entry '%s': expected HOST[:PORT], *.DOMAIN[:PORT] "
                                             "or an IP address",
                                    text);
        ret->literal = net_host_is_literal(ret->host);
        if (ret->wildcard && (ret->literal || strchr(ret->host, '.') == NULL))
                return corral_usage(ret_err, "invalid allow-list entry '%s': a wildcard needs a domain with a dot "
                                             "after '*.'",
                                    text);
        return 0;
}

bool net_allow_matches(const struct net_allow_entry *e, const char *host, uint16_t port)
{
        if (e->port ? port != e->port : port != 80 && port != 443)
                return false;
        bool literal = net_host_is_literal(host);
        if (literal != e->literal)
                return false;
        if (literal) {
                unsigned char a[sizeof(struct in6_addr)], b[sizeof(struct in6_addr)];
                int af = strchr(host, ':') ? AF_INET6 : AF_INET;
                return inet_pton(af, host, a) == 1 && inet_pton(af, e->host, b) == 1 &&
                       memcmp(a, b, af == AF_INET ? 4 : 16) == 0;
        }
        if (!e->wildcard)
                return strcasecmp(host, e->host) == 0;
        size_t hn = strlen(host), dn = strlen(e->host);
        return hn > dn + 1 && host[hn - dn - 1] == '.' && strcasecmp(host + hn - dn, e->host) == 0;
}

/* ---- the request head ---- */

static bool is_tchar(unsigned char c)
{
        return c != 0 && (isalnum(c) || strchr("!#$%&'*+-.^_`|~", c) != NULL); /* strchr finds the NUL */
}

int net_request_parse(const char *buf, size_t len, struct net_request *ret, const char **ret_reason)
{
        memset(ret, 0, sizeof(*ret));
        const char *end = NULL;
        for (size_t i = 0; i + 3 < len && i + 3 < NET_HEAD_MAX; i++)
                if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') {
                        end = buf + i;
                        break;
                }
        if (end == NULL) {
                if (len < NET_HEAD_MAX)
                        return 0;
                *ret_reason = "the request head is too long";
                return -1;
        }
        ret->head_len = (size_t)(end - buf) + 4;
        const char *eol = memchr(buf, '\r', (size_t)(end - buf) + 1);
        ret->line_end = (size_t)(eol - buf) + 2;
        if (eol[1] != '\n') {
                *ret_reason = "malformed request line";
                return -1;
        }
        /* METHOD SP TARGET SP HTTP/1.D */
        const char *sp1 = memchr(buf, ' ', (size_t)(eol - buf));
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
        if (sp1 == NULL || sp2 == NULL || sp1 == buf || (size_t)(sp1 - buf) >= sizeof(ret->method) || sp2 == sp1 + 1 ||
            eol - sp2 != 9 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)sp2[8])) {
                *ret_reason = "malformed request line";
                return -1;
        }
        for (const char *p = buf; p < sp1; p++)
                if (!is_tchar((unsigned char)*p)) {
                        *ret_reason = "malformed request line";
                        return -1;
                }
        for (const char *p = sp1 + 1; p < sp2; p++)
                if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f) {
                        *ret_reason = "malformed request line";
                        return -1;
                }
        memcpy(ret->method, buf, (size_t)(sp1 - buf));
        ret->minor = sp2[8] - '0';
        const char *t = sp1 + 1;
        size_t tn = (size_t)(sp2 - t);
        if (strcmp(ret->method, "CONNECT") == 0) {
                ret->connect = true;
                if (!split_authority(t, tn, ret->host, sizeof(ret->host), &ret->port) || ret->port == 0) {
                        *ret_reason = "CONNECT needs HOST:PORT";
                        return -1;
                }
                return 1;
        }
        if (tn < 7 || strncasecmp(t, "http://", 7) != 0) {
                *ret_reason = tn >= 8 && strncasecmp(t, "https://", 8) == 0
                                      ? "https:// URLs go through CONNECT"
                                      : "the proxy serves absolute http:// URLs and CONNECT only";
                return -1;
        }
        const char *a = t + 7, *tend = t + tn;
        const char *slash = a;
        while (slash < tend && *slash != '/' && *slash != '?' && *slash != '#')
                slash++;
        if (memchr(a, '@', (size_t)(slash - a))) {
                *ret_reason = "user information in the URL";
                return -1;
        }
        if (!split_authority(a, (size_t)(slash - a), ret->host, sizeof(ret->host), &ret->port)) {
                *ret_reason = "no valid host in the URL";
                return -1;
        }
        if (ret->port == 0)
                ret->port = 80;
        ret->target_off = (size_t)(slash - buf);
        ret->target_len = (size_t)(tend - slash);
        return 1;
}

/* ---- the TLS server name ---- */

int net_tls_sni(const uint8_t *buf, size_t len, char *out, size_t out_len)
{
        /* record: type 22, version 3.x, length; handshake: type 1 */
        if (len >= 1 && buf[0] != 22)
                return -1;
        if (len >= 2 && buf[1] != 3)
                return -1;
        if (len < 5)
                return 0;
        size_t rec = (size_t)buf[3] << 8 | buf[4];
        if (rec < 4 || rec > 16384 + 2048)
                return -1;
        if (len < 5 + rec)
                return 0;
        const uint8_t *p = buf + 5, *end = p + rec;
        if (p[0] != 1)
                return -1;
        size_t hs = (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
        p += 4;
        if (hs > (size_t)(end - p))
                return -2; /* a hello over several records: not followed */
        end = p + hs;
#define NEED(n)                                                                                                       \
        do {                                                                                                          \
                if ((size_t)(end - p) < (size_t)(n))                                                                  \
                        return -1;                                                                                    \
        } while (0)
        NEED(2 + 32 + 1); /* version, random, session id length */
        p += 34;
        size_t sid = *p++;
        NEED(sid + 2);
        p += sid;
        size_t cs = (size_t)p[0] << 8 | p[1];
        p += 2;
        NEED(cs + 1);
        p += cs;
        size_t comp = *p++;
        NEED(comp);
        p += comp;
        if (p == end)
                return -2; /* no extensions */
        NEED(2);
        size_t ext_len = (size_t)p[0] << 8 | p[1];
        p += 2;
        NEED(ext_len);
        end = p + ext_len;
        while (end - p >= 4) {
                unsigned type = (unsigned)p[0] << 8 | p[1];
                size_t n = (size_t)p[2] << 8 | p[3];
                p += 4;
                NEED(n);
                if (type == 0) { /* server_name: list length, then (type, length, name) */
                        const uint8_t *q = p, *qend = p + n;
                        if (qend - q < 2)
                                return -1;
                        q += 2;
                        while (qend - q >= 3) {
                                unsigned nt = q[0];
                                size_t nl = (size_t)q[1] << 8 | q[2];
                                q += 3;
                                if ((size_t)(qend - q) < nl)
                                        return -1;
                                if (nt == 0) {
                                        if (nl == 0 || nl >= out_len)
                                                return -2;
                                        memcpy(out, q, nl);
                                        out[nl] = '\0';
                                        return name_valid(out) ? 1 : -2;
                                }
                                q += nl;
                        }
                        return -2;
                }
                p += n;
        }
#undef NEED
        return -2;
}

/* ---- destinations ---- */

static bool v4_restricted(uint32_t a)
{
        uint8_t b0 = (uint8_t)(a >> 24), b1 = (uint8_t)(a >> 16);
        return b0 == 0 || b0 == 10 || b0 == 127 || (b0 == 169 && b1 == 254) || (b0 == 172 && (b1 & 0xf0) == 16) ||
               (b0 == 192 && b1 == 168) || (b0 == 100 && (b1 & 0xc0) == 64) /* CGNAT */ ||
               (b0 == 192 && b1 == 0 && (uint8_t)(a >> 8) == 0) || (b0 == 198 && (b1 & 0xfe) == 18) ||
               b0 >= 224 /* multicast, reserved, broadcast */;
}

bool net_addr_is_restricted(const struct sockaddr *sa)
{
        if (sa->sa_family == AF_INET)
                return v4_restricted(ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr));
        if (sa->sa_family != AF_INET6)
                return true;
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
                uint32_t v4;
                memcpy(&v4, a->s6_addr + 12, 4);
                return v4_restricted(ntohl(v4));
        }
        return IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_LINKLOCAL(a) ||
               IN6_IS_ADDR_SITELOCAL(a) || IN6_IS_ADDR_MULTICAST(a) || (a->s6_addr[0] & 0xfe) == 0xfc /* ULA */ ||
               (a->s6_addr[0] == 0x20 && a->s6_addr[1] == 0x01 && a->s6_addr[2] == 0x0d && a->s6_addr[3] == 0xb8) ||
               (a->s6_addr[0] == 0x00 && a->s6_addr[1] == 0x64 && a->s6_addr[2] == 0xff && a->s6_addr[3] == 0x9b);
}

/* ---- the proxy ---- */

struct resolve_entry {
        char host[NET_HOST_MAX + 1];
        struct sockaddr_storage addr;
        socklen_t addr_len;
};

struct net_proxy {
        struct net_allow_entry *allow;
        size_t n_allow;
        struct resolve_entry *resolve;
        size_t n_resolve;
        uint64_t max_bytes;
        uint64_t max_conns;
        int handoff, listen_fd, stop_fd;
        pthread_t acceptor;
        bool acceptor_started;
        atomic_uint_fast64_t bytes;     /* both ways, all connections */
        pthread_mutex_t lock;
        pthread_cond_t idle;            /* active reached 0 */
        uint64_t active;
        struct corral_net_conn *log;
        size_t n_log, cap_log;
        uint64_t dropped;
        struct corral_net_secret *secrets; /* brokered credentials, copies wiped at stop */
        size_t n_secrets;
        const char **secret_values;        /* secrets[i].value, for the masker */
        struct net_tls *tls;               /* the jail's CA, when a credential is brokered */
        const struct ssl_api *S;           /* OpenSSL, loaded for tls (NULL without it) */

        /* net_proxy_observe(): told of each connection as it ends */
        void (*on_conn)(void *userdata, const struct corral_net_conn *c);
        void *on_conn_userdata;
};

struct conn {
        struct net_proxy *p;
        int client, server;
        SSL *client_ssl;                /* while refuse() answers inside the program's TLS */
        double t0;
        struct corral_net_conn rec;
        bool brokered;                  /* the host has credentials: added going up, masked coming back */
        struct net_masker mask;         /* coming back from a brokered host */
        char head[NET_HEAD_MAX];
        size_t head_len;
};

/* One side of a relayed connection: a socket, with TLS on it (a brokered
 * host's, called through S) or not. */
struct end {
        int fd;
        SSL *ssl;
        const struct ssl_api *S;
};
static bool end_send(struct conn *c, struct end *e, const char *buf, size_t len);

/* Tell net_proxy_observe()'s observer of a connection that ended. */
static void observe_conn(struct net_proxy *p, const struct corral_net_conn *rec)
{
        pthread_mutex_lock(&p->lock);
        void (*fn)(void *, const struct corral_net_conn *) = p->on_conn;
        void *ud = p->on_conn_userdata;
        pthread_mutex_unlock(&p->lock);
        if (fn)
                fn(ud, rec);
}

void net_proxy_observe(struct net_proxy *p, void (*fn)(void *userdata, const struct corral_net_conn *c),
                       void *userdata)
{
        if (p == NULL)
                return;
        pthread_mutex_lock(&p->lock);
        p->on_conn = fn;
        p->on_conn_userdata = userdata;
        pthread_mutex_unlock(&p->lock);
}

/* Keep c's record in the log (under the lock); the strings move over. */
static void log_conn(struct net_proxy *p, struct conn *c)
{
        c->rec.ms = monotonic_ms() - c->t0;
        observe_conn(p, &c->rec);
        pthread_mutex_lock(&p->lock);
        bool kept = false;
        if (p->n_log < CORRAL_NET_LOG_MAX) {
                if (p->n_log == p->cap_log) {
                        size_t cap = p->cap_log ? p->cap_log * 2 : 16;
                        struct corral_net_conn *l = realloc(p->log, cap * sizeof(*l));
                        if (l) {
                                p->log = l;
                                p->cap_log = cap;
                        }
                }
                if (p->n_log < p->cap_log) {
                        p->log[p->n_log++] = c->rec;
                        kept = true;
                }
        }
        if (!kept) {
                p->dropped++;
                free(c->rec.host);
                free(c->rec.method);
                free(c->rec.reason);
                free(c->rec.address);
        }
        memset(&c->rec, 0, sizeof(c->rec));
        pthread_mutex_unlock(&p->lock);
}

static void set_reason(struct conn *c, const char *reason)
{
        if (c->rec.reason == NULL)
                c->rec.reason = strdup(reason);
}

/* Wait for fd to be ready for events, or the proxy to stop.  1 ready, 0
 * timed out, -1 stopping. */
static int wait_fd(struct conn *c, int fd, short events, int ms)
{
        struct pollfd pfd[2] = { { .fd = fd, .events = events }, { .fd = c->p->stop_fd, .events = POLLIN } };
        for (;;) {
                int r = poll(pfd, 2, ms);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0 || pfd[1].revents)
                        return -1;
                return r > 0;
        }
}

/* Send it all; every socket is non-blocking, so a peer that stops reading
 * holds this connection up for NET_IDLE_MS at most, and never the proxy's
 * stop.  false when it could not. */
static bool send_all(struct conn *c, int fd, const char *buf, size_t len)
{
        while (len > 0) {
                ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        if (wait_fd(c, fd, POLLOUT, NET_IDLE_MS) != 1)
                                return false;
                        continue;
                }
                if (n <= 0)
                        return false;
                buf += n;
                len -= (size_t)n;
        }
        return true;
}

/* Answer the program with an HTTP error carrying reason, and log it. */
static void refuse(struct conn *c, int code, const char *reason)
{
        set_reason(c, reason);
        const char *text = code == 403 ? "Forbidden" : code == 400 ? "Bad Request" : code == 502 ? "Bad Gateway"
                           : code == 503                          ? "Service Unavailable"
                                                                  : "Gateway Timeout";
        char buf[1024];
        int body = snprintf(NULL, 0, "corral proxy: %s\n", reason);
        int n = snprintf(buf, sizeof(buf),
                         "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Corral-Reason: %s\r\n"
                         "Connection: close\r\nContent-Length: %d\r\n\r\ncorral proxy: %s\n",
                         code, text, reason, body, reason);
        struct end cl = { .fd = c->client, .ssl = c->client_ssl, .S = c->p->S };
        if (n > 0)
                (void)end_send(c, &cl, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Count n more bytes; false when that passes the proxy's byte limit. */
static bool take_bytes(struct net_proxy *p, size_t n)
{
        return atomic_fetch_add(&p->bytes, n) + n <= p->max_bytes;
}

static const struct resolve_entry *resolve_lookup(struct net_proxy *p, const char *host)
{
        for (size_t i = 0; i < p->n_resolve; i++)
                if (strcasecmp(p->resolve[i].host, host) == 0)
                        return &p->resolve[i];
        return NULL;
}

/* Connect without blocking past NET_CONNECT_MS.  The fd, or -1. */
static int connect_to(struct conn *c, const struct sockaddr *sa, socklen_t len)
{
        int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -1;
        if (connect(fd, sa, len) == 0)
                return fd;
        if (errno == EINPROGRESS && wait_fd(c, fd, POLLOUT, NET_CONNECT_MS) == 1) {
                int err = 0;
                socklen_t el = sizeof(err);
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
                        return fd;
        }
        close(fd);
        return -1;
}

static void note_address(struct conn *c, const struct sockaddr *sa)
{
        char text[INET6_ADDRSTRLEN] = "";
        if (sa->sa_family == AF_INET)
                inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, text, sizeof(text));
        else
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, text, sizeof(text));
        free(c->rec.address);
        c->rec.address = strdup(text);
}

/* A host name being resolved by glibc's getaddrinfo_a on a thread of its
 * own.  The resolver cannot be interrupted (a name server that does not
 * answer holds it for its timeouts, seconds each), so a connection stops
 * waiting for it when the proxy stops and leaves the lookup to free itself:
 * two references, the waiter's and the completion's. */
struct lookup {
        struct gaicb cb;
        struct addrinfo hints;
        char host[NET_HOST_MAX + 1], port[8];
        int done_fd; /* eventfd: the answer is in */
        atomic_int refs;
};

static void lookup_put(struct lookup *l)
{
        if (atomic_fetch_sub(&l->refs, 1) != 1)
                return;
        if (l->cb.ar_result)
                freeaddrinfo(l->cb.ar_result);
        close(l->done_fd);
        free(l);
}

static void lookup_done(union sigval v)
{
        struct lookup *l = v.sival_ptr;
        uint64_t one = 1;
        ssize_t w = write(l->done_fd, &one, sizeof(one));
        (void)w;
        lookup_put(l);
}

/* getaddrinfo(), given up on when the proxy stops or after NET_RESOLVE_MS.
 * 0 and *ret; -1 no answer; -2 stopping. */
static int resolve(struct conn *c, const char *host, const char *port, const struct addrinfo *hints,
                   struct addrinfo **ret)
{
        *ret = NULL;
        struct lookup *l = calloc(1, sizeof(*l));
        if (l == NULL || strlen(host) > NET_HOST_MAX) {
                free(l);
                return -1;
        }
        l->done_fd = eventfd(0, EFD_CLOEXEC);
        if (l->done_fd < 0) {
                free(l);
                return -1;
        }
        snprintf(l->host, sizeof(l->host), "%s", host);
        snprintf(l->port, sizeof(l->port), "%s", port);
        l->hints = *hints;
        l->cb.ar_name = l->host;
        l->cb.ar_service = l->port;
        l->cb.ar_request = &l->hints;
        atomic_init(&l->refs, 2);
        struct gaicb *list[1] = { &l->cb };
        struct sigevent sev = { .sigev_notify = SIGEV_THREAD, .sigev_notify_function = lookup_done,
                                .sigev_value.sival_ptr = l };
        if (getaddrinfo_a(GAI_NOWAIT, list, 1, &sev) != 0) {
                close(l->done_fd);
                free(l);
                return -1;
        }
        int ready = wait_fd(c, l->done_fd, POLLIN, NET_RESOLVE_MS);
        if (ready != 1) {
                /* A request cancelled before it started is not completed:
                 * its completion's reference is dropped here. */
                if (gai_cancel(&l->cb) == EAI_CANCELED)
                        lookup_put(l);
                lookup_put(l);
                return ready < 0 ? -2 : -1;
        }
        int r = gai_error(&l->cb);
        if (r == 0)
                *ret = TAKE_PTR(l->cb.ar_result);
        lookup_put(l);
        return r == 0 && *ret ? 0 : -1;
}

/* Resolve and connect to an allowed host.  0, or -1 after refusing. */
static int open_upstream(struct conn *c, const struct net_request *rq, bool by_literal)
{
        const struct resolve_entry *mapped = resolve_lookup(c->p, rq->host);
        if (mapped) {
                struct sockaddr_storage ss = mapped->addr;
                ((struct sockaddr_in *)(void *)&ss)->sin_port = htons(rq->port); /* same offset in sockaddr_in6 */
                note_address(c, (struct sockaddr *)&ss);
                c->server = connect_to(c, (struct sockaddr *)&ss, mapped->addr_len);
                if (c->server < 0) {
                        refuse(c, 502, "cannot connect to the host");
                        return -1;
                }
                return 0;
        }
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                  .ai_flags = by_literal ? AI_NUMERICHOST : AI_ADDRCONFIG };
        char port[8];
        snprintf(port, sizeof(port), "%u", rq->port);
        struct addrinfo *res = NULL;
        int found = resolve(c, rq->host, port, &hints, &res);
        if (found < 0) {
                refuse(c, 502, found == -2 ? "the sandbox ended while its host name was being resolved"
                                           : "cannot resolve the host name");
                return -1;
        }
        bool restricted_only = true;
        for (struct addrinfo *ai = res; ai && c->server < 0; ai = ai->ai_next) {
                /* Loopback, private and the like: only when asked for by
                 * address (the allow entry was that literal) or mapped. */
                if (!by_literal && net_addr_is_restricted(ai->ai_addr))
                        continue;
                restricted_only = false;
                note_address(c, ai->ai_addr);
                c->server = connect_to(c, ai->ai_addr, ai->ai_addrlen);
        }
        freeaddrinfo(res);
        if (c->server < 0) {
                refuse(c, restricted_only ? 403 : 502,
                       restricted_only ? "the host resolves to a loopback, private or reserved address"
                                       : "cannot connect to the host");
                return -1;
        }
        return 0;
}

/* Read what there is: >0 bytes, 0 at the end, -1 on an error, -2 when
 * nothing is there yet. */
static ssize_t end_recv(struct end *e, char *buf, size_t len)
{
        if (e->ssl == NULL) {
                ssize_t n = recv(e->fd, buf, len, MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return -2;
                return n;
        }
        size_t got = 0;
        e->S->ERR_clear_error();
        if (e->S->SSL_read_ex(e->ssl, buf, len, &got) == 1)
                return (ssize_t)got;
        switch (e->S->SSL_get_error(e->ssl, 0)) {
        case SSL_ERROR_WANT_READ:
        case SSL_ERROR_WANT_WRITE:
                return -2;
        case SSL_ERROR_ZERO_RETURN:
                return 0;
        default:
                return -1;
        }
}

/* Send it all (see send_all); false when it could not. */
static bool end_send(struct conn *c, struct end *e, const char *buf, size_t len)
{
        if (e->ssl == NULL)
                return send_all(c, e->fd, buf, len);
        while (len > 0) {
                size_t w = 0;
                e->S->ERR_clear_error();
                if (e->S->SSL_write_ex(e->ssl, buf, len, &w) == 1) {
                        buf += w;
                        len -= w;
                        continue;
                }
                int err = e->S->SSL_get_error(e->ssl, 0);
                short ev = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
                if (ev == 0 || wait_fd(c, e->fd, ev, NET_IDLE_MS) != 1)
                        return false;
        }
        return true;
}

/* No more bytes this way: close_notify for TLS, then the socket's half. */
static void end_close_write(struct end *e)
{
        if (e->ssl)
                (void)e->S->SSL_shutdown(e->ssl);
        shutdown(e->fd, SHUT_WR);
}

/* The TLS handshake, either side, bounded by NET_HEAD_MS a step. */
static bool end_handshake(struct conn *c, struct end *e, bool server)
{
        for (;;) {
                e->S->ERR_clear_error();
                int r = server ? e->S->SSL_accept(e->ssl) : e->S->SSL_connect(e->ssl);
                if (r == 1)
                        return true;
                int err = e->S->SSL_get_error(e->ssl, r);
                short ev = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
                if (ev == 0 || wait_fd(c, e->fd, ev, NET_HEAD_MS) != 1)
                        return false;
        }
}

size_t net_mask_feed(struct net_masker *m, const char *in, size_t n, char *out, bool flush)
{
        size_t total = m->hold_len + n;
        memcpy(out, m->hold, m->hold_len);
        memcpy(out + m->hold_len, in, n);
        m->hold_len = 0;
        for (size_t i = 0; i < m->n_values; i++) {
                const char *v = m->values[i];
                size_t vl = strlen(v);
                for (char *at = out; vl > 0 && (at = memmem(at, total - (size_t)(at - out), v, vl)) != NULL; at += vl)
                        memset(at, '*', vl);
        }
        if (flush)
                return total;
        size_t keep = 0;
        for (size_t i = 0; i < m->n_values; i++) {
                const char *v = m->values[i];
                size_t vl = strlen(v);
                for (size_t k = vl > 0 && vl - 1 < total ? vl - 1 : total; k > keep; k--)
                        if (memcmp(out + total - k, v, k) == 0) {
                                keep = k;
                                break;
                        }
        }
        memcpy(m->hold, out + total - keep, keep);
        m->hold_len = keep;
        return total - keep;
}

/* Copy bytes both ways until both sides are done, the proxy stops, the
 * connection idles out or the byte limit is reached.  pending (from the
 * program, read with its head) goes first.  For a brokered host what comes
 * back is masked (net_mask_feed). */
static void relay(struct conn *c, struct end *cl, struct end *sv, const char *pending, size_t pending_len)
{
        if (pending_len > 0) {
                if (!take_bytes(c->p, pending_len)) {
                        set_reason(c, "the jail's network byte limit was reached");
                        return;
                }
                if (!end_send(c, sv, pending, pending_len))
                        return;
                c->rec.bytes_up += pending_len;
        }
        char buf[65536];
        cleanup_free char *masked = c->brokered ? malloc(NET_SECRET_MAX + sizeof(buf)) : NULL;
        if (c->brokered && masked == NULL) {
                set_reason(c, "out of memory");
                return;
        }
        bool up_open = true, down_open = true;
        while (up_open || down_open) {
                bool ready[2] = { up_open && cl->ssl && cl->S->SSL_pending(cl->ssl) > 0,
                                  down_open && sv->ssl && sv->S->SSL_pending(sv->ssl) > 0 };
                struct pollfd pfd[3] = { { .fd = up_open ? cl->fd : -1, .events = POLLIN },
                                         { .fd = down_open ? sv->fd : -1, .events = POLLIN },
                                         { .fd = c->p->stop_fd, .events = POLLIN } };
                int r = poll(pfd, 3, ready[0] || ready[1] ? 0 : NET_IDLE_MS);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0 || pfd[2].revents)
                        return;
                if (r == 0 && !ready[0] && !ready[1]) {
                        set_reason(c, "idle for too long");
                        return;
                }
                for (int side = 0; side < 2; side++) {
                        if (!pfd[side].revents && !ready[side])
                                continue;
                        struct end *from = side == 0 ? cl : sv, *to = side == 0 ? sv : cl;
                        ssize_t n = end_recv(from, buf, sizeof(buf));
                        if (n == -2)
                                continue;
                        if (n <= 0) {
                                if (side == 1 && c->brokered && c->mask.hold_len > 0) {
                                        size_t m = net_mask_feed(&c->mask, buf, 0, masked, true);
                                        if (!end_send(c, to, masked, m))
                                                return;
                                        c->rec.bytes_down += m;
                                }
                                /* Half-close: pass the end on, keep the other way. */
                                end_close_write(to);
                                if (side == 0)
                                        up_open = false;
                                else
                                        down_open = false;
                                if (n < 0) /* a reset: nothing more either way */
                                        return;
                                continue;
                        }
                        if (!take_bytes(c->p, (size_t)n)) {
                                set_reason(c, "the jail's network byte limit was reached");
                                return;
                        }
                        const char *out = buf;
                        size_t m = (size_t)n;
                        if (side == 1 && c->brokered) {
                                m = net_mask_feed(&c->mask, buf, (size_t)n, masked, false);
                                out = masked;
                        }
                        /* A slow reader holds this connection up, no other. */
                        if (!end_send(c, to, out, m)) {
                                set_reason(c, "a peer stopped reading");
                                return;
                        }
                        if (side == 0)
                                c->rec.bytes_up += (uint64_t)n;
                        else
                                c->rec.bytes_down += (uint64_t)m;
                }
        }
}

/* Is name (n bytes, then ':') one of the fields a brokered request gets
 * from the proxy rather than the program? */
static bool brokered_field(const struct net_proxy *p, const char *host, const char *line, size_t n)
{
        while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
                n--; /* "Name :" is not valid HTTP, but a lenient server may take it */
        static const char *const own[] = { "host", "accept-encoding" };
        for (size_t i = 0; i < ARRAY_SIZE(own); i++)
                if (n == strlen(own[i]) && strncasecmp(line, own[i], n) == 0)
                        return true;
        for (size_t i = 0; i < p->n_secrets; i++)
                if (strcmp(p->secrets[i].host, host) == 0 && n == strlen(p->secrets[i].header) &&
                    strncasecmp(line, p->secrets[i].header, n) == 0)
                        return true;
        return false;
}

/* The head sent to the host: "METHOD TARGET HTTP/1.x" (target in origin
 * form), the program's header lines (lines..lines_end, each ending in CRLF)
 * less the hop-by-hop and proxy ones, and Connection: close.  For a
 * brokered host also less Host, Accept-Encoding and the credentials' own
 * fields, which the proxy sets: Host to the host it connects to (no other
 * name on that server sees the credential), Accept-Encoding to identity (so
 * that an echo comes back as text that can be masked), and each
 * credential.  0 when it does not fit in cap. */
static size_t rewrite_head(const struct conn *c, const struct net_request *rq, const char *target,
                           size_t target_len, const char *lines, const char *lines_end, bool tls, char *out,
                           size_t cap)
{
        size_t o = 0;
#define PUT(s, n)                                                                                                     \
        do {                                                                                                          \
                if (o + (n) > cap)                                                                                    \
                        return 0;                                                                                     \
                memcpy(out + o, (s), (n));                                                                            \
                o += (n);                                                                                             \
        } while (0)
        PUT(rq->method, strlen(rq->method));
        PUT(" ", 1);
        if (target_len == 0 || (target[0] != '/' && target[0] != '*'))
                PUT("/", 1);
        PUT(target, target_len);
        char ver[16];
        int vn = snprintf(ver, sizeof(ver), " HTTP/1.%d\r\n", rq->minor);
        PUT(ver, (size_t)vn);
        static const char *const drop[] = { "connection:", "proxy-connection:", "proxy-authorization:",
                                            "keep-alive:" };
        bool kept = true;
        for (const char *line = lines; line < lines_end;) {
                const char *eol = memmem(line, (size_t)(lines_end - line), "\r\n", 2);
                if (eol == NULL)
                        break;
                bool keep = true;
                if (line[0] == ' ' || line[0] == '\t') {
                        keep = kept; /* a folded line goes with the field it continues */
                } else {
                        for (size_t i = 0; i < ARRAY_SIZE(drop); i++)
                                if ((size_t)(eol - line) >= strlen(drop[i]) &&
                                    strncasecmp(line, drop[i], strlen(drop[i])) == 0)
                                        keep = false;
                        const char *colon = memchr(line, ':', (size_t)(eol - line));
                        if (c->brokered && colon && brokered_field(c->p, rq->host, line, (size_t)(colon - line)))
                                keep = false;
                }
                if (keep)
                        PUT(line, (size_t)(eol - line) + 2);
                kept = keep;
                line = eol + 2;
        }
        if (c->brokered) {
                char host[NET_HOST_MAX + 16];
                bool v6 = strchr(rq->host, ':') != NULL;
                int hn = rq->port == (tls ? 443 : 80)
                                 ? snprintf(host, sizeof(host), v6 ? "Host: [%s]\r\n" : "Host: %s\r\n", rq->host)
                                 : snprintf(host, sizeof(host), v6 ? "Host: [%s]:%u\r\n" : "Host: %s:%u\r\n", rq->host,
                                            rq->port);
                PUT(host, (size_t)hn);
                PUT("Accept-Encoding: identity\r\n", 27);
                for (size_t i = 0; i < c->p->n_secrets; i++) {
                        const struct corral_net_secret *s = &c->p->secrets[i];
                        if (strcmp(s->host, rq->host) != 0)
                                continue;
                        PUT(s->header, strlen(s->header));
                        PUT(": ", 2);
                        PUT(s->value, strlen(s->value));
                        PUT("\r\n", 2);
                }
        }
        PUT("Connection: close\r\n\r\n", 21);
#undef PUT
        return o;
}

/* The head of a request inside a brokered TLS connection, in origin form
 * ("GET /path HTTP/1.1"): 1 with the method, target and where the header
 * lines begin and end, 0 when more bytes are needed, -1 with *ret_reason. */
static int origin_head_parse(const char *buf, size_t len, struct net_request *rq, size_t *ret_target_off,
                             size_t *ret_target_len, const char **ret_reason)
{
        const char *end = memmem(buf, len, "\r\n\r\n", 4);
        if (end == NULL) {
                if (len < NET_HEAD_MAX)
                        return 0;
                *ret_reason = "the request head is too long";
                return -1;
        }
        const char *eol = memmem(buf, (size_t)(end - buf) + 2, "\r\n", 2);
        const char *sp1 = memchr(buf, ' ', (size_t)(eol - buf));
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
        if (sp1 == NULL || sp2 == NULL || sp1 == buf || (size_t)(sp1 - buf) >= sizeof(rq->method) ||
            eol - sp2 != 9 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)sp2[8]) ||
            (sp1[1] != '/' && !(sp1[1] == '*' && sp2 == sp1 + 2))) {
                *ret_reason = "malformed request line (expected METHOD /PATH HTTP/1.x)";
                return -1;
        }
        for (const char *q = buf; q < sp1; q++)
                if (!is_tchar((unsigned char)*q)) {
                        *ret_reason = "malformed request line";
                        return -1;
                }
        for (const char *q = sp1 + 1; q < sp2; q++)
                if ((unsigned char)*q <= ' ' || (unsigned char)*q >= 0x7f) {
                        *ret_reason = "malformed request line";
                        return -1;
                }
        memset(rq->method, 0, sizeof(rq->method));
        memcpy(rq->method, buf, (size_t)(sp1 - buf));
        rq->minor = sp2[8] - '0';
        *ret_target_off = (size_t)(sp1 + 1 - buf);
        *ret_target_len = (size_t)(sp2 - sp1 - 1);
        rq->line_end = (size_t)(eol - buf) + 2;
        rq->head_len = (size_t)(end - buf) + 4;
        return 1;
}

/* A refusal inside the program's TLS connection (after its handshake). */
static void refuse_tls(struct conn *c, struct end *cl, int code, const char *reason)
{
        c->client_ssl = cl->ssl;
        refuse(c, code, reason);
        c->client_ssl = NULL;
}

/* A CONNECT to a brokered host: terminate the program's TLS with the jail
 * CA's leaf for the host, read one request, add the credentials, and send
 * it on over a TLS connection of the proxy's own that checks the host's
 * certificate. */
static void broker_tls(struct conn *c, const struct net_request *rq)
{
        struct end cl = { .fd = c->client, .ssl = NULL, .S = c->p->S };
        struct end sv = { .fd = c->server, .ssl = NULL, .S = c->p->S };
        /* TLS writes go out a record at a time: without this, Nagle holds
         * each last short segment back for the peer's delayed ACK (40 ms). */
        int one = 1;
        setsockopt(c->client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(c->server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        const struct ssl_api *S = c->p->S;
        if (c->head_len > rq->head_len) {
                set_reason(c, "bytes after CONNECT before the tunnel was established");
                return;
        }
        cl.ssl = net_tls_server(c->p->tls, rq->host);
        if (cl.ssl == NULL || S->SSL_set_fd(cl.ssl, c->client) != 1) {
                set_reason(c, "cannot set up TLS for the brokered host");
                goto out;
        }
        if (!end_handshake(c, &cl, true)) {
                set_reason(c, "the program's TLS handshake failed (does it trust the jail's CA bundle?)");
                goto out;
        }
        const char *sni = S->SSL_get_servername(cl.ssl, TLSEXT_NAMETYPE_host_name);
        if (sni && !net_host_is_literal(rq->host) && strcasecmp(sni, rq->host) != 0) {
                refuse_tls(c, &cl, 403, "the TLS server name does not match the CONNECT host");
                goto out;
        }
        struct net_request in = *rq;
        size_t toff = 0, tlen = 0;
        const char *why = NULL;
        int r;
        c->head_len = 0;
        while ((r = origin_head_parse(c->head, c->head_len, &in, &toff, &tlen, &why)) == 0) {
                if (c->head_len == sizeof(c->head)) {
                        r = -1;
                        why = "the request head is too long";
                        break;
                }
                ssize_t n = end_recv(&cl, c->head + c->head_len, sizeof(c->head) - c->head_len);
                if (n == -2) {
                        if (S->SSL_pending(cl.ssl) == 0 && wait_fd(c, cl.fd, POLLIN, NET_HEAD_MS) != 1) {
                                set_reason(c, "no request");
                                goto out;
                        }
                        continue;
                }
                if (n <= 0) {
                        set_reason(c, "no request");
                        goto out;
                }
                c->head_len += (size_t)n;
        }
        if (r < 0) {
                refuse_tls(c, &cl, 400, why);
                goto out;
        }
        sv.ssl = net_tls_client(c->p->tls, rq->host);
        if (sv.ssl == NULL || S->SSL_set_fd(sv.ssl, c->server) != 1) {
                refuse_tls(c, &cl, 502, "cannot set up TLS to the host");
                goto out;
        }
        if (!end_handshake(c, &sv, false)) {
                long v = S->SSL_get_verify_result(sv.ssl);
                refuse_tls(c, &cl, 502,
                           v != X509_V_OK ? "the host's TLS certificate does not verify (system trust store and "
                                            "the upstream CA file)"
                                          : "the TLS handshake with the host failed");
                goto out;
        }
        char *out = malloc(NET_HEAD_MAX + 64 + NET_SECRET_MAX * 4);
        size_t n = out ? rewrite_head(c, &in, c->head + toff, tlen, c->head + in.line_end, c->head + in.head_len - 2,
                                      true, out, NET_HEAD_MAX + 64 + NET_SECRET_MAX * 4)
                       : 0;
        if (n == 0) {
                free(out);
                refuse_tls(c, &cl, 400, "the request head is too long");
                goto out;
        }
        bool within = take_bytes(c->p, n);
        bool sent = within && end_send(c, &sv, out, n);
        explicit_bzero(out, n);
        free(out);
        if (!within)
                set_reason(c, "the jail's network byte limit was reached");
        if (!sent)
                goto out;
        c->rec.bytes_up += n;
        relay(c, &cl, &sv, c->head + in.head_len, c->head_len - in.head_len);
out:
        S->SSL_free(cl.ssl);
        S->SSL_free(sv.ssl);
}

/* After "200" to a CONNECT: the ClientHello must name the host. */
static int check_sni(struct conn *c, const struct net_request *rq, size_t *ret_len)
{
        size_t have = c->head_len - rq->head_len;
        memmove(c->head, c->head + rq->head_len, have);
        char sni[NET_HOST_MAX + 1];
        for (;;) {
                int r = net_tls_sni((const uint8_t *)c->head, have, sni, sizeof(sni));
                if (r == 1) {
                        if (!net_host_is_literal(rq->host) && strcasecmp(sni, rq->host) != 0) {
                                set_reason(c, "the TLS server name does not match the CONNECT host");
                                return -1;
                        }
                        break;
                }
                if (r == -1) {
                        set_reason(c, "not TLS: the tunnel carries TLS only");
                        return -1;
                }
                if (r == -2) {
                        if (!net_host_is_literal(rq->host)) {
                                set_reason(c, "the TLS ClientHello names no server");
                                return -1;
                        }
                        break;
                }
                if (have == sizeof(c->head) || wait_fd(c, c->client, POLLIN, NET_HEAD_MS) != 1) {
                        set_reason(c, "no TLS ClientHello");
                        return -1;
                }
                ssize_t n = recv(c->client, c->head + have, sizeof(c->head) - have, MSG_DONTWAIT);
                if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) {
                        set_reason(c, "no TLS ClientHello");
                        return -1;
                }
                if (n > 0)
                        have += (size_t)n;
        }
        *ret_len = have;
        return 0;
}

static void serve(struct conn *c)
{
        struct net_request rq;
        const char *why = NULL;
        int r;
        for (;;) {
                r = net_request_parse(c->head, c->head_len, &rq, &why);
                if (r != 0)
                        break;
                if (wait_fd(c, c->client, POLLIN, NET_HEAD_MS) != 1) {
                        set_reason(c, "no request");
                        return;
                }
                ssize_t n = recv(c->client, c->head + c->head_len, sizeof(c->head) - c->head_len, MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                        set_reason(c, "no request");
                        return;
                }
                if (n > 0)
                        c->head_len += (size_t)n;
        }
        if (r < 0) {
                refuse(c, 400, why);
                return;
        }
        free(c->rec.host);
        free(c->rec.method);
        c->rec.host = strdup(rq.host);
        c->rec.method = strdup(rq.method);
        c->rec.port = rq.port;
        const struct net_allow_entry *match = NULL;
        for (size_t i = 0; i < c->p->n_allow && match == NULL; i++)
                if (net_allow_matches(&c->p->allow[i], rq.host, rq.port))
                        match = &c->p->allow[i];
        if (match == NULL) {
                refuse(c, 403, net_host_is_literal(rq.host) ? "the address is not in the jail's allow-list"
                                                            : "the host is not in the jail's allow-list");
                return;
        }
        if (open_upstream(c, &rq, match->literal) < 0)
                return;
        c->rec.allowed = true;
        for (size_t i = 0; i < c->p->n_secrets; i++)
                c->brokered |= strcmp(c->p->secrets[i].host, rq.host) == 0;
        c->rec.brokered = c->brokered;
        c->mask.values = c->p->secret_values;
        c->mask.n_values = c->p->n_secrets;
        struct end cl = { .fd = c->client, .ssl = NULL, .S = c->p->S };
        struct end sv = { .fd = c->server, .ssl = NULL, .S = c->p->S };
        if (rq.connect) {
                static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
                if (!send_all(c, c->client, ok, sizeof(ok) - 1))
                        return;
                if (c->brokered && c->p->tls) {
                        broker_tls(c, &rq);
                        return;
                }
                size_t hello_len;
                if (check_sni(c, &rq, &hello_len) < 0)
                        return;
                relay(c, &cl, &sv, c->head, hello_len);
                return;
        }
        size_t cap = NET_HEAD_MAX + 64 + NET_SECRET_MAX * 4;
        char *out = malloc(cap);
        size_t n = out ? rewrite_head(c, &rq, c->head + rq.target_off, rq.target_len, c->head + rq.line_end,
                                      c->head + rq.head_len - 2, false, out, cap)
                       : 0;
        if (n == 0) {
                free(out);
                set_reason(c, "the request head is too long");
                return;
        }
        bool within = take_bytes(c->p, n);
        bool sent = within && send_all(c, c->server, out, n);
        explicit_bzero(out, n);
        free(out);
        if (!within)
                set_reason(c, "the jail's network byte limit was reached");
        if (!sent)
                return;
        c->rec.bytes_up += n;
        relay(c, &cl, &sv, c->head + rq.head_len, c->head_len - rq.head_len);
}

static void *conn_main(void *arg)
{
        struct conn *c = arg;
        struct net_proxy *p = c->p;
        /* OpenSSL writes with write(), not send(MSG_NOSIGNAL): a program
         * that closed its end must give EPIPE, not kill corral. */
        struct sigpipe_guard pipe_guard;
        sigpipe_block(&pipe_guard);
        serve(c);
        if (c->server >= 0)
                close(c->server);
        close(c->client);
        if (c->rec.host == NULL)
                c->rec.host = strdup("");
        if (c->rec.method == NULL)
                c->rec.method = strdup("");
        log_conn(p, c);
        free(c);
        pthread_mutex_lock(&p->lock);
        if (--p->active == 0)
                pthread_cond_broadcast(&p->idle);
        pthread_mutex_unlock(&p->lock);
        sigpipe_unblock(&pipe_guard);
        return NULL;
}

/* The listening socket, sent by the jail's setup child. */
static int receive_listener(int handoff)
{
        char data;
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } u;
        struct iovec iov = { .iov_base = &data, .iov_len = 1 };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        ssize_t n = recvmsg(handoff, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n <= 0)
                return -1;
        int fd = -1;
        for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
                if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS && h->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(h), sizeof(int));
        return fd;
}

static void refuse_busy(struct net_proxy *p, int client)
{
        struct conn c = { .p = p, .client = client, .server = -1, .t0 = monotonic_ms() };
        refuse(&c, 503, "too many connections at once");
        c.rec.host = strdup("");
        c.rec.method = strdup("");
        close(client);
        log_conn(p, &c);
}

static void *accept_main(void *arg)
{
        struct net_proxy *p = arg;
        struct pollfd pfd[2] = { { .fd = p->handoff, .events = POLLIN }, { .fd = p->stop_fd, .events = POLLIN } };
        while (p->listen_fd < 0) {
                int r = poll(pfd, 2, -1);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0 || pfd[1].revents)
                        return NULL;
                p->listen_fd = receive_listener(p->handoff);
                if (p->listen_fd < 0 && (pfd[0].revents & (POLLHUP | POLLERR)))
                        pfd[0].fd = -1; /* the child died before: wait for stop */
        }
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256u << 10);
        pfd[0].fd = p->listen_fd;
        for (;;) {
                int r = poll(pfd, 2, -1);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0 || pfd[1].revents)
                        break;
                int client = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (client < 0) {
                        /* Out of fds (or memory): wait a little rather than spin. */
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                                (void)poll(&pfd[1], 1, 100);
                        continue;
                }
                pthread_mutex_lock(&p->lock);
                bool busy = p->active >= p->max_conns;
                if (!busy)
                        p->active++;
                pthread_mutex_unlock(&p->lock);
                if (busy) {
                        refuse_busy(p, client);
                        continue;
                }
                struct conn *c = calloc(1, sizeof(*c));
                pthread_t t;
                if (c) {
                        c->p = p;
                        c->client = client;
                        c->server = -1;
                        c->t0 = monotonic_ms();
                }
                if (c == NULL || pthread_create(&t, &attr, conn_main, c) != 0) {
                        free(c);
                        close(client);
                        pthread_mutex_lock(&p->lock);
                        if (--p->active == 0)
                                pthread_cond_broadcast(&p->idle);
                        pthread_mutex_unlock(&p->lock);
                }
        }
        pthread_attr_destroy(&attr);
        return NULL;
}

static void proxy_free(struct net_proxy *p)
{
        if (p->handoff >= 0)
                close(p->handoff);
        if (p->listen_fd >= 0)
                close(p->listen_fd);
        if (p->stop_fd >= 0)
                close(p->stop_fd);
        for (size_t i = 0; i < p->n_log; i++) {
                free(p->log[i].host);
                free(p->log[i].method);
                free(p->log[i].reason);
                free(p->log[i].address);
        }
        free(p->log);
        free(p->allow);
        free(p->resolve);
        for (size_t i = 0; i < p->n_secrets; i++) {
                free(p->secrets[i].host);
                free(p->secrets[i].header);
                if (p->secrets[i].value)
                        explicit_bzero(p->secrets[i].value, strlen(p->secrets[i].value));
                free(p->secrets[i].value);
        }
        free(p->secrets);
        free(p->secret_values);
        net_tls_free(p->tls);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->idle);
        free(p);
}

int net_proxy_start(const corral_jail_config *cfg, struct net_tls *tls, int handoff, struct net_proxy **ret,
                    corral_error **ret_err)
{
        *ret = NULL;
        struct net_proxy *p = calloc(1, sizeof(*p));
        if (p == NULL) {
                close(handoff);
                net_tls_free(tls);
                return corral_fail(ret_err, ENOMEM, "cannot start the network proxy");
        }
        p->tls = tls;
        p->S = tls ? ssl_api_get(NULL) : NULL; /* loaded already: net_tls_new did */
        p->handoff = handoff;
        p->listen_fd = -1;
        p->max_bytes = cfg->net_bytes;
        p->max_conns = cfg->net_conns;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->idle, NULL);
        p->stop_fd = eventfd(0, EFD_CLOEXEC);
        size_t na = 0, nr = 0;
        while (cfg->net_allow && cfg->net_allow[na])
                na++;
        while (cfg->net_resolve && cfg->net_resolve[nr])
                nr++;
        p->allow = calloc(na + 1, sizeof(*p->allow));
        p->resolve = calloc(nr + 1, sizeof(*p->resolve));
        p->secrets = calloc(cfg->n_net_secrets + 1, sizeof(*p->secrets));
        bool oom = false;
        for (size_t i = 0; p->secrets && i < cfg->n_net_secrets; i++) {
                struct corral_net_secret *d = &p->secrets[p->n_secrets++];
                d->host = strdup(cfg->net_secrets[i].host);
                d->header = strdup(cfg->net_secrets[i].header);
                d->value = strdup(cfg->net_secrets[i].value);
                oom |= d->host == NULL || d->header == NULL || d->value == NULL;
        }
        p->secret_values = calloc(cfg->n_net_secrets + 1, sizeof(*p->secret_values));
        for (size_t i = 0; p->secret_values && !oom && i < p->n_secrets; i++)
                p->secret_values[i] = p->secrets[i].value;
        if (oom || p->secret_values == NULL) {
                oom = true;
                errno = ENOMEM;
        }
        if (p->stop_fd < 0 || p->allow == NULL || p->resolve == NULL || p->secrets == NULL || oom) {
                int e = errno;
                proxy_free(p);
                return corral_fail(ret_err, e, "cannot start the network proxy");
        }
        for (size_t i = 0; i < na; i++)
                if (net_allow_parse(cfg->net_allow[i], &p->allow[p->n_allow++], ret_err) < 0) {
                        proxy_free(p);
                        return -1;
                }
        for (size_t i = 0; i < nr; i++) {
                const char *spec = cfg->net_resolve[i], *colon = strchr(spec, ':');
                struct resolve_entry *e = &p->resolve[p->n_resolve++];
                if (colon == NULL || (size_t)(colon - spec) > NET_HOST_MAX) {
                        proxy_free(p);
                        return corral_usage(ret_err, "invalid resolve entry '%s': expected HOST:ADDR", spec);
                }
                for (size_t k = 0; k < (size_t)(colon - spec); k++)
                        e->host[k] = (char)tolower((unsigned char)spec[k]);
                const char *addr = colon + 1;
                char v6[INET6_ADDRSTRLEN + 2];
                if (addr[0] == '[' && strlen(addr) < sizeof(v6) && addr[strlen(addr) - 1] == ']') {
                        memcpy(v6, addr + 1, strlen(addr) - 2);
                        v6[strlen(addr) - 2] = '\0';
                        addr = v6;
                }
                struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)&e->addr;
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)&e->addr;
                if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
                        s4->sin_family = AF_INET;
                        e->addr_len = sizeof(*s4);
                } else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
                        s6->sin6_family = AF_INET6;
                        e->addr_len = sizeof(*s6);
                } else {
                        proxy_free(p);
                        return corral_usage(ret_err, "invalid resolve entry '%s': expected HOST:ADDR", spec);
                }
        }
        int e = pthread_create(&p->acceptor, NULL, accept_main, p);
        if (e != 0) {
                proxy_free(p);
                return corral_fail(ret_err, e, "cannot start the network proxy");
        }
        p->acceptor_started = true;
        *ret = p;
        return 0;
}

void net_proxy_stop(struct net_proxy *p, corral_jail_result *res)
{
        if (p == NULL)
                return;
        uint64_t one = 1;
        ssize_t w = write(p->stop_fd, &one, sizeof(one));
        (void)w;
        if (p->acceptor_started)
                pthread_join(p->acceptor, NULL);
        pthread_mutex_lock(&p->lock);
        while (p->active > 0)
                pthread_cond_wait(&p->idle, &p->lock);
        pthread_mutex_unlock(&p->lock);
        if (res) {
                res->net_proxy = true;
                res->network = p->log;
                res->n_network = p->n_log;
                res->network_dropped = p->dropped;
                p->log = NULL;
                p->n_log = 0;
        }
        proxy_free(p);
}

void net_log_release(corral_jail_result *res)
{
        for (size_t i = 0; i < res->n_network; i++) {
                free(res->network[i].host);
                free(res->network[i].method);
                free(res->network[i].reason);
                free(res->network[i].address);
        }
        free(res->network);
        res->network = NULL;
        res->n_network = 0;
}
