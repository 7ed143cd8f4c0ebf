/* ssl-dl.c: load OpenSSL on first use (see ssl-dl.h for why). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "ssl-dl.h"

static struct ssl_api api;
static char load_error[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void)
{
        /* libssl.so.3 brings its libcrypto.so.3 with it. */
        void *h = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
                const char *why = dlerror();
                snprintf(load_error, sizeof(load_error), "cannot load OpenSSL (%s): install the libssl3 package",
                         why ? why : "libssl.so.3");
                return;
        }
#define SSL_SYM(name)                                                                                                  \
        *(void **)&api.name = dlsym(h, #name);                                                                         \
        if (api.name == NULL) {                                                                                        \
                snprintf(load_error, sizeof(load_error),                                                               \
                         "libssl.so.3 lacks " #name ": install a libssl3 of OpenSSL 3.0 or later");                    \
                return;                                                                                                \
        }
        SSL_FUNCTIONS(SSL_SYM)
#undef SSL_SYM
        /* The handle stays loaded for the process's life (OpenSSL cleans up
         * at exit on its own). */
}

const struct ssl_api *ssl_api_get(corral_error **ret_err)
{
        pthread_once(&load_once, load);
        if (load_error[0]) {
                corral_make_error(ret_err, CORRAL_ERR_UNSUPPORTED, 0, "%s", load_error);
                return NULL;
        }
        return &api;
}
