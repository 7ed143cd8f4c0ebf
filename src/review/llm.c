/* llm.c: the LLM reviewer (llm.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../model/chat.h"
#include "llm.h"

static const char prompt[] =
        "You are the safety reviewer of corral, a sandbox in which an AI agent runs Python and bash code for data "
        "analysis. The code below was written by the agent; a static review found nothing forbidden in it but "
        "warned about the lines listed. Decide whether the code should run. Reject it only when it tries to "
        "escape or abuse the sandbox: reach the network, start other programs, load native code, read secrets, "
        "damage files outside /workspace and /tmp, exhaust resources on purpose, or hide what it does. Ordinary "
        "data analysis (pandas, numpy, matplotlib, scipy, files under /workspace) must be allowed.\n"
        "Answer with one JSON object and nothing else: {\"verdict\": \"allow\" or \"reject\", \"reasons\": "
        "[short sentences for the agent, saying what to do instead]}.";

const char *review_llm_prompt(void)
{
        return prompt;
}

void review_llm_verdict_release(struct review_llm_verdict *v)
{
        free(v->reasons);
        free(v->raw);
        memset(v, 0, sizeof(*v));
}

/* The first JSON object in text (models wrap it in prose or fences). */
static json_t *find_object(const char *text)
{
        for (const char *p = strchr(text, '{'); p; p = strchr(p + 1, '{')) {
                json_error_t e;
                json_t *o = json_loads(p, JSON_DISABLE_EOF_CHECK, &e);
                if (json_is_object(o))
                        return o;
                json_decref(o);
        }
        return NULL;
}

int review_llm_judge(model_client *reviewer, const char *lang, const char *code, const struct review_result *stat,
                     struct review_llm_verdict *ret, corral_error **ret_err)
{
        return review_llm_ask(reviewer, NULL, lang, code, stat, ret, ret_err);
}

int review_llm_ask(model_client *reviewer, const struct review_llm_request *rq, const char *lang, const char *code,
                   const struct review_result *stat, struct review_llm_verdict *ret, corral_error **ret_err)
{
        memset(ret, 0, sizeof(*ret));
        double t0 = monotonic_ms();
        char *warnings = review_result_text(stat);
        char *user = NULL;
        const char *context = rq ? rq->context : NULL;
        if (asprintf(&user, "%s%sLanguage: %s\n\nStatic review:\n%s\nCode:\n```%s\n%s\n```\n", context ? context : "",
                     context ? "\n\n" : "", lang, warnings && *warnings ? warnings : "(no findings)\n", lang,
                     code) < 0)
                user = NULL;
        free(warnings);
        const char *system = rq && rq->system ? rq->system : prompt;
        json_t *messages = user ? json_pack("[{s:s,s:s},{s:s,s:s}]", "role", "system", "content", system, "role",
                                            "user", "content", user)
                                : NULL;
        free(user);
        if (messages == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot ask the reviewer model");
        struct chat_reply reply = { 0 };
        struct model_hooks hooks = { .purpose = rq ? rq->purpose : NULL };
        int rc = model_chat(reviewer, messages, NULL, hooks.purpose ? &hooks : NULL, &reply, ret_err);
        json_decref(messages);
        if (rc < 0)
                return corral_error_prefix(ret_err, "reviewer model");
        ret->prompt_tokens = reply.usage.prompt_tokens;
        ret->completion_tokens = reply.usage.completion_tokens;
        const char *content = json_string_value(json_object_get(reply.message, "content"));
        ret->raw = strdup(content ? content : "");
        json_t *v = content ? find_object(content) : NULL;
        const char *verdict = json_string_value(json_object_get(v, "verdict"));
        if (verdict && (strcmp(verdict, "allow") == 0 || strcmp(verdict, "approve") == 0 ||
                        strcmp(verdict, "reject") == 0)) {
                ret->reject = verdict[0] == 'r';
                char *out = NULL;
                size_t n = 0;
                FILE *f = open_memstream(&out, &n);
                json_t *reasons = json_object_get(v, "reasons"), *r;
                size_t i;
                if (f && json_is_string(reasons))
                        fprintf(f, "%s\n", json_string_value(reasons));
                json_array_foreach(reasons, i, r)
                        if (f && json_is_string(r))
                                fprintf(f, "%s\n", json_string_value(r));
                if (f)
                        fclose(f);
                ret->reasons = out;
        } else {
                ret->reasons = strdup("the reviewer's reply was not a verdict\n");
        }
        json_decref(v);
        chat_reply_release(&reply);
        ret->ms = monotonic_ms() - t0;
        return 0;
}
