/* fuzz-trace.c: reading a trace file someone else wrote and showing it
 * (src/trace/trace.c's reader, render.c, export.c): `corral trace show` and
 * `export` take traces from colleagues, so their bytes are untrusted.
 *
 * The input is a trace file (from a memfd).  It is read event by event into
 * the terminal renderer, with and without colour, writing to /dev/null, and
 * exported as a notebook and as a page into a private temp directory.
 * Invariants: no crash, leak or hang; a file that reads also exports; the
 * notebook parses as JSON with "cells"; the page has no <script tag. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/trace/export.h"
#include "../../src/trace/render.h"
#include "../../src/trace/trace.h"
#include "fuzz.h"

static char dir[64];

static char *slurp(const char *path)
{
        FILE *f = fopen(path, "rb");
        if (f == NULL)
                return NULL;
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        char chunk[65536];
        size_t n;
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
                fwrite(chunk, 1, n, m);
        fclose(f);
        fclose(m);
        return buf;
}

static void show(const char *path, bool color)
{
        FILE *null = fopen("/dev/null", "w");
        FUZZ_ASSERT(null != NULL);
        struct render_options o;
        render_options_default(&o, null, false);
        o.color = color;
        o.spinner = false;
        render *r = render_new(&o);
        FUZZ_ASSERT(r != NULL);
        corral_error *err = NULL;
        if (trace_read_file(path, render_event, r, &err) < 0)
                FUZZ_ASSERT(err && err->msg && *err->msg, "a failed read must say why");
        corral_error_free(err);
        render_free(r);
        fclose(null);
}

/* The exports' directory, removed at exit (each input's files go as it
 * goes, but not when only one export worked). */
static void cleanup(void)
{
        char p[128];
        snprintf(p, sizeof(p), "%s/t.ipynb", dir);
        unlink(p);
        snprintf(p, sizeof(p), "%s/t.html", dir);
        unlink(p);
        rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (dir[0] == '\0') {
                snprintf(dir, sizeof(dir), "/tmp/corral-fuzz-trace-XXXXXX");
                FUZZ_ASSERT(mkdtemp(dir) != NULL);
                atexit(cleanup);
        }
        char path[64];
        int fd = fuzz_memfd("trace", data, size, path, sizeof(path));
        show(path, false);
        show(path, true);

        char nb[128], page[128];
        snprintf(nb, sizeof(nb), "%s/t.ipynb", dir);
        snprintf(page, sizeof(page), "%s/t.html", dir);
        corral_error *e1 = NULL, *e2 = NULL;
        int r1 = trace_export(path, EXPORT_IPYNB, nb, &e1);
        int r2 = trace_export(path, EXPORT_HTML, page, &e2);
        FUZZ_ASSERT((r1 == 0) == (r2 == 0), "one export worked and the other did not: %s",
                    e1 ? e1->msg : e2 ? e2->msg : "");
        if (r1 == 0) {
                json_error_t jerr;
                json_t *doc = json_load_file(nb, 0, &jerr);
                FUZZ_ASSERT(doc != NULL, "the notebook is not JSON: %s", jerr.text);
                FUZZ_ASSERT(json_is_array(json_object_get(doc, "cells")));
                json_decref(doc);
                char *html = slurp(page);
                FUZZ_ASSERT(html != NULL);
                FUZZ_ASSERT(strstr(html, "<script") == NULL, "a script tag in the page");
                free(html);
                unlink(nb);
                unlink(page);
        }
        corral_error_free(e1);
        corral_error_free(e2);
        close(fd);
        return 0;
}
