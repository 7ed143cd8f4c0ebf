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

const char *corral_error_kind_to_string(int kind)
{
        static const char *const names[] = {
                [CORRAL_ERR_INTERNAL] = "internal",
                [CORRAL_ERR_USAGE] = "usage",
                [CORRAL_ERR_UNSUPPORTED] = "unsupported",
                [CORRAL_ERR_CANCELLED] = "cancelled",
                [CORRAL_ERR_MODEL_UNREACHABLE] = "model_unreachable",
                [CORRAL_ERR_MODEL_AUTH] = "model_auth",
                [CORRAL_ERR_MODEL_NOT_FOUND] = "model_not_found",
                [CORRAL_ERR_MODEL_CONTEXT] = "model_context",
                [CORRAL_ERR_MODEL_NO_TOOLS] = "model_no_tools",
                [CORRAL_ERR_MODEL_REFUSED] = "model_refused",
                [CORRAL_ERR_MODEL_NO_IMAGES] = "model_no_images",
        };
        return kind >= 0 && (size_t)kind < sizeof(names) / sizeof(names[0]) && names[kind] ? names[kind]
                                                                                            : "internal";
}
