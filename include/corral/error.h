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
        /* The setting at fault, when one is: a static string naming the
         * config field ("model", "base_url", "max_iterations", ...; several
         * separated by commas), NULL otherwise.  Messages speak of the
         * setting in words ("the request timeout"); a front end adds its own
         * spelling of it (the CLI: its flag, a server: its parameter). */
        const char *field;
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
        /* What a server's caller must tell apart: */
        CORRAL_ERR_NOT_FOUND, /* no such session, run or file */
        CORRAL_ERR_BUSY,      /* in use: a session running another step, a name taken */
        CORRAL_ERR_LIMIT,     /* a cap of the host or server reached (sessions, inputs); try later or less */
        CORRAL_ERR_TIMEOUT,   /* waiting for something corral runs took too long */
};

/* The kind's stable name, for JSON and protocols: "internal", "usage",
 * "unsupported", "cancelled", "model_unreachable", "model_auth",
 * "model_not_found", "model_context", "model_no_tools", "model_refused",
 * "model_no_images", "not_found", "busy", "limit", "timeout"; "internal"
 * for anything else.  Names and numbers never change. */
const char *corral_error_kind_to_string(int kind);

/* The HTTP status a server answers with for a kind (docs/errors.md):
 * usage 400, not_found 404, busy 409, limit 429, cancelled 499, internal
 * 500, unsupported 501, model errors 502 (504 when unreachable), timeout
 * 504; 500 for an unknown kind. */
int corral_error_kind_http_status(int kind);

/* The JSON-RPC (MCP) error code for a kind (docs/errors.md): usage -32602
 * (invalid params), internal -32603, the rest server-defined in
 * -32000..-32099; -32603 for an unknown kind. */
int corral_error_kind_jsonrpc_code(int kind);

/* Free an error; accepts NULL. */
void corral_error_free(corral_error *err);

/* Convenience for `corral_error_free(*err); *err = NULL;`. */
void corral_error_clear(corral_error **err);

#ifdef __cplusplus
}
#endif
#endif
