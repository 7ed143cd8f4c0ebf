/* proxy-tls.c: a certificate authority per jail, its leaves for the
 * brokered hosts, and the proxy's TLS contexts (see proxy-tls.h and
 * docs/network.md, "HTTPS and brokered credentials").
 *
 * Keys are ECDSA P-256: made in well under a millisecond, so a fresh CA per
 * jail costs little.  Everything is made at once, before the jail starts:
 * the bundle must be in the jail's /etc before its first program runs, and
 * leaves made up front need no lock later.  It does not: cache anything
 * across jails, write a key anywhere, or trust the jail's CA itself for
 * upstream connections.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail-internal.h"
#include "proxy-tls.h"
#include "proxy.h"
#include "ssl-dl.h"

#define CA_DAYS 30 /* longer than any jail's wall-clock limit allows it to live */

struct leaf {
        char *host;
        SSL_CTX *ctx;
};

struct net_tls {
        const struct ssl_api *S; /* OpenSSL, loaded by net_tls_new */
        EVP_PKEY *ca_key, *leaf_key;
        X509 *ca;
        struct leaf *leaves;
        size_t n_leaves;
        SSL_CTX *client;
        char *bundle;
};

/* "DNS:name" or "IP:addr" for a subjectAltName or name constraint. */
static int general_name(const char *host, bool constraint, char *out, size_t n)
{
        if (!net_host_is_literal(host))
                return snprintf(out, n, "DNS:%s", host) < (int)n ? 0 : -1;
        if (!constraint)
                return snprintf(out, n, "IP:%s", host) < (int)n ? 0 : -1;
        return snprintf(out, n, "IP:%s/%s", host, strchr(host, ':') ? "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
                                                                     : "255.255.255.255") < (int)n
                       ? 0
                       : -1;
}

static bool add_ext(const struct ssl_api *S, X509 *cert, X509 *issuer, int nid, const char *value)
{
        X509V3_CTX ctx;
        X509V3_set_ctx_nodb(&ctx);
        S->X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
        X509_EXTENSION *ext = S->X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
        if (ext == NULL)
                return false;
        bool ok = S->X509_add_ext(cert, ext, -1) == 1;
        S->X509_EXTENSION_free(ext);
        return ok;
}

/* An unsigned certificate for key, named cn, issued by issuer (itself when
 * NULL), valid from an hour ago for CA_DAYS. */
static X509 *cert_new(const struct ssl_api *S, EVP_PKEY *key, const char *cn, X509 *issuer)
{
        X509 *x = S->X509_new();
        BIGNUM *bn = S->BN_new();
        bool ok = x && bn && S->X509_set_version(x, 2) == 1 &&
                  S->BN_rand(bn, 120, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
                  S->BN_to_ASN1_INTEGER(bn, S->X509_get_serialNumber(x)) != NULL &&
                  S->X509_gmtime_adj(S->X509_getm_notBefore(x), -3600) != NULL &&
                  S->X509_gmtime_adj(S->X509_getm_notAfter(x), (long)CA_DAYS * 86400) != NULL &&
                  S->X509_set_pubkey(x, key) == 1;
        S->BN_free(bn);
        X509_NAME *name = ok ? S->X509_get_subject_name(x) : NULL;
        ok = ok &&
             S->X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"corral", -1, -1, 0) == 1 &&
             S->X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) == 1 &&
             S->X509_set_issuer_name(x, issuer ? S->X509_get_subject_name(issuer) : name) == 1;
        if (!ok) {
                S->X509_free(x);
                return NULL;
        }
        return x;
}

