/* cmark-dl.c: load libcmark on first use (see cmark-dl.h for why). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "../lib/probe.h"
#include "cmark-dl.h"

static char *(*to_html)(const char *text, size_t len, int options);
static const char *load_error;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void)
{
        /* cmark's soname is its version; these keep its one call's ABI. */
        static const char *const names[] = { "libcmark.so.0.30.2", "libcmark.so.0.30.3", "libcmark.so.0.31.0",
                                             "libcmark.so.0.31.1", "libcmark.so.0.29.0" };
        void *h = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(names) && h == NULL; i++)
                h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
                load_error = "cannot load libcmark (libcmark.so.0.30.2): install the libcmark0.30.2 package";
                return;
        }
        __typeof__(cmark_markdown_to_html) *fn;
        *(void **)&fn = dlsym(h, "cmark_markdown_to_html");
        if (fn == NULL) {
                load_error = "libcmark lacks cmark_markdown_to_html: install a libcmark of 0.29 or later";
                return;
        }
        to_html = fn;
        /* The handle stays loaded for the process's life. */
}

char *markdown_to_html(const char *text, size_t len, corral_error **ret_err)
{
        pthread_once(&load_once, load);
        if (load_error) {
                corral_make_error(ret_err, CORRAL_ERR_UNSUPPORTED, 0, "%s", load_error);
                return NULL;
        }
        char *html = to_html(text, len, CMARK_OPT_DEFAULT);
        if (html == NULL)
                corral_fail(ret_err, ENOMEM, "cannot render the markdown");
        return html;
}

void cmark_probe(json_t *checks)
{
        pthread_once(&load_once, load);
        probe_add(checks, "libcmark", load_error == NULL, load_error ? "missing" : "ok",
                  load_error ? load_error : "loaded (for HTML exports of a run's reports)",
                  "apt-get install libcmark0.30.2 (to render markdown reports in corral trace export --html)");
}
