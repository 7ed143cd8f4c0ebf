/* e2b.c: E2B's control plane and code interpreter over corral serve's
 * sandboxes (e2b.h, docs/e2b.md).  server.c has checked the Host and the
 * Origin; the gate asks e2b_principal() who the caller is, then the rate
 * and the body's size are checked as for every request. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "e2b.h"

/* The one template served: Python with the data libraries, and bash. */
static const char *const templates[] = { "base", "code-interpreter-v1", "code-interpreter", "corral" };

/* ---- small parts ---- */

static const char *header(struct request *rq, const char *name)
{
        return http_lib.MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

static bool path_is(const char *path, const char *prefix, const char **ret_rest)
{
        size_t n = strlen(prefix);
        if (strncmp(path, prefix, n) != 0 || (path[n] != '\0' && path[n] != '/'))
                return false;
        *ret_rest = path + n;
        return true;
}

static void iso_time(double t, char out[40])
{
        struct tm tm;
        time_t sec = (time_t)t;
        strftime(out, 40, "%Y-%m-%dT%H:%M:%S", gmtime_r(&sec, &tm));
        snprintf(out + strlen(out), 40 - strlen(out), ".%06dZ", (int)((t - (double)sec) * 1e6));
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void make_uuid(char out[37])
{
        unsigned char b[16];
        if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
                memset(b, 0, sizeof(b)); /* never: getrandom on 16 bytes does not fail */
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
        snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                 b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static json_t *parse_json(struct request *rq, corral_error **ret_err)
{
        if (rq->len == 0)
                return json_object();
        json_error_t je;
        json_t *j = json_loadb(rq->body, rq->len, JSON_REJECT_DUPLICATES, &je);
        if (j == NULL)
                corral_usage(ret_err, "the body is not JSON: %s", je.text);
        else if (!json_is_object(j)) {
                json_decref(j);
                j = NULL;
                corral_usage(ret_err, "the body must be a JSON object");
        }
        return j;
}

static enum MHD_Result fail(struct request *rq, corral_error *err)
{
        enum MHD_Result r = reply_corral_error(rq, err);
        corral_error_free(err);
        return r;
}

static enum MHD_Result no_content(struct request *rq, unsigned status)
{
        return reply(rq, status, http_lib.MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT));
}

/* ---- the shared parts (e2b.h) ---- */

void e2b_sandbox_free(struct e2b_sandbox *e)
{
        if (e == NULL)
                return;
        while (e->contexts) {
                struct e2b_context *c = e->contexts;
                e->contexts = c->next;
                free(c->cwd);
                free(c);
        }
        while (e->commands) {
                struct e2b_command *c = e->commands;
                e->commands = c->next;
                json_decref(c->config);
                free(c->tag);
                free(c);
        }
        json_decref(e->env);
        explicit_bzero(e->token, sizeof(e->token));
        pthread_mutex_destroy(&e->lock);
        free(e);
}

int e2b_path(const char *path, char **ret_rel, corral_error **ret_err)
{
        const char *rest = path;
        if (path == NULL || path[0] == '\0')
                rest = "";
        else if (path[0] == '/' && !path_is(path, E2B_HOME, &rest) && !path_is(path, "/workspace", &rest))
                return corral_usage(ret_err,
                                    "'%s' is outside the sandbox's files: corral's file calls reach " E2B_HOME
                                    " (the workspace) only; use commands.run for other places",
                                    path);
        rest += strspn(rest, "/");
        *ret_rel = strdup(rest[0] ? rest : ".");
        return *ret_rel ? 0 : corral_fail(ret_err, ENOMEM, "cannot take the path");
}

char *e2b_shown_path(const char *rel)
{
        char *out = NULL;
        if (rel == NULL || rel[0] == '\0' || strcmp(rel, ".") == 0)
                return strdup(E2B_HOME);
        return asprintf(&out, E2B_HOME "/%s", rel) < 0 ? NULL : out;
}

char *e2b_shell_word(const char *text)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (f == NULL)
                return NULL;
        fputc('\'', f);
        for (; *text; text++)
                if (*text == '\'')
                        fputs("'\\''", f);
                else
                        fputc(*text, f);
        fputc('\'', f);
        return fclose(f) == 0 ? out : (free(out), NULL);
}

json_t *e2b_env(struct sandbox *sb, json_t *extra)
{
        json_t *env = json_object();
        if (env == NULL)
                return NULL;
        /* A copy: the sandbox's own values are never shared across threads. */
        json_t *own = sb->e2b && sb->e2b->env ? json_deep_copy(sb->e2b->env) : NULL;
        if (own)
                json_object_update(env, own);
        json_decref(own);
        json_object_set_new(env, "HOME", json_string(E2B_HOME));
        if (json_is_object(extra))
                json_object_update(env, extra);
        return env;
}

/* Check env as step_parse() does: names of letters, digits and _. */
static int env_check(json_t *env, const char *field, corral_error **ret_err)
{
        if (env == NULL || json_is_null(env))
                return 0;
        const char *name;
        json_t *value;
        bool ok = json_is_object(env) && json_object_size(env) <= 64;
        json_object_foreach(env, name, value) {
                ok = ok && json_is_string(value) && name[0] && strlen(name) <= 256 &&
                     strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == strlen(name) &&
                     json_string_length(value) <= 32768 && strlen(json_string_value(value)) == json_string_length(value);
        }
        if (!ok)
                return corral_usage_field(ret_err, field,
                                          "%s must be an object of at most 64 NAME: \"value\" pairs (names of "
                                          "letters, digits and _; values of at most 32 KiB)",
                                          field);
        return 0;
}

/* A step of the server's own (lim as given, code copied), waited for:
 * 0 with its result, or -1 with err. */
static int own_step(struct server *s, struct sandbox *sb, const char *code, const struct session_step_limits *lim,
                    json_t **ret_result, corral_error **ret_err)
{
        struct step_request sr = { .lim = *lim };
        sr.lim.cancel_fd = -1;
        sr.lim.timeout_s = 30;
        sr.code = strdup(code);
        if (sr.code == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot run a step");
        sr.len = strlen(sr.code);
        if (!step_begin(s, sb)) {
                step_request_release(&sr);
                return corral_make_error(ret_err, CORRAL_ERR_LIMIT, 0,
                                         "this token runs its most steps at once: wait for one to end");
        }
        struct step_ctx ctx = { 0 };
        int rc = step_run(s, sb, &sr, &ctx, ret_result, ret_err);
        step_end(s, sb);
        step_request_release(&sr); /* the code; lim's context and env are the caller's */
        return rc;
}

int e2b_bash(struct server *s, struct sandbox *sb, const char *code, json_t *env, bool background, json_t **ret_result,
             corral_error **ret_err)
{
        struct session_step_limits lim = { .language = "bash", .background = background, .env = env };
        return own_step(s, sb, code, &lim, ret_result, ret_err);
}

/* A step of our own in the sandbox (no output kept): 0 when it ran
 * without an error, else -1 with the error it raised. */
static int quiet_step(struct server *s, struct sandbox *sb, const char *code, const char *context, bool end_context,
                      corral_error **ret_err)
{
        struct session_step_limits lim = { .context = context, .end_context = end_context };
        json_t *result = NULL;
        int rc = own_step(s, sb, code, &lim, &result, ret_err);
        if (rc == 0 && strcmp(json_string_value(json_object_get(result, "status")) ?: "", "ok") != 0) {
                json_t *e = json_object_get(result, "error");
                rc = corral_usage(ret_err, "%s: %s", json_string_value(json_object_get(e, "name")) ?: "error",
                                  json_string_value(json_object_get(e, "value")) ?: "the step failed");
        }
        json_decref(result);
        return rc;
}

/* ---- the gate ---- */

bool e2b_claims(struct request *rq, const char *path)
{
        const char *rest;
        return header(rq, "E2b-Sandbox-Id") != NULL || path_is(path, "/sandboxes", &rest) ||
               path_is(path, "/v2/sandboxes", &rest);
}

int e2b_principal(struct request *rq, const char *path, const char **ret_why)
{
        struct server *s = rq->s;
        const char *id = header(rq, "E2b-Sandbox-Id");
        rq->shape = strncmp(path, "/filesystem.", 12) == 0 || strncmp(path, "/process.", 9) == 0 ? REPLY_CONNECT
                                                                                                  : REPLY_E2B;
        if (id == NULL) {
                const char *key = header(rq, "X-API-KEY");
                *ret_why = key ? "the API key is not one of this server's tokens"
                               : "an API key is needed (E2B_API_KEY: one of corral serve's tokens)";
                return key ? auth_check(s->auth, key, strlen(key)) : -1;
        }
        /* In the sandbox: the token create gave, in either header the SDK
         * sends (/contexts carries only the traffic one). */
        const char *token = header(rq, "X-Access-Token");
        if (token == NULL)
                token = header(rq, "E2B-Traffic-Access-Token");
        struct sandbox *found = NULL;
        pthread_mutex_lock(&s->lock);
        for (struct sandbox *sb = s->sandboxes; sb; sb = sb->next)
                if (sb->e2b && strcmp(sb->id, id) == 0) {
                        found = sb;
                        break;
                }
        bool ok = found && token && auth_equal(found->e2b->token, strlen(found->e2b->token), token, strlen(token));
        if (ok)
                found->refs++;
        pthread_mutex_unlock(&s->lock);
        if (found == NULL) {
                *ret_why = "gone";
                return -2;
        }
        if (!ok) {
                *ret_why = token ? "the sandbox's access token is not right"
                                 : "the sandbox's access token is needed (X-Access-Token)";
                return -1;
        }
        rq->e2b_sb = found;
        return found->owner;
}

/* ---- the control plane ---- */

static json_t *describe(struct server *s, struct sandbox *sb, bool with_tokens)
{
        struct e2b_sandbox *e = sb->e2b;
        char started[40], end[40];
        pthread_mutex_lock(&e->lock);
        double end_at = e->end_at;
        pthread_mutex_unlock(&e->lock);
        iso_time(e->started, started);
        iso_time(end_at, end);
        json_t *limits = sb->limits;
        double memory = json_number_value(json_object_get(limits, "memory"));
        double cpus = json_number_value(json_object_get(limits, "cpus"));
        double disk = json_number_value(json_object_get(limits, "disk"));
        json_t *d = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:i,s:i,s:i,s:n}", "sandboxID", sb->id, "templateID",
                              e->template_id, "alias", e->template_id, "clientID", "corral", "envdVersion",
                              E2B_ENVD_VERSION, "startedAt", started, "endAt", end, "metadata", json_deep_copy(sb->metadata),
                              "cpuCount", cpus > 0 ? (int)ceil(cpus) : 1, "memoryMB", (int)(memory / 1048576),
                              "diskSizeMB", (int)(disk / 1048576), "domain");
        pthread_mutex_lock(&s->lock);
        bool paused = sb->paused;
        pthread_mutex_unlock(&s->lock);
        json_object_set_new(d, "state", json_string(paused ? "paused" : "running"));
        if (with_tokens) {
                json_object_set_new(d, "envdAccessToken", json_string(e->token));
                json_object_set_new(d, "trafficAccessToken", json_string(e->token));
        }
        return d;
}

