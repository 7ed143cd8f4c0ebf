/* error.c: the error object (see include/corral/error.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

static char *vformat(const char *fmt, va_list ap) CORRAL_PRINTF(1, 0);
static char *vformat(const char *fmt, va_list ap)
{
        char *s = NULL;
        if (vasprintf(&s, fmt, ap) < 0)
                return NULL;
        return s;
}

int corral_make_error(corral_error **ret_err, int kind, int errnum, const char *fmt, ...)
{
        if (ret_err == NULL)
                return -1;
        corral_error_free(*ret_err);
        *ret_err = NULL;

        corral_error *e = calloc(1, sizeof(*e));
        if (e == NULL)
                return -1;
        va_list ap;
        va_start(ap, fmt);
        char *msg = vformat(fmt, ap);
        va_end(ap);
        if (msg != NULL && errnum != 0) {
                char *full = NULL;
                if (asprintf(&full, "%s: %s", msg, strerror(errnum)) >= 0) {
                        free(msg);
                        msg = full;
                }
        }
        e->msg = msg ? msg : strdup("out of memory");
        e->errnum = errnum;
        e->kind = kind;
        *ret_err = e;
        return -1;
}

int corral_error_prefix(corral_error **err, const char *fmt, ...)
{
        if (err == NULL || *err == NULL)
                return -1;
        va_list ap;
        va_start(ap, fmt);
        char *ctx = vformat(fmt, ap);
        va_end(ap);
        char *full = NULL;
        if (ctx != NULL && asprintf(&full, "%s: %s", ctx, (*err)->msg) >= 0) {
                free((*err)->msg);
                (*err)->msg = full;
        }
        free(ctx);
        return -1;
}

void corral_error_free(corral_error *err)
{
        if (err == NULL)
                return;
        free(err->msg);
        free(err);
}

void corral_error_clear(corral_error **err)
{
        if (err == NULL)
                return;
        corral_error_free(*err);
        *err = NULL;
}

int corral_error_set_field(corral_error **err, const char *field)
{
        if (err != NULL && *err != NULL)
                (*err)->field = field;
        return -1;
}

/* One row per kind: its name and what a server answers with.  The tables
 * are documented in docs/errors.md; a kind missing here is "internal". */
static const struct kind_info {
        const char *name;
        int http;
        int jsonrpc;
} kinds[] = {
        [CORRAL_ERR_INTERNAL] = { "internal", 500, -32603 },
        [CORRAL_ERR_USAGE] = { "usage", 400, -32602 },
        [CORRAL_ERR_UNSUPPORTED] = { "unsupported", 501, -32001 },
        [CORRAL_ERR_CANCELLED] = { "cancelled", 499, -32006 },
        /* The model endpoint is this server's upstream: a gateway's statuses. */
        [CORRAL_ERR_MODEL_UNREACHABLE] = { "model_unreachable", 504, -32010 },
        [CORRAL_ERR_MODEL_AUTH] = { "model_auth", 502, -32011 },
        [CORRAL_ERR_MODEL_NOT_FOUND] = { "model_not_found", 502, -32012 },
        [CORRAL_ERR_MODEL_CONTEXT] = { "model_context", 502, -32013 },
        [CORRAL_ERR_MODEL_NO_TOOLS] = { "model_no_tools", 502, -32014 },
        [CORRAL_ERR_MODEL_REFUSED] = { "model_refused", 502, -32015 },
        [CORRAL_ERR_MODEL_NO_IMAGES] = { "model_no_images", 502, -32016 },
        /* -32002 is MCP's "resource not found". */
        [CORRAL_ERR_NOT_FOUND] = { "not_found", 404, -32002 },
        [CORRAL_ERR_BUSY] = { "busy", 409, -32003 },
        [CORRAL_ERR_LIMIT] = { "limit", 429, -32004 },
        [CORRAL_ERR_TIMEOUT] = { "timeout", 504, -32005 },
};

static const struct kind_info *kind_info(int kind)
{
        if (kind >= 0 && (size_t)kind < sizeof(kinds) / sizeof(kinds[0]) && kinds[kind].name)
                return &kinds[kind];
        return &kinds[CORRAL_ERR_INTERNAL];
}

const char *corral_error_kind_to_string(int kind)
{
        return kind_info(kind)->name;
}

int corral_error_kind_http_status(int kind)
{
        return kind_info(kind)->http;
}

int corral_error_kind_jsonrpc_code(int kind)
{
        return kind_info(kind)->jsonrpc;
}
