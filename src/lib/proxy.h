/* proxy.h: (Internal to src/lib/.) The host-side HTTP proxy of a CORRAL_NET_ALLOW jail, and the
 * pure pieces it is made of (allow-list entries, request heads, the TLS
 * server name), exposed for the unit tests and fuzz targets.
 *
 * The proxy is an object with threads of its own: one accepts on a
 * listening socket that lives in the jail's network namespace (handed over
 * by the jail's setup child, see enter.c), one per connection talks to the
 * program and to the allowed host, adding brokered credentials and masking
 * them in answers.  It owns every fd it is given.
 *
 * Threads: net_proxy_start/net_proxy_stop from one thread (the jail's
 * supervisor); the pure functions from any.
 */
#ifndef CORRAL_PROXY_H
#define CORRAL_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corral/jail.h>

#define NET_HOST_MAX 253
#define NET_HEAD_MAX 16384
#define NET_SECRET_MAX 4096 /* a brokered credential's value, bytes */

/* One allow-list entry. */
struct net_allow_entry {
        char host[NET_HOST_MAX + 1]; /* lowercase; for a wildcard, the domain after "*." */
        bool wildcard;               /* "*.DOMAIN": any name ending in ".DOMAIN" */
        bool literal;                /* an IP address (IPv6 without brackets) */
        uint16_t port;               /* 0: 80 and 443 */
};

/* Parse "HOST[:PORT]", "*.DOMAIN[:PORT]", "IPV4[:PORT]" or "[IPV6][:PORT]".
 * 0, or -1 with a usage error naming the entry. */
__attribute__((visibility("hidden"))) int net_allow_parse(const char *text, struct net_allow_entry *ret,
                                                          corral_error **ret_err);
/* Does the entry allow host (lowercase, IPv6 without brackets) on port?
 * An IP literal matches only a literal entry, a name only a name entry. */
__attribute__((visibility("hidden"))) bool net_allow_matches(const struct net_allow_entry *e, const char *host,
                                                             uint16_t port);
/* Is host an IPv4 or IPv6 address (IPv6 without brackets)? */
__attribute__((visibility("hidden"))) bool net_host_is_literal(const char *host);

/* A request head, parsed from the program's bytes. */
struct net_request {
        char method[16];
        char host[NET_HOST_MAX + 1]; /* lowercase, IPv6 without brackets */
        uint16_t port;
        bool connect;                /* CONNECT host:port */
        size_t target_off, target_len; /* absolute-form: the origin-form path inside buf ("/" if empty: len 0) */
        size_t line_end;             /* offset just past the request line's CRLF */
        size_t head_len;             /* offset just past the blank line */
        int minor;                   /* HTTP/1.minor */
};
/* Parse an HTTP/1.x proxy request head at the start of buf.  Returns 1 with
 * ret filled when a whole head is there, 0 when more bytes are needed (and
 * len < NET_HEAD_MAX), -1 with *ret_reason (static text) when it is not a
 * request the proxy serves: a head that is malformed or too long, a scheme
 * other than http, a missing host or a bad port. */
__attribute__((visibility("hidden"))) int net_request_parse(const char *buf, size_t len, struct net_request *ret,
                                                            const char **ret_reason);

/* The server name (SNI) of a TLS ClientHello at the start of buf.  Returns
 * 1 with the name (NUL-terminated, as sent) in out, 0 when more bytes are
 * needed, -1 when it is not a TLS ClientHello, -2 when it is one without a
 * server name (or a name longer than out_len - 1 or not a host name). */
__attribute__((visibility("hidden"))) int net_tls_sni(const uint8_t *buf, size_t len, char *out, size_t out_len);

/* Is this destination one the proxy refuses unless asked for by address or
 * mapped with net_resolve: loopback, private (RFC 1918, ULA), link-local,
 * CGNAT, multicast, unspecified, broadcast, reserved, or IPv4-mapped one. */
struct sockaddr;
__attribute__((visibility("hidden"))) bool net_addr_is_restricted(const struct sockaddr *sa);

/* Masking brokered credentials in a stream coming back from the host.
 * net_mask_feed appends n bytes of in to what was held back, replaces every
 * whole occurrence of any value with as many '*' (lengths, so HTTP framing,
 * stay true), and returns how many bytes of out may go on; the longest tail
 * that could begin a value is held back for the next call, or given too
 * when flush (at the end of the stream).  out needs NET_SECRET_MAX + n
 * bytes.  values are borrowed, each 1..NET_SECRET_MAX bytes. */
struct net_masker {
        const char *const *values;
        size_t n_values;
        char hold[NET_SECRET_MAX];
        size_t hold_len;
};
__attribute__((visibility("hidden"))) size_t net_mask_feed(struct net_masker *m, const char *in, size_t n, char *out,
                                                           bool flush);

struct net_proxy;
struct net_tls;
/* Start a proxy for cfg's allow-list, resolve map, caps and brokered
 * credentials.  tls (proxy-tls.h; NULL when cfg brokers nothing) terminates
 * the program's TLS to brokered hosts.  handoff is a unix socket on which
 * the listening socket arrives (SCM_RIGHTS).  The proxy owns tls and
 * handoff.  0, or -1 with ret_err filled (both freed). */
__attribute__((visibility("hidden"))) int net_proxy_start(const corral_jail_config *cfg, struct net_tls *tls,
                                                          int handoff, struct net_proxy **ret,
                                                          corral_error **ret_err);
/* Call fn(userdata, record) as each connection ends, on the connection's
 * thread (before it goes into the log); fn NULL: none.  Accepts NULL p. */
__attribute__((visibility("hidden"))) void net_proxy_observe(struct net_proxy *p,
                                                             void (*fn)(void *userdata,
                                                                        const struct corral_net_conn *c),
                                                             void *userdata);
/* Stop it: close every connection, join the threads, free everything.  The
 * connection log goes to res (when not NULL).  Accepts NULL. */
__attribute__((visibility("hidden"))) void net_proxy_stop(struct net_proxy *p, corral_jail_result *res);
/* Free a result's network log. */
__attribute__((visibility("hidden"))) void net_log_release(corral_jail_result *res);

#endif