/* The sandbox's E2B timeout: it ends seconds from now. */
static int set_timeout(struct server *s, struct sandbox *sb, double seconds, corral_error **ret_err)
{
        double granted = 0;
        if (session_host_set_expiry(s->host, sb->id, seconds, &granted, ret_err) < 0)
                return -1;
        pthread_mutex_lock(&sb->e2b->lock);
        sb->e2b->end_at = now_s() + granted;
        pthread_mutex_unlock(&sb->e2b->lock);
        sandboxes_expiry_moved(s);
        return 0;
}

static int timeout_of(json_t *body, double def, double max, double *ret, corral_error **ret_err)
{
        json_t *t = json_object_get(body, "timeout");
        *ret = def;
        if (t == NULL || json_is_null(t))
                return 0;
        if (!json_is_number(t) || !(json_number_value(t) > 0) || json_number_value(t) > max)
                return corral_usage_field(ret_err, "timeout", "timeout must be a number of seconds above 0 and at "
                                                              "most %g (this server's longest sandbox life)",
                                          max);
        *ret = json_number_value(t);
        return 0;
}

/* What E2B offers and corral does not: refused, never silently dropped. */
static int refuse_unsupported(json_t *body, corral_error **ret_err)
{
        if (json_is_true(json_object_get(body, "allow_internet_access")))
                return corral_usage_field(ret_err, "allow_internet_access",
                                          "corral's sandboxes have no network: allowInternetAccess cannot be "
                                          "granted (leave it unset or false)");
        static const char *const keys[] = { "network", "volumeMounts", "mcp", "iam" };
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
                json_t *v = json_object_get(body, keys[i]);
                if (v && !json_is_null(v) && !(json_is_object(v) && json_object_size(v) == 0) &&
                    !(json_is_array(v) && json_array_size(v) == 0))
                        return corral_usage_field(ret_err, keys[i], "corral does not support E2B's '%s' (docs/e2b.md)",
                                                  keys[i]);
        }
        if (json_is_true(json_object_get(body, "autoPause")))
                return corral_usage_field(ret_err, "autoPause", "corral kills a sandbox at its timeout; it does not "
                                                                "pause it (leave onTimeout unset or 'kill')");
        return 0;
}

