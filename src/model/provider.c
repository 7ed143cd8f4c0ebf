/* provider.c: presets, the config file and the environment (see provider.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "provider.h"

#define MAX_CONFIG (1u << 20)

/* Quirks per preset: docs/providers.md has the wire formats behind them. */
static const struct provider_preset presets[] = {
        { "openai", "https://api.openai.com/v1", 0, true },
        { "ollama", "http://localhost:11434/v1", CHAT_QUIRK_NO_TOOL_CHOICE | CHAT_QUIRK_MAX_TOKENS_LEGACY, false },
        { "llamacpp", "http://localhost:8080/v1", CHAT_QUIRK_NO_TOOL_CHOICE | CHAT_QUIRK_MAX_TOKENS_LEGACY, false },
        { "vllm", "http://localhost:8000/v1", CHAT_QUIRK_MAX_TOKENS_LEGACY, false },
};

static const struct {
        const char *name;
        unsigned bit;
} quirk_names[] = {
        { "no_tool_choice", CHAT_QUIRK_NO_TOOL_CHOICE },
        { "no_stream_usage", CHAT_QUIRK_NO_STREAM_USAGE },
        { "max_tokens_legacy", CHAT_QUIRK_MAX_TOKENS_LEGACY },
};

const struct provider_preset *provider_preset_find(const char *name)
{
        for (size_t i = 0; name && i < ARRAY_SIZE(presets); i++)
                if (strcmp(presets[i].name, name) == 0)
                        return &presets[i];
        return NULL;
}

const char *provider_preset_names(void)
{
        return "openai, ollama, llamacpp, vllm";
}

static const char *env_nonempty(const char *name)
{
        const char *v = getenv(name);
        return v && *v ? v : NULL;
}

/* $XDG_CONFIG_HOME/corral/config.json, or ~/.config/corral/config.json. */
static char *default_config_path(void)
{
        char *p = NULL;
        const char *xdg = env_nonempty("XDG_CONFIG_HOME");
        const char *home = env_nonempty("HOME");
        if (xdg && xdg[0] == '/') {
                if (asprintf(&p, "%s/corral/config.json", xdg) < 0)
                        return NULL;
        } else if (home) {
                if (asprintf(&p, "%s/.config/corral/config.json", home) < 0)
                        return NULL;
        }
        return p;
}

int provider_config_expand(const char *path, const char *where, const char *value, char **ret, corral_error **err)
{
        const char *open = strstr(value, "{env:");
        if (open == NULL) {
                *ret = strdup(value);
                return *ret ? 0 : corral_fail(err, ENOMEM, "cannot read the config file");
        }
        const char *close = strchr(open, '}');
        if (close == NULL)
                return corral_usage(err, "config file '%s': %s: unterminated '{env:'", path, where);
        cleanup_free char *var = strndup(open + 5, (size_t)(close - open - 5));
        const char *v = var ? getenv(var) : NULL;
        if (var == NULL)
                return corral_fail(err, ENOMEM, "cannot read the config file");
        if (v == NULL)
                return corral_usage(err, "config file '%s': %s names the environment variable '%s', which is not set",
                                    path, where, var);
        cleanup_free char *rest = NULL;
        if (provider_config_expand(path, where, close + 1, &rest, err) < 0)
                return -1;
        if (asprintf(ret, "%.*s%s%s", (int)(open - value), value, v, rest) < 0)
                return corral_fail(err, ENOMEM, "cannot read the config file");
        return 0;
}

