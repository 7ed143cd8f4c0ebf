/* openai.c: the OpenAI-compatible HTTP backend (POST {base}/chat/completions).
 *
 * One request per chat turn over libcurl, streamed (SSE, assembled by
 * chat_stream) or not.  What can go wrong is sorted here, once, into the
 * error kinds of corral/error.h:
 *   - connection failures, resets, timeouts, 408/409/429/5xx: retried with
 *     exponential backoff (Retry-After / retry-after-ms honoured, capped),
 *     then CORRAL_ERR_MODEL_UNREACHABLE (or the last HTTP error);
 *   - 401/403: MODEL_AUTH;  404: MODEL_NOT_FOUND, naming the models the
 *     endpoint lists;  context-length errors: MODEL_CONTEXT;  an endpoint
 *     that rejects "tools": MODEL_NO_TOOLS (the agent falls back to text);
 *     one that rejects image parts: MODEL_NO_IMAGES (the agent drops them);
 *   - anything else: MODEL_REFUSED with the endpoint's own message.
 * Redirects are not followed (the Authorization header must not travel),
 * only http and https are allowed, and every body is capped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "curl-dl.h"
#include "model-internal.h"
#include "sse.h"

#define MAX_ERROR_BODY (1u << 20)
#define MAX_BODY (CHAT_MAX_REPLY_BYTES * 2)

/* One HTTP exchange in progress. */
struct exchange {
        model_client *c;
        const struct curl_api *api;
        CURL *h;
        const struct model_hooks *hooks;
        bool decided;            /* the response's kind is known */
        bool streaming;          /* 200 + text/event-stream */
        long status;
        struct capbuf body;      /* non-streamed body, or an error body */
        struct sse_parser sse;
        struct chat_stream stream;
        size_t content_seen;     /* content bytes already passed to on_content */
        corral_error *stream_err;
        double retry_after_s;    /* from the headers, < 0 when absent */
        bool too_big;            /* a 200 body past MAX_BODY: reading stopped */
};

static int on_sse_event(void *ud, const char *event, const char *data, size_t len)
{
        struct exchange *x = ud;
        (void)event;
        if (chat_stream_add(&x->stream, data, len, &x->stream_err) < 0)
                return -1;
        if (x->hooks && x->hooks->on_content && x->stream.content.len > x->content_seen) {
                x->hooks->on_content(x->hooks->userdata, x->stream.content.data + x->content_seen,
                                     x->stream.content.len - x->content_seen);
                x->content_seen = x->stream.content.len;
        }
        return 0;
}

static void decide(struct exchange *x)
{
        if (x->decided)
                return;
        x->decided = true;
        x->api->easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
        char *ct = NULL;
        x->api->easy_getinfo(x->h, CURLINFO_CONTENT_TYPE, &ct);
        x->streaming = x->status == 200 && ct && strncasecmp(ct, "text/event-stream", 17) == 0;
        x->body.cap = x->status == 200 ? MAX_BODY : MAX_ERROR_BODY;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
        struct exchange *x = ud;
        size_t len = size * nmemb;
        decide(x);
        if (x->streaming)
                return sse_parser_feed(&x->sse, data, len, &x->stream_err) < 0 ? 0 : len;
        if (capbuf_append(&x->body, data, len) == (size_t)-1)
                return 0;
        /* A success body past the cap cannot be parsed: stop reading. */
        if (x->body.truncated && x->status == 200) {
                x->too_big = true;
                return 0;
        }
        return len;
}

