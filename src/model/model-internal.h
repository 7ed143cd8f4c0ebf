/* model-internal.h: what the model backends share (see model.h).
 * Threads: one caller at a time per model client. */
#ifndef CORRAL_MODEL_INTERNAL_H
#define CORRAL_MODEL_INTERNAL_H

#include "model.h"

struct model_backend_ops {
        const char *name;
        int (*chat)(model_client *c, const json_t *messages, const json_t *tools, const struct model_hooks *hooks,
                    struct chat_reply *ret, corral_error **ret_err);
        int (*list)(model_client *c, json_t **ret_ids, corral_error **ret_err);
        void (*release)(model_client *c);
};

struct model_client {
        /* The settings, with every string owned. */
        char *base_url;
        char *model;
        char *api_key;
        char *provider;
        char *record_path;
        char **secrets;
        struct model_settings s; /* string fields point at the copies above */

        const struct model_backend_ops *ops;
        void *backend;           /* the backend's own state */
        struct model_usage usage;
        int record_fd;           /* -1: not recording */
        bool answered_once;      /* the endpoint has sent an HTTP response */
        bool sent_images;        /* the request being made carries image parts */
};

CORRAL_HIDDEN extern const struct model_backend_ops openai_backend_ops;
CORRAL_HIDDEN extern const struct model_backend_ops replay_backend_ops;

/* Load the transcript named by c->model ("replay:FILE"). */
CORRAL_HIDDEN int replay_backend_open(model_client *c, corral_error **ret_err);
/* The replay's recorded run info and its first divergence (model.h). */
CORRAL_HIDDEN const json_t *replay_recorded_run(const model_client *c);
CORRAL_HIDDEN const json_t *replay_divergence(const model_client *c);
CORRAL_HIDDEN bool replay_has_purpose(const model_client *c, const char *purpose);

/* Wait up to ms for the cancel fd; 1 when cancelled, 0 when the time ran out. */
CORRAL_HIDDEN int model_wait_cancellable(const model_client *c, double ms);
/* Whether the cancel fd is readable now. */
CORRAL_HIDDEN bool model_cancelled(const model_client *c);

#endif
