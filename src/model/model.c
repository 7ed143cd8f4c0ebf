/* model.c: the model client: settings, backend dispatch, usage accounting,
 * transcript recording (see model.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/redact.h"
#include "model-internal.h"

void model_settings_init(struct model_settings *s)
{
        *s = (struct model_settings){
                .stream = true,
                .request_timeout_s = 300,
                .connect_timeout_s = 10,
                .max_retries = 4,
                .retry_base_s = 1,
                .retry_max_s = 60,
                .cancel_fd = -1,
        };
}

bool model_cancelled(const model_client *c)
{
        if (c->s.cancel_fd < 0)
                return false;
        struct pollfd p = { .fd = c->s.cancel_fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0;
}

int model_wait_cancellable(const model_client *c, double ms)
{
        double end = monotonic_ms() + ms;
        for (;;) {
                double left = end - monotonic_ms();
                if (left <= 0)
                        return 0;
                struct pollfd p = { .fd = c->s.cancel_fd, .events = POLLIN };
                int r = poll(&p, c->s.cancel_fd >= 0 ? 1 : 0, (int)(left + 1));
                if (r > 0)
                        return 1;
        }
}

uint64_t model_estimate_tokens(const char *text, size_t len)
{
        (void)text;
        return (len + 3) / 4;
}

static int dup_str(char **dst, const char *src)
{
        *dst = NULL;
        if (src == NULL)
                return 0;
        *dst = strdup(src);
        return *dst ? 0 : -1;
}

/* A transcript file: JSONL, 0600, never through a symlink; appended. */
static int open_record(const char *path, corral_error **err)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return corral_make_error(err, CORRAL_ERR_USAGE, errno, "cannot open the transcript '%s'", path);
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return corral_usage(err, "the transcript '%s' is not a regular file", path);
        }
        fchmod(fd, 0600);
        return fd;
}

int model_client_open(const struct model_settings *s, model_client **ret, corral_error **err)
{
        model_client *c = calloc(1, sizeof(*c));
        if (c == NULL)
                return corral_fail(err, ENOMEM, "cannot create the model client");
        c->s = *s;
        c->record_fd = -1;
        size_t n_secrets = 0;
        while (s->secrets && s->secrets[n_secrets])
                n_secrets++;
        /* The caller's secrets and the key: what recordings and messages must not carry. */
        c->secrets = calloc(n_secrets + 2, sizeof(char *));
        bool oom = c->secrets == NULL;
        for (size_t i = 0; !oom && i < n_secrets; i++)
                oom = dup_str(&c->secrets[i], s->secrets[i]) < 0;
        if (!oom && s->api_key && *s->api_key)
                oom = dup_str(&c->secrets[n_secrets], s->api_key) < 0;
        if (oom || dup_str(&c->base_url, s->base_url) < 0 || dup_str(&c->model, s->model) < 0 ||
            dup_str(&c->api_key, s->api_key) < 0 || dup_str(&c->provider, s->provider) < 0 ||
            dup_str(&c->record_path, s->record_path) < 0) {
                model_client_free(c);
                return corral_fail(err, ENOMEM, "cannot create the model client");
        }
        c->s.base_url = c->base_url;
        c->s.model = c->model;
        c->s.api_key = c->api_key;
        c->s.provider = c->provider;
        c->s.record_path = c->record_path;
        c->s.secrets = (const char *const *)c->secrets;

        if (c->model == NULL || *c->model == '\0') {
                model_client_free(c);
                return corral_usage_field(err, "model", "no model given: set the model, CORRAL_MODEL, or "
                                                        "\"model\" in the config file");
        }
        if (strncmp(c->model, "replay:", 7) == 0) {
                c->ops = &replay_backend_ops;
        } else {
                if (c->base_url == NULL || *c->base_url == '\0') {
                        model_client_free(c);
                        return corral_usage_field(err, "base_url,provider", "no endpoint given: set the base URL "
                                                  "or the provider, OPENAI_BASE_URL, or name one in the config "
                                                  "file");
                }
                if (strncmp(c->base_url, "http://", 7) != 0 && strncmp(c->base_url, "https://", 8) != 0) {
                        model_client_free(c);
                        return corral_usage(err, "invalid base URL '%s': expected http://HOST[:PORT]/PATH or "
                                                 "https://...", s->base_url);
                }
                c->ops = &openai_backend_ops;
        }
        if (c->record_path && (c->record_fd = open_record(c->record_path, err)) < 0) {
                model_client_free(c);
                return -1;
        }
        if (c->ops == &replay_backend_ops && replay_backend_open(c, err) < 0) {
                model_client_free(c);
                return -1;
        }
        *ret = c;
        return 0;
}

void model_client_free(model_client *c)
{
        if (c == NULL)
                return;
        if (c->ops && c->ops->release)
                c->ops->release(c);
        if (c->record_fd >= 0)
                close(c->record_fd);
        if (c->api_key)
                explicit_bzero(c->api_key, strlen(c->api_key));
        for (size_t i = 0; c->secrets && c->secrets[i]; i++)
                free(c->secrets[i]);
        free(c->secrets);
        free(c->base_url);
        free(c->model);
        free(c->api_key);
        free(c->provider);
        free(c->record_path);
        free(c);
}

static void redact_error(model_client *c, corral_error **err)
{
        if (err == NULL || *err == NULL)
                return;
        char *m = redact_text((*err)->msg, c->s.secrets);
        if (m) {
                free((*err)->msg);
                (*err)->msg = m;
        }
}

