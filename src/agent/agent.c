/* agent.c: the loop (see agent.h).
 *
 * Each iteration is one model turn: trim the conversation to the context,
 * ask the model, then either run the tool calls of its reply in order (one
 * tool message per call, with its tool_call_id: OpenAI rejects a
 * conversation that leaves one unanswered) or take its text as the answer.
 * With the text protocol, a fenced code block in the reply is run and the
 * observation comes back as a user message.  Budgets are checked before
 * each turn; an endpoint that rejects "tools" switches the run to the text
 * protocol once; a context-length error trims harder and retries once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../lib/redact.h"
#include "../session/client.h"
#include "../session/session.h"
#include "agent-internal.h"
#include "team.h"
#include "tdd.h"
#include "toolbox.h"

#define TRIM_KEEP_LAST 4     /* the newest messages are never shortened */
#define TRIM_MIN_BYTES 600   /* nor are short ones */
#define IMAGE_TOKENS 800     /* an image's cost in the estimate: a 768-px image on Qwen2-VL-class
                              * servers (OpenAI's detail "low" costs 85) */
#define IMAGE_MESSAGES_KEPT 2 /* the newest messages with images keep them; older ones lose them */

void agent_config_init(struct agent_config *c)
{
        *c = (struct agent_config){
                .max_iterations = 10,
                .context_tokens = 32768,
                .observation_bytes = 8192,
                .read_bytes = 65536,
                .images_per_step = 2,
                .images_per_run = 8,
                .image_bytes = 300 << 10,
                .image_side = 768,
                .verify_rounds = 2,
                .replan_every = 5,
                .compact_max = 4,
                .cancel_fd = -1,
        };
}

const char *agent_status_to_string(enum agent_status s)
{
        switch (s) {
        case AGENT_ANSWERED:
                return "answered";
        case AGENT_GAVE_UP:
                return "gave_up";
        case AGENT_MODEL_ERROR:
                return "model_error";
        case AGENT_JAIL_ERROR:
                return "jail_error";
        case AGENT_CANCELLED:
                return "cancelled";
        default:
                return "unknown";
        }
}

const char *agent_mode_to_string(enum agent_mode m)
{
        switch (m) {
        case AGENT_MODE_PLAIN:
                return "plain";
        case AGENT_MODE_TDD:
                return "tdd";
        case AGENT_MODE_TEAM:
                return "team";
        default:
                return "unknown";
        }
}

int agent_mode_from_string(const char *s, enum agent_mode *ret)
{
        for (enum agent_mode m = AGENT_MODE_PLAIN; m <= AGENT_MODE_TEAM; m++)
                if (s && strcmp(s, agent_mode_to_string(m)) == 0) {
                        *ret = m;
                        return 0;
                }
        return -1;
}

void agent_result_release(struct agent_result *r)
{
        free(r->answer);
        free(r->reason);
        json_decref(r->verification);
        json_decref(r->planning);
        json_decref(r->compaction);
        json_decref(r->team);
        json_decref(r->tdd);
        json_decref(r->steps);
        memset(r, 0, sizeof(*r));
}

static void emit(const struct agent_config *cfg, const char *type, json_t *fields)
{
        /* Team mode: which role did it (team.h). */
        const char *role = cfg->mode == AGENT_MODE_TEAM ? team_event_role(type) : NULL;
        if (role && fields)
                json_object_set_new(fields, "role", json_string(role));
        if (cfg->trace)
                trace_emit(cfg->trace, type, fields);
        else
                json_decref(fields);
}

static int append_message(json_t *messages, const char *role, const char *content)
{
        json_t *m = json_pack("{s:s, s:s}", "role", role, "content", content ? content : "");
        return m ? json_array_append_new(messages, m) : -1;
}

/* A note from corral to the model: appended to the last message when that
 * is the user's (some chat templates reject two user messages in a row),
 * else a user message of its own. */
static void add_user_note(json_t *messages, const char *note)
{
        json_t *last = json_array_get(messages, json_array_size(messages) - 1);
        const char *role = json_string_value(json_object_get(last, "role"));
        const char *content = json_string_value(json_object_get(last, "content"));
        char *joined = NULL;
        json_t *parts = json_object_get(last, "content");
        if (role && strcmp(role, "user") == 0 && json_is_array(parts)) {
                /* A message with images: one more text part. */
                json_array_append_new(parts, json_pack("{s:s, s:s}", "type", "text", "text", note));
                return;
        }
        if (role && strcmp(role, "user") == 0 && content && asprintf(&joined, "%s\n\n%s", content, note) >= 0) {
                json_object_set_new(last, "content", json_string(joined));
                free(joined);
                return;
        }
        append_message(messages, "user", note);
}

/* Images count as IMAGE_TOKENS each, not as the bytes of their base64. */
static uint64_t estimate_tokens(const json_t *messages, const json_t *tools)
{
        cleanup_free char *m = json_dumps(messages, JSON_COMPACT);
        cleanup_free char *t = tools ? json_dumps(tools, JSON_COMPACT) : NULL;
        size_t url_bytes = 0, bytes = (m ? strlen(m) : 0) + (t ? strlen(t) : 0);
        size_t images = chat_messages_count_images(messages, json_array_size(messages), &url_bytes);
        bytes = bytes > url_bytes ? bytes - url_bytes : 0;
        return model_estimate_tokens(NULL, bytes) + images * IMAGE_TOKENS;
}

/* Where the IMAGE_MESSAGES_KEPT newest messages with images begin (their
 * images stay; older ones are dropped), or 0 when there are fewer. */
static size_t images_kept_from(const json_t *messages)
{
        size_t seen = 0;
        for (size_t i = json_array_size(messages); i > 0; i--) {
                size_t j;
                const json_t *part;
                bool images = false;
                json_array_foreach(json_object_get(json_array_get(messages, i - 1), "content"), j, part)
                        images = images || json_is_object(json_object_get(part, "image_url"));
                if (images && ++seen == IMAGE_MESSAGES_KEPT)
                        return i - 1;
        }
        return 0;
}

/* Whether message i carries an observation that may be shortened. */
static bool trimmable(json_t *messages, size_t i)
{
        json_t *m = json_array_get(messages, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        json_t *content = json_object_get(m, "content");
        if (i < 2 || i + TRIM_KEEP_LAST >= json_array_size(messages) || !json_is_string(content) ||
            json_string_length(content) < TRIM_MIN_BYTES)
                return false;
        return role && (strcmp(role, "tool") == 0 || strcmp(role, "user") == 0);
}

/* Shorten old observations, oldest first, until the conversation fits
 * within target tokens; returns how many were shortened and, in
 * *ret_tokens, the estimate after shortening (one serialisation of the
 * conversation, then what each cut saves). */
static unsigned trim_context(json_t *messages, const json_t *tools, uint64_t target, uint64_t *ret_tokens)
{
        /* Images first: only the newest few are resent at all, and when
         * the conversation is still too long, every image but those of the
         * newest messages goes before any text is shortened. */
        size_t size = json_array_size(messages);
        unsigned n = 0;
        long dropped = chat_messages_drop_images(messages, images_kept_from(messages), "an older figure, dropped "
                                                 "to save context; the file is still in the workspace");
        n += dropped > 0 ? (unsigned)dropped : 0;
        uint64_t tokens = estimate_tokens(messages, tools);
        if (tokens > target && size > TRIM_KEEP_LAST) {
                dropped = chat_messages_drop_images(messages, size - TRIM_KEEP_LAST, "dropped to save context; the "
                                                    "file is still in the workspace");
                if (dropped > 0) {
                        n += (unsigned)dropped;
                        tokens = estimate_tokens(messages, tools);
                }
        }
        for (size_t i = 0; i < json_array_size(messages) && tokens > target; i++) {
                if (!trimmable(messages, i))
                        continue;
                json_t *m = json_array_get(messages, i);
                const char *text = json_string_value(json_object_get(m, "content"));
                size_t len = strlen(text);
                cleanup_free char *cut = agent_cut_middle(text, len, 400);
                char *note = NULL;
                if (cut == NULL || asprintf(&note, "[older output, shortened to save context]\n%s", cut) < 0)
                        break;
                size_t saved = len > strlen(note) ? len - strlen(note) : 0;
                json_object_set_new(m, "content", json_string(note));
                free(note);
                uint64_t less = model_estimate_tokens(NULL, saved);
                tokens = tokens > less ? tokens - less : 0;
                n++;
        }
        *ret_tokens = tokens;
        return n;
}

struct turn_hooks {
        const struct agent_config *cfg;
        unsigned iteration;
};

static void on_content(void *ud, const char *delta, size_t len)
{
        struct turn_hooks *h = ud;
        if (h->cfg->on_content)
                h->cfg->on_content(h->cfg->userdata, delta, len);
}

static void on_retry(void *ud, unsigned attempt, double delay_s, const char *why)
{
        struct turn_hooks *h = ud;
        emit(h->cfg, "model_retry",
             json_pack("{s:i, s:i, s:f, s:s}", "iteration", h->iteration, "attempt", attempt, "delay_s", delay_s,
                       "reason", why ? why : ""));
}

double agent_cost(const struct agent_config *cfg, uint64_t prompt_tokens, uint64_t completion_tokens)
{
        /* To a millionth, as prices are given per million tokens. */
        double c = ((double)prompt_tokens * cfg->price_input + (double)completion_tokens * cfg->price_output) / 1e6;
        return (double)(int64_t)(c * 1e6 + 0.5) / 1e6;
}

static json_t *reply_event(unsigned iteration, const struct chat_reply *r, double wait_ms)
{
        json_t *calls = json_array(), *tc;
        size_t i;
        json_array_foreach(json_object_get(r->message, "tool_calls"), i, tc) {
                json_t *fn = json_object_get(tc, "function");
                json_array_append_new(calls, json_pack("{s:O, s:O, s:O}", "id", json_object_get(tc, "id"), "name",
                                                       json_object_get(fn, "name"), "arguments",
                                                       json_object_get(fn, "arguments")));
        }
        return json_pack("{s:i, s:O, s:s?, s:o, s:s?, s:{s:I, s:I, s:b}, s:f}", "iteration", iteration, "content",
                         json_object_get(r->message, "content") ? json_object_get(r->message, "content")
                                                                  : json_null(),
                         "reasoning", r->reasoning, "tool_calls", calls, "finish_reason", r->finish_reason, "usage",
                         "prompt_tokens", (json_int_t)r->usage.prompt_tokens, "completion_tokens",
                         (json_int_t)r->usage.completion_tokens, "estimated", !r->usage.reported, "wait_ms", round_ms(wait_ms));
}

/* The tool_call event: arguments parsed when they are JSON, and the code
 * or command pulled out for renderers. */
static json_t *call_event(unsigned iteration, const char *id, const char *name, const char *arguments)
{
        json_t *args = json_loads(arguments ? arguments : "", JSON_REJECT_DUPLICATES, NULL);
        json_t *ev = json_pack("{s:i, s:s, s:s}", "iteration", iteration, "id", id ? id : "", "name", name);
        if (ev == NULL) {
                json_decref(args);
                return NULL;
        }
        json_t *code = json_object_get(args, "code"), *command = json_object_get(args, "command");
        if (strcmp(name, "run_python") == 0 && json_is_string(code))
                json_object_set(ev, "code", code);
        if (strcmp(name, "run_shell") == 0 && json_is_string(command))
                json_object_set(ev, "command", command);
        json_object_set_new(ev, "arguments", args ? args : json_string(arguments ? arguments : ""));
        return ev;
}

static json_t *result_event(unsigned iteration, const char *id, const struct tool_result *s, double ms)
{
        json_t *ev = json_pack("{s:i, s:s, s:s, s:b, s:s, s:f}", "iteration", iteration, "id", id ? id : "", "name",
                               s->name ? s->name : "", "ok", s->ok, "content", s->content ? s->content : "", "ms", round_ms(ms));
        if (ev && s->exec)
                json_object_set(ev, "exec", s->exec);
        if (ev && s->artifacts)
                json_object_set(ev, "artifacts", s->artifacts);
        return ev;
}

/* field: the setting that ended the run (corral_error.field), or NULL; the
 * reason names it in words, a front end adds its own spelling. */
static void set_outcome(struct agent_result *r, enum agent_status status, int kind, const char *field,
                        const char *fmt, ...) CORRAL_PRINTF(5, 6);
static void set_outcome(struct agent_result *r, enum agent_status status, int kind, const char *field,
                        const char *fmt, ...)
{
        r->status = status;
        r->error_kind = kind;
        r->reason_field = field;
        va_list ap;
        va_start(ap, fmt);
        str_vsetf(&r->reason, fmt, ap);
        va_end(ap);
}

/* After a step: end the run on a fatal error or a cancel.  1 = stop. */
static int step_ends_run(const struct tool_result *s, struct agent_result *ret)
{
        if (s->fatal) {
                set_outcome(ret, AGENT_JAIL_ERROR, s->err ? s->err->kind : 0, s->err ? s->err->field : NULL,
                            "cannot run the code: %s", s->err ? s->err->msg : "unknown error");
                return 1;
        }
        if (s->cancelled) {
                set_outcome(ret, AGENT_CANCELLED, CORRAL_ERR_CANCELLED, NULL, "interrupted while the code ran");
                return 1;
        }
        return 0;
}

/* The loop's state; the tools keep theirs (toolbox.h). */
struct agent_state {
        const struct agent_config *cfg;
        struct toolbox *tools;
        unsigned iteration;
        double deadline_ms;      /* monotonic; 0 none */
        /* The completion check (verify.c) */
        json_t *verdicts;        /* the verify events so far */
        unsigned sent_back;      /* answers sent back as incomplete */
        struct model_usage verify_usage;
        /* Planning (plan.c) */
        struct plan_state plan;
        json_t *plan_events;
        unsigned stuck;          /* replans forced by stuck detection */
        struct model_usage plan_usage;
        /* Compaction (compact.c) */
        char *summary;           /* of the turns summarised, said after the task */
        json_t *compact_events;
        struct model_usage compact_usage;
        /* Team mode (team.c) */
        struct team *team;
        /* The test-driven mode (tdd.c), or NULL */
        struct tdd_state *tdd;
};

/* A path as the workspace knows it: "output/a.csv" of "/workspace/output/a.csv" or "./output/a.csv". */
static const char *ws_relative(const char *path)
{
        if (path && strncmp(path, "/workspace/", 11) == 0)
                path += 11;
        while (path && strncmp(path, "./", 2) == 0)
                path += 2;
        return path;
}

/* Keep a step for a reproduction (record_steps). */
static void record_step(struct agent_state *st, struct agent_result *ret, const char *lang, const char *code,
                        const struct tool_result *s)
{
        if (!st->cfg->record_steps || s->name == NULL)
                return;
        if (ret->steps == NULL && (ret->steps = json_array()) == NULL)
                return;
        json_t *step = json_pack("{s:s, s:b, s:b, s:[]}", "tool", s->name, "ok", s->ok, "ran", s->exec != NULL,
                                 "changed");
        if (step == NULL)
                return;
        json_t *changed = json_object_get(step, "changed"), *a;
        size_t i;
        json_array_foreach (s->artifacts, i, a) {
                const char *change = json_string_value(json_object_get(a, "change"));
                if (change && strcmp(change, "deleted") != 0)
                        json_array_append(changed, json_object_get(a, "path"));
        }
        if (lang && code) {
                json_object_set_new(step, "lang", json_string(lang));
                json_object_set_new(step, "code", json_string(code));
        } else if (strcmp(s->name, "run_python") == 0 || strcmp(s->name, "run_shell") == 0) {
                bool py = strcmp(s->name, "run_python") == 0;
                json_object_set_new(step, "lang", json_string(py ? "python" : "bash"));
                json_object_set(step, "code", json_object_get(s->args, py ? "code" : "command"));
        } else if (strcmp(s->name, "write_file") == 0) {
                const char *path = ws_relative(json_string_value(json_object_get(s->args, "path")));
                if (path) {
                        json_object_set_new(step, "path", json_string(path));
                        if (s->ok)
                                json_array_append_new(changed, json_string(path));
                }
                json_object_set(step, "content", json_object_get(s->args, "content"));
        }
        json_array_append_new(ret->steps, step);
}

/* After a step: what planning watches (stuck detection). */
static void observe_step(struct agent_state *st, const struct tool_result *s)
{
        if (st->cfg->plan)
                plan_observe_step(&st->plan, s, st->cfg->replan_every ? st->cfg->replan_every : 5);
}

/* The figures of the last step as images (docs/sessions.md, "Figures for
 * the model"): Chat Completions takes image parts only in user messages,
 * so they follow the tool results as a user message of their own, or join
 * the user message that carries a text-protocol observation.  The trace
 * gets what was sent (path, bytes, dimensions), never the bytes. */
static void attach_images(struct agent_state *st, json_t *messages)
{
        const struct toolbox_image *pending;
        const char *note;
        size_t n = toolbox_images(st->tools, &pending, &note);
        if (n == 0) {
                toolbox_images_clear(st->tools);
                return;
        }
        struct chat_image imgs[AGENT_MAX_STEP_IMAGES];
        json_t *sent = json_array();
        for (size_t i = 0; i < n; i++) {
                const struct toolbox_image *im = &pending[i];
                imgs[i] = (struct chat_image){ .png = im->png, .len = im->len, .detail = "low" };
                json_array_append_new(sent, json_pack("{s:s, s:I, s:i, s:i}", "path", im->path, "bytes",
                                                      (json_int_t)im->len, "width", (int)im->width, "height",
                                                      (int)im->height));
        }
        json_t *msg = chat_image_message_new(note, imgs, n);
        json_t *last = json_array_get(messages, json_array_size(messages) - 1);
        const char *role = json_string_value(json_object_get(last, "role"));
        json_t *text = json_object_get(last, "content");
        if (msg && role && strcmp(role, "user") == 0 && json_is_string(text)) {
                json_array_insert_new(json_object_get(msg, "content"), 0,
                                      json_pack("{s:s, s:O}", "type", "text", "text", text));
                json_array_remove(messages, json_array_size(messages) - 1);
        }
        if (msg)
                json_array_append_new(messages, msg);
        emit(st->cfg, "images", json_pack("{s:i, s:o, s:s}", "iteration", st->iteration, "images", sent, "detail",
                                          "low"));
        toolbox_images_clear(st->tools);
}

/* A tool of cfg->tools (an MCP server's): its result's text redacted as
 * the toolbox's are; a cancel during it ends the run as one during code. */
static void call_extra(struct agent_state *st, const char *name, const char *args, struct tool_result *s)
{
        const struct agent_config *cfg = st->cfg;
        s->name = name;
        cfg->tools->call(cfg->tools->userdata, name, args, cfg->cancel_fd, st->deadline_ms, s);
        if (s->content == NULL)
                s->content = strdup("error: the tool gave no result");
        if (cfg->secrets && s->content) {
                char *r = redact_text(s->content, cfg->secrets);
                if (r) {
                        free(s->content);
                        s->content = r;
                }
        }
}

/* Run the tool calls of one reply in order. 1 = the run ends. */
static int run_tool_calls(struct agent_state *st, json_t *messages, const struct chat_reply *reply,
                          struct agent_result *ret, char **ret_answer)
{
        const struct agent_config *cfg = st->cfg;
        json_t *tc;
        size_t i;
        json_array_foreach(json_object_get(reply->message, "tool_calls"), i, tc) {
                const char *id = json_string_value(json_object_get(tc, "id"));
                json_t *fn = json_object_get(tc, "function");
                const char *name = json_string_value(json_object_get(fn, "name"));
                const char *args = json_string_value(json_object_get(fn, "arguments"));
                name = name ? name : "";
                emit(cfg, "tool_call", call_event(st->iteration, id, name, args));
                struct tool_result s = { 0 };
                double t0 = monotonic_ms();
                toolbox_set_turn(st->tools, st->iteration, st->deadline_ms);
                if (cfg->tools && cfg->tools->owns(cfg->tools->userdata, name))
                        call_extra(st, name, args, &s);
                else if (!(st->tdd && tdd_before_call(st->tdd, st->iteration, name, args, &s)))
                        toolbox_call(st->tools, name, args, &s);
                emit(cfg, "tool_result", result_event(st->iteration, id, &s, monotonic_ms() - t0));
                if (st->tdd)
                        tdd_after_call(st->tdd, st->iteration, &s);
                json_array_append_new(messages, json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id",
                                                          id ? id : "", "content",
                                                          s.content ? s.content : "error: no result"));
                observe_step(st, &s);
                record_step(st, ret, NULL, NULL, &s);
                if (s.final_answer && *ret_answer == NULL)
                        *ret_answer = TAKE_PTR(s.final_answer);
                int stop = step_ends_run(&s, ret);
                tool_result_release(&s);
                if (stop)
                        return 1;
        }
        /* After every tool message of the reply: the pairing stays whole. */
        attach_images(st, messages);
        return 0;
}

/* Text protocol: run the reply's code block, observation as a user message.
 * Returns 1 when the run ends, 0 to go on, 2 when the reply is the answer. */
static int run_text_block(struct agent_state *st, json_t *messages, const char *content, struct agent_result *ret)
{
        struct text_block b;
        int found = textproto_find_block(content ? content : "", &b);
        if (found <= 0)
                return found < 0
                               ? (set_outcome(ret, AGENT_MODEL_ERROR, CORRAL_ERR_INTERNAL, NULL, "out of memory"), 1)
                               : 2;
        /* The test-driven mode writes files from the text protocol too: a
         * block whose info string names one (file=PATH) is a write_file. */
        bool write = st->tdd && b.path;
        const char *name = write ? "write_file" : strcmp(b.lang, "python") == 0 ? "run_python" : "run_shell";
        char id[32];
        snprintf(id, sizeof(id), "text-%u", st->iteration);
        cleanup_free char *write_args = NULL;
        json_t *ev;
        if (write) {
                json_t *a = json_pack("{s:s, s:s}", "path", b.path, "content", b.code);
                write_args = a ? json_dumps(a, JSON_COMPACT) : NULL;
                ev = json_pack("{s:i, s:s, s:s, s:O*}", "iteration", st->iteration, "id", id, "name", name,
                               "arguments", a);
                json_decref(a);
        } else {
                ev = json_pack("{s:i, s:s, s:s, s:s, s:{s:s}}", "iteration", st->iteration, "id", id, "name", name,
                               strcmp(name, "run_python") == 0 ? "code" : "command", b.code, "arguments",
                               strcmp(name, "run_python") == 0 ? "code" : "command", b.code);
        }
        emit(st->cfg, "tool_call", ev);
        struct tool_result s = { .name = name };
        /* The code as a tool call's arguments: an approval's edit replaces
         * it there, and what ran is what the run records (and reproduces). */
        const char *key = strcmp(name, "run_python") == 0 ? "code" : "command";
        if (!write)
                s.args = json_pack("{s:s}", key, b.code);
        double t0 = monotonic_ms();
        toolbox_set_turn(st->tools, st->iteration, st->deadline_ms);
        if (st->tdd && tdd_before_call(st->tdd, st->iteration, name, write_args, &s))
                ;
        else if (write)
                toolbox_call(st->tools, name, write_args ? write_args : "", &s);
        else
                toolbox_exec_code(st->tools, b.lang, b.code, &s);
        emit(st->cfg, "tool_result", result_event(st->iteration, id, &s, monotonic_ms() - t0));
        if (st->tdd)
                tdd_after_call(st->tdd, st->iteration, &s);
        observe_step(st, &s);
        const char *ran = json_string_value(json_object_get(s.args, key));
        record_step(st, ret, b.lang, ran ? ran : b.code, &s);
        cleanup_free char *msg = NULL;
        if (asprintf(&msg, "Result of your %s block:\n%s\nContinue with the next step, or reply without a code block "
                           "when the task is done.", b.lang, s.content ? s.content : "") < 0)
                msg = NULL;
        append_message(messages, "user", msg ? msg : "error: no result");
        attach_images(st, messages);
        text_block_release(&b);
        int stop = step_ends_run(&s, ret);
        tool_result_release(&s);
        return stop;
}

/* The model offers *answer at this turn: with the completion check on, ask
 * the verifier.  1: the answer stands and the run ends (ret->status is set
 * to cancelled when the check was interrupted); 0: it was found incomplete
 * and sent back: *answer is dropped and what is missing is the next user
 * turn.  A check that gives no verdict (an endpoint error, a reply that is
 * not one) lets the answer stand, said in the verdict; so does an
 * incomplete one after verify_rounds send-backs or on the last turn, as
 * nothing could act on it. */
static int offer_answer(struct agent_state *st, json_t *messages, char **answer, struct agent_result *ret)
{
        const struct agent_config *cfg = st->cfg;
        if (st->tdd) {
                char *held = tdd_hold_answer(st->tdd, st->iteration, st->iteration < cfg->max_iterations);
                if (held) {
                        add_user_note(messages, held);
                        free(held);
                        free(*answer);
                        *answer = NULL;
                        return 0;
                }
        }
        if (!cfg->verify)
                return 1;
        json_t *v = agent_verify(cfg, messages, *answer, (unsigned)json_array_size(st->verdicts) + 1,
                                 &st->verify_usage);
        if (v == NULL)
                return 1;
        json_object_set_new(v, "iteration", json_integer(st->iteration));
        bool incomplete = json_is_false(json_object_get(v, "complete"));
        bool can_send = st->sent_back < cfg->verify_rounds && st->iteration < cfg->max_iterations;
        json_object_set_new(v, "action", json_string(!incomplete ? "accepted" : can_send ? "sent_back"
                                                                                        : "accepted_incomplete"));
        json_array_append(st->verdicts, v);
        emit(cfg, "verify", json_incref(v));
        if (json_is_true(json_object_get(v, "cancelled"))) {
                json_decref(v);
                set_outcome(ret, AGENT_CANCELLED, CORRAL_ERR_CANCELLED, NULL, "interrupted while the answer was "
                                                                              "checked");
                return 1;
        }
        if (!incomplete || !can_send) {
                json_decref(v);
                return 1;
        }
        cleanup_free char *note = agent_verify_note(v);
        json_decref(v);
        add_user_note(messages, note ? note : "A check found the task not complete yet: finish it, then give "
                                               "your final answer again.");
        free(*answer);
        *answer = NULL;
        st->sent_back++;
        return 0;
}

/* Message 1: the task, then the plan, then the summary of the turns
 * compacted away; never shortened. */
static void set_task_message(struct agent_state *st, json_t *messages)
{
        cleanup_free char *text = NULL;
        if (asprintf(&text, "%s%s%s%s%s", st->cfg->task,
                     st->plan.plan ? "\n\nYour plan (corral revises it as the work goes on):\n" : "",
                     st->plan.plan ? st->plan.plan : "",
                     st->summary ? "\n\nSummary of your earlier steps (their messages were summarised to save "
                                   "context; the files are still in the workspace):\n"
                                 : "",
                     st->summary ? st->summary : "") >= 0)
                json_object_set_new(json_array_get(messages, 1), "content", json_string(text));
}

#define COMPACT_KEEP_LAST 4

/* The conversation nears the context: summarise the older turns
 * (compact.c) and put the summary after the task.  1 when cancelled. */
static int compact(struct agent_state *st, json_t *messages, uint64_t est_tokens, struct agent_result *ret)
{
        const struct agent_config *cfg = st->cfg;
        size_t cut = compact_cut(messages, COMPACT_KEEP_LAST);
        if (cut == 0)
                return 0;
        char *summary = NULL;
        json_t *ev = agent_compact(cfg, messages, 2, cut, st->summary, &summary, &st->compact_usage);
        if (ev == NULL)
                return 0;
        json_object_set_new(ev, "iteration", json_integer(st->iteration));
        json_object_set_new(ev, "est_tokens_before", json_integer((json_int_t)est_tokens));
        bool cancelled = json_is_true(json_object_get(ev, "cancelled"));
        if (summary) {
                for (size_t i = 2; i < cut; i++)
                        json_array_remove(messages, 2);
                free(st->summary);
                st->summary = summary;
                set_task_message(st, messages);
        }
        json_array_append(st->compact_events, ev);
        emit(cfg, "compact", ev);
        if (cancelled) {
                set_outcome(ret, AGENT_CANCELLED, CORRAL_ERR_CANCELLED, NULL, "interrupted while older turns were "
                                                                              "summarised");
                return 1;
        }
        return 0;
}

/* Write or revise the plan (plan.c) and keep it in the context: after the
 * task (message 1, never shortened), and, for a revision, said in a user
 * turn.  why: what went wrong (stuck), or NULL.  1 when cancelled. */
static int make_plan(struct agent_state *st, json_t *messages, const char *why, struct agent_result *ret)
{
        const struct agent_config *cfg = st->cfg;
        bool first = st->plan.plan == NULL;
        /* why is the plan state's, freed by agent_plan(). */
        cleanup_free char *reason = why ? strdup(why) : NULL;
        json_t *ev = agent_plan(cfg, &st->plan, messages, reason, &st->plan_usage);
        if (ev == NULL)
                return 0;
        json_object_set_new(ev, "iteration", json_integer(st->iteration));
        json_array_append(st->plan_events, ev);
        emit(cfg, "plan", json_incref(ev));
        bool cancelled = json_is_true(json_object_get(ev, "cancelled"));
        bool made = json_is_string(json_object_get(ev, "plan"));
        json_decref(ev);
        if (cancelled) {
                set_outcome(ret, AGENT_CANCELLED, CORRAL_ERR_CANCELLED, NULL, "interrupted while the plan was made");
                return 1;
        }
        if (reason)
                st->stuck++;
        if (!made)
                return 0;
        cleanup_free char *note = NULL;
        set_task_message(st, messages);
        if (first)
                return 0;
        if (reason ? asprintf(&note, "You seem to be stuck: %s. Change your approach. The revised plan:\n%s",
                              reason, st->plan.plan) < 0
                : asprintf(&note, "The plan, revised after your last steps:\n%s\nGo on with the next step.",
                           st->plan.plan) < 0)
                note = NULL;
        if (note)
                add_user_note(messages, note);
        return 0;
}

/* The run result's "planning" (docs/run-json.md). */
static json_t *planning_json(const struct agent_state *st)
{
        return json_pack("{s:i, s:i, s:s?, s:O, s:{s:I, s:I, s:i}}", "plans", (int)st->plan.plans, "stuck",
                         (int)st->stuck, "plan", st->plan.plan, "events", st->plan_events, "usage", "prompt_tokens",
                         (json_int_t)st->plan_usage.prompt_tokens, "completion_tokens",
                         (json_int_t)st->plan_usage.completion_tokens, "requests", (int)st->plan_usage.requests);
}

/* The run result's "compaction" (docs/run-json.md). */
static json_t *compaction_json(const struct agent_state *st)
{
        return json_pack("{s:i, s:O, s:{s:I, s:I, s:i}}", "compactions", (int)json_array_size(st->compact_events),
                         "events", st->compact_events, "usage", "prompt_tokens",
                         (json_int_t)st->compact_usage.prompt_tokens, "completion_tokens",
                         (json_int_t)st->compact_usage.completion_tokens, "requests",
                         (int)st->compact_usage.requests);
}

/* The run result's "verification" (docs/run-json.md). */
static json_t *verification_json(const struct agent_state *st)
{
        json_t *last = json_array_get(st->verdicts, json_array_size(st->verdicts) - 1);
        json_t *complete = json_object_get(last, "complete");
        return json_pack("{s:O, s:i, s:i, s:O, s:{s:I, s:I, s:i}}", "complete", complete ? complete : json_null(),
                         "checks", (int)json_array_size(st->verdicts), "sent_back", (int)st->sent_back, "verdicts",
                         st->verdicts, "usage", "prompt_tokens", (json_int_t)st->verify_usage.prompt_tokens,
                         "completion_tokens", (json_int_t)st->verify_usage.completion_tokens, "requests",
                         (int)st->verify_usage.requests);
}

static int set_system_prompt(const struct agent_config *cfg, json_t *messages, bool text)
{
        cleanup_free char *prompt = agent_system_prompt(cfg, text);
        if (prompt == NULL)
                return -1;
        if (cfg->mode == AGENT_MODE_TEAM) {
                char *both = NULL;
                if (asprintf(&both, "%s\n\n%s", prompt, team_writer_prompt()) < 0)
                        return -1;
                free(prompt);
                prompt = both;
        }
        json_t *m = json_pack("{s:s, s:s}", "role", "system", "content", prompt);
        return m ? json_array_set_new(messages, 0, m) : -1;
}

static json_t *limits_json(const corral_jail_config *j)
{
        json_t *o = json_pack("{s:f, s:I, s:I, s:I, s:I, s:s}", "timeout_s", j->timeout_s, "memory_bytes",
                         (json_int_t)j->memory_bytes, "pids", (json_int_t)j->pids, "disk_bytes",
                         (json_int_t)j->disk_bytes, "output_limit", (json_int_t)j->output_limit, "net",
                         j->net == CORRAL_NET_NONE   ? "none"
                         : j->net == CORRAL_NET_DOWN ? "down"
                         : j->net == CORRAL_NET_HOST ? "host"
                                                     : "allow");
        if (o && j->net == CORRAL_NET_ALLOW) {
                json_t *a = json_array();
                for (size_t i = 0; a && j->net_allow && j->net_allow[i]; i++)
                        json_array_append_new(a, json_string(j->net_allow[i]));
                json_object_set_new(o, "net_allow", a);
        }
        return o;
}

int agent_run(const struct agent_config *cfg, struct agent_result *ret, corral_error **err)
{
        memset(ret, 0, sizeof(*ret));
        if (cfg->task == NULL || strlen(cfg->task) > AGENT_TASK_MAX)
                return corral_usage(err, "the task is %zu bytes, more than the %u KiB a task may be (it is sent with "
                                         "every model turn): put the text in a file, stage it as an input, and "
                                         "name it in the task",
                                    cfg->task ? strlen(cfg->task) : 0, AGENT_TASK_MAX >> 10);
        struct agent_state st = { .cfg = cfg, .verdicts = json_array(), .plan_events = json_array(),
                                  .compact_events = json_array() };
        plan_state_init(&st.plan);
        if (cfg->mode == AGENT_MODE_TEAM)
                st.team = team_new(cfg);
        bool oom = st.verdicts == NULL || st.plan_events == NULL || st.compact_events == NULL ||
                   (cfg->mode == AGENT_MODE_TEAM && st.team == NULL);
        if (oom || toolbox_new(cfg, &st.tools, err) < 0 ||
            (cfg->mode == AGENT_MODE_TDD && (st.tdd = tdd_new(cfg, st.tools, err)) == NULL)) {
                team_free(st.team);
                json_decref(st.verdicts);
                json_decref(st.plan_events);
                json_decref(st.compact_events);
                toolbox_free(st.tools);
                return oom ? corral_fail(err, ENOMEM, "cannot start the run") : -1;
        }
        bool text = cfg->text_protocol;
        json_t *tools = text ? NULL : toolbox_schemas();
        if (tools && cfg->tools && cfg->tools->schemas)
                json_array_extend(tools, cfg->tools->schemas);
        json_t *messages = json_array();
        char *answer = NULL;
        bool context_retry = false;
        bool last_turn_said = false;
        uint64_t context_target = cfg->context_tokens * 3 / 4;

        if (messages == NULL || (!text && tools == NULL) || json_array_append_new(messages, json_null()) < 0 ||
            set_system_prompt(cfg, messages, text) < 0 || append_message(messages, "user", cfg->task) < 0) {
                json_decref(messages);
                json_decref(tools);
                json_decref(st.verdicts);
                json_decref(st.plan_events);
                json_decref(st.compact_events);
                team_free(st.team);
                tdd_free(st.tdd);
                toolbox_free(st.tools);
                return corral_fail(err, ENOMEM, "cannot start the run");
        }
        if (st.team)
                toolbox_set_team(st.tools, st.team);
        if (cfg->wall_budget_s > 0)
                st.deadline_ms = monotonic_ms() + cfg->wall_budget_s * 1000;
        /* The zygote starts while the model thinks about the first turn. */
        bool prewarm = !cfg->stateless && !cfg->cold && session_warm_supported(cfg->jail, NULL) == 0;
        /* The session host's zygote, kept between runs (started when none
         * runs); else one of this process's. */
        if (prewarm && cfg->session_host && session_client_prewarm(NULL) == 0)
                prewarm = false;
        if (prewarm)
                session_prewarm();

        json_t *start = json_pack("{s:s, s:s, s:o}", "task", cfg->task, "protocol", text ? "text" : "tools", "limits",
                                  limits_json(cfg->jail));
        if (start && cfg->images)
                json_object_set_new(start, "images", json_pack("{s:i, s:i, s:I, s:i}", "per_step",
                                                               (int)cfg->images_per_step, "per_run",
                                                               (int)cfg->images_per_run, "bytes",
                                                               (json_int_t)cfg->image_bytes, "side",
                                                               (int)cfg->image_side));
        if (start && !text && cfg->tools && cfg->tools->describe)
                json_object_set(start, "tools_extra", cfg->tools->describe);
        if (start && cfg->run_info)
                json_object_update(start, cfg->run_info);
        emit(cfg, "run_start", start);
        /* What every turn sends before any output: if it fills the context
         * alone, every step's output will be cut to nothing. */
        const char *sys = json_string_value(json_object_get(json_array_get(messages, 0), "content"));
        uint64_t fixed = model_estimate_tokens(sys ? sys : "", sys ? strlen(sys) : 0) +
                         model_estimate_tokens(cfg->task, strlen(cfg->task));
        if (fixed > context_target) {
                cleanup_free char *msg = NULL;
                if (asprintf(&msg, "the system prompt and the task alone take about %" PRIu64 " tokens, more than "
                                   "3/4 of the model's context of %" PRIu64 ": older output will be cut short "
                                   "every turn; put long text in an input file and name it in the task, or give "
                                   "the model's context size",
                             fixed, (uint64_t)cfg->context_tokens) >= 0)
                        emit(cfg, "notice", json_pack("{s:s, s:s}", "message", msg, "field", "context_tokens"));
        }

        ret->status = AGENT_GAVE_UP;
        for (unsigned turn = 1;; turn++) {
                const struct model_usage *u = model_client_usage(cfg->model);
                if (turn > cfg->max_iterations) {
                        set_outcome(ret, AGENT_GAVE_UP, 0, "max_iterations",
                                    "no answer after %u model turns, the maximum number of iterations",
                                    cfg->max_iterations);
                        break;
                }
                if (st.deadline_ms > 0 && monotonic_ms() >= st.deadline_ms) {
                        set_outcome(ret, AGENT_GAVE_UP, 0, "wall_budget", "no answer within the %.0f s wall budget",
                                    cfg->wall_budget_s);
                        break;
                }
                if (cfg->token_budget && u->prompt_tokens + u->completion_tokens >= cfg->token_budget) {
                        set_outcome(ret, AGENT_GAVE_UP, 0, "token_budget",
                                    "no answer within the token budget: %llu tokens used of %llu",
                                    (unsigned long long)(u->prompt_tokens + u->completion_tokens),
                                    (unsigned long long)cfg->token_budget);
                        break;
                }
                st.iteration = turn;
                /* Planning: the first plan, a scheduled revision, or one
                 * forced by stuck detection. */
                if (cfg->plan && !last_turn_said &&
                    (turn == 1 || st.plan.stuck_reason ||
                     (cfg->replan_every && st.plan.steps_since_plan >= cfg->replan_every)) &&
                    !(turn == 1 && st.plan.plans > 0) && make_plan(&st, messages, st.plan.stuck_reason, ret))
                        break;
                /* The last turn: say so, or the model spends it on one more step. */
                if (turn == cfg->max_iterations && turn > 1 && !last_turn_said) {
                        add_user_note(messages, "This is your last turn (the run's iteration limit): do not run "
                                                "more code; give your final answer now with what you have found, "
                                                "and say what is left undone.");
                        last_turn_said = true;
                }
                uint64_t est_tokens;
                /* Near the context: summarise older turns first (bounded),
                 * then shorten what still does not fit. */
                if (cfg->compact && json_array_size(st.compact_events) < cfg->compact_max &&
                    (est_tokens = estimate_tokens(messages, tools)) > context_target &&
                    compact(&st, messages, est_tokens, ret))
                        break;
                unsigned trimmed = trim_context(messages, tools, context_target, &est_tokens);
                emit(cfg, "model_request",
                     json_pack("{s:i, s:i, s:I, s:i}", "iteration", turn, "messages", (int)json_array_size(messages),
                               "est_prompt_tokens", (json_int_t)est_tokens, "trimmed", trimmed));

                struct turn_hooks th = { .cfg = cfg, .iteration = turn };
                struct model_hooks hooks = { .on_content = on_content, .on_retry = on_retry, .userdata = &th };
                struct chat_reply reply;
                corral_error *merr = NULL;
                double t0 = monotonic_ms();
                if (model_chat(cfg->model, messages, tools, &hooks, &reply, &merr) < 0) {
                        int kind = merr ? merr->kind : CORRAL_ERR_INTERNAL;
                        if (kind == CORRAL_ERR_MODEL_NO_TOOLS && !text) {
                                emit(cfg, "notice", json_pack("{s:s}", "message", "the endpoint does not accept "
                                                              "tools; switching to the text protocol (code in "
                                                              "fenced blocks)"));
                                text = true;
                                json_decref(tools);
                                tools = NULL;
                                corral_error_free(merr);
                                if (set_system_prompt(cfg, messages, true) < 0) {
                                        set_outcome(ret, AGENT_MODEL_ERROR, CORRAL_ERR_INTERNAL, NULL, "out of memory");
                                        break;
                                }
                                turn--;
                                continue;
                        }
                        if (kind == CORRAL_ERR_MODEL_NO_IMAGES && !toolbox_images_are_off(st.tools)) {
                                /* Once: no images for the rest of the run, and none resent. */
                                toolbox_images_off(st.tools);
                                chat_messages_drop_images(messages, json_array_size(messages), "the endpoint "
                                                          "does not accept images; the file is in the workspace");
                                emit(cfg, "notice", json_pack("{s:s, s:s}", "message", "the endpoint does not "
                                                              "accept images; figures are named but no longer "
                                                              "sent for the rest of the run", "reason",
                                                              merr->msg));
                                corral_error_free(merr);
                                turn--;
                                continue;
                        }
                        if (kind == CORRAL_ERR_MODEL_CONTEXT && !context_retry) {
                                context_retry = true;
                                context_target /= 2;
                                emit(cfg, "notice", json_pack("{s:s}", "message", "the conversation exceeded the "
                                                              "model's context; shortening older output and "
                                                              "retrying"));
                                corral_error_free(merr);
                                turn--;
                                continue;
                        }
                        set_outcome(ret, kind == CORRAL_ERR_CANCELLED ? AGENT_CANCELLED : AGENT_MODEL_ERROR, kind,
                                    merr ? merr->field : NULL, "%s", merr ? merr->msg : "the model request failed");
                        corral_error_free(merr);
                        break;
                }
                ret->iterations = turn;
                if (st.team)
                        team_count_writer(st.team, &reply.usage);
                json_t *rev = reply_event(turn, &reply, monotonic_ms() - t0);
                if (rev && cfg->priced)
                        json_object_set_new(rev, "cost", json_real(agent_cost(cfg, reply.usage.prompt_tokens,
                                                                              reply.usage.completion_tokens)));
                emit(cfg, "model_reply", rev);
                json_array_append(messages, reply.message);
                json_t *content_v = json_object_get(reply.message, "content");
                const char *content = json_is_string(content_v) ? json_string_value(content_v) : NULL;

                int stop = 0;
                if (!text && chat_reply_tool_calls(&reply) > 0) {
                        stop = run_tool_calls(&st, messages, &reply, ret, &answer);
                        if (!stop && answer && (stop = offer_answer(&st, messages, &answer, ret)) &&
                            ret->status != AGENT_CANCELLED)
                                ret->status = AGENT_ANSWERED;
                } else if (text && content && *content) {
                        int r = run_text_block(&st, messages, content, ret);
                        if (r == 2) {
                                answer = strdup(content);
                                if ((stop = offer_answer(&st, messages, &answer, ret)) &&
                                    ret->status != AGENT_CANCELLED)
                                        ret->status = AGENT_ANSWERED;
                        } else {
                                stop = r;
                        }
                } else if (content && content[strspn(content, " \t\r\n")]) {
                        answer = strdup(content);
                        if ((stop = offer_answer(&st, messages, &answer, ret)) && ret->status != AGENT_CANCELLED)
                                ret->status = AGENT_ANSWERED;
                } else {
                        emit(cfg, "notice", json_pack("{s:s}", "message", "the model sent an empty reply; asking "
                                                      "it to go on"));
                        append_message(messages, "user", text ? "Your reply was empty. Reply with a code block to "
                                                                "run, or with your final answer."
                                                              : "Your reply was empty. Call a tool, or reply with "
                                                                "your final answer.");
                }
                chat_reply_release(&reply);
                if (stop)
                        break;
        }
        if (ret->status == AGENT_ANSWERED) {
                free(ret->reason);
                ret->reason = NULL;
                ret->reason_field = NULL;
                ret->answer = answer ? answer : strdup("");
                answer = NULL;
        }
        ret->text_protocol = text;
        if (cfg->verify)
                ret->verification = verification_json(&st);
        if (cfg->plan)
                ret->planning = planning_json(&st);
        if (cfg->compact && json_array_size(st.compact_events) > 0)
                ret->compaction = compaction_json(&st);
        if (st.team)
                ret->team = team_result_json(st.team);
        if (st.tdd)
                ret->tdd = tdd_finish(st.tdd);
        json_decref(st.compact_events);
        free(st.summary);
        json_decref(st.verdicts);
        json_decref(st.plan_events);
        plan_state_release(&st.plan);
        /* The session ends before the zygote's hold is dropped, and before
         * the tests' directory it binds is closed. */
        toolbox_free(st.tools);
        team_free(st.team);
        tdd_free(st.tdd);
        if (prewarm)
                session_prewarm_end();
        free(answer);
        json_decref(messages);
        json_decref(tools);
        return 0;
}

json_t *agent_reproduce_run(const struct agent_config *cfg, struct workspace *orig, const struct agent_result *res,
                            corral_error **ret_err)
{
        return agent_reproduce(cfg, orig, res->steps, res->status == AGENT_ANSWERED ? res->answer : NULL, ret_err);
}
