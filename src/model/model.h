/* model.h: language models behind one interface.
 *
 * A model_client sends a conversation (an array of OpenAI-style messages)
 * and the tool schemas, and returns one normalised assistant reply (see
 * chat.h).  Backends:
 *   openai   any OpenAI-compatible /chat/completions endpoint over libcurl
 *            (OpenAI, Ollama, llama.cpp's server, vLLM), streamed or not,
 *            with retries (429, 5xx, resets; Retry-After honoured) and a
 *            request timeout;
 *   replay   plays the replies of a recorded transcript (--model replay:FILE).
 * Any backend can record its exchanges to a transcript (--record FILE).
 * The API key lives only here, in the host process; it is never logged.
 * Failures carry a kind from corral/error.h (CORRAL_ERR_MODEL_*) so callers
 * can tell "unreachable" from "bad key" from "no tool support".
 *
 * Threads: one caller at a time per model client; clients on different threads
 * are independent (libcurl is loaded once, curl-dl.h).
 */
#ifndef CORRAL_MODEL_H
#define CORRAL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "chat.h"

struct model_settings {
        const char *base_url;     /* ".../v1"; "/chat/completions" is appended */
        const char *model;        /* model id, or "replay:FILE" */
        const char *api_key;      /* NULL or "": no Authorization header */
        const char *provider;     /* preset name for messages, may be NULL */
        unsigned quirks;          /* enum chat_quirk */
        bool stream;              /* SSE streaming (default on) */
        double request_timeout_s; /* whole request, default 300 */
        double connect_timeout_s; /* default 10 */
        unsigned max_retries;     /* default 4 */
        double retry_base_s;      /* first backoff, doubled per retry (default 1) */
        double retry_max_s;       /* cap on one wait, also on Retry-After (default 60) */
        int cancel_fd;            /* readable: abort the request (CORRAL_ERR_CANCELLED); -1 none */
        const char *record_path;  /* append every exchange here (JSONL, 0600), or NULL */
        const char *const *secrets; /* NULL-terminated strings redacted from recordings and errors
                                     * (the API key always is) */
};
CORRAL_HIDDEN void model_settings_init(struct model_settings *s);

/* Reported while a request runs; all optional. */
struct model_hooks {
        void (*on_content)(void *userdata, const char *delta, size_t len); /* streamed text */
        void (*on_retry)(void *userdata, unsigned attempt, double delay_s, const char *why);
        void *userdata;
        /* NULL: a turn of the agent's conversation.  Otherwise a side call
         * of a mode ("verify", "compact": docs/modes.md): sent as the
         * header X-Corral-Purpose, recorded with the exchange in a
         * transcript, and answered by a replay from that purpose's own
         * recorded replies, in order. */
        const char *purpose;
};

/* Totals over a client's life. */
struct model_usage {
        uint64_t prompt_tokens;
        uint64_t completion_tokens;
        unsigned requests;        /* HTTP requests, retries included */
        unsigned retries;
        double wait_ms;           /* time spent waiting for the endpoint */
        bool estimated;           /* some counts were estimated (no usage sent) */
};

typedef struct model_client model_client;

CORRAL_HIDDEN int model_client_open(const struct model_settings *s, model_client **ret, corral_error **ret_err);
CORRAL_HIDDEN void model_client_free(model_client *c);

/* One chat turn.  tools may be NULL (text protocol).  On success the reply's
 * usage is filled (estimated from the text when the endpoint sent none). */
CORRAL_HIDDEN int model_chat(model_client *c, const json_t *messages, const json_t *tools,
                             const struct model_hooks *hooks, struct chat_reply *ret, corral_error **ret_err);

CORRAL_HIDDEN const struct model_usage *model_client_usage(const model_client *c);
/* The endpoint's models (GET /models): an array of ids in *ret_ids; -1 with
 * *ret_err when it does not answer (corral doctor). */
CORRAL_HIDDEN int model_client_list(model_client *c, json_t **ret_ids, corral_error **ret_err);

/* What a transcript knows of the run it was recorded on, so that a replay
 * on other data says so instead of passing the recorded text off as this
 * run's (docs/providers.md, "Replay").
 *
 * model_client_record_run(): when recording, write {"run": info} (the
 * inputs with their sizes and digests) to the transcript, before the
 * exchanges; a no-op otherwise.
 * model_client_replay_run(): for a replay, the recorded {"run"} info, or
 * NULL when the transcript has none (hand-written, or older).
 * model_client_replay_divergence(): for a replay, the first turn whose tool
 * results differ from the ones recorded before that turn (what the
 * program printed, as the model was shown it):
 * {"turn": N, "tool_call_id", "recorded", "now"} (excerpts), or NULL when
 * every comparable turn matched so far.  Not thread-safe with model_chat()
 * on the same client. */
CORRAL_HIDDEN int model_client_record_run(model_client *c, const json_t *info);
CORRAL_HIDDEN bool model_client_is_replay(const model_client *c);
CORRAL_HIDDEN const json_t *model_client_replay_run(const model_client *c);
CORRAL_HIDDEN const json_t *model_client_replay_divergence(const model_client *c);
/* For a replay, whether its transcript recorded side calls of this purpose
 * (model_hooks.purpose); false for any other client. */
CORRAL_HIDDEN bool model_client_replay_has(const model_client *c, const char *purpose);

/* Rough token count of text: what the usage estimate and context trimming
 * use when the endpoint does not say (about 4 bytes per token). */
CORRAL_HIDDEN uint64_t model_estimate_tokens(const char *text, size_t len);

/* Checks for a host report (lib/probe.h, probe.c): "libcurl", loaded
 * (its version) or not; "model", which model a run would use with no
 * settings of its own and whether its endpoint answers within a few
 * seconds ({"model", "base_url"} too), else whether a local Ollama does
 * ({"ollama": {"base_url", "models"}}), else nothing is configured (state
 * "none"); no check when not even Ollama's settings resolve.  Thread-safe. */
CORRAL_HIDDEN void model_probe_library(json_t *checks);
CORRAL_HIDDEN void model_probe(json_t *checks);

#endif
