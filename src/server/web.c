/*
 * The web view (docs/webview.md): the page at "/", its script and its style
 * (src/server/web/, compiled in by scripts/embed-files.py), served without a
 * token: they hold nothing of anyone's, and the page asks the API for
 * everything it shows, with the login cookie.  Every answer carries a
 * Content-Security-Policy that lets the page run its own script and nothing
 * else: no inline script or style, no eval, no other origin, no frames.
 * What it does not do: render anything of a run's on the server side.
 */
#include <string.h>

#include "server-internal.h"

/* 'self' for script, style and fetches; images also from blob: (a run's
 * figures are fetched with the cookie and shown from a Blob). */
#define WEB_CSP                                                                                                  \
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'self'; "  \
        "form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

static const struct web_file *web_find(const char *name)
{
        for (const struct web_file *f = web_files; f->name; f++)
                if (strcmp(f->name, name) == 0)
                        return f;
        return NULL;
}

/* A browser's navigation to "/" asks for HTML first; a program's GET / (curl,
 * the clients) gets the JSON index as before. */
static bool wants_html(struct request *rq)
{
        const char *accept = http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
        return accept && strstr(accept, "text/html") != NULL;
}

bool web_claims(struct request *rq, const char *method, const char *path)
{
        if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
                return false;
        if (strcmp(path, "/") == 0)
                return wants_html(rq);
        return strncmp(path, "/ui/", 4) == 0;
}

enum MHD_Result web_route(struct request *rq, const char *path)
{
        const struct web_file *f = web_find(strcmp(path, "/") == 0 ? "index.html" : path + 4);
        if (f == NULL)
                return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no file '%s' in the web view", path);
        struct MHD_Response *r =
                http_lib.MHD_create_response_from_buffer(f->len, (void *)f->data, MHD_RESPMEM_PERSISTENT);
        if (r == NULL)
                return MHD_NO;
        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, f->type);
        http_lib.MHD_add_response_header(r, "Content-Security-Policy", WEB_CSP);
        http_lib.MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
        http_lib.MHD_add_response_header(r, "Cross-Origin-Opener-Policy", "same-origin");
        return reply(rq, MHD_HTTP_OK, r);
}
