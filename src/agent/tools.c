/* tools.c: the tools offered to the model, and what running one means.
 *
 * run_python and run_shell execute in a fresh jail over the run's
 * workspace (cwd /workspace, input/ read-only); read_file, write_file and
 * list_files are done by corral on the host through workspace.h, which
 * confines them to the workspace; final_answer ends the run.  Whatever the
 * model sends (an unknown tool, arguments that are not JSON, a missing or
 * mistyped argument) becomes an observation it can act on, never an error
 * of the run.  Only a jail that cannot be set up ends the run (fatal).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../lib/redact.h"
#include "../model/chat.h"
#include "agent-internal.h"

static const char tool_schemas_json[] =
        "["
        "{\"type\":\"function\",\"function\":{\"name\":\"run_python\","
        "\"description\":\"Run Python 3 code in a fresh sandboxed process (cwd /workspace, no network). Returns the "
        "status, stdout, stderr and the files the run created, changed or deleted. Print what you need to see.\","
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\",\"description\":"
        "\"the Python source to run\"}},\"required\":[\"code\"]}}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"run_shell\","
        "\"description\":\"Run a bash command in a fresh sandboxed process (cwd /workspace, no network). Returns the "
        "status, stdout, stderr and the files it changed.\","
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\",\"description\":"
        "\"the bash command line or script\"}},\"required\":[\"command\"]}}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"read_file\","
        "\"description\":\"Read a text file of the workspace (path relative to /workspace).\","
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
        "\"required\":[\"path\"]}}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"write_file\","
        "\"description\":\"Create or replace a file of the workspace (path relative to /workspace; input/ is "
        "read-only).\","
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":"
        "{\"type\":\"string\"}},\"required\":[\"path\",\"content\"]}}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"list_files\","
        "\"description\":\"List the files of a workspace directory (default: all of /workspace) with types and "
        "sizes.\","
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"final_answer\","
        "\"description\":\"Finish the task with the answer for the user: the key results and the files written "
        "to /workspace/output/.\","
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"answer\":{\"type\":\"string\"}},"
        "\"required\":[\"answer\"]}}}"
        "]";

json_t *agent_tool_schemas(void)
{
        return json_loads(tool_schemas_json, 0, NULL);
}

const char *agent_tool_names(void)
{
        return "run_python, run_shell, read_file, write_file, list_files, final_answer";
}

void agent_step_release(struct agent_step *s)
{
        json_decref(s->args);
        json_decref(s->exec);
        json_decref(s->artifacts);
        free(s->content);
        free(s->final_answer);
        corral_error_free(s->err);
        memset(s, 0, sizeof(*s));
}

static void say(struct agent_step *s, bool ok, const char *fmt, ...) CORRAL_PRINTF(3, 4);
static void say(struct agent_step *s, bool ok, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        str_vsetf(&s->content, fmt, ap);
        va_end(ap);
        s->ok = ok;
}

/* A string argument, or NULL with the observation saying what is wrong. */
static const char *arg_string(struct agent_step *s, const char *key, bool required)
{
        json_t *v = json_object_get(s->args, key);
        if (v == NULL || json_is_null(v)) {
                if (required)
                        say(s, false, "error: %s needs the argument \"%s\" (a string); call it again with it", s->name,
                            key);
                return NULL;
        }
        if (!json_is_string(v)) {
                say(s, false, "error: the argument \"%s\" of %s must be a string", key, s->name);
                return NULL;
        }
        return json_string_value(v);
}

static uint64_t fnv1a(const char *s, const char *lang)
{
        uint64_t h = 1469598103934665603ull;
        for (const char *p = lang; *p; p++)
                h = (h ^ (unsigned char)*p) * 1099511628211ull;
        for (const char *p = s; *p; p++)
                h = (h ^ (unsigned char)*p) * 1099511628211ull;
        return h;
}

/* When this exact code failed before, say so: models loop on it otherwise. */
static void note_repeat(struct agent_state *st, struct agent_step *s, const char *lang, const char *code)
{
        uint64_t h = fnv1a(code, lang);
        for (size_t i = 0; i < st->n_failed; i++) {
                if (st->failed[i].hash != h)
                        continue;
                char *more = NULL;
                if (asprintf(&more, "%s\nnote: this is exactly the code of step %u, which failed too. Running it "
                                    "again will not help: read the error above and change the approach.\n",
                             s->content ? s->content : "", st->failed[i].step) >= 0) {
                        free(s->content);
                        s->content = more;
                }
                return;
        }
        if (st->n_failed < ARRAY_SIZE(st->failed)) {
                st->failed[st->n_failed].hash = h;
                st->failed[st->n_failed].step = st->step;
                st->n_failed++;
        }
}

