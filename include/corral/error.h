/* corral/error.h: the error object every fallible library call fills.
 *
 * Contract (after crun's): a function that can fail returns a negative value
 * and, when `ret_err` is not NULL, stores a newly allocated error describing
 * what failed and on what.  Callers may prefix context as it travels up with
 * corral_error_prefix().  The library never prints; only the CLI does.
 *
 * Threads: no shared state; an error object belongs to one thread at a time.
 */
#ifndef CORRAL_ERROR_H
#define CORRAL_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct corral_error {
        int errnum;   /* errno value behind the failure, 0 when none */
        int kind;     /* enum corral_error_kind */
        char *msg;    /* lowercase, one line, never NULL */
} corral_error;

enum corral_error_kind {
        CORRAL_ERR_INTERNAL = 0, /* a step of corral itself failed */
        CORRAL_ERR_USAGE,        /* the caller passed something invalid */
        CORRAL_ERR_UNSUPPORTED,  /* the host lacks a mechanism corral requires */
        CORRAL_ERR_CANCELLED,    /* the caller cancelled (Ctrl-C) */
        /* The model endpoint: */
        CORRAL_ERR_MODEL_UNREACHABLE, /* connection failed, timed out, retries exhausted */
        CORRAL_ERR_MODEL_AUTH,        /* 401/403: the API key is missing or wrong */
        CORRAL_ERR_MODEL_NOT_FOUND,   /* 404: unknown model or wrong base URL */
        CORRAL_ERR_MODEL_CONTEXT,     /* the conversation is longer than the model's context */
        CORRAL_ERR_MODEL_NO_TOOLS,    /* the endpoint rejects "tools" (use the text protocol) */
        CORRAL_ERR_MODEL_REFUSED,     /* any other rejection or a malformed reply */
        CORRAL_ERR_MODEL_NO_IMAGES,   /* the endpoint rejects image content (send text only) */
};

/* The kind's stable name, for JSON and protocols: "internal", "usage",
 * "unsupported", "cancelled", "model_unreachable", "model_auth",
 * "model_not_found", "model_context", "model_no_tools", "model_refused",
 * "model_no_images"; "internal" for anything else. */
const char *corral_error_kind_to_string(int kind);

/* Free an error; accepts NULL. */
void corral_error_free(corral_error *err);

/* Convenience for `corral_error_free(*err); *err = NULL;`. */
void corral_error_clear(corral_error **err);

#ifdef __cplusplus
}
#endif
#endif