/* Retry-After: seconds or an HTTP date; OpenAI also sends retry-after-ms. */
static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
        struct exchange *x = ud;
        size_t len = size * nmemb;
        char line[256];
        if (len >= sizeof(line))
                return len;
        memcpy(line, data, len);
        line[len] = '\0';
        line[strcspn(line, "\r\n")] = '\0';
        char *value = strchr(line, ':');
        if (value == NULL)
                return len;
        *value++ = '\0';
        value += strspn(value, " \t");
        if (strcasecmp(line, "retry-after-ms") == 0) {
                char *end;
                double ms = strtod(value, &end);
                if (end != value && ms >= 0 && isfinite(ms))
                        x->retry_after_s = ms / 1000;
        } else if (strcasecmp(line, "retry-after") == 0 && x->retry_after_s < 0) {
                char *end;
                double s = strtod(value, &end);
                struct tm tm = { 0 };
                if (end != value && *end == '\0' && s >= 0 && isfinite(s)) {
                        x->retry_after_s = s;
                } else if (strptime(value, "%a, %d %b %Y %H:%M:%S GMT", &tm)) {
                        double d = difftime(timegm(&tm), time(NULL));
                        x->retry_after_s = d > 0 ? d : 0;
                }
        }
        return len;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
        struct exchange *x = ud;
        return model_cancelled(x->c) ? 1 : 0;
}

static char *endpoint_url(const model_client *c, const char *path)
{
        size_t n = strlen(c->base_url);
        while (n > 0 && c->base_url[n - 1] == '/')
                n--;
        char *url = NULL;
        if (asprintf(&url, "%.*s%s", (int)n, c->base_url, path) < 0)
                return NULL;
        return url;
}

static struct curl_slist *make_headers(const model_client *c, const struct curl_api *api, bool stream,
                                       const char *purpose)
{
        struct curl_slist *h = NULL, *t;
        if ((t = api->slist_append(h, "Content-Type: application/json")) == NULL)
                goto fail;
        h = t;
        if ((t = api->slist_append(h, stream ? "Accept: text/event-stream" : "Accept: application/json")) == NULL)
                goto fail;
        h = t;
        /* curl sends "Expect: 100-continue" for large bodies; some servers stall on it. */
        if ((t = api->slist_append(h, "Expect:")) == NULL)
                goto fail;
        h = t;
        /* A mode's side call says so (model.h): endpoints ignore the
         * header; a scripted test server answers by it. */
        if (purpose) {
                char line[64];
                snprintf(line, sizeof(line), "X-Corral-Purpose: %.40s", purpose);
                if ((t = api->slist_append(h, line)) == NULL)
                        goto fail;
                h = t;
        }
        if (c->api_key && *c->api_key) {
                cleanup_free char *auth = NULL;
                if (asprintf(&auth, "Authorization: Bearer %s", c->api_key) < 0)
                        goto fail;
                t = api->slist_append(h, auth);
                explicit_bzero(auth, strlen(auth));
                if (t == NULL)
                        goto fail;
                h = t;
        }
        return h;
fail:
        api->slist_free_all(h);
        return NULL;
}

static void setup_common(CURL *h, const struct curl_api *api, const model_client *c, struct exchange *x)
{
        api->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        api->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        api->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        api->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->s.connect_timeout_s * 1000));
        api->easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(c->s.request_timeout_s * 1000));
        api->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        api->easy_setopt(h, CURLOPT_WRITEDATA, x);
        api->easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        api->easy_setopt(h, CURLOPT_HEADERDATA, x);
        api->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        api->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        api->easy_setopt(h, CURLOPT_XFERINFODATA, x);
        api->easy_setopt(h, CURLOPT_USERAGENT, "corral/" CORRAL_VERSION_STRING);
        api->easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
}

static void exchange_release(struct exchange *x)
{
        if (x->h)
                x->api->easy_cleanup(x->h);
        capbuf_release(&x->body);
        sse_parser_release(&x->sse);
        chat_stream_release(&x->stream);
        corral_error_free(x->stream_err);
        memset(x, 0, sizeof(*x));
}

