/* probe.c: the model's checks for a host report (model.h, lib/probe.h):
 * libcurl, and the model a run would use and whether it answers. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "../lib/probe.h"
#include "curl-dl.h"
#include "model.h"
#include "provider.h"

void model_probe_library(json_t *checks)
{
        corral_error *err = NULL;
        const struct curl_api *c = curl_api_get(&err);
        char buf[256];
        if (c) {
                const curl_version_info_data *v = c->version_info(CURLVERSION_NOW);
                snprintf(buf, sizeof(buf), "libcurl %s (for model endpoints)", v && v->version ? v->version : "?");
        }
        probe_add(checks, "libcurl", c != NULL, c ? "ok" : "missing", c ? buf : err ? err->msg : "not found",
                  "apt-get install libcurl4 (corral run talks to models with it)");
        corral_error_free(err);
}

void model_probe(json_t *checks)
{
        struct provider_request req = { 0 };
        struct provider_choice ch;
        corral_error *err = NULL;
        char buf[512];
        bool configured = provider_resolve(&req, &ch, &err) == 0 && ch.model && ch.model[0];
        if (!configured) {
                corral_error_clear(&err);
                if (provider_resolve(&(struct provider_request){ .provider = "ollama", .model = "any" }, &ch,
                                     &err) < 0) {
                        corral_error_free(err);
                        return;
                }
        }
        struct model_settings s;
        model_settings_init(&s);
        s.base_url = ch.base_url;
        s.model = ch.model;
        s.api_key = ch.api_key;
        s.provider = ch.provider;
        s.quirks = ch.quirks;
        s.connect_timeout_s = 2;
        s.request_timeout_s = 5;
        s.max_retries = 0;
        model_client *m = NULL;
        json_t *ids = NULL;
        bool answers = strncmp(ch.model, "replay:", 7) == 0 ||
                       (model_client_open(&s, &m, &err) == 0 && model_client_list(m, &ids, &err) == 0);
        json_t *c;
        if (configured) {
                snprintf(buf, sizeof(buf), "%s at %s: %s%s", ch.model, ch.base_url ? ch.base_url : "(replay)",
                         answers ? "the endpoint answers" : "the endpoint does not answer: ",
                         answers ? "" : err ? err->msg : "?");
                c = probe_add(checks, "model", answers, answers ? "ok" : "missing", buf,
                              "check the base URL, $OPENAI_BASE_URL and the config file (docs/providers.md)");
                if (c) {
                        json_object_set_new(c, "model", json_string(ch.model));
                        json_object_set_new(c, "base_url", ch.base_url ? json_string(ch.base_url) : json_null());
                }
        } else if (answers) {
                size_t n = json_array_size(ids);
                snprintf(buf, sizeof(buf), "none configured; Ollama answers at %s with %zu model%s: choose the "
                                           "provider ollama and one of its models",
                         ch.base_url, n, n == 1 ? "" : "s");
                c = probe_add(checks, "model", false, "none", buf, NULL);
                if (c)
                        json_object_set_new(c, "ollama", json_pack("{s:s?,s:I}", "base_url", ch.base_url,
                                                                   "models", (json_int_t)n));
        } else {
                probe_add(checks, "model", false, "none",
                          "none configured and no Ollama on localhost:11434: give a model and its base URL, set "
                          "$CORRAL_MODEL or the config file (docs/providers.md); replay:FILE works offline",
                          NULL);
        }
        json_decref(ids);
        model_client_free(m);
        corral_error_free(err);
        provider_choice_release(&ch);
}
