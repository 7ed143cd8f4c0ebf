/* provider.h: where a model lives: presets, the config file, the environment.
 *
 * Resolution, first that names a value wins:
 *   base URL  --base-url; the provider named by --provider or by a "PROV/ID"
 *             --model (its config entry, else its preset); $OPENAI_BASE_URL;
 *             the provider of the config file's "model"; OpenAI
 *   model     --model, $CORRAL_MODEL, the config file's "model"
 *   API key   the request's, $OPENAI_API_KEY, the config file's provider "apiKey"
 * A model written "PROVIDER/ID" picks the provider from the config file (or
 * a preset of that name) and sends ID.  The config file is
 * $XDG_CONFIG_HOME/corral/config.json (~/.config/corral/config.json), e.g.
 *   {"provider": {"ollama": {"baseURL": "http://localhost:11434/v1",
 *                            "models": {"qwen2.5-coder:7b": {}}}},
 *    "model": "ollama/qwen2.5-coder:7b"}
 * String values may be "{env:VAR}", replaced by the variable's value.  A
 * model's entry may give its context size as opencode.json does:
 * "models": {"qwen2.5-coder:7b": {"limit": {"context": 32768}}}, and whether
 * it takes images: "modalities": {"input": ["text", "image"]}, and its prices
 * per million tokens: "cost": {"input": 2.5, "output": 10}.
 *
 * Threads: thread-safe while no thread changes the environment (getenv) at the
 * same time.
 */
#ifndef CORRAL_MODEL_PROVIDER_H
#define CORRAL_MODEL_PROVIDER_H

#include "model.h"

struct provider_preset {
        const char *name;
        const char *base_url;
        unsigned quirks;          /* enum chat_quirk */
        bool needs_key;           /* warn when no key is set */
};
/* NULL when unknown. */
CORRAL_HIDDEN const struct provider_preset *provider_preset_find(const char *name);
/* "openai, ollama, llamacpp, vllm" */
CORRAL_HIDDEN const char *provider_preset_names(void);

/* What the command line said; NULL means "not given". */
struct provider_request {
        const char *base_url;
        const char *model;
        const char *provider;
        const char *config_path;  /* NULL: the usual place; "" none */
        const char *api_key;      /* NULL: the environment's, then the config file's; "": none; borrowed */
};

/* The resolved choice; strings are owned. */
struct provider_choice {
        char *base_url;
        char *model;              /* what is sent as "model" */
        char *api_key;
        char *provider;           /* preset or config provider name, or NULL */
        unsigned quirks;
        char *config_path;        /* the config file read, or NULL */
        uint64_t context_tokens;  /* the model's "limit.context", 0 when not given */
        double cost_input, cost_output; /* the model's "cost": prices per million prompt and
                                         * completion tokens; -1 when not given */
        int images;               /* the model's "modalities.input": 1 lists "image", -1 does
                                   * not, 0 not given (no preset says; docs/providers.md) */
};
/* The config file itself, for its other sections (mcp/servers.c): path
 * as provider_request.config_path says (NULL: the usual place, which may be
 * absent; "": none).  *ret_doc NULL when there is none; its keys are
 * checked.  ret_path: the file read (malloc'd) or NULL. */
CORRAL_HIDDEN int provider_config_load(const char *path, json_t **ret_doc, char **ret_path, corral_error **ret_err);
/* value with each "{env:VAR}" replaced (an unset VAR is a usage error
 * naming path and where, e.g. "mcp.notes.environment.TOKEN"). */
CORRAL_HIDDEN int provider_config_expand(const char *path, const char *where, const char *value, char **ret,
                                         corral_error **ret_err);
/* Every key of obj is one of keys (NULL-terminated): else a usage error
 * naming path, where ("mcp.notes") and the nearest key. */
CORRAL_HIDDEN int provider_config_check_keys(const char *path, const char *where, const json_t *obj,
                                             const char *const *keys, corral_error **ret_err);
CORRAL_HIDDEN int provider_resolve(const struct provider_request *req, struct provider_choice *ret,
                                   corral_error **ret_err);
CORRAL_HIDDEN void provider_choice_release(struct provider_choice *c);

#endif