/* Text that means "this endpoint or model cannot do tool calls". */
static bool says_no_tools(const char *msg)
{
        static const char *const hints[] = {
                "does not support tools", /* Ollama: "registry.ollama.ai/library/x does not support tools" */
                "--jinja",                /* llama.cpp: "tools param requires --jinja flag" */
                "enable-auto-tool-choice", /* vLLM: "auto" tool choice requires --enable-auto-tool-choice */
                "tool-call-parser",
                "tools are not supported",
                "tool use is not supported",
                "does not support function calling",
                "unrecognized request argument supplied: tools",
        };
        for (size_t i = 0; msg && i < ARRAY_SIZE(hints); i++)
                if (strcasestr(msg, hints[i]))
                        return true;
        return false;
}

/* Text that means "this endpoint or model takes no images (or not that
 * many)": OpenAI's "image_url is only supported by certain models",
 * Ollama's "this model does not support image input", llama.cpp's (HTTP
 * 500) "image input is not supported - hint: ... mmproj", vLLM's "At most
 * 0 image(s) may be provided in one prompt", gateways' "Unsupported
 * content part type ...: image_url" (docs/providers.md). */
static bool says_no_images(const char *msg)
{
        static const char *const hints[] = {
                "image_url is only supported", "does not support image", "image input is not supported",
                "image(s) may be provided", "not a multimodal model", "images are not supported",
                "image input not supported", "does not support vision", "no endpoints found that support image",
                "only 'text' content type is supported",
        };
        for (size_t i = 0; msg && i < ARRAY_SIZE(hints); i++)
                if (strcasestr(msg, hints[i]))
                        return true;
        return msg && strcasestr(msg, "image") && (strcasestr(msg, "unsupported") || strcasestr(msg, "not supported"));
}

static bool says_context(const char *msg)
{
        static const char *const hints[] = {
                "context_length_exceeded", "maximum context length", "context length", "context window",
                "exceeds the available context", "too many tokens", "prompt is too long",
        };
        for (size_t i = 0; msg && i < ARRAY_SIZE(hints); i++)
                if (strcasestr(msg, hints[i]))
                        return true;
        return false;
}

/* The endpoint's message from an error body, or the start of the body. */
static char *error_text(const struct capbuf *body)
{
        char *m = chat_error_message(body->data ? body->data : "", body->len);
        if (m)
                return m;
        size_t n = body->len;
        cleanup_free char *clean = utf8_sanitize(body->data ? body->data : "", n > 300 ? 300 : n, NULL);
        if (clean == NULL)
                return NULL;
        for (char *p = clean; *p; p++)
                if (*p == '\n' || *p == '\r' || *p == '\t')
                        *p = ' ';
        return strdup(*clean ? clean : "(empty body)");
}

static bool retryable_status(long status)
{
        return status == 408 || status == 409 || status == 429 || status >= 500;
}

static bool retryable_curl(CURLcode rc)
{
        switch (rc) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_OPERATION_TIMEDOUT:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
                return true;
        default:
                return false;
        }
}

static double backoff_s(const model_client *c, unsigned attempt, double retry_after_s)
{
        double twice = (double)(1ull << (attempt < 62 ? attempt : 62)); /* 2^attempt */
        double d = retry_after_s >= 0 ? retry_after_s : c->s.retry_base_s * twice;
        if (retry_after_s < 0) {
                /* Jitter (±25%) so parallel clients do not retry in step. */
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                d *= 0.75 + (double)(ts.tv_nsec % 1000) / 2000.0;
        }
        return d > c->s.retry_max_s ? c->s.retry_max_s : d;
}