/* The workspace before a step that may change it.  Between steps only
 * corral's own tools touch it, and each keeps the snapshot it took after
 * itself, so that one serves as the next step's "before": one walk per
 * step, not two. */
static void snapshot_before(struct agent_state *st)
{
        if (st->last_snapshot == NULL)
                workspace_snapshot(st->cfg->ws, &st->last_snapshot, NULL);
}

/* What the step changed since snapshot_before(); the new snapshot is kept. */
static json_t *diff_since_before(struct agent_state *st)
{
        struct ws_snapshot *after = NULL;
        if (workspace_snapshot(st->cfg->ws, &after, NULL) < 0)
                return NULL;
        json_t *d = st->last_snapshot ? workspace_diff(st->last_snapshot, after) : NULL;
        ws_snapshot_free(st->last_snapshot);
        st->last_snapshot = after;
        return d;
}

static void redact_step(struct agent_state *st, struct agent_step *s)
{
        if (st->cfg->secrets == NULL || s->content == NULL)
                return;
        char *r = redact_text(s->content, st->cfg->secrets);
        if (r) {
                free(s->content);
                s->content = r;
        }
}

/* A jail's note (e.g. limits falling back to rlimits): once per run. */
static void on_jail_notice(void *userdata, const char *message)
{
        struct agent_state *st = userdata;
        uint64_t h = fnv1a(message, "");
        for (size_t i = 0; i < st->n_notices; i++)
                if (st->notices[i] == h)
                        return;
        if (st->n_notices < ARRAY_SIZE(st->notices))
                st->notices[st->n_notices++] = h;
        if (st->cfg->trace)
                trace_emit(st->cfg->trace, "notice", json_pack("{s:s}", "message", message));
}

void agent_exec_code(struct agent_state *st, const char *lang, const char *code, struct agent_step *s)
{
        const struct agent_config *cfg = st->cfg;
        corral_jail_config jc;
        corral_error *err = NULL;
        bool python = strcmp(lang, "python") == 0;
        char name[64], path[96];

        st->step++;
        snprintf(name, sizeof(name), "step%u.%s", st->step, python ? "py" : "sh");
        snprintf(path, sizeof(path), "/run/corral/%s", name);
        if (corral_jail_config_copy(&jc, cfg->jail, &err) < 0) {
                s->fatal = true;
                s->err = err;
                return;
        }
        char *argv[] = { python ? "python3" : "bash", path, NULL };
        cleanup_free char *input = NULL;
        if (asprintf(&input, "%s/input", cfg->ws->root) < 0)
                input = NULL;
        free(jc.workspace);
        jc.workspace = strdup(cfg->ws->root);
        if (corral_jail_config_set_script(&jc, name, code, strlen(code), &err) < 0) {
                say(s, false, "error: %s", err->msg);
                goto out;
        }
        if (input == NULL || jc.workspace == NULL || corral_jail_config_set_argv(&jc, argv, &err) < 0 ||
            corral_jail_config_add_bind_at(&jc, input, "/workspace/input", false, &err) < 0) {
                s->fatal = true;
                goto out;
        }
        if (st->deadline_ms > 0) {
                double left = (st->deadline_ms - monotonic_ms()) / 1000;
                if (left < 1)
                        left = 1;
                if (left < jc.timeout_s)
                        jc.timeout_s = left;
        }
        snapshot_before(st);

        corral_jail_io io = { .capture = true, .cancel_fd = cfg->cancel_fd, .stdin_fd = -1,
                              .on_notice = on_jail_notice, .userdata = st };
        corral_jail_result res;
        double t0 = monotonic_ms();
        if (corral_jail_run(&jc, &io, &res, &err) < 0) {
                s->fatal = true;
                goto out;
        }
        double jail_ms = monotonic_ms() - t0;
        s->artifacts = diff_since_before(st);
        s->exec = agent_exec_to_json(&res, cfg->observation_bytes);
        if (s->exec)
                json_object_set_new(s->exec, "jail_ms", json_real(jail_ms)); /* the whole jail: set-up to teardown */
        s->content = agent_observe_exec(&res, &jc, s->artifacts, cfg->observation_bytes);
        s->ok = res.status == CORRAL_STATUS_OK;
        s->cancelled = res.limit == CORRAL_LIMIT_CANCELLED;
        if (!s->ok && !s->cancelled)
                note_repeat(st, s, lang, code);
        redact_step(st, s);
        corral_jail_result_release(&res);
out:
        if (s->fatal) {
                s->err = TAKE_PTR(err);
                if (s->err == NULL)
                        corral_fail(&s->err, ENOMEM, "cannot prepare the jail");
        }
        corral_error_free(err);
        corral_jail_config_release(&jc);
}