static enum MHD_Result create(struct request *rq)
{
        struct server *s = rq->s;
        corral_error *err = NULL;
        json_t *body = parse_json(rq, &err);
        if (body == NULL)
                return fail(rq, err);
        const char *template_id = json_string_value(json_object_get(body, "templateID"));
        bool known = template_id == NULL;
        for (size_t i = 0; template_id && i < ARRAY_SIZE(templates); i++)
                known = known || strcmp(template_id, templates[i]) == 0;
        json_t *meta = json_object_get(body, "metadata");
        json_t *env = json_object_get(body, "envVars");
        double max_life = s->cfg.max_lifetime_s > 0 ? s->cfg.max_lifetime_s : 86400, timeout;
        if (!known || (template_id && strlen(template_id) > 64))
                corral_usage_field(&err, "templateID",
                                   "template '%s' is not served here: corral serves one, Python with numpy, "
                                   "pandas, matplotlib and scipy, and bash (ask for 'base' or "
                                   "'code-interpreter-v1', or leave it out)",
                                   template_id);
        else if (meta && !json_is_null(meta) && !json_is_object(meta))
                corral_usage_field(&err, "metadata", "metadata must be an object of strings");
        if (err || env_check(env, "envVars", &err) < 0 || refuse_unsupported(body, &err) < 0 ||
            timeout_of(body, 300, max_life, &timeout, &err) < 0) {
                json_decref(body);
                return fail(rq, err);
        }
        /* A corral sandbox living as long as this server allows; its E2B
         * timeout is then set on the session, so that setTimeout can
         * lengthen it. */
        json_t *spec = json_pack("{s:f,s:f}", "lifetime", max_life, "idle_timeout", max_life);
        if (spec && json_is_object(meta))
                json_object_set(spec, "metadata", meta);
        json_t *made = NULL;
        struct e2b_sandbox *e = calloc(1, sizeof(*e));
        if (spec == NULL || e == NULL || auth_random_hex(e->token, 32) < 0) {
                free(e);
                json_decref(spec);
                json_decref(body);
                corral_fail(&err, ENOMEM, "cannot make a sandbox");
                return fail(rq, err);
        }
        pthread_mutex_init(&e->lock, NULL);
        snprintf(e->template_id, sizeof(e->template_id), "%s", template_id ? template_id : "base");
        e->env = json_is_object(env) ? json_deep_copy(env) : NULL;
        e->started = now_s();
        json_decref(body);
        int rc = sandbox_create(s, rq->who, spec, &made, &err);
        json_decref(spec);
        if (rc < 0) {
                e2b_sandbox_free(e);
                bool full = err && err->field && strcmp(err->field, "max_sandboxes") == 0;
                if (full) {
                        enum MHD_Result r = reply_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "limit", "%s", err->msg);
                        corral_error_free(err);
                        return r;
                }
                return fail(rq, err);
        }
        unsigned status;
        struct sandbox *sb = sandbox_get(s, rq->who, json_string_value(json_object_get(made, "id")), &status);
        json_decref(made);
        if (sb == NULL) {
                e2b_sandbox_free(e);
                return reply_error(rq, 500, "internal", "the sandbox ended as it was made");
        }
        pthread_mutex_lock(&s->lock);
        sb->e2b = e;
        pthread_mutex_unlock(&s->lock);
        if (set_timeout(s, sb, timeout, &err) < 0) {
                sandbox_delete(s, sb, NULL);
                sandbox_put(s, sb);
                return fail(rq, err);
        }
        json_t *d = describe(s, sb, true);
        sandbox_put(s, sb);
        return reply_json(rq, MHD_HTTP_CREATED, d);
}

