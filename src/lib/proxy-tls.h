/* proxy-tls.h: (Internal to src/lib/.) The TLS half of brokered
 * credentials: a certificate authority made fresh for one jail, the leaf
 * certificates it issues for the brokered hosts, and the contexts the proxy
 * uses to terminate the program's TLS and to speak TLS to the real host.
 *
 * The CA's private key lives only in this object, in the host process; the
 * jail gets its certificate (in a bundle with the system's roots) and
 * nothing else.  The CA is name-constrained to the brokered hosts, so even
 * its certificate vouches for nothing else.  Built on OpenSSL (libssl,
 * loaded when first needed: ssl-dl.h).
 *
 * Threads: made and freed by one thread; net_tls_server/net_tls_client from
 * any (the contexts are read-only once made).
 */
#ifndef CORRAL_PROXY_TLS_H
#define CORRAL_PROXY_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

#include <corral/jail.h>

#include "util.h"

struct net_tls;

/* A CA and a leaf for each of cfg's brokered hosts, a server context per
 * leaf, and a client context that trusts the system's roots and
 * cfg->net_upstream_ca.  0, or -1 with ret_err (a usage error for an
 * unreadable upstream CA file). */
CORRAL_HIDDEN int net_tls_new(const corral_jail_config *cfg, struct net_tls **ret, corral_error **ret_err);
/* Accepts NULL; wipes the keys. */
CORRAL_HIDDEN void net_tls_free(struct net_tls *t);
/* The PEM bundle for the jail's trust store: the system's roots, then the
 * jail's CA.  Owned by t, NUL-terminated. */
CORRAL_HIDDEN const char *net_tls_bundle(const struct net_tls *t);
/* A server-side SSL presenting host's leaf (NULL when host has none). */
CORRAL_HIDDEN SSL *net_tls_server(struct net_tls *t, const char *host);
/* A client-side SSL for host: SNI (for a name) and a check of the
 * certificate against host's name or address. */
CORRAL_HIDDEN SSL *net_tls_client(struct net_tls *t, const char *host);

#endif
