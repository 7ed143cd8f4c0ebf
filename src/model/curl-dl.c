/* curl-dl.c: load libcurl on first use (see curl-dl.h for why). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

#include "curl-dl.h"

static struct curl_api api;
static const char *load_error;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void)
{
        /* libcurl4 (OpenSSL) or libcurl3-gnutls: same ABI, either will do. */
        static const char *const names[] = { "libcurl.so.4", "libcurl-gnutls.so.4" };
        void *h = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(names) && h == NULL; i++)
                h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
                load_error = "cannot load libcurl (libcurl.so.4): install the libcurl4 package";
                return;
        }
#define SYM(field, name)                                                                                               \
        do {                                                                                                           \
                *(void **)&api.field = dlsym(h, name);                                                                 \
                if (api.field == NULL) {                                                                               \
                        load_error = "libcurl.so.4 lacks " name ": install a libcurl4 of 7.85 or later";               \
                        return;                                                                                        \
                }                                                                                                      \
        } while (0)
        SYM(easy_init, "curl_easy_init");
        SYM(easy_cleanup, "curl_easy_cleanup");
        SYM(easy_setopt, "curl_easy_setopt");
        SYM(easy_perform, "curl_easy_perform");
        SYM(easy_getinfo, "curl_easy_getinfo");
        SYM(easy_strerror, "curl_easy_strerror");
        SYM(slist_append, "curl_slist_append");
        SYM(slist_free_all, "curl_slist_free_all");
        SYM(global_init, "curl_global_init");
        SYM(version_info, "curl_version_info");
#undef SYM
        /* Once, before any thread makes a handle: global init is not thread-safe. */
        if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                load_error = "cannot initialise libcurl";
                return;
        }
        /* The handle stays loaded for the process's life. */
}

const struct curl_api *curl_api_get(corral_error **ret_err)
{
        pthread_once(&load_once, load);
        if (load_error) {
                corral_make_error(ret_err, CORRAL_ERR_UNSUPPORTED, 0, "%s", load_error);
                return NULL;
        }
        return &api;
}