static enum MHD_Result control(struct request *rq, const char *method, const char *path)
{
        struct server *s = rq->s;
        corral_error *err = NULL;
        const char *rest = NULL;
        bool v2 = path_is(path, "/v2/sandboxes", &rest);
        if (!v2)
                path_is(path, "/sandboxes", &rest);
        if (rest[0] == '\0') {
                if (strcmp(method, "POST") == 0)
                        return create(rq);
                if (strcmp(method, "GET") == 0) {
                        json_t *all = json_array();
                        json_t *mine = sandbox_list(s, rq->who);
                        size_t i;
                        json_t *m;
                        json_array_foreach(mine, i, m) {
                                unsigned st;
                                struct sandbox *sb = sandbox_get(s, rq->who, json_string_value(json_object_get(m, "id")),
                                                                 &st);
                                if (sb && sb->e2b)
                                        json_array_append_new(all, describe(s, sb, false));
                                if (sb)
                                        sandbox_put(s, sb);
                        }
                        json_decref(mine);
                        return reply_json(rq, MHD_HTTP_OK, all);
                }
                return reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage", "sandboxes take GET and POST");
        }
        char id[SESSION_ID_LEN + 1];
        size_t n = strcspn(rest + 1, "/");
        if (n != SESSION_ID_LEN)
                return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no sandbox '%.*s'", (int)n, rest + 1);
        memcpy(id, rest + 1, n);
        id[n] = '\0';
        const char *tail = rest + 1 + n;
        unsigned status;
        struct sandbox *sb = session_id_valid(id) ? sandbox_get(s, rq->who, id, &status) : NULL;
        if (sb && sb->e2b == NULL) {
                sandbox_put(s, sb);
                sb = NULL;
        }
        if (sb == NULL)
                return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "sandbox %s not found", id);
        enum MHD_Result r;
        if (tail[0] == '\0' && strcmp(method, "GET") == 0) {
                r = reply_json(rq, MHD_HTTP_OK, describe(s, sb, false));
        } else if (tail[0] == '\0' && strcmp(method, "DELETE") == 0) {
                r = sandbox_delete(s, sb, &err) < 0 ? fail(rq, err) : no_content(rq, MHD_HTTP_NO_CONTENT);
        } else if ((strcmp(tail, "/timeout") == 0 || strcmp(tail, "/connect") == 0) && strcmp(method, "POST") == 0) {
                json_t *body = parse_json(rq, &err);
                double max_life = s->cfg.max_lifetime_s > 0 ? s->cfg.max_lifetime_s : 86400, t;
                bool connect = strcmp(tail, "/connect") == 0;
                if (body == NULL || timeout_of(body, connect ? 0 : 300, max_life, &t, &err) < 0 ||
                    (t > 0 && set_timeout(s, sb, t, &err) < 0))
                        r = fail(rq, err);
                else if (connect)
                        r = reply_json(rq, MHD_HTTP_OK, describe(s, sb, true));
                else
                        r = no_content(rq, MHD_HTTP_NO_CONTENT);
                json_decref(body);
        } else {
                r = reply_error(rq, MHD_HTTP_NOT_IMPLEMENTED, "usage",
                                "corral does not serve %s %s (docs/e2b.md lists what is supported)", method, path);
        }
        sandbox_put(s, sb);
        return r;
}

