/* archive-dl.c: load libarchive on first use (see archive-dl.h for why). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

#include "archive-dl.h"
#include "../lib/probe.h"

static struct archive_api api;
static const char *load_error;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void)
{
        void *h = dlopen("libarchive.so.13", RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
                load_error = "cannot load libarchive (libarchive.so.13): install the libarchive13 package";
                return;
        }
#define ARCHIVE_SYM(name)                                                                                              \
        *(void **)&api.name = dlsym(h, #name);                                                                         \
        if (api.name == NULL) {                                                                                        \
                load_error = "libarchive.so.13 lacks " #name ": install a libarchive13 of 3.6 or later";              \
                return;                                                                                        \
        }
        ARCHIVE_FUNCTIONS(ARCHIVE_SYM)
#undef ARCHIVE_SYM
        /* The handle stays loaded for the process's life. */
}

const struct archive_api *archive_api_get(corral_error **ret_err)
{
        pthread_once(&load_once, load);
        if (load_error) {
                corral_make_error(ret_err, CORRAL_ERR_UNSUPPORTED, 0, "%s", load_error);
                return NULL;
        }
        return &api;
}

void archive_probe(json_t *checks)
{
        corral_error *err = NULL;
        const struct archive_api *a = archive_api_get(&err);
        probe_add(checks, "libarchive", a != NULL, a ? "ok" : "missing",
                  a ? "loaded (for workspace archives)" : err ? err->msg : "not found",
                  "apt-get install libarchive13 (to write workspace archives, resume from them and list them)");
        corral_error_free(err);
}
