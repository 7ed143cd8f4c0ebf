/* ssl-dl.h: (Internal to src/lib/.) OpenSSL (libssl and libcrypto),
 * loaded when a jail's proxy first needs TLS.
 *
 * Linking libssl and libcrypto into the corral binary makes every process
 * load and relocate them: 2.4 ms per start measured with hyperfine on a
 * test program (an empty one 2.0 ms, linked with -lssl -lcrypto 4.4 ms);
 * `corral --version` took 11.4 ms linked, 7.0 ms without (bench/notes.md).  Only brokered credentials
 * need TLS (the jail's CA and the proxy's TLS both ways, proxy-tls.h; the
 * allow-list proxy itself reads a ClientHello's server name by hand), so
 * libssl.so.3 is loaded with dlopen() on first use, as libcurl is
 * (src/model/curl-dl.h), and called through this table; the types and
 * constants still come from OpenSSL's headers, so every call is
 * type-checked.  A direct call of an OpenSSL function anywhere in corral
 * fails to link: the build has OpenSSL's headers only.
 *
 * Macros over a ctrl call (SSL_CTX_set_min_proto_version, BIO_get_mem_data,
 * SSL_set_tlsext_host_name, EVP_EC_gen ...) are written out at their call
 * sites as the call they expand to, through the table, with the macro's
 * name beside them.
 */
#ifndef CORRAL_LIB_SSL_DL_H
#define CORRAL_LIB_SSL_DL_H

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "util.h"

/* Every function used: X(name).  libcrypto's are found through libssl's
 * handle (dlsym searches a library's dependencies too). */
#define SSL_FUNCTIONS(X)                                                                                               \
        /* libssl */                                                                                                   \
        X(TLS_client_method)                                                                                           \
        X(TLS_server_method)                                                                                           \
        X(SSL_CTX_new)                                                                                                 \
        X(SSL_CTX_free)                                                                                                \
        X(SSL_CTX_ctrl)                                                                                                \
        X(SSL_CTX_set_options)                                                                                         \
        X(SSL_CTX_set_verify)                                                                                          \
        X(SSL_CTX_set_default_verify_paths)                                                                            \
        X(SSL_CTX_load_verify_locations)                                                                               \
        X(SSL_CTX_use_certificate)                                                                                     \
        X(SSL_CTX_use_PrivateKey)                                                                                      \
        X(SSL_new)                                                                                                     \
        X(SSL_free)                                                                                                    \
        X(SSL_ctrl)                                                                                                    \
        X(SSL_set_fd)                                                                                                  \
        X(SSL_set1_host)                                                                                               \
        X(SSL_get0_param)                                                                                              \
        X(SSL_accept)                                                                                                  \
        X(SSL_connect)                                                                                                 \
        X(SSL_read_ex)                                                                                                 \
        X(SSL_write_ex)                                                                                                \
        X(SSL_pending)                                                                                                 \
        X(SSL_shutdown)                                                                                                \
        X(SSL_get_error)                                                                                               \
        X(SSL_get_servername)                                                                                          \
        X(SSL_get_verify_result)                                                                                       \
        /* libcrypto */                                                                                                \
        X(OpenSSL_version)                                                                                             \
        X(ERR_clear_error)                                                                                             \
        X(BIO_new)                                                                                                     \
        X(BIO_s_mem)                                                                                                   \
        X(BIO_ctrl)                                                                                                    \
        X(BIO_free)                                                                                                    \
        X(BN_new)                                                                                                      \
        X(BN_rand)                                                                                                     \
        X(BN_to_ASN1_INTEGER)                                                                                          \
        X(BN_free)                                                                                                     \
        X(EVP_PKEY_Q_keygen)                                                                                           \
        X(EVP_PKEY_free)                                                                                               \
        X(EVP_sha256)                                                                                                  \
        X(PEM_write_bio_X509)                                                                                          \
        X(X509_new)                                                                                                    \
        X(X509_free)                                                                                                   \
        X(X509_set_version)                                                                                            \
        X(X509_get_serialNumber)                                                                                       \
        X(X509_getm_notBefore)                                                                                         \
        X(X509_getm_notAfter)                                                                                          \
        X(X509_gmtime_adj)                                                                                             \
        X(X509_set_pubkey)                                                                                             \
        X(X509_get_subject_name)                                                                                       \
        X(X509_set_issuer_name)                                                                                        \
        X(X509_NAME_add_entry_by_txt)                                                                                  \
        X(X509_add_ext)                                                                                                \
        X(X509_sign)                                                                                                   \
        X(X509_EXTENSION_free)                                                                                         \
        X(X509V3_set_ctx)                                                                                              \
        X(X509V3_EXT_conf_nid)                                                                                         \
        X(X509_VERIFY_PARAM_set1_ip_asc)                                                                               \
        X(X509_get_default_cert_file)

struct ssl_api {
#define SSL_FIELD(name) __typeof__(name) *name;
        SSL_FUNCTIONS(SSL_FIELD)
#undef SSL_FIELD
};

/* The loaded API (loaded once, thread-safe), or NULL with ret_err
 * (CORRAL_ERR_UNSUPPORTED) saying what is missing and which package
 * provides it. */
CORRAL_HIDDEN const struct ssl_api *ssl_api_get(corral_error **ret_err);

#endif