/* text as a JSON string, which is also a Python string literal. */
static char *literal(const char *text)
{
        json_t *j = json_string(text);
        char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
        json_decref(j);
        return out;
}

/* ---- the code interpreter: /execute ---- */

struct execution {
        struct server *s;
        struct sandbox *sb;
        struct step_request sr;
        struct step_ctx ctx;
        unsigned count;
        struct body_stream *bs;
};

static void event(struct execution *x, json_t *ev)
{
        char *text = ev ? json_dumps(ev, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
        json_decref(ev);
        if (text == NULL)
                return;
        size_t n = strlen(text);
        text[n] = '\n'; /* over the NUL: the length is known */
        body_stream_write(x->bs, text, n + 1);
        free(text);
}

static void execution_output(void *ud, int stream, const char *data, size_t len)
{
        struct execution *x = ud;
        size_t clean_len;
        cleanup_free char *clean = utf8_sanitize(data, len, &clean_len);
        char when[40];
        iso_time(now_s(), when);
        if (clean)
                event(x, json_pack("{s:s,s:s%,s:s}", "type", stream == 2 ? "stderr" : "stdout", "text", clean, clean_len,
                                   "timestamp", when));
}

/* A value's text as a notebook shows a str: one pair of quotes less. */
static json_t *plain_text(const char *t)
{
        size_t n = strlen(t);
        if (n >= 2 && (t[0] == '\'' || t[0] == '"') && t[n - 1] == t[0])
                return json_stringn(t + 1, n - 2);
        return json_string(t);
}

static void execution_run(struct body_stream *bs, void *ud)
{
        struct execution *x = ud;
        x->bs = bs;
        event(x, json_pack("{s:s,s:i}", "type", "number_of_executions", "execution_count", (int)x->count));
        json_t *result = NULL;
        corral_error *err = NULL;
        if (step_run(x->s, x->sb, &x->sr, &x->ctx, &result, &err) < 0) {
                event(x, json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", "SandboxError", "value",
                                   err ? err->msg : "the step failed", "traceback", ""));
                corral_error_free(err);
        } else {
                size_t i;
                json_t *f;
                json_array_foreach(json_object_get(result, "figures"), i, f) {
                        json_t *png = json_object_get(f, "png");
                        if (!json_is_string(png))
                                continue;
                        json_t *ev = json_pack("{s:s,s:O,s:b}", "type", "result", "png", png, "is_main_result", 0);
                        json_t *shown = json_object_get(f, "repr");
                        json_object_set_new(ev, "text", json_is_string(shown) ? json_incref(shown)
                                                                               : json_string("<Figure>"));
                        event(x, ev);
                }
                json_t *value = json_object_get(result, "value");
                if (json_is_object(value)) {
                        json_t *ev = json_pack("{s:s,s:o,s:b}", "type", "result", "text",
                                               plain_text(json_string_value(json_object_get(value, "text")) ?: ""),
                                               "is_main_result", 1);
                        static const char *const rich[] = { "html", "markdown", "json" };
                        for (size_t k = 0; ev && k < ARRAY_SIZE(rich); k++)
                                if (json_object_get(value, rich[k]))
                                        json_object_set(ev, rich[k], json_object_get(value, rich[k]));
                        event(x, ev);
                }
                const char *status = json_string_value(json_object_get(result, "status")) ?: "";
                json_t *e = json_object_get(result, "error");
                if (strcmp(status, "ok") != 0) {
                        const char *name = json_string_value(json_object_get(e, "name"));
                        const char *reason = json_string_value(json_object_get(result, "reason"));
                        event(x, json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name",
                                           name && *name ? name
                                           : strcmp(status, "timeout") == 0 ? "TimeoutError"
                                                                             : "SandboxError",
                                           "value",
                                           json_string_value(json_object_get(e, "value")) ?: reason ? reason : status,
                                           "traceback", json_string_value(json_object_get(e, "traceback")) ?: ""));
                }
                json_decref(result);
        }
        step_end(x->s, x->sb);
        event(x, json_pack("{s:s}", "type", "end_of_execution"));
}

