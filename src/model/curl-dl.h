/* curl-dl.h: libcurl, loaded when the first request is made.
 *
 * Linking libcurl into the corral binary makes every process load it and
 * its ~30 dependencies (OpenSSL, nghttp2, Kerberos, LDAP, ...): 7 ms per
 * start measured with hyperfine on a test program, more than a whole
 * `corral exec` costs.  Only the model client needs HTTP, so it loads
 * libcurl.so.4 with dlopen() on first use (as systemd does for its optional
 * libraries) and calls it through this table; the types and constants still
 * come from <curl/curl.h>, so every call is type-checked.
 */
#ifndef CORRAL_MODEL_CURL_DL_H
#define CORRAL_MODEL_CURL_DL_H

#include <curl/curl.h>

#include "../lib/util.h"

struct curl_api {
        __typeof__(curl_easy_init) *easy_init;
        __typeof__(curl_easy_cleanup) *easy_cleanup;
        __typeof__(curl_easy_setopt) *easy_setopt;
        __typeof__(curl_easy_perform) *easy_perform;
        __typeof__(curl_easy_getinfo) *easy_getinfo;
        __typeof__(curl_easy_strerror) *easy_strerror;
        __typeof__(curl_slist_append) *slist_append;
        __typeof__(curl_slist_free_all) *slist_free_all;
        __typeof__(curl_global_init) *global_init;
        __typeof__(curl_version_info) *version_info;
};

/* The loaded API (loaded once, thread-safe), or NULL with ret_err saying
 * what is missing and which package provides it. */
CORRAL_HIDDEN const struct curl_api *curl_api_get(corral_error **ret_err);

#endif