/* What one failed attempt means: fills err and says whether to retry. */
static bool classify_failure(model_client *c, struct exchange *x, CURLcode rc, bool sent_tools, corral_error **err,
                             double *ret_retry_after)
{
        *ret_retry_after = -1;
        if (rc == CURLE_ABORTED_BY_CALLBACK && model_cancelled(c)) {
                corral_make_error(err, CORRAL_ERR_CANCELLED, 0, "the model request was cancelled");
                return false;
        }
        if (x->too_big) {
                corral_make_error(err, CORRAL_ERR_MODEL_REFUSED, 0, "the model's reply from %s is larger than %u MiB; "
                                  "corral stopped reading it", c->base_url, (unsigned)(MAX_BODY >> 20));
                return false;
        }
        if (rc == CURLE_OPERATION_TIMEDOUT) {
                curl_off_t connected_us = 0;
                x->api->easy_getinfo(x->h, CURLINFO_CONNECT_TIME_T, &connected_us);
                if (connected_us == 0)
                        corral_make_error(err, CORRAL_ERR_MODEL_UNREACHABLE, 0, "cannot connect to the model at %s "
                                          "within %g s", c->base_url, c->s.connect_timeout_s);
                else
                        corral_make_error(err, CORRAL_ERR_MODEL_UNREACHABLE, 0, "the model at %s did not answer "
                                          "within %g s, the request timeout", c->base_url, c->s.request_timeout_s);
                corral_error_set_field(err, connected_us == 0 ? NULL : "request_timeout");
                return true;
        }
        /* An endpoint never reached is most likely not running: say so at
         * once instead of backing off for a minute.  One that answered
         * before is having a hiccup: retry. */
        if ((rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) && !c->answered_once) {
                corral_make_error(err, CORRAL_ERR_MODEL_UNREACHABLE, 0, "cannot reach the model at %s: %s; is the "
                                  "server running? for Ollama: 'ollama serve'; else check the base URL", c->base_url,
                                  x->api->easy_strerror(rc));
                corral_error_set_field(err, "base_url");
                return false;
        }
        if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x->stream_err)) {
                corral_make_error(err, CORRAL_ERR_MODEL_UNREACHABLE, 0, "cannot reach the model at %s: %s",
                                  c->base_url, x->api->easy_strerror(rc));
                return retryable_curl(rc);
        }
        if (x->stream_err) {
                corral_error *e = TAKE_PTR(x->stream_err);
                corral_make_error(err, e->kind ? e->kind : CORRAL_ERR_MODEL_REFUSED, 0, "the model's streamed reply "
                                  "failed: %s", e->msg);
                corral_error_free(e);
                return false;
        }
        cleanup_free char *msg = error_text(&x->body);
        const char *m = msg ? msg : "(no message)";
        long st = x->status;
        if (sent_tools && st >= 400 && says_no_tools(m)) {
                corral_make_error(err, CORRAL_ERR_MODEL_NO_TOOLS, 0, "the endpoint does not accept tools (HTTP %ld: %s)",
                                  st, m);
                return false;
        }
        if (c->sent_images && st >= 400 && says_no_images(m)) {
                corral_make_error(err, CORRAL_ERR_MODEL_NO_IMAGES, 0, "the endpoint does not accept images (HTTP "
                                  "%ld: %s)", st, m);
                return false;
        }
        if ((st == 400 || st == 413 || st >= 500) && says_context(m)) {
                corral_make_error(err, CORRAL_ERR_MODEL_CONTEXT, 0, "the conversation is longer than the model's "
                                  "context (HTTP %ld: %s)", st, m);
                return false;
        }
        if (st == 401 || st == 403) {
                corral_make_error(err, CORRAL_ERR_MODEL_AUTH, 0, "the endpoint %s rejected the API key (HTTP %ld: %s); "
                                  "set OPENAI_API_KEY or \"apiKey\" in the config file", c->base_url, st, m);
                return false;
        }
        if (st == 404) {
                corral_make_error(err, CORRAL_ERR_MODEL_NOT_FOUND, 0, "model '%s' not found at %s (HTTP 404: %s)",
                                  c->model, c->base_url, m);
                return false;
        }
        if (retryable_status(st)) {
                corral_make_error(err, CORRAL_ERR_MODEL_UNREACHABLE, 0, "the endpoint %s answered HTTP %ld: %s",
                                  c->base_url, st, m);
                *ret_retry_after = x->retry_after_s;
                return true;
        }
        corral_make_error(err, CORRAL_ERR_MODEL_REFUSED, 0, "the endpoint refused the request (HTTP %ld: %s)", st, m);
        return false;
}