static void execution_hangup(void *ud)
{
        struct execution *x = ud;
        sandbox_interrupt(x->sb);
}

static void execution_release(void *ud)
{
        struct execution *x = ud;
        if (x->bs == NULL)
                step_end(x->s, x->sb); /* it never ran */
        step_request_release(&x->sr);
        sandbox_put(x->s, x->sb);
        free(x);
}

static struct e2b_context *find_context(struct e2b_sandbox *e, const char *id)
{
        for (struct e2b_context *c = e->contexts; c; c = c->next)
                if (strcmp(c->id, id) == 0)
                        return c;
        return NULL;
}

static enum MHD_Result execute(struct request *rq, struct sandbox *sb)
{
        struct server *s = rq->s;
        corral_error *err = NULL;
        json_t *body = parse_json(rq, &err);
        if (body == NULL)
                return fail(rq, err);
        json_t *code = json_object_get(body, "code");
        const char *context_id = json_string_value(json_object_get(body, "context_id"));
        const char *language = json_string_value(json_object_get(body, "language"));
        json_t *env = json_object_get(body, "env_vars");
        if (!json_is_string(code))
                corral_usage_field(&err, "code", "code must be a string");
        else if (context_id && language)
                corral_usage(&err, "give context_id or language, not both");
        else if (language && strcmp(language, "python") != 0 && strcmp(language, "bash") != 0)
                corral_usage_field(&err, "language", "corral runs python and bash, not '%s'", language);
        if (err || env_check(env, "env_vars", &err) < 0) {
                json_decref(body);
                return fail(rq, err);
        }
        struct execution *x = calloc(1, sizeof(*x));
        if (x == NULL) {
                json_decref(body);
                return MHD_NO;
        }
        x->s = s;
        x->sb = sb;
        x->ctx.out = execution_output;
        x->ctx.ud = x;
        x->sr.lim.cancel_fd = -1;
        /* No time limit of E2B's: a client that gives up hangs up, which
         * interrupts the step. */
        x->sr.lim.timeout_s = 86400;
        x->sr.lim.figure_png = true;
        x->sr.lim.ipython = true;
        x->sr.lim.language = language && strcmp(language, "bash") == 0 ? "bash" : NULL;
        struct e2b_sandbox *e = sb->e2b;
        pthread_mutex_lock(&e->lock);
        struct e2b_context *c = context_id ? find_context(e, context_id) : NULL;
        if (c) {
                x->count = ++c->count;
                if (c->bash)
                        x->sr.lim.language = "bash";
                else
                        x->sr.context = strdup(c->name);
        } else if (context_id == NULL) {
                x->count = ++e->count; /* an unknown context's call runs nothing: no count */
        }
        const char *cwd = c && c->bash ? c->cwd : NULL;
        cleanup_free char *cd = cwd ? e2b_shell_word(cwd) : NULL;
        pthread_mutex_unlock(&e->lock);
        if (context_id && c == NULL) {
                /* What the interpreter answers for a context it does not know. */
                enum MHD_Result r = reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "Context %s not found",
                                                context_id);
                free(x);
                json_decref(body);
                return r;
        }
        x->sr.lim.context = x->sr.context;
        const char *text = json_string_value(code);
        if (cd ? asprintf(&x->sr.code, "cd %s || exit 1\n%s", cd, text) < 0 : (x->sr.code = strdup(text)) == NULL)
                x->sr.code = NULL;
        x->sr.len = x->sr.code ? strlen(x->sr.code) : 0;
        x->sr.env = e2b_env(sb, env);
        x->sr.lim.env = x->sr.env;
        json_decref(body);
        if (x->sr.code == NULL || x->sr.env == NULL) {
                step_request_release(&x->sr);
                free(x);
                return MHD_NO;
        }
        if (!step_begin(s, sb)) {
                step_request_release(&x->sr);
                free(x);
                count_rejected(s, "steps");
                return reply_error(rq, MHD_HTTP_TOO_MANY_REQUESTS, "limit",
                                   "this token runs its most steps at once (%u): wait for one to end",
                                   s->cfg.max_execs_per_token);
        }
        pthread_mutex_lock(&s->lock);
        sb->refs++; /* the stream's own: the request's goes with the request */
        pthread_mutex_unlock(&s->lock);
        static const struct body_stream_hooks hooks = { .run = execution_run, .hangup = execution_hangup,
                                                        .release = execution_release };
        return body_stream_reply(rq, MHD_HTTP_OK, "application/x-ndjson", &hooks, x);
}

