/* observe.c: an execution result turned into what the model reads.
 *
 * The observation says how the run ended in words a model acts on (a
 * timeout names the limit, a blocked system call names the call, as do
 * calls the sandbox answered with EPERM), gives
 * stdout and stderr (long output as head + tail around a marker saying how
 * much was cut: the end of a traceback matters most, so the tail is the
 * larger part), and lists the files the step created, changed or deleted,
 * each with its size and what its content is ("PNG 1200×600").
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../workspace/artifact.h"
#include "agent-internal.h"

/* Back up to the start of a UTF-8 sequence so a cut never splits one. */
static size_t utf8_floor(const char *s, size_t i)
{
        while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
                i--;
        return i;
}

char *agent_cut_middle(const char *text, size_t len, size_t limit)
{
        if (len <= limit)
                return utf8_sanitize(text, len, NULL);
        size_t head = utf8_floor(text, limit / 3);
        size_t tail_start = utf8_floor(text, len - (limit - limit / 3));
        /* Prefer cutting at line ends. */
        const char *nl = memrchr(text, '\n', head);
        if (nl && (size_t)(nl - text) > head / 2)
                head = (size_t)(nl - text) + 1;
        nl = memchr(text + tail_start, '\n', len - tail_start);
        if (nl && (size_t)(nl - text) < tail_start + (len - tail_start) / 2)
                tail_start = (size_t)(nl - text) + 1;
        size_t cut_lines = 0;
        for (size_t i = head; i < tail_start; i++)
                cut_lines += text[i] == '\n';
        cleanup_free char *h = utf8_sanitize(text, head, NULL);
        cleanup_free char *t = utf8_sanitize(text + tail_start, len - tail_start, NULL);
        char *out = NULL;
        if (h == NULL || t == NULL ||
            asprintf(&out, "%s%s[... %zu bytes (%zu lines) cut here ...]\n%s", h,
                     head > 0 && text[head - 1] != '\n' ? "\n" : "", tail_start - head, cut_lines, t) < 0)
                return NULL;
        return out;
}

static const char *ending(const corral_jail_result *res, const corral_jail_config *jail, char *buf, size_t len)
{
        switch (res->limit) {
        case CORRAL_LIMIT_WALL_TIME:
                snprintf(buf, len, "timeout: the %.0f s wall-clock limit stopped the program (make it faster, or "
                                   "work on a sample of the data)", jail->timeout_s);
                return buf;
        case CORRAL_LIMIT_CPU_TIME:
                snprintf(buf, len, "killed: the CPU-time limit (%.0f s) stopped the program", jail->cpu_time_s);
                return buf;
        case CORRAL_LIMIT_MEMORY:
                snprintf(buf, len, "out of memory: the %" PRIu64 " MiB memory limit stopped the program (use less "
                                   "memory: read fewer columns, process in chunks)", jail->memory_bytes >> 20);
                return buf;
        case CORRAL_LIMIT_PIDS:
                snprintf(buf, len, "killed: the limit of %" PRIu64 " processes was reached", jail->pids);
                return buf;
        case CORRAL_LIMIT_SECCOMP:
                snprintf(buf, len, "killed: the program made a system call the sandbox forbids (%s)",
                         res->seccomp_syscall_name ? res->seccomp_syscall_name : "unknown");
                return buf;
        case CORRAL_LIMIT_FILE_SIZE:
                snprintf(buf, len, "killed: a file grew past the %" PRIu64 " MiB disk limit", jail->disk_bytes >> 20);
                return buf;
        case CORRAL_LIMIT_SIGNAL:
                snprintf(buf, len, "killed by signal %d%s%s", res->signal, res->reason ? ": " : "",
                         res->reason ? res->reason : "");
                return buf;
        case CORRAL_LIMIT_CANCELLED:
                return "cancelled by the user";
        case CORRAL_LIMIT_NONE:
        default:
                break;
        }
        if (res->status == CORRAL_STATUS_OK)
                return "ok (exit status 0)";
        snprintf(buf, len, "error (exit status %d)%s%s", res->exit_code, res->reason ? ": " : "",
                 res->reason ? res->reason : "");
        return buf;
}

static void put_stream(FILE *f, const char *name, const char *data, size_t len, bool truncated, uint64_t total,
                       size_t limit)
{
        if (len == 0 && !truncated) {
                fprintf(f, "%s: (empty)\n", name);
                return;
        }
        cleanup_free char *cut = agent_cut_middle(data ? data : "", len, limit);
        fprintf(f, "%s:\n%s", name, cut ? cut : "");
        if (len > 0 && data[len - 1] != '\n')
                fputc('\n', f);
        if (truncated)
                fprintf(f, "[the program wrote %" PRIu64 " bytes to %s; only the first %zu were kept]\n", total, name,
                        len);
}

/* "created output/plot.png (48 KB, PNG 1200×600)": a file by its size and
 * what its content is (artifact.h); anything else by its type, which says
 * it was not read ("created output/x (symlink)"). */
static void put_artifact(FILE *f, const json_t *a)
{
        const char *change = json_string_value(json_object_get(a, "change"));
        const char *path = json_string_value(json_object_get(a, "path"));
        const char *type = json_string_value(json_object_get(a, "type"));
        char size[32], what[160];
        fprintf(f, "  %s %s", change ? change : "changed", path ? path : "?");
        if (change && strcmp(change, "deleted") == 0) {
                fputc('\n', f);
                return;
        }
        if (type == NULL || strcmp(type, "file") != 0) {
                fprintf(f, " (%s)\n", type ? type : "unknown type");
                return;
        }
        artifact_format_size((uint64_t)json_integer_value(json_object_get(a, "size")), size, sizeof(size));
        artifact_describe(a, what, sizeof(what));
        fprintf(f, " (%s%s%s)\n", size, what[0] ? ", " : "", what);
}