static void record(model_client *c, const json_t *messages, const json_t *tools, const struct chat_reply *r,
                   const char *purpose)
{
        json_t *line = json_pack("{s:{s:s?, s:O, s:O?}, s:{s:O, s:s?, s:s?, s:{s:I, s:I, s:b}}}",
                                 "request", "model", c->model, "messages", messages, "tools", tools,
                                 "reply", "message", r->message, "finish_reason", r->finish_reason,
                                 "reasoning", r->reasoning, "usage", "prompt_tokens",
                                 (json_int_t)r->usage.prompt_tokens, "completion_tokens",
                                 (json_int_t)r->usage.completion_tokens, "reported", r->usage.reported);
        if (line == NULL)
                return;
        if (purpose)
                json_object_set_new(line, "purpose", json_string(purpose));
        redact_json(line, c->s.secrets);
        char *text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(line);
        if (text == NULL)
                return;
        size_t n = strlen(text);
        text[n] = '\n'; /* the NUL is replaced; the length below excludes it */
        write_all(c->record_fd, text, n + 1);
        free(text);
}

int model_client_record_run(model_client *c, const json_t *info)
{
        if (c == NULL || c->record_fd < 0 || info == NULL)
                return 0;
        json_t *line = json_pack("{s:O}", "run", info);
        if (line == NULL)
                return -1;
        redact_json(line, c->s.secrets);
        char *text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(line);
        if (text == NULL)
                return -1;
        size_t n = strlen(text);
        text[n] = '\n';
        int r = write_all(c->record_fd, text, n + 1);
        free(text);
        return r;
}

int model_client_list(model_client *c, json_t **ret_ids, corral_error **ret_err)
{
        *ret_ids = NULL;
        if (c->ops->list == NULL)
                return corral_usage(ret_err, "a %s model lists no models", c->ops->name);
        int r = c->ops->list(c, ret_ids, ret_err);
        redact_error(c, ret_err);
        return r;
}

bool model_client_is_replay(const model_client *c)
{
        return c && c->ops == &replay_backend_ops;
}

const json_t *model_client_replay_run(const model_client *c)
{
        return model_client_is_replay(c) ? replay_recorded_run(c) : NULL;
}

const json_t *model_client_replay_divergence(const model_client *c)
{
        return model_client_is_replay(c) ? replay_divergence(c) : NULL;
}

bool model_client_replay_has(const model_client *c, const char *purpose)
{
        return model_client_is_replay(c) && replay_has_purpose(c, purpose);
}

/* Text the model produced, for estimating completion tokens. */
static size_t reply_bytes(const struct chat_reply *r)
{
        size_t n = 0;
        json_t *content = json_object_get(r->message, "content"), *tc;
        if (json_is_string(content))
                n += json_string_length(content);
        size_t i;
        json_array_foreach(json_object_get(r->message, "tool_calls"), i, tc) {
                json_t *fn = json_object_get(tc, "function");
                n += json_string_length(json_object_get(fn, "arguments"));
                n += json_string_length(json_object_get(fn, "name"));
        }
        return n + (r->reasoning ? strlen(r->reasoning) : 0);
}

/* A 404: say which models the endpoint has, or what to check. */
static void explain_not_found(model_client *c, corral_error *err)
{
        json_t *ids = NULL;
        corral_error *e2 = NULL;
        cleanup_free char *names = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&names, &len);
        if (f == NULL)
                return;
        if (c->ops->list(c, &ids, &e2) < 0) {
                fputs("; check the base URL (OpenAI-compatible endpoints usually end in /v1) and the model", f);
                err->field = "base_url,model";
        } else if (json_array_size(ids) == 0) {
                fputs("; the endpoint lists no models", f);
        } else {
                size_t i;
                json_t *id;
                fputs("; the endpoint has: ", f);
                json_array_foreach(ids, i, id) {
                        if (i == 30) {
                                fprintf(f, ", ... (%zu in all)", json_array_size(ids));
                                break;
                        }
                        fprintf(f, "%s%s", i ? ", " : "", json_string_value(id));
                }
        }
        fclose(f);
        json_decref(ids);
        corral_error_free(e2);
        char *msg = NULL;
        if (names && asprintf(&msg, "%s%s", err->msg, names) >= 0) {
                free(err->msg);
                err->msg = msg;
        }
}

int model_chat(model_client *c, const json_t *messages, const json_t *tools, const struct model_hooks *hooks,
               struct chat_reply *ret, corral_error **err)
{
        memset(ret, 0, sizeof(*ret));
        if (model_cancelled(c))
                return corral_make_error(err, CORRAL_ERR_CANCELLED, 0, "the model request was cancelled");
        if (c->ops->chat(c, messages, tools, hooks, ret, err) < 0) {
                if (err && *err && (*err)->kind == CORRAL_ERR_MODEL_NOT_FOUND && c->ops->list)
                        explain_not_found(c, *err);
                redact_error(c, err);
                return -1;
        }
        if (!ret->usage.reported) {
                cleanup_free char *text = json_dumps(messages, JSON_COMPACT);
                ret->usage.prompt_tokens = model_estimate_tokens(text, text ? strlen(text) : 0);
                ret->usage.completion_tokens = model_estimate_tokens(NULL, reply_bytes(ret));
                c->usage.estimated = true;
        }
        c->usage.prompt_tokens += ret->usage.prompt_tokens;
        c->usage.completion_tokens += ret->usage.completion_tokens;
        if (c->record_fd >= 0)
                record(c, messages, tools, ret, hooks ? hooks->purpose : NULL);
        return 0;
}

const struct model_usage *model_client_usage(const model_client *c)
{
        return &c->usage;
}
