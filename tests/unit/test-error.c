/* test-error.c: the error object and its kind tables (src/lib/error.c).
 *
 * Front ends match kinds by name and servers answer with the kind's HTTP
 * status or JSON-RPC code (docs/errors.md): every kind has its own name, the
 * numbers stay what they were, and a kind nobody knows is "internal". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "util.h"

__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

/* The last kind: a kind added after it must extend this test. */
#define LAST_KIND CORRAL_ERR_TIMEOUT

TEST(names_are_distinct_and_stable)
{
        /* Existing callers store these numbers and names: they never move. */
        CHECK_INT(CORRAL_ERR_INTERNAL, 0);
        CHECK_INT(CORRAL_ERR_USAGE, 1);
        CHECK_INT(CORRAL_ERR_UNSUPPORTED, 2);
        CHECK_INT(CORRAL_ERR_CANCELLED, 3);
        CHECK_INT(CORRAL_ERR_MODEL_UNREACHABLE, 4);
        CHECK_INT(CORRAL_ERR_MODEL_NO_IMAGES, 10);
        CHECK_STR(corral_error_kind_to_string(CORRAL_ERR_USAGE), "usage");
        CHECK_STR(corral_error_kind_to_string(CORRAL_ERR_MODEL_NO_TOOLS), "model_no_tools");
        CHECK_STR(corral_error_kind_to_string(CORRAL_ERR_NOT_FOUND), "not_found");
        CHECK_STR(corral_error_kind_to_string(CORRAL_ERR_BUSY), "busy");
        CHECK_STR(corral_error_kind_to_string(CORRAL_ERR_LIMIT), "limit");
        CHECK_STR(corral_error_kind_to_string(CORRAL_ERR_TIMEOUT), "timeout");
        for (int a = 0; a <= LAST_KIND; a++) {
                const char *na = corral_error_kind_to_string(a);
                CHECK(na != NULL && *na != '\0');
                /* only kind 0 may be called "internal" */
                CHECK(a == CORRAL_ERR_INTERNAL || strcmp(na, "internal") != 0);
                for (int b = a + 1; b <= LAST_KIND; b++)
                        CHECK(strcmp(na, corral_error_kind_to_string(b)) != 0);
        }
}

TEST(http_statuses)
{
        CHECK_INT(corral_error_kind_http_status(CORRAL_ERR_INTERNAL), 500);
        CHECK_INT(corral_error_kind_http_status(CORRAL_ERR_USAGE), 400);
        CHECK_INT(corral_error_kind_http_status(CORRAL_ERR_UNSUPPORTED), 501);
        CHECK_INT(corral_error_kind_http_status(CORRAL_ERR_CANCELLED), 499);
        CHECK_INT(corral_error_kind_http_status(CORRAL_ERR_MODEL_UNREACHABLE), 504);
        CHECK_INT(corral_error_kind_http_status(CORRAL_ERR_MODEL_AUTH), 502);
        CHECK_INT(corral_error_kind_http_status(CORRAL_ERR_MODEL_REFUSED), 502);
        CHECK_INT(corral_error_kind_http_status(CORRAL_ERR_NOT_FOUND), 404);
        CHECK_INT(corral_error_kind_http_status(CORRAL_ERR_BUSY), 409);
        CHECK_INT(corral_error_kind_http_status(CORRAL_ERR_LIMIT), 429);
        CHECK_INT(corral_error_kind_http_status(CORRAL_ERR_TIMEOUT), 504);
        /* a client error is the caller's to fix; every other status is 4xx or 5xx too */
        for (int k = 0; k <= LAST_KIND; k++) {
                int s = corral_error_kind_http_status(k);
                CHECK(s >= 400 && s <= 599);
        }
}

TEST(jsonrpc_codes)
{
        CHECK_INT(corral_error_kind_jsonrpc_code(CORRAL_ERR_USAGE), -32602);
        CHECK_INT(corral_error_kind_jsonrpc_code(CORRAL_ERR_INTERNAL), -32603);
        CHECK_INT(corral_error_kind_jsonrpc_code(CORRAL_ERR_NOT_FOUND), -32002);
        /* the rest: server-defined, one code per kind */
        for (int a = 0; a <= LAST_KIND; a++) {
                int ca = corral_error_kind_jsonrpc_code(a);
                if (a != CORRAL_ERR_USAGE && a != CORRAL_ERR_INTERNAL)
                        CHECK(ca <= -32000 && ca >= -32099);
                for (int b = a + 1; b <= LAST_KIND; b++)
                        CHECK(ca != corral_error_kind_jsonrpc_code(b));
        }
}

TEST(unknown_kinds_are_internal)
{
        int unknown[] = { -1, LAST_KIND + 1, 1000, -32602 };
        for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
                CHECK_STR(corral_error_kind_to_string(unknown[i]), "internal");
                CHECK_INT(corral_error_kind_http_status(unknown[i]), 500);
                CHECK_INT(corral_error_kind_jsonrpc_code(unknown[i]), -32603);
        }
}

TEST(field_survives_context)
{
        corral_error *err = NULL;
        CHECK_INT(corral_usage(&err, "no model given"), -1);
        CHECK(err != NULL && err->field == NULL);
        corral_error_clear(&err);
        CHECK_INT(corral_usage_field(&err, "model", "no model given for %s", "x"), -1);
        CHECK(err != NULL && err->kind == CORRAL_ERR_USAGE);
        corral_error_prefix(&err, "the reviewer");
        CHECK_STR(err ? err->msg : NULL, "the reviewer: no model given for x");
        CHECK_STR(err ? err->field : NULL, "model");
        /* a new error replaces the old one, field and all */
        corral_fail(&err, ENOENT, "cannot open '%s'", "f");
        CHECK(err != NULL && err->field == NULL && err->errnum == ENOENT);
        corral_error_free(err);
        CHECK_INT(corral_error_set_field(NULL, "model"), -1);
}

int main(void)
{
        RUN(names_are_distinct_and_stable);
        RUN(http_statuses);
        RUN(jsonrpc_codes);
        RUN(unknown_kinds_are_internal);
        RUN(field_survives_context);
        return DONE();
}
