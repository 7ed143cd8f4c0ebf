/* http-dl.c: load libmicrohttpd and wslay when a server starts (see
 * http-dl.h for why). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

#include "../lib/probe.h"
#include "http-dl.h"
#include "server.h"

struct http_api http_lib;
static const char *load_error;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void)
{
        void *mhd = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
        if (mhd == NULL) {
                load_error = "cannot load libmicrohttpd (libmicrohttpd.so.12): install the libmicrohttpd12 package";
                return;
        }
        void *wslay = dlopen("libwslay.so.1", RTLD_NOW | RTLD_LOCAL);
        if (wslay == NULL) {
                load_error = "cannot load wslay (libwslay.so.1): install the libwslay1 package";
                return;
        }
#define HTTP_SYM(handle, lib, name)                                                                                    \
        *(void **)&http_lib.name = dlsym(handle, #name);                                                               \
        if (http_lib.name == NULL) {                                                                                   \
                load_error = lib " lacks " #name ": install a newer " lib;                                             \
                return;                                                                                                \
        }
#define MHD_SYM(name) HTTP_SYM(mhd, "libmicrohttpd", name)
#define WSLAY_SYM(name) HTTP_SYM(wslay, "wslay", name)
        MHD_FUNCTIONS(MHD_SYM)
        WSLAY_FUNCTIONS(WSLAY_SYM)
#undef WSLAY_SYM
#undef MHD_SYM
#undef HTTP_SYM
        /* The handles stay loaded for the process's life. */
}

int http_api_load(corral_error **ret_err)
{
        pthread_once(&load_once, load);
        if (load_error)
                return corral_make_error(ret_err, CORRAL_ERR_UNSUPPORTED, 0, "%s", load_error);
        return 0;
}

void server_probe(json_t *checks)
{
        corral_error *err = NULL;
        bool ok = http_api_load(&err) == 0;
        probe_add(checks, "libmicrohttpd", ok, ok ? "ok" : "missing",
                  ok ? "loaded with wslay (for corral serve)" : err ? err->msg : "not found",
                  "apt-get install libmicrohttpd12 libwslay1 (to run corral serve)");
        corral_error_free(err);
}