/* ---- the code interpreter: /contexts ---- */

static json_t *context_json(const struct e2b_context *c)
{
        return json_pack("{s:s,s:s,s:s}", "id", c->id, "language", c->bash ? "bash" : "python", "cwd", c->cwd);
}

/* The context's process made anew in cwd (python), or nothing (bash). */
static int context_start(struct server *s, struct sandbox *sb, struct e2b_context *c, corral_error **ret_err)
{
        if (c->bash)
                return 0;
        cleanup_free char *lit = literal(c->cwd);
        cleanup_free char *code = NULL;
        if (lit == NULL || asprintf(&code, "__import__('os').chdir(%s)", lit) < 0)
                return corral_fail(ret_err, ENOMEM, "cannot make the context");
        return quiet_step(s, sb, code, c->name, false, ret_err);
}

static enum MHD_Result contexts(struct request *rq, const char *method, const char *rest, struct sandbox *sb)
{
        struct server *s = rq->s;
        struct e2b_sandbox *e = sb->e2b;
        corral_error *err = NULL;
        if (rest[0] == '\0' && strcmp(method, "GET") == 0) {
                json_t *all = json_array();
                pthread_mutex_lock(&e->lock);
                for (struct e2b_context *c = e->contexts; c; c = c->next)
                        json_array_append_new(all, context_json(c));
                pthread_mutex_unlock(&e->lock);
                return reply_json(rq, MHD_HTTP_OK, all);
        }
        if (rest[0] == '\0' && strcmp(method, "POST") == 0) {
                json_t *body = parse_json(rq, &err);
                if (body == NULL)
                        return fail(rq, err);
                const char *language = json_string_value(json_object_get(body, "language"));
                const char *cwd = json_string_value(json_object_get(body, "cwd"));
                if (language && strcmp(language, "python") != 0 && strcmp(language, "bash") != 0) {
                        json_decref(body);
                        return reply_error(rq, MHD_HTTP_BAD_REQUEST, "usage",
                                           "corral's contexts run python and bash, not '%s'", language);
                }
                struct e2b_context *c = calloc(1, sizeof(*c));
                if (c == NULL || (c->cwd = strdup(cwd && cwd[0] == '/' ? cwd : E2B_HOME)) == NULL) {
                        free(c);
                        json_decref(body);
                        return MHD_NO;
                }
                c->bash = language && strcmp(language, "bash") == 0;
                json_decref(body);
                make_uuid(c->id);
                pthread_mutex_lock(&e->lock);
                snprintf(c->name, sizeof(c->name), "e2b-%u", ++e->next_context);
                pthread_mutex_unlock(&e->lock);
                if (context_start(s, sb, c, &err) < 0) {
                        free(c->cwd);
                        free(c);
                        return fail(rq, err);
                }
                pthread_mutex_lock(&e->lock);
                c->next = e->contexts;
                e->contexts = c;
                json_t *out = context_json(c);
                pthread_mutex_unlock(&e->lock);
                return reply_json(rq, MHD_HTTP_OK, out);
        }
        /* /ID or /ID/restart */
        char id[37];
        size_t n = strcspn(rest + 1, "/");
        snprintf(id, sizeof(id), "%.*s", (int)(n < 36 ? n : 36), rest + 1);
        const char *tail = rest + 1 + n;
        bool restart = strcmp(tail, "/restart") == 0 && strcmp(method, "POST") == 0;
        bool remove = tail[0] == '\0' && strcmp(method, "DELETE") == 0;
        if (!restart && !remove)
                return reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage",
                                   "a context takes DELETE, and POST .../restart");
        pthread_mutex_lock(&e->lock);
        struct e2b_context **p = &e->contexts;
        while (*p && strcmp((*p)->id, id) != 0)
                p = &(*p)->next;
        struct e2b_context *c = *p;
        if (c && remove)
                *p = c->next;
        char name[sizeof(c->name)] = "";
        if (c)
                memcpy(name, c->name, sizeof(name));
        pthread_mutex_unlock(&e->lock);
        if (c == NULL)
                return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found", "Context %s not found", id);
        int rc = c->bash ? 0 : quiet_step(s, sb, "", name, true, &err);
        if (rc == 0 && restart)
                rc = context_start(s, sb, c, &err);
        if (remove) {
                free(c->cwd);
                free(c);
        }
        return rc < 0 ? fail(rq, err) : no_content(rq, MHD_HTTP_OK);
}