char *agent_observe_exec(const corral_jail_result *res, const corral_jail_config *jail, const json_t *artifacts,
                         size_t stream_limit)
{
        char *out = NULL;
        size_t out_len = 0;
        FILE *f = open_memstream(&out, &out_len);
        if (f == NULL)
                return NULL;
        char buf[256];
        fprintf(f, "status: %s\nwall time: %.2f s\n", ending(res, jail, buf, sizeof(buf)), res->wall_ms / 1000);
        /* A refused call usually explains an "Operation not permitted" below. */
        for (size_t i = 0; i < res->n_denied; i++)
                fprintf(f, "%s%s%s", i == 0 ? "refused by the sandbox (EPERM, the program went on): " : ", ",
                        res->denied[i], i + 1 == res->n_denied ? "\n" : "");
        put_stream(f, "stdout", res->stdout_buf, res->stdout_len, res->stdout_truncated, res->stdout_total,
                   stream_limit);
        put_stream(f, "stderr", res->stderr_buf, res->stderr_len, res->stderr_truncated, res->stderr_total,
                   stream_limit);
        if (json_array_size(artifacts) > 0) {
                fprintf(f, "files changed in /workspace:\n");
                size_t i;
                json_t *a;
                json_array_foreach(artifacts, i, a) {
                        if (i == 50) {
                                fprintf(f, "  ... and %zu more\n", json_array_size(artifacts) - 50);
                                break;
                        }
                        put_artifact(f, a);
                }
        }
        fclose(f);
        return out;
}

json_t *agent_exec_to_json(const corral_jail_result *res, size_t stream_limit)
{
        cleanup_free char *out = agent_cut_middle(res->stdout_buf ? res->stdout_buf : "", res->stdout_len,
                                                  stream_limit * 4);
        cleanup_free char *errs = agent_cut_middle(res->stderr_buf ? res->stderr_buf : "", res->stderr_len,
                                                   stream_limit * 4);
        return json_pack("{s:s, s:i, s:s?, s:s?, s:b, s:b, s:f, s:f, s:I, s:s?, s:s?}", "status",
                         corral_status_to_string(res->status), "exit_code", res->exit_code, "stdout", out, "stderr",
                         errs, "stdout_truncated", res->stdout_truncated, "stderr_truncated", res->stderr_truncated,
                         "wall_ms", round_ms(res->wall_ms), "cpu_ms", round_ms(res->cpu_ms), "memory_peak_bytes",
                         (json_int_t)res->memory_peak_bytes, "limit", corral_limit_to_string(res->limit), "reason",
                         res->reason);
}

void agent_put_recent_outputs(FILE *f, const json_t *messages, size_t n, size_t max_bytes, const char *none_text)
{
        size_t picked[16], k = 0;
        if (n > ARRAY_SIZE(picked))
                n = ARRAY_SIZE(picked);
        for (size_t i = json_array_size(messages); i > 2 && k < n; i--) {
                const json_t *m = json_array_get(messages, i - 1);
                const char *role = json_string_value(json_object_get(m, "role"));
                if (role && (strcmp(role, "tool") == 0 || strcmp(role, "user") == 0) &&
                    json_is_string(json_object_get(m, "content")))
                        picked[k++] = i - 1;
        }
        if (k == 0)
                fprintf(f, "%s\n", none_text);
        while (k-- > 0) {
                const char *text = json_string_value(json_object_get(json_array_get(messages, picked[k]), "content"));
                cleanup_free char *cut = agent_cut_middle(text, strlen(text), max_bytes);
                fprintf(f, "--- output ---\n%s\n", cut ? cut : "");
        }
}

int agent_side_call(model_client *m, const char *purpose, const char *system, const char *user, json_t *ev,
                    struct model_usage *ret_usage, struct chat_reply *ret_reply)
{
        json_t *req = json_pack("[{s:s, s:s}, {s:s, s:s}]", "role", "system", "content", system, "role", "user",
                                "content", user);
        if (req == NULL) {
                json_object_set_new(ev, "error", json_string("out of memory"));
                return -1;
        }
        struct model_hooks hooks = { .purpose = purpose };
        corral_error *err = NULL;
        double t0 = monotonic_ms();
        int rc = model_chat(m, req, NULL, &hooks, ret_reply, &err);
        json_decref(req);
        json_object_set_new(ev, "wait_ms", json_real(round_ms(monotonic_ms() - t0)));
        if (rc < 0) {
                json_object_set_new(ev, "error", json_string(err ? err->msg : "the model request failed"));
                if (err && err->kind == CORRAL_ERR_CANCELLED)
                        json_object_set_new(ev, "cancelled", json_true());
                corral_error_free(err);
                return -1;
        }
        if (ret_usage) {
                ret_usage->prompt_tokens += ret_reply->usage.prompt_tokens;
                ret_usage->completion_tokens += ret_reply->usage.completion_tokens;
                ret_usage->requests++;
        }
        json_object_set_new(ev, "usage", json_pack("{s:I, s:I}", "prompt_tokens",
                                                   (json_int_t)ret_reply->usage.prompt_tokens, "completion_tokens",
                                                   (json_int_t)ret_reply->usage.completion_tokens));
        return 0;
}