static int config_string(const char *path, json_t *obj, const char *key, const char *where, char **ret,
                         corral_error **err)
{
        json_t *v = json_object_get(obj, key);
        if (v == NULL || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return corral_usage(err, "config file '%s': %s.%s must be a string", path, where, key);
        cleanup_free char *w = NULL;
        if (asprintf(&w, "%s.%s", where, key) < 0)
                return corral_fail(err, ENOMEM, "cannot read the config file");
        free(*ret);
        *ret = NULL;
        return provider_config_expand(path, w, json_string_value(v), ret, err);
}

/* The keys each object of the config file may have: a typo ("modle",
 * "baseUrl") is an error naming the nearest key, not silently nothing. */
/* "mcp": the MCP servers of corral run's agent, read by mcp/servers.c. */
static const char *const top_keys[] = { "$schema", "provider", "model", "mcp", NULL };
static const char *const provider_keys[] = { "name", "npm", "options", "models", "baseURL", "apiKey", "quirks", NULL };
static const char *const options_keys[] = { "baseURL", "apiKey", NULL };
static const char *const model_keys[] = { "name", "limit", "modalities", "cost", NULL };
/* opencode.json's prices, per million tokens; the cache's are accepted and
 * not used (corral counts no cached tokens). */
static const char *const cost_keys[] = { "input", "output", "cache_read", "cache_write", NULL };
static const char *const limit_keys[] = { "context", "output", NULL };
static const char *const modalities_keys[] = { "input", "output", NULL };

int provider_config_check_keys(const char *path, const char *where, const json_t *obj, const char *const *keys,
                      corral_error **err)
{
        const char *key;
        json_t *v;
        json_object_foreach ((json_t *)obj, key, v) {
                size_t i;
                for (i = 0; keys[i] && strcmp(keys[i], key) != 0; i++)
                        ;
                if (keys[i])
                        continue;
                const char *near = nearest_name(key, keys);
                char *known = NULL;
                size_t klen = 0;
                FILE *f = open_memstream(&known, &klen);
                for (i = 0; f && keys[i]; i++)
                        fprintf(f, "%s\"%s\"", i ? ", " : "", keys[i]);
                if (f)
                        fclose(f);
                cleanup_free char *known_list = known;
                if (near)
                        return corral_usage(err, "config file '%s': %s has no key \"%s\" (did you mean \"%s\"?)",
                                            path, where, key, near);
                return corral_usage(err, "config file '%s': %s has no key \"%s\" (it takes %s)", path, where, key,
                                    known_list ? known_list : "");
        }
        return 0;
}

/* The whole file's keys, before any of it is used. */
static int check_config(const char *path, const json_t *doc, corral_error **err)
{
        if (provider_config_check_keys(path, "the top level", doc, top_keys, err) < 0)
                return -1;
        const char *name, *id;
        json_t *p, *m;
        json_object_foreach ((json_t *)json_object_get(doc, "provider"), name, p) {
                cleanup_free char *where = NULL;
                if (asprintf(&where, "provider.%s", name) < 0)
                        return corral_fail(err, ENOMEM, "cannot read the config file");
                if (!json_is_object(p))
                        return corral_usage(err, "config file '%s': %s must be an object", path, where);
                json_t *options = json_object_get(p, "options"), *models = json_object_get(p, "models");
                cleanup_free char *ow = NULL;
                if (asprintf(&ow, "%s.options", where) < 0)
                        return corral_fail(err, ENOMEM, "cannot read the config file");
                if (provider_config_check_keys(path, where, p, provider_keys, err) < 0 ||
                    (json_is_object(options) && provider_config_check_keys(path, ow, options, options_keys, err) < 0))
                        return -1;
                if (models && !json_is_object(models))
                        return corral_usage(err, "config file '%s': %s.models must be an object of models", path,
                                            where);
                json_object_foreach (models, id, m) {
                        cleanup_free char *mw = NULL;
                        if (asprintf(&mw, "%s.models.%s", where, id) < 0)
                                return corral_fail(err, ENOMEM, "cannot read the config file");
                        if (!json_is_object(m))
                                return corral_usage(err, "config file '%s': %s must be an object", path, mw);
                        json_t *limit = json_object_get(m, "limit"), *mod = json_object_get(m, "modalities");
                        json_t *cost = json_object_get(m, "cost");
                        cleanup_free char *cw = NULL;
                        if (asprintf(&cw, "%s.cost", mw) < 0)
                                return corral_fail(err, ENOMEM, "cannot read the config file");
                        if (cost && !json_is_object(cost))
                                return corral_usage(err, "config file '%s': %s must be an object such as "
                                                    "{\"input\": 2.5, \"output\": 10} (prices per million tokens)",
                                                    path, cw);
                        if ((cost && provider_config_check_keys(path, cw, cost, cost_keys, err) < 0) ||
                            provider_config_check_keys(path, mw, m, model_keys, err) < 0 ||
                            (json_is_object(limit) && provider_config_check_keys(path, mw, limit, limit_keys, err) < 0) ||
                            (json_is_object(mod) && provider_config_check_keys(path, mw, mod, modalities_keys, err) < 0))
                                return -1;
                }
        }
        return 0;
}

static int load_config(const char *path, bool must_exist, json_t **ret, corral_error **err)
{
        *ret = NULL;
        errno = 0;
        cleanup_free char *text = read_whole_file_at(AT_FDCWD, path, MAX_CONFIG);
        if (text == NULL && errno == EFBIG)
                return corral_usage(err, "the config file '%s' is larger than %u KiB", path, MAX_CONFIG >> 10);
        if (text == NULL) {
                if (errno == ENOENT && !must_exist)
                        return 0;
                return corral_make_error(err, CORRAL_ERR_USAGE, errno ? errno : EIO, "cannot read the config file '%s'",
                                         path);
        }
        cleanup_free char *what = NULL;
        if (asprintf(&what, "the config file '%s'", path) < 0)
                return corral_fail(err, ENOMEM, "cannot read the config file");
        json_t *doc = NULL;
        if (chat_json_parse(text, strlen(text), what, &doc, err) < 0) {
                (*err)->kind = CORRAL_ERR_USAGE; /* the user's file: theirs to fix */
                return -1;
        }
        if (!json_is_object(doc)) {
                json_decref(doc);
                return corral_usage(err, "%s must hold a JSON object", what);
        }
        json_t *providers = json_object_get(doc, "provider");
        if (providers && !json_is_object(providers)) {
                json_decref(doc);
                return corral_usage(err, "%s: \"provider\" must be an object of providers", what);
        }
        if (check_config(path, doc, err) < 0) {
                json_decref(doc);
                return -1;
        }
        *ret = doc;
        return 0;
}

/* The provider entry's settings: "baseURL"/"apiKey" directly or under
 * "options" (as opencode.json writes them), "quirks": [names]. */
static int apply_entry(const char *path, const char *name, json_t *entry, struct provider_choice *c, char **base_url,
                       char **api_key, corral_error **err)
{
        if (!json_is_object(entry))
                return corral_usage(err, "config file '%s': provider '%s' must be an object", path, name);
        cleanup_free char *where = NULL;
        if (asprintf(&where, "provider.%s", name) < 0)
                return corral_fail(err, ENOMEM, "cannot read the config file");
        json_t *options = json_object_get(entry, "options");
        if (json_is_object(options)) {
                if (config_string(path, options, "baseURL", where, base_url, err) < 0 ||
                    config_string(path, options, "apiKey", where, api_key, err) < 0)
                        return -1;
        }
        if (config_string(path, entry, "baseURL", where, base_url, err) < 0 ||
            config_string(path, entry, "apiKey", where, api_key, err) < 0)
                return -1;
        json_t *quirks = json_object_get(entry, "quirks"), *q;
        size_t i;
        if (quirks && !json_is_array(quirks))
                return corral_usage(err, "config file '%s': %s.quirks must be an array of names", path, where);
        json_array_foreach(quirks, i, q) {
                size_t k;
                for (k = 0; k < ARRAY_SIZE(quirk_names); k++)
                        if (json_is_string(q) && strcmp(json_string_value(q), quirk_names[k].name) == 0)
                                break;
                if (k == ARRAY_SIZE(quirk_names))
                        return corral_usage(err, "config file '%s': %s.quirks: unknown quirk (known: no_tool_choice, "
                                                 "no_stream_usage, max_tokens_legacy)", path, where);
                c->quirks |= quirk_names[k].bit;
        }
        return 0;
}

int provider_config_load(const char *path, json_t **ret_doc, char **ret_path, corral_error **err)
{
        *ret_doc = NULL;
        *ret_path = NULL;
        if (path && *path == '\0')
                return 0;
        cleanup_free char *p = path ? strdup(path) : default_config_path();
        if (p == NULL)
                return path ? corral_fail(err, ENOMEM, "cannot read the config file") : 0;
        if (load_config(p, path != NULL, ret_doc, err) < 0)
                return -1;
        if (*ret_doc)
                *ret_path = TAKE_PTR(p);
        return 0;
}

int provider_resolve(const struct provider_request *req, struct provider_choice *c, corral_error **err)
{
        memset(c, 0, sizeof(*c));
        json_t *config = NULL;
        cleanup_free char *base_url = NULL, *api_key = NULL, *model = NULL;
        int r = -1;

        if (req->config_path == NULL) {
                c->config_path = default_config_path();
                if (c->config_path && load_config(c->config_path, false, &config, err) < 0)
                        goto out;
        } else if (*req->config_path) {
                c->config_path = strdup(req->config_path);
                if (c->config_path == NULL || load_config(c->config_path, true, &config, err) < 0)
                        goto out;
        }
        if (config == NULL) {
                free(c->config_path);
                c->config_path = NULL;
        }
        const char *path = c->config_path;
        json_t *providers = json_object_get(config, "provider");

        /* The model: flag, environment, config. */
        const char *m = req->model ? req->model : env_nonempty("CORRAL_MODEL");
        if (m) {
                model = strdup(m);
        } else if (config && config_string(path, config, "model", "(top level)", &model, err) < 0) {
                goto out;
        }
        if (model && *model == '\0')
                goto usage_model;

        /* "PROVIDER/ID" when PROVIDER is configured or a preset. */
        const char *provider = req->provider;
        if (provider && provider_preset_find(provider) == NULL && json_object_get(providers, provider) == NULL) {
                corral_usage(err, "unknown provider '%s': expected one of %s%s", provider, provider_preset_names(),
                             providers ? ", or a provider of the config file" : "");
                goto out;
        }
        /* A provider named on the command line beats $OPENAI_BASE_URL; one
         * named only in the config file does not. */
        bool explicit_provider = provider != NULL;
        char *slash = model ? strchr(model, '/') : NULL;
        if (slash && strncmp(model, "replay:", 7) != 0) {
                cleanup_free char *prefix = strndup(model, (size_t)(slash - model));
                if (prefix && (provider_preset_find(prefix) || json_object_get(providers, prefix)) &&
                    (provider == NULL || strcmp(provider, prefix) == 0)) {
                        c->provider = TAKE_PTR(prefix);
                        explicit_provider = req->model != NULL;
                        memmove(model, slash + 1, strlen(slash + 1) + 1);
                }
        }
        if (c->provider == NULL && provider)
                c->provider = strdup(provider);

        /* Base URL and key: the provider's config entry, then its preset. */
        const struct provider_preset *preset = provider_preset_find(c->provider);
        if (preset)
                c->quirks = preset->quirks;
        json_t *entry = c->provider ? json_object_get(providers, c->provider) : NULL;
        if (entry && apply_entry(path, c->provider, entry, c, &base_url, &api_key, err) < 0)
                goto out;
        if (base_url == NULL && preset)
                base_url = strdup(preset->base_url);
        if (req->base_url) {
                free(base_url);
                base_url = strdup(req->base_url);
        } else if (!explicit_provider && env_nonempty("OPENAI_BASE_URL")) {
                free(base_url);
                base_url = strdup(env_nonempty("OPENAI_BASE_URL"));
        }
        if (base_url == NULL && c->provider == NULL)
                base_url = strdup(presets[0].base_url);

        /* The model's own entry: its context size. */
        json_t *limit = json_object_get(json_object_get(json_object_get(entry, "models"), model ? model : ""),
                                        "limit");
        json_t *context = json_object_get(limit, "context");
        if (context && (!json_is_integer(context) || json_integer_value(context) < 1024)) {
                corral_usage(err, "config file '%s': provider.%s.models.%s.limit.context must be a number of tokens "
                                  "(at least 1024)", path, c->provider, model);
                goto out;
        }
        c->context_tokens = context ? (uint64_t)json_integer_value(context) : 0;
        /* Its prices (opencode.json's "cost"), per million tokens. */
        json_t *cost = json_object_get(json_object_get(json_object_get(entry, "models"), model ? model : ""), "cost");
        c->cost_input = c->cost_output = -1;
        if (cost) {
                json_t *in = json_object_get(cost, "input"), *out = json_object_get(cost, "output");
                if (!json_is_number(in) || !json_is_number(out) || json_number_value(in) < 0 ||
                    json_number_value(out) < 0) {
                        corral_usage(err, "config file '%s': provider.%s.models.%s.cost needs \"input\" and "
                                          "\"output\", each a price per million tokens (0 or more)",
                                     path, c->provider, model);
                        goto out;
                }
                c->cost_input = json_number_value(in);
                c->cost_output = json_number_value(out);
        }
        /* Its input modalities (opencode.json's shape): images or not. */
        json_t *modalities = json_object_get(json_object_get(json_object_get(entry, "models"), model ? model : ""),
                                             "modalities");
        json_t *input = json_object_get(modalities, "input"), *mod;
        if (modalities && (!json_is_object(modalities) || (input && !json_is_array(input)))) {
                corral_usage(err, "config file '%s': provider.%s.models.%s.modalities.input must be an array of "
                                  "names such as [\"text\", \"image\"]", path, c->provider, model);
                goto out;
        }
        size_t k;
        if (input)
                c->images = -1;
        json_array_foreach(input, k, mod) {
                if (!json_is_string(mod)) {
                        corral_usage(err, "config file '%s': provider.%s.models.%s.modalities.input must be an "
                                          "array of names such as [\"text\", \"image\"]", path, c->provider, model);
                        goto out;
                }
                if (strcmp(json_string_value(mod), "image") == 0)
                        c->images = 1;
        }

        /* The request's key wins; "" there means none at all (not the
         * environment's, not the config file's). */
        const char *env_key = req->api_key ? req->api_key : env_nonempty("OPENAI_API_KEY");
        if (env_key) {
                if (api_key)
                        explicit_bzero(api_key, strlen(api_key));
                free(api_key);
                api_key = env_key[0] ? strdup(env_key) : NULL;
        }
        if (model == NULL)
                goto usage_model;
        c->base_url = TAKE_PTR(base_url);
        c->api_key = TAKE_PTR(api_key);
        c->model = TAKE_PTR(model);
        r = 0;
        goto out;
usage_model:
        corral_usage_field(err, "model", "no model given (a name or replay:FILE): set \"model\" in %s, "
                           "CORRAL_MODEL, or the model", path ? path : "$XDG_CONFIG_HOME/corral/config.json");
out:
        if (api_key)
                explicit_bzero(api_key, strlen(api_key));
        json_decref(config);
        if (r < 0)
                provider_choice_release(c);
        return r;
}

void provider_choice_release(struct provider_choice *c)
{
        if (c->api_key)
                explicit_bzero(c->api_key, strlen(c->api_key));
        free(c->base_url);
        free(c->model);
        free(c->api_key);
        free(c->provider);
        free(c->config_path);
        memset(c, 0, sizeof(*c));
}