/* ---- the table ---- */

static enum MHD_Result in_sandbox(struct request *rq, const char *method, const char *path, struct sandbox *sb)
{
        const char *port = header(rq, "E2b-Sandbox-Port");
        bool interpreter = port && strcmp(port, "49999") == 0;
        const char *rest;
        if (strcmp(path, "/health") == 0) {
                if (!interpreter)
                        return no_content(rq, MHD_HTTP_NO_CONTENT);
                struct MHD_Response *r = http_lib.MHD_create_response_from_buffer(4, "\"OK\"", MHD_RESPMEM_PERSISTENT);
                if (r)
                        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
                return reply(rq, MHD_HTTP_OK, r);
        }
        if (strcmp(path, "/execute") == 0) {
                if (strcmp(method, "POST") != 0)
                        return reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage", "/execute takes POST");
                return execute(rq, sb);
        }
        if (path_is(path, "/contexts", &rest))
                return contexts(rq, method, rest, sb);
        if (strcmp(path, "/files") == 0)
                return e2b_files(rq, method, sb);
        if (strncmp(path, "/filesystem.Filesystem/", 23) == 0 || strncmp(path, "/process.Process/", 17) == 0) {
                if (strcmp(method, "POST") != 0)
                        return reply_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "usage", "Connect calls take POST");
                return e2b_connect(rq, path, sb);
        }
        return reply_error(rq, MHD_HTTP_NOT_FOUND, "not_found",
                           "corral does not serve %s %s in a sandbox (docs/e2b.md lists what is supported)", method,
                           path);
}

enum MHD_Result route_e2b(struct request *rq, const char *method, const char *path)
{
        struct sandbox *sb = rq->e2b_sb;
        if (sb == NULL)
                return control(rq, method, path);
        corral_error *err = NULL;
        if (sandbox_live(rq->s, sb, &err) < 0)
                return fail(rq, err);
        return in_sandbox(rq, method, path, sb);
}