static void tool_read(struct agent_state *st, struct agent_step *s)
{
        const char *path = arg_string(s, "path", true);
        if (path == NULL)
                return;
        corral_error *err = NULL;
        cleanup_free char *data = NULL;
        size_t len = 0;
        bool truncated = false;
        if (workspace_read_file(st->cfg->ws, path, st->cfg->read_bytes, &data, &len, &truncated, &err) < 0) {
                say(s, false, "error: %s", err->msg);
                corral_error_free(err);
                return;
        }
        if (!utf8_valid(data, len) || memchr(data, '\0', len)) {
                say(s, false, "error: '%s' is a binary file (%zu bytes read); inspect it with run_python", path, len);
                return;
        }
        if (truncated)
                say(s, true, "%s\n[... only the first %zu bytes of '%s' are shown; read the rest with run_python]",
                    data, len, path);
        else
                say(s, true, "%s", data);
        redact_step(st, s);
}

static void tool_write(struct agent_state *st, struct agent_step *s)
{
        const char *path = arg_string(s, "path", true);
        const char *content = path ? arg_string(s, "content", true) : NULL;
        if (content == NULL)
                return;
        corral_error *err = NULL;
        snapshot_before(st);
        size_t len = json_string_length(json_object_get(s->args, "content"));
        if (workspace_write_file(st->cfg->ws, path, content, len, &err) < 0) {
                say(s, false, "error: %s", err->msg);
                corral_error_free(err);
        } else {
                say(s, true, "wrote %zu bytes to %s", len, path);
                s->artifacts = diff_since_before(st);
        }
}

static void tool_list(struct agent_state *st, struct agent_step *s)
{
        const char *path = json_object_get(s->args, "path") ? arg_string(s, "path", false) : "";
        if (path == NULL && s->content)
                return;
        json_t *list = NULL;
        corral_error *err = NULL;
        if (workspace_list_files(st->cfg->ws, path ? path : "", 8, 500, &list, &err) < 0) {
                say(s, false, "error: %s", err->msg);
                corral_error_free(err);
                return;
        }
        char *out = NULL;
        size_t out_len = 0;
        FILE *f = open_memstream(&out, &out_len);
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
                if (f == NULL)
                        break;
                if (json_is_true(json_object_get(e, "truncated"))) {
                        fprintf(f, "[... more entries not shown]\n");
                        continue;
                }
                const char *type = json_string_value(json_object_get(e, "type"));
                fprintf(f, "%s%s", json_string_value(json_object_get(e, "path")),
                        type && strcmp(type, "dir") == 0 ? "/" : "");
                if (type && strcmp(type, "file") == 0)
                        fprintf(f, "  (%" JSON_INTEGER_FORMAT " bytes)", json_integer_value(json_object_get(e, "size")));
                else if (type && strcmp(type, "dir") != 0)
                        fprintf(f, "  (%s)", type);
                fputc('\n', f);
        }
        if (f)
                fclose(f);
        json_decref(list);
        say(s, true, "%s", out && *out ? out : "(no files)\n");
        free(out);
}

void agent_tool_run(struct agent_state *st, const char *name, const char *arguments, struct agent_step *s)
{
        s->name = name;
        /* Arguments: a JSON object (an empty string means none). */
        const char *a = arguments && arguments[strspn(arguments, " \t\r\n")] ? arguments : "{}";
        corral_error *err = NULL;
        if (chat_json_parse(a, strlen(a), "the arguments", &s->args, &err) < 0) {
                say(s, false, "error: the arguments of %s are not valid JSON (%s); send a JSON object such as "
                              "{\"code\": \"print(1)\"}", name, err->msg);
                corral_error_free(err);
                return;
        }
        if (!json_is_object(s->args)) {
                say(s, false, "error: the arguments of %s must be a JSON object, not %s", name,
                    json_is_array(s->args) ? "an array" : "a scalar");
                return;
        }
        if (strcmp(name, "run_python") == 0 || strcmp(name, "run_shell") == 0) {
                bool py = name[4] == 'p';
                const char *code = arg_string(s, py ? "code" : "command", true);
                if (code == NULL)
                        return;
                if (*code == '\0') {
                        say(s, false, "error: the %s to run is empty", py ? "code" : "command");
                        return;
                }
                agent_exec_code(st, py ? "python" : "bash", code, s);
        } else if (strcmp(name, "read_file") == 0) {
                tool_read(st, s);
        } else if (strcmp(name, "write_file") == 0) {
                tool_write(st, s);
        } else if (strcmp(name, "list_files") == 0) {
                tool_list(st, s);
        } else if (strcmp(name, "final_answer") == 0) {
                const char *answer = arg_string(s, "answer", true);
                if (answer == NULL)
                        return;
                s->final_answer = strdup(answer);
                say(s, true, "answer received");
        } else {
                say(s, false, "error: there is no tool named '%s'; the tools are: %s", name, agent_tool_names());
        }
}