static X509 *ca_new(const struct ssl_api *S, EVP_PKEY *key, const corral_jail_config *cfg)
{
        X509 *x = cert_new(S, key, "corral jail CA (brokered hosts only)", NULL);
        if (x == NULL)
                return NULL;
        /* Permitted names: the brokered hosts and nothing else. */
        size_t cap = 64;
        for (size_t i = 0; i < cfg->n_net_secrets; i++)
                cap += strlen(cfg->net_secrets[i].host) + 96;
        cleanup_free char *nc = malloc(cap);
        bool ok = nc != NULL;
        if (ok) {
                size_t o = (size_t)snprintf(nc, cap, "critical");
                for (size_t i = 0; i < cfg->n_net_secrets && ok; i++) {
                        char gn[NET_HOST_MAX + 96];
                        ok = general_name(cfg->net_secrets[i].host, true, gn, sizeof(gn)) == 0;
                        o += (size_t)snprintf(nc + o, cap - o, ",permitted;%s", gn);
                }
        }
        ok = ok && add_ext(S, x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
             add_ext(S, x, x, NID_key_usage, "critical,keyCertSign,cRLSign") &&
             add_ext(S, x, x, NID_subject_key_identifier, "hash") && add_ext(S, x, x, NID_name_constraints, nc) &&
             S->X509_sign(x, key, S->EVP_sha256()) > 0;
        if (!ok) {
                S->X509_free(x);
                return NULL;
        }
        return x;
}

static X509 *leaf_new(struct net_tls *t, const char *host)
{
        const struct ssl_api *S = t->S;
        char cn[NET_HOST_MAX + 1];
        snprintf(cn, sizeof(cn), "%s", host);
        X509 *x = cert_new(S, t->leaf_key, cn, t->ca);
        char san[NET_HOST_MAX + 96];
        bool ok = x && general_name(host, false, san, sizeof(san)) == 0 &&
                  add_ext(S, x, t->ca, NID_basic_constraints, "critical,CA:FALSE") &&
                  add_ext(S, x, t->ca, NID_key_usage, "critical,digitalSignature") &&
                  add_ext(S, x, t->ca, NID_ext_key_usage, "serverAuth") &&
                  add_ext(S, x, t->ca, NID_subject_alt_name, san) &&
                  add_ext(S, x, t->ca, NID_authority_key_identifier, "keyid:always") &&
                  S->X509_sign(x, t->ca_key, S->EVP_sha256()) > 0;
        if (!ok) {
                S->X509_free(x);
                return NULL;
        }
        return x;
}

/* A bundle's text, or NULL (unreadable, or too large to be one); f closed. */
static char *read_bundle(FILE *f, size_t *ret_len)
{
        char *buf = NULL;
        size_t len = 0, cap = 0;
        for (;;) {
                if (len + 65536 > cap) {
                        char *nb = realloc(buf, cap = len + 65536 + 1);
                        if (nb == NULL)
                                break;
                        buf = nb;
                }
                size_t n = fread(buf + len, 1, 65536, f);
                if (n == 0)
                        break;
                len += n;
                if (len > (16u << 20))
                        break; /* not a certificate bundle */
        }
        fclose(f);
        if (buf && len <= (16u << 20)) {
                buf[len] = '\0';
                *ret_len = len;
                return buf;
        }
        free(buf);
        return NULL;
}

/* The system's roots as PEM text (empty when there is no bundle): under a
 * rootfs, the rootfs's own (resolved inside it, as the jail's trust store
 * without a credential is), its programs trusting what their system does. */
static char *system_roots(const struct ssl_api *S, const char *rootfs, size_t *ret_len)
{
        *ret_len = 0;
        if (rootfs && rootfs[0]) {
                int fd = jail_trust_store_open(rootfs);
                FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
                if (f == NULL && fd >= 0)
                        close(fd);
                char *buf = f ? read_bundle(f, ret_len) : NULL;
                return buf ? buf : strdup("");
        }
        const char *paths[] = { getenv("SSL_CERT_FILE"), S->X509_get_default_cert_file(),
                                "/etc/ssl/certs/ca-certificates.crt" };
        for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
                if (paths[i] == NULL || paths[i][0] == '\0')
                        continue;
                FILE *f = fopen(paths[i], "re");
                char *buf = f ? read_bundle(f, ret_len) : NULL;
                if (buf)
                        return buf;
        }
        return strdup("");
}

static char *make_bundle(const struct ssl_api *S, X509 *ca, const char *rootfs)
{
        size_t roots_len;
        cleanup_free char *roots = system_roots(S, rootfs, &roots_len);
        BIO *b = S->BIO_new(S->BIO_s_mem());
        if (roots == NULL || b == NULL || S->PEM_write_bio_X509(b, ca) != 1) {
                S->BIO_free(b);
                return NULL;
        }
        char *pem;
        long pem_len = S->BIO_ctrl(b, BIO_CTRL_INFO, 0, (char *)&pem); /* BIO_get_mem_data, a macro */
        static const char label[] = "\n# corral: this jail's CA, for its brokered hosts (docs/network.md)\n";
        char *out = malloc(roots_len + sizeof(label) + (size_t)pem_len + 1);
        if (out) {
                memcpy(out, roots, roots_len);
                memcpy(out + roots_len, label, sizeof(label) - 1);
                memcpy(out + roots_len + sizeof(label) - 1, pem, (size_t)pem_len);
                out[roots_len + sizeof(label) - 1 + (size_t)pem_len] = '\0';
        }
        S->BIO_free(b);
        return out;
}

static SSL_CTX *server_ctx(struct net_tls *t, X509 *leaf)
{
        const struct ssl_api *S = t->S;
        SSL_CTX *ctx = S->SSL_CTX_new(S->TLS_server_method());
        /* SSL_CTX_set_min_proto_version, SSL_CTX_add1_chain_cert: macros
         * over SSL_CTX_ctrl. */
        if (ctx == NULL || S->SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL) != 1 ||
            S->SSL_CTX_use_certificate(ctx, leaf) != 1 ||
            S->SSL_CTX_ctrl(ctx, SSL_CTRL_CHAIN_CERT, 1, (char *)t->ca) != 1 ||
            S->SSL_CTX_use_PrivateKey(ctx, t->leaf_key) != 1) {
                S->SSL_CTX_free(ctx);
                return NULL;
        }
        /* HTTP/1.1 only: the proxy adds a header to an HTTP/1 head. */
        S->SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
        return ctx;
}