/* One attempt; 0 with *ret filled, or -1 with err and *ret_retry. */
static int attempt(model_client *c, const struct curl_api *api, const char *url, const char *body, bool sent_tools,
                   const struct model_hooks *hooks, struct chat_reply *ret, bool *ret_retry, double *ret_retry_after,
                   corral_error **err)
{
        struct exchange x = { .c = c, .api = api, .hooks = hooks, .retry_after_s = -1 };
        x.body.cap = MAX_ERROR_BODY;
        /* Ollama sends a whole tool call in one event: room for a full reply. */
        sse_parser_init(&x.sse, CHAT_MAX_REPLY_BYTES + (64u << 10), on_sse_event, &x);
        chat_stream_init(&x.stream);
        struct curl_slist *headers = NULL;
        int r = -1;
        *ret_retry = false;

        x.h = api->easy_init();
        headers = make_headers(c, api, c->s.stream, hooks ? hooks->purpose : NULL);
        if (x.h == NULL || headers == NULL) {
                corral_fail(err, ENOMEM, "cannot prepare the model request");
                goto out;
        }
        setup_common(x.h, api, c, &x);
        api->easy_setopt(x.h, CURLOPT_URL, url);
        api->easy_setopt(x.h, CURLOPT_HTTPHEADER, headers);
        api->easy_setopt(x.h, CURLOPT_POSTFIELDS, body);
        api->easy_setopt(x.h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));

        double t0 = monotonic_ms();
        /* CURLOPT_NOSIGNAL leaves SIGPIPE to us: libcurl sends with
         * MSG_NOSIGNAL, but a TLS library writing to the socket itself may
         * not (the curl docs' "corner cases"); blocked in this thread only. */
        struct sigpipe_guard g;
        sigpipe_block(&g);
        CURLcode rc = api->easy_perform(x.h);
        sigpipe_unblock(&g);
        c->usage.wait_ms += monotonic_ms() - t0;
        c->usage.requests++;
        decide(&x);
        if (x.status > 0)
                c->answered_once = true;

        if (rc == CURLE_OK && x.status == 200 && x.streaming) {
                /* Neither [DONE] nor a finish_reason: cut off (older llama.cpp
                 * sends its errors as "error:" lines, which SSE ignores). */
                if (sse_parser_finish(&x.sse, &x.stream_err) == 0 && !x.stream.done &&
                    x.stream.finish_reason == NULL) {
                        corral_make_error(err, CORRAL_ERR_MODEL_UNREACHABLE, 0, "the model's streamed reply from %s "
                                          "ended early (no finish_reason, no [DONE])", c->base_url);
                        *ret_retry = true;
                        goto out;
                }
                if (x.stream_err == NULL && chat_stream_finish(&x.stream, ret, &x.stream_err) == 0) {
                        r = 0;
                        goto out;
                }
        } else if (rc == CURLE_OK && x.status == 200) {
                /* Also when we asked for a stream: some servers answer whole. */
                if (chat_response_parse(x.body.data ? x.body.data : "", x.body.len, ret, err) == 0) {
                        if (hooks && hooks->on_content) {
                                json_t *content = json_object_get(ret->message, "content");
                                if (json_is_string(content))
                                        hooks->on_content(hooks->userdata, json_string_value(content),
                                                          json_string_length(content));
                        }
                        r = 0;
                }
                goto out;
        }
        *ret_retry = classify_failure(c, &x, rc, sent_tools, err, ret_retry_after);
out:
        if (headers)
                api->slist_free_all(headers);
        exchange_release(&x);
        return r;
}

static int openai_chat(model_client *c, const json_t *messages, const json_t *tools, const struct model_hooks *hooks,
                       struct chat_reply *ret, corral_error **err)
{
        const struct curl_api *api = curl_api_get(err);
        if (api == NULL)
                return -1;
        struct chat_request_opts o = { .model = c->model, .messages = messages, .tools = tools,
                                       .stream = c->s.stream, .quirks = c->s.quirks, .temperature = -1 };
        cleanup_free char *body = chat_request_build(&o, err);
        if (body == NULL)
                return -1;
        cleanup_free char *url = endpoint_url(c, "/chat/completions");
        if (url == NULL)
                return corral_fail(err, ENOMEM, "cannot prepare the model request");
        bool sent_tools = tools && json_array_size(tools) > 0;
        c->sent_images = chat_messages_count_images(messages, json_array_size(messages), NULL) > 0;

        corral_error *e = NULL;
        unsigned n;
        for (n = 0;; n++) {
                bool retry;
                double retry_after;
                memset(ret, 0, sizeof(*ret));
                corral_error_clear(&e);
                if (attempt(c, api, url, body, sent_tools, hooks, ret, &retry, &retry_after, &e) == 0)
                        return 0;
                if (!retry || n >= c->s.max_retries)
                        break;
                double delay = backoff_s(c, n, retry_after);
                c->usage.retries++;
                if (hooks && hooks->on_retry)
                        hooks->on_retry(hooks->userdata, n + 1, delay, e->msg);
                if (model_wait_cancellable(c, delay * 1000) == 1) {
                        corral_error_free(e);
                        return corral_make_error(err, CORRAL_ERR_CANCELLED, 0, "the model request was cancelled");
                }
        }
        if (n > 0)
                corral_error_prefix(&e, "gave up after %u attempts", n + 1);
        if (err)
                *err = e;
        else
                corral_error_free(e);
        return -1;
}

/* GET {base}/models: the ids, for telling the user what exists. */
static int openai_list(model_client *c, json_t **ret_ids, corral_error **err)
{
        const struct curl_api *api = curl_api_get(err);
        if (api == NULL)
                return -1;
        struct exchange x = { .c = c, .api = api, .retry_after_s = -1 };
        x.body.cap = MAX_ERROR_BODY;
        sse_parser_init(&x.sse, 1, on_sse_event, &x);
        chat_stream_init(&x.stream);
        cleanup_free char *url = endpoint_url(c, "/models");
        struct curl_slist *headers = make_headers(c, api, false, NULL);
        x.h = api->easy_init();
        int r = -1;
        if (url == NULL || headers == NULL || x.h == NULL) {
                corral_fail(err, ENOMEM, "cannot prepare the request");
                goto out;
        }
        setup_common(x.h, api, c, &x);
        api->easy_setopt(x.h, CURLOPT_URL, url);
        api->easy_setopt(x.h, CURLOPT_HTTPHEADER, headers);
        api->easy_setopt(x.h, CURLOPT_TIMEOUT_MS, (long)(c->s.connect_timeout_s * 1000));
        struct sigpipe_guard g;
        sigpipe_block(&g); /* as in the chat request */
        CURLcode rc = api->easy_perform(x.h);
        sigpipe_unblock(&g);
        decide(&x);
        x.streaming = false;
        if (rc != CURLE_OK || x.status != 200) {
                corral_make_error(err, CORRAL_ERR_MODEL_REFUSED, 0, "cannot list the models at %s", url);
                goto out;
        }
        json_t *doc = NULL;
        if (chat_json_parse(x.body.data ? x.body.data : "", x.body.len, "the model list", &doc, err) < 0)
                goto out;
        json_t *ids = json_array(), *data = json_object_get(doc, "data"), *m;
        size_t i;
        json_array_foreach(data, i, m) {
                json_t *id = json_object_get(m, "id");
                if (json_is_string(id))
                        json_array_append(ids, id);
        }
        json_decref(doc);
        *ret_ids = ids;
        r = 0;
out:
        if (headers)
                api->slist_free_all(headers);
        exchange_release(&x);
        return r;
}

const struct model_backend_ops openai_backend_ops = {
        .name = "openai-compatible",
        .chat = openai_chat,
        .list = openai_list,
};