int net_tls_new(const corral_jail_config *cfg, struct net_tls **ret, corral_error **ret_err)
{
        *ret = NULL;
        /* Loaded first: a jail that needs TLS does not run without it. */
        const struct ssl_api *S = ssl_api_get(ret_err);
        if (S == NULL)
                return corral_error_prefix(ret_err, "a brokered credential needs TLS");
        struct net_tls *t = calloc(1, sizeof(*t));
        if (t == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot make the jail's certificate authority");
        t->S = S;
        t->client = S->SSL_CTX_new(S->TLS_client_method());
        if (t->client == NULL)
                goto fail;
        /* SSL_CTX_set_min_proto_version, a macro */
        S->SSL_CTX_ctrl(t->client, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL);
        S->SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
        /* A host that closes without close_notify ends its response. */
        S->SSL_CTX_set_options(t->client, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
        if (S->SSL_CTX_set_default_verify_paths(t->client) != 1)
                goto fail;
        if (cfg->net_upstream_ca && S->SSL_CTX_load_verify_locations(t->client, cfg->net_upstream_ca, NULL) != 1) {
                S->ERR_clear_error();
                net_tls_free(t);
                return corral_usage(ret_err, "cannot read the upstream CA file '%s': expected PEM certificates",
                                    cfg->net_upstream_ca);
        }
        /* EVP_EC_gen("P-256"), a macro */
        t->ca_key = S->EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        t->leaf_key = S->EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        if (t->ca_key == NULL || t->leaf_key == NULL || (t->ca = ca_new(S, t->ca_key, cfg)) == NULL)
                goto fail;
        t->leaves = calloc(cfg->n_net_secrets + 1, sizeof(*t->leaves));
        if (t->leaves == NULL)
                goto fail;
        for (size_t i = 0; i < cfg->n_net_secrets; i++) {
                const char *host = cfg->net_secrets[i].host;
                bool seen = false;
                for (size_t k = 0; k < t->n_leaves; k++)
                        seen |= strcmp(t->leaves[k].host, host) == 0;
                if (seen)
                        continue;
                X509 *leaf = leaf_new(t, host);
                struct leaf *l = &t->leaves[t->n_leaves];
                l->ctx = leaf ? server_ctx(t, leaf) : NULL;
                S->X509_free(leaf);
                l->host = strdup(host);
                if (l->ctx == NULL || l->host == NULL) {
                        S->SSL_CTX_free(l->ctx);
                        free(l->host);
                        goto fail;
                }
                t->n_leaves++;
        }
        if ((t->bundle = make_bundle(S, t->ca, cfg->rootfs)) == NULL)
                goto fail;
        S->ERR_clear_error();
        *ret = t;
        return 0;
fail:
        S->ERR_clear_error();
        net_tls_free(t);
        return corral_fail(ret_err, ENOMEM, "cannot make the jail's certificate authority");
}

void net_tls_free(struct net_tls *t)
{
        if (t == NULL)
                return;
        const struct ssl_api *S = t->S;
        for (size_t i = 0; i < t->n_leaves; i++) {
                S->SSL_CTX_free(t->leaves[i].ctx);
                free(t->leaves[i].host);
        }
        free(t->leaves);
        S->SSL_CTX_free(t->client);
        S->X509_free(t->ca);
        S->EVP_PKEY_free(t->ca_key); /* OpenSSL clears private key material as it frees it */
        S->EVP_PKEY_free(t->leaf_key);
        free(t->bundle);
        free(t);
}

const char *net_tls_bundle(const struct net_tls *t)
{
        return t->bundle;
}

SSL *net_tls_server(struct net_tls *t, const char *host)
{
        const struct ssl_api *S = t->S;
        for (size_t i = 0; i < t->n_leaves; i++)
                if (strcmp(t->leaves[i].host, host) == 0)
                        return S->SSL_new(t->leaves[i].ctx);
        return NULL;
}

SSL *net_tls_client(struct net_tls *t, const char *host)
{
        const struct ssl_api *S = t->S;
        SSL *s = S->SSL_new(t->client);
        if (s == NULL)
                return NULL;
        bool ok;
        if (net_host_is_literal(host)) {
                ok = S->X509_VERIFY_PARAM_set1_ip_asc(S->SSL_get0_param(s), host) == 1;
        } else {
                /* SSL_set_tlsext_host_name, a macro over SSL_ctrl */
                ok = S->SSL_ctrl(s, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, (void *)host) == 1 &&
                     S->SSL_set1_host(s, host) == 1;
        }
        if (!ok) {
                S->SSL_free(s);
                return NULL;
        }
        return s;
}
