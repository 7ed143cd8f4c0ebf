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
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../lib/redact.h"
#include "../model/chat.h"
#include "../review/llm.h"
#include "../review/review.h"
#include "../session/client.h"
#include "../session/host.h"
#include "../session/session.h"
#include "../workspace/artifact.h"
#include "agent-internal.h"
#include "approve.h"
#include "team.h"
#include "toolbox.h"

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

/* The tools' state over a run (or a server's sandbox): the session, what
 * the review has seen of it, the workspace's last snapshot, the notes
 * already given, and the figures waiting for the model. */
struct toolbox {
        const struct agent_config *cfg;
        unsigned iteration;      /* the loop's turn, for the trace's review events */
        struct team *team;       /* team mode's reviewer and executor, or NULL */
        unsigned step;           /* executions so far, names step files */
        double deadline_ms;      /* monotonic; 0 none: caps a step's time limit */
        /* Hashes of code that failed, with the step that ran it. */
        struct {
                uint64_t hash;
                unsigned step;
        } failed[64];
        size_t n_failed;
        struct ws_snapshot *last_snapshot; /* the workspace after the last step */
        uint64_t notices[16];    /* hashes of the jail notes already passed on */
        size_t n_notices;
        struct session *session; /* run_python's interpreter, NULL until the first step */
        /* The Python steps the session has run, reviewed with each new one:
         * an import in one step and its use in the next are one program. */
        char *review_context;
        size_t review_context_len;
        bool images_off;         /* the endpoint rejected images: none for the rest of the run */
        unsigned images_sent;    /* over the run */
        struct toolbox_image pending[AGENT_MAX_STEP_IMAGES];
        size_t n_pending;
        /* run_python's session in the user's session host (client.h), when
         * it runs there: its name, and the connection that holds it. */
        char host_session[SESSION_ID_LEN + 1];
        int host_hold;
        char *pending_note;      /* the message's text: every figure named, sent or not; NULL none */
        struct step_output out;  /* the running step's output, as it comes, to the trace */
        /* Directories bound read-only into every jail (toolbox_bind_read_only()). */
        struct {
                int fd;          /* borrowed */
                char *name, *at;
        } read_only[4];
        size_t n_read_only;
};

int toolbox_new(const struct agent_config *cfg, struct toolbox **ret, corral_error **ret_err)
{
        struct toolbox *tb = calloc(1, sizeof(*tb));
        if (tb == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot set up the tools");
        tb->cfg = cfg;
        tb->host_hold = -1;
        *ret = tb;
        return 0;
}

int toolbox_bind_read_only(struct toolbox *tb, int fd, const char *name, const char *at, corral_error **ret_err)
{
        if (tb->n_read_only == ARRAY_SIZE(tb->read_only))
                return corral_fail(ret_err, ENOSPC, "cannot bind '%s': too many read-only directories", name);
        char *n = strdup(name), *a = strdup(at);
        if (n == NULL || a == NULL) {
                free(n);
                free(a);
                return corral_fail(ret_err, ENOMEM, "cannot bind '%s'", name);
        }
        tb->read_only[tb->n_read_only++] = (typeof(tb->read_only[0])){ .fd = fd, .name = n, .at = a };
        return 0;
}

void toolbox_set_turn(struct toolbox *tb, unsigned iteration, double deadline_ms)
{
        tb->iteration = iteration;
        tb->deadline_ms = deadline_ms;
}

size_t toolbox_images(struct toolbox *tb, const struct toolbox_image **ret, const char **ret_note)
{
        *ret = tb->pending;
        *ret_note = tb->pending_note;
        return tb->n_pending;
}

void toolbox_images_off(struct toolbox *tb)
{
        tb->images_off = true;
}

bool toolbox_images_are_off(const struct toolbox *tb)
{
        return tb->images_off;
}

json_t *toolbox_schemas(void)
{
        return json_loads(tool_schemas_json, 0, NULL);
}

const char *toolbox_names(void)
{
        return "run_python, run_shell, read_file, write_file, list_files, final_answer";
}

void tool_result_release(struct tool_result *s)
{
        json_decref(s->args);
        json_decref(s->exec);
        json_decref(s->artifacts);
        free(s->content);
        free(s->final_answer);
        corral_error_free(s->err);
        memset(s, 0, sizeof(*s));
}

static void say(struct tool_result *s, bool ok, const char *fmt, ...) CORRAL_PRINTF(3, 4);
static void say(struct tool_result *s, bool ok, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        str_vsetf(&s->content, fmt, ap);
        va_end(ap);
        s->ok = ok;
}

/* A string argument, or NULL with the observation saying what is wrong. */
static const char *arg_string(struct tool_result *s, const char *key, bool required)
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
static void note_repeat(struct toolbox *tb, struct tool_result *s, const char *lang, const char *code)
{
        uint64_t h = fnv1a(code, lang);
        for (size_t i = 0; i < tb->n_failed; i++) {
                if (tb->failed[i].hash != h)
                        continue;
                char *more = NULL;
                if (asprintf(&more, "%s\nnote: this is exactly the code of step %u, which failed too. Running it "
                                    "again will not help: read the error above and change the approach.\n",
                             s->content ? s->content : "", tb->failed[i].step) >= 0) {
                        free(s->content);
                        s->content = more;
                }
                return;
        }
        if (tb->n_failed < ARRAY_SIZE(tb->failed)) {
                tb->failed[tb->n_failed].hash = h;
                tb->failed[tb->n_failed].step = tb->step;
                tb->n_failed++;
        }
}

/* The workspace before a step that may change it.  Between steps only
 * corral's own tools touch it, and each keeps the snapshot it took after
 * itself, so that one serves as the next step's "before": one walk per
 * step, not two. */
static void snapshot_before(struct toolbox *tb)
{
        if (tb->last_snapshot == NULL)
                workspace_snapshot(tb->cfg->ws, &tb->last_snapshot, NULL);
}

/* What the step changed since snapshot_before(), each file typed by its
 * content (artifact.h); the new snapshot is kept.  workspace_snapshot_next()
 * stats only what inotify saw change since the last one. */
static json_t *diff_since_before(struct toolbox *tb)
{
        struct ws_snapshot *after = NULL;
        if (workspace_snapshot_next(tb->cfg->ws, tb->last_snapshot, &after, NULL) < 0)
                return NULL;
        json_t *d = tb->last_snapshot ? workspace_diff(tb->last_snapshot, after) : NULL;
        if (d) {
                workspace_diff_drop_mounts(tb->cfg->ws, d);
                workspace_type_artifacts(tb->cfg->ws, d);
        }
        ws_snapshot_free(tb->last_snapshot);
        tb->last_snapshot = after;
        return d;
}

static void redact_step(struct toolbox *tb, struct tool_result *s)
{
        if (tb->cfg->secrets == NULL || s->content == NULL)
                return;
        char *r = redact_text(s->content, tb->cfg->secrets);
        if (r) {
                free(s->content);
                s->content = r;
        }
}

/* A jail's note (e.g. limits falling back to rlimits): once per run. */
static void on_jail_notice(void *userdata, const char *message)
{
        struct toolbox *tb = userdata;
        uint64_t h = fnv1a(message, "");
        for (size_t i = 0; i < tb->n_notices; i++)
                if (tb->notices[i] == h)
                        return;
        if (tb->n_notices < ARRAY_SIZE(tb->notices))
                tb->notices[tb->n_notices++] = h;
        if (tb->cfg->trace)
                trace_emit(tb->cfg->trace, "notice", json_pack("{s:s}", "message", message));
}

static void toolbox_session_close(struct toolbox *tb)
{
        /* Stopped and cleaned up before the run removes its workspace. */
        if (tb->host_session[0])
                session_client_stop(tb->host_session, NULL);
        if (tb->host_hold >= 0)
                close(tb->host_hold);
        tb->host_hold = -1;
        tb->host_session[0] = '\0';
        session_free(tb->session);
        tb->session = NULL;
        free(tb->review_context);
        tb->review_context = NULL;
        tb->review_context_len = 0;
}

/* The review context of a session grows by each step that runs (and parses:
 * a syntax error would swallow what follows it), up to 1 MiB. */
static void review_context_add(struct toolbox *tb, const char *code, const struct review_result *res)
{
        for (size_t i = 0; i < res->n_findings; i++)
                if (strncmp(res->findings[i].rule, "PY-SYN-", 7) == 0)
                        return;
        size_t len = strlen(code);
        if (tb->review_context_len + len + 1 > (1u << 20))
                return;
        char *c = realloc(tb->review_context, tb->review_context_len + len + 2);
        if (c == NULL)
                return;
        memcpy(c + tb->review_context_len, code, len);
        c[tb->review_context_len + len] = '\n';
        c[tb->review_context_len + len + 1] = '\0';
        tb->review_context = c;
        tb->review_context_len += len + 1;
}

/* A session step seen as a jail result, so that observations, the trace and
 * the live view treat both alike; the buffers stay the session's (or the
 * caller's: *ret_stderr, the step's stderr with the traceback after it). */
static void session_as_jail_result(const struct session_result *r, corral_jail_result *j, char **ret_stderr)
{
        memset(j, 0, sizeof(*j));
        j->exit_code = r->exit_code;
        j->limit = r->limit;
        j->signal = r->signal;
        j->seccomp_syscall_name = r->syscall_name;
        j->reason = r->status == SESSION_STEP_ERROR ? NULL : r->reason;
        switch (r->status) {
        case SESSION_STEP_OK:
                j->status = CORRAL_STATUS_OK;
                break;
        case SESSION_STEP_ERROR:
                j->status = CORRAL_STATUS_ERROR;
                break;
        case SESSION_STEP_TIMEOUT:
                j->status = CORRAL_STATUS_TIMEOUT;
                break;
        case SESSION_STEP_LOST:
                j->status = r->limit == CORRAL_LIMIT_MEMORY ? CORRAL_STATUS_OOM
                            : r->signal > 0               ? CORRAL_STATUS_KILLED
                                                          : CORRAL_STATUS_ERROR;
                break;
        case SESSION_STEP_CANCELLED:
        default:
                j->status = CORRAL_STATUS_KILLED;
                break;
        }
        const char *tb = json_string_value(json_object_get(r->error, "traceback"));
        *ret_stderr = NULL;
        if (tb && *tb && asprintf(ret_stderr, "%.*s%s%s", (int)r->stderr_len, r->stderr_buf ? r->stderr_buf : "",
                                  r->stderr_len && r->stderr_buf[r->stderr_len - 1] != '\n' ? "\n" : "", tb) < 0)
                *ret_stderr = NULL;
        j->stdout_buf = r->stdout_buf;
        j->stdout_len = r->stdout_len;
        j->stderr_buf = *ret_stderr ? *ret_stderr : r->stderr_buf;
        j->stderr_len = *ret_stderr ? strlen(*ret_stderr) : r->stderr_len;
        j->stdout_truncated = r->stdout_truncated;
        j->stderr_truncated = r->stderr_truncated;
        j->stdout_total = r->stdout_total;
        j->stderr_total = r->stderr_total > j->stderr_len ? r->stderr_total : j->stderr_len;
        j->wall_ms = r->exec_ms > 0 ? r->exec_ms : r->wall_ms;
        j->cpu_ms = r->cpu_ms;
        j->memory_peak_bytes = r->peak_memory_bytes;
}

void toolbox_images_clear(struct toolbox *tb)
{
        for (size_t i = 0; i < tb->n_pending; i++) {
                free(tb->pending[i].path);
                free(tb->pending[i].png);
        }
        tb->n_pending = 0;
        free(tb->pending_note);
        tb->pending_note = NULL;
}

/* A figure's path as the model knows it: relative to /workspace. */
static const char *figure_path(const json_t *fig)
{
        const char *p = json_string_value(json_object_get(fig, "path"));
        if (p == NULL)
                return "(unnamed figure)";
        return strncmp(p, "/workspace/", 11) == 0 ? p + 11 : p;
}

/* Check one figure's rendering for the model (it comes from the jail: a
 * PNG, its long side within the budget's, its size within the bytes) and
 * keep it pending; NULL, or why it is not sent. */
static const char *take_preview(struct toolbox *tb, const json_t *fig)
{
        const struct agent_config *cfg = tb->cfg;
        const json_t *b64 = json_object_get(fig, "preview");
        if (b64 == NULL) {
                const char *why = json_string_value(json_object_get(fig, "preview_error"));
                return why ? why : "not rendered";
        }
        struct toolbox_image *im = &tb->pending[tb->n_pending];
        if (chat_base64_decode(json_string_value(b64), json_string_length(b64), cfg->image_bytes, &im->png,
                               &im->len) < 0)
                return "the rendering is not base64 of at most the image budget";
        if (chat_png_dimensions(im->png, im->len, &im->width, &im->height) < 0 ||
            (im->width > cfg->image_side || im->height > cfg->image_side)) {
                free(im->png);
                im->png = NULL;
                return "the rendering is not a PNG within the size budget";
        }
        im->path = strdup(figure_path(fig));
        if (im->path == NULL) {
                free(im->png);
                im->png = NULL;
                return "out of memory";
        }
        tb->n_pending++;
        tb->images_sent++;
        return NULL;
}

/* The step's figures: each named in the observation (returned, malloc'd,
 * or NULL when there are none), and, within the budget (asked of the
 * driver: the first `asked`), their renderings checked and kept pending
 * for the user message that follows the tool results (agent.c), with its
 * text in tb->pending_note.  The renderings' base64 is taken out of
 * figures: the trace gets path, bytes and dimensions only. */
static char *take_figures(struct toolbox *tb, json_t *figures, unsigned asked)
{
        if (json_array_size(figures) == 0)
                return NULL;
        char *obs = NULL, *note = NULL;
        size_t obs_len = 0, note_len = 0;
        FILE *o = open_memstream(&obs, &obs_len);
        FILE *n = open_memstream(&note, &note_len);
        if (o == NULL || n == NULL) {
                if (o)
                        fclose(o);
                if (n)
                        fclose(n);
                free(obs);
                free(note);
                return NULL;
        }
        fprintf(o, "figures (saved without savefig; closed after the step):\n");
        fprintf(n, "figures from the step above:");
        size_t i;
        json_t *fig;
        json_array_foreach(figures, i, fig) {
                const char *path = figure_path(fig);
                const char *err = json_string_value(json_object_get(fig, "error"));
                if (err) {
                        fprintf(o, "  %s: not saved: %s\n", path, err);
                        json_object_del(fig, "preview");
                        continue;
                }
                json_int_t w = json_integer_value(json_object_get(fig, "width"));
                json_int_t h = json_integer_value(json_object_get(fig, "height"));
                fprintf(o, "  %s (%" JSON_INTEGER_FORMAT "x%" JSON_INTEGER_FORMAT " px)\n", path, w, h);
                if (asked == 0)
                        continue;
                const char *why = NULL;
                if (i >= asked || tb->n_pending >= AGENT_MAX_STEP_IMAGES)
                        why = "over the image budget";
                else
                        why = take_preview(tb, fig);
                json_object_del(fig, "preview");
                if (why == NULL) {
                        const struct toolbox_image *im = &tb->pending[tb->n_pending - 1];
                        fprintf(n, "%s %s (%" JSON_INTEGER_FORMAT "x%" JSON_INTEGER_FORMAT ", shown at %ux%u)",
                                i ? ";" : "", path, w, h, im->width, im->height);
                        json_object_set_new(fig, "sent_to_model", json_true());
                } else {
                        fprintf(n, "%s %s (%" JSON_INTEGER_FORMAT "x%" JSON_INTEGER_FORMAT ", not shown: %s)",
                                i ? ";" : "", path, w, h, why);
                        json_object_set_new(fig, "sent_to_model", json_false());
                        if (!json_object_get(fig, "preview_error"))
                                json_object_set_new(fig, "preview_error", json_string(why));
                }
        }
        bool ok = fclose(o) == 0;
        ok = fclose(n) == 0 && ok;
        if (ok && asked > 0) {
                free(tb->pending_note);
                tb->pending_note = note;
                note = NULL;
        }
        free(note);
        if (!ok) {
                free(obs);
                return NULL;
        }
        return obs;
}

/* Most refused connections a step's observation names one by one. */
#define NET_REFUSED_SHOWN 5

/* --net allow: a step's connections through the proxy (network, the
 * objects of exec --json's "network"; borrowed): a "net" trace event each,
 * the array in the step's exec object, and for the model a note naming the
 * refused ones and why (a program may swallow the proxy's 403).  The note
 * is malloc'd, NULL when nothing was refused. */
static char *step_network(struct toolbox *tb, json_t *network, uint64_t dropped, struct tool_result *s)
{
        if (!json_is_array(network))
                return NULL;
        if (s->exec) {
                json_object_set(s->exec, "network", network);
                if (dropped)
                        json_object_set_new(s->exec, "network_dropped", json_integer((json_int_t)dropped));
        }
        struct capbuf note = { .cap = 4096 };
        size_t i, refused = 0;
        json_t *c;
        json_array_foreach(network, i, c) {
                if (tb->cfg->trace) {
                        json_t *ev = json_deep_copy(c);
                        if (ev)
                                json_object_set_new(ev, "iteration", json_integer(tb->iteration));
                        trace_emit(tb->cfg->trace, "net", ev);
                }
                if (json_is_true(json_object_get(c, "allowed")))
                        continue;
                if (refused++ >= NET_REFUSED_SHOWN)
                        continue;
                const char *host = json_string_value(json_object_get(c, "host"));
                const char *method = json_string_value(json_object_get(c, "method"));
                const char *reason = json_string_value(json_object_get(c, "reason"));
                cleanup_free char *line = NULL;
                if (asprintf(&line, "network: %s %s:%d was refused by corral's proxy: %s\n",
                             method && method[0] ? method : "a connection", host && host[0] ? host : "?",
                             (int)json_integer_value(json_object_get(c, "port")), reason ? reason : "refused") >= 0)
                        capbuf_append(&note, line, strlen(line));
        }
        if (refused > NET_REFUSED_SHOWN) {
                cleanup_free char *more = NULL;
                if (asprintf(&more, "network: %zu more connections were refused\n", refused - NET_REFUSED_SHOWN) >= 0)
                        capbuf_append(&note, more, strlen(more));
        }
        if (refused == 0) {
                capbuf_release(&note);
                return NULL;
        }
        capbuf_append(&note, "", 1);
        return capbuf_detach(&note, NULL);
}

/* Start run_python's session in the user's session host (cfg->session_host):
 * its zygote, kept between runs, instead of one of this process's.  The
 * session lives while we hold its start connection (a run killed takes it
 * with it) and runs over our workspace, the staged inputs bound by our
 * descriptors.  0, or -1 (the caller starts one of its own). */
static int host_session_start(struct toolbox *tb, const corral_jail_config *jc, const struct session_options *opt)
{
        corral_error *err = NULL;
        const char *tmp = getenv("TMPDIR");
        struct session_client_start cs = { .cfg = jc, .opt = opt, .tmpdir = tmp && tmp[0] == '/' ? tmp : "/tmp",
                                           .hold = true };
        if (session_id_make(tb->host_session, &err) < 0) {
                corral_error_free(err);
                return -1;
        }
        bool refused;
        json_t *reply = session_client_start(tb->host_session, &cs, NULL, NULL, &tb->host_hold, &refused, &err);
        if (reply == NULL || tb->host_hold < 0) {
                cleanup_free char *note = NULL;
                if (asprintf(&note, "the session host could not start the session (%s): one of this run's own",
                             err ? err->msg : "no answer") >= 0)
                        on_jail_notice(tb, note);
                if (tb->host_hold >= 0)
                        close(tb->host_hold);
                tb->host_hold = -1;
                tb->host_session[0] = '\0';
                json_decref(reply);
                corral_error_free(err);
                return -1;
        }
        const char *notice = json_string_value(json_object_get(reply, "notice"));
        if (notice)
                on_jail_notice(tb, notice);
        json_decref(reply);
        return 0;
}

/* A step in the host's session: its result object back as a session_result. */
static int host_session_exec(struct toolbox *tb, const char *code, const struct session_step_limits *lim,
                             struct session_result *r, struct tool_result *s)
{
        struct session_client_exec x = { .timeout_s = lim->timeout_s, .output_limit = lim->output_limit,
                                         .cancel_fd = tb->cfg->cancel_fd, .preview_count = lim->preview_count,
                                         .preview_side = lim->preview_side, .preview_bytes = lim->preview_bytes,
                                         .on_output = step_output_feed, .userdata = &tb->out };
        json_t *res = NULL;
        corral_error *err = NULL;
        int rc = session_client_exec(tb->host_session, code, &x, &res, &err);
        if (rc == 0 && session_result_from_json(res, r) < 0)
                rc = corral_fail(&err, 0, "the session host answered the step with no result");
        if (rc == 1) {
                /* Cancelled before it began: nothing ran. */
                memset(r, 0, sizeof(*r));
                r->status = SESSION_STEP_CANCELLED;
                r->exit_code = 130;
                r->reason = strdup("cancelled");
                r->figures = json_array();
        }
        json_decref(res);
        if (rc < 0) {
                s->fatal = true;
                s->err = err;
                return -1;
        }
        /* Our cancel interrupts the step there (KeyboardInterrupt): for the
         * run, it was cancelled. */
        struct pollfd p = { .fd = tb->cfg->cancel_fd, .events = POLLIN };
        if (tb->cfg->cancel_fd >= 0 && poll(&p, 1, 0) > 0 && r->status == SESSION_STEP_INTERRUPTED)
                r->status = SESSION_STEP_CANCELLED;
        return 0;
}

/* The jail's output callback (its userdata is the toolbox, as for its
 * notices): on to the step's output events. */
static void jail_output(void *userdata, int stream, const char *data, size_t len)
{
        struct toolbox *tb = userdata;
        step_output_feed(&tb->out, stream, data, len);
}

static bool cancel_interrupts(void *userdata)
{
        (void)userdata;
        return true;
}

/* run_python in the run's session: started at the first step, over the
 * same jail configuration a fresh process would get (jc), kept for the
 * whole run.  The observation adds the trailing expression's value and
 * says when the interpreter's state was lost. */
static void exec_in_session(struct toolbox *tb, const corral_jail_config *jc, const char *code,
                            struct tool_result *s)
{
        const struct agent_config *cfg = tb->cfg;
        corral_error *err = NULL;
        double t0 = monotonic_ms();
        if (tb->session == NULL && tb->host_session[0] == '\0') {
                struct session_options opt;
                session_options_init(&opt);
                opt.idle_timeout_s = 0; /* the run's own budgets end it */
                opt.on_notice = on_jail_notice;
                opt.notice_userdata = tb;
                opt.lifetime_s = cfg->wall_budget_s > 0 ? cfg->wall_budget_s + 60 : 86400;
                /* Warm, forked from a zygote (the session host's, or one
                 * started with the run: agent_run()), unless asked otherwise
                 * or the options need a cold interpreter (--rootfs, --net
                 * host, binds outside /workspace); a zygote that cannot
                 * start is no reason to fail the run: a cold session, with a
                 * notice. */
                opt.warm = !cfg->cold && session_warm_supported(jc, NULL) == 0;
                if (opt.warm && cfg->session_host && host_session_start(tb, jc, &opt) == 0)
                        goto started;
                if (session_start(jc, &opt, &tb->session, &err) < 0 && opt.warm) {
                        cleanup_free char *why = NULL;
                        if (asprintf(&why, "no warm session (%s): a cold one instead", err ? err->msg : "?") < 0)
                                why = NULL;
                        if (why)
                                on_jail_notice(tb, why);
                        corral_error_clear(&err);
                        opt.warm = false;
                        (void)session_start(jc, &opt, &tb->session, &err);
                }
                if (tb->session == NULL) {
                        s->fatal = true;
                        s->err = err;
                        return;
                }
        }
started:;
        struct session_step_limits lim = { .timeout_s = jc->timeout_s, .output_limit = jc->output_limit,
                                           .cancel_fd = cfg->cancel_fd };
        toolbox_images_clear(tb);
        if (cfg->images && !tb->images_off) {
                unsigned left = cfg->images_per_run > tb->images_sent ? cfg->images_per_run - tb->images_sent : 0;
                lim.preview_count = cfg->images_per_step < left ? cfg->images_per_step : left;
                if (lim.preview_count > AGENT_MAX_STEP_IMAGES)
                        lim.preview_count = AGENT_MAX_STEP_IMAGES;
                lim.preview_side = cfg->image_side;
                lim.preview_bytes = cfg->image_bytes;
        }
        struct session_result r;
        if (tb->host_session[0]) {
                if (host_session_exec(tb, code, &lim, &r, s) < 0)
                        return;
        } else {
                /* cfg->cancel_interrupts: the cancel interrupts the step as
                 * the session host does (KeyboardInterrupt, the state kept),
                 * instead of stopping the interpreter. */
                bool soft = cfg->cancel_interrupts && cfg->cancel_fd >= 0;
                struct session_callbacks cb = { .on_output = step_output_feed, .userdata = &tb->out,
                                                .interrupt_fd = soft ? cfg->cancel_fd : -1,
                                                .on_interrupt_fd = soft ? cancel_interrupts : NULL };
                if (soft)
                        lim.cancel_fd = -1;
                if (session_exec(tb->session, code, strlen(code), &lim, &cb, &r, &err) < 0) {
                        s->fatal = true;
                        s->err = err;
                        return;
                }
                struct pollfd p = { .fd = cfg->cancel_fd, .events = POLLIN };
                if (soft && r.status == SESSION_STEP_INTERRUPTED && poll(&p, 1, 0) > 0)
                        r.status = SESSION_STEP_CANCELLED;
        }
        double jail_ms = monotonic_ms() - t0;
        step_output_end(&tb->out); /* what waits, before the step's other events */
        corral_jail_result res;
        cleanup_free char *errs = NULL;
        session_as_jail_result(&r, &res, &errs);
        s->artifacts = diff_since_before(tb);
        s->exec = agent_exec_to_json(&res, cfg->observation_bytes);
        if (s->exec) {
                json_object_set_new(s->exec, "jail_ms", json_real(round_ms(jail_ms)));
                json_object_set_new(s->exec, "session_step", json_integer(r.step));
                json_object_set_new(s->exec, "state_lost", json_boolean(r.state_lost));
                json_object_set_new(s->exec, "restarted", json_boolean(r.restarted));
                json_object_set(s->exec, "value", r.value ? r.value : json_null());
                /* The exception the step raised ({"type", "message", "traceback"}). */
                json_object_set(s->exec, "error", r.error ? r.error : json_null());
        }
        cleanup_free char *figure_list = take_figures(tb, r.figures, lim.preview_count);
        cleanup_free char *net_note = step_network(tb, r.network, r.network_dropped, s);
        if (s->exec)
                json_object_set(s->exec, "figures", r.figures ? r.figures : json_null());
        cleanup_free char *obs = agent_observe_exec(&res, jc, s->artifacts, cfg->observation_bytes);
        const char *value = json_string_value(json_object_get(r.value, "text"));
        cleanup_free char *value_cut = value ? agent_cut_middle(value, strlen(value), cfg->observation_bytes) : NULL;
        char *content = NULL;
        if (asprintf(&content, "%s%s%s%s%s%s%s%s", obs ? obs : "", value_cut ? "value of the last expression:\n" : "",
                     value_cut ? value_cut : "", value_cut ? "\n" : "", figure_list ? figure_list : "",
                     net_note ? net_note : "",
                     r.restarted ? "note: this step ran in a fresh interpreter: the previous one was lost, so "
                                   "variables and imports from earlier steps are gone.\n"
                                 : "",
                     r.state_lost ? "note: the interpreter was lost in this step: every variable, import and "
                                    "loaded dataset is gone; the next run_python starts a fresh interpreter, so "
                                    "import and load again.\n"
                                  : "") < 0)
                content = NULL;
        s->content = content;
        s->ok = r.status == SESSION_STEP_OK;
        s->cancelled = r.status == SESSION_STEP_CANCELLED;
        if (!s->ok && !s->cancelled)
                note_repeat(tb, s, "python", code);
        redact_step(tb, s);
        session_result_release(&r);
}

/* The safety review of a step (cfg->review; docs/review.md), traced as a
 * "review" event.  Returns true when the step is rejected: the findings
 * are the observation and nothing runs. */
static bool review_step(struct toolbox *tb, const char *lang, const char *code, struct tool_result *s,
                        json_t **ret_review)
{
        const struct agent_config *cfg = tb->cfg;
        /* Team mode: the reviewer sees every step, the policy off or not
         * (a policy at level off only finds nothing). */
        if (cfg->review == NULL || (review_policy_level(cfg->review) == REVIEW_LEVEL_OFF && tb->team == NULL))
                return false;
        struct review_result res;
        corral_error *err = NULL;
        bool in_session = strcmp(lang, "python") == 0 && !cfg->stateless;
        if (review_code_in_context(in_session ? REVIEW_PYTHON : review_lang_from_string(lang),
                                   in_session ? tb->review_context : NULL, tb->review_context_len, code, strlen(code),
                                   cfg->review, &res, &err) < 0) {
                /* Out of memory: do not run what was not reviewed. */
                say(s, false, "error: the code could not be reviewed (%s), so it did not run; try again",
                    err ? err->msg : "out of memory");
                corral_error_free(err);
                return true;
        }
        /* The second stage: warnings go to the reviewer model, which may
         * reject what the static review let through (never the reverse). */
        json_t *llm = NULL;
        struct review_llm_verdict lv = { 0 };
        /* In team mode the reviewer sees every step, not only those with
         * warnings (team.c). */
        if (!res.rejected && (tb->team || (res.n_warn && cfg->reviewer))) {
                int rc = tb->team ? team_review(tb->team, lang, code, &res, &lv, &err)
                                  : review_llm_judge(cfg->reviewer, lang, code, &res, &lv, &err);
                if (rc < 0) {
                        /* It could not be asked: the static verdict stands (the jail is the boundary). */
                        llm = json_pack("{s:s?,s:s,s:s}", "model", cfg->reviewer_model, "verdict", "error", "error",
                                        err ? err->msg : "out of memory");
                        corral_error_clear(&err);
                } else {
                        llm = json_pack("{s:s?,s:s,s:s?,s:s?,s:f,s:{s:I,s:I}}", "model", cfg->reviewer_model,
                                        "verdict", lv.reject ? "reject" : "allow", "reasons", lv.reasons, "reply",
                                        lv.raw, "ms", lv.ms, "usage", "prompt_tokens", (json_int_t)lv.prompt_tokens,
                                        "completion_tokens", (json_int_t)lv.completion_tokens);
                }
        }
        bool rejected = res.rejected || lv.reject;
        if (cfg->trace || ret_review) {
                json_t *ev = review_result_to_json(&res);
                if (ev) {
                        if (lv.reject)
                                json_object_set_new(ev, "verdict", json_string("reject"));
                        json_object_set_new(ev, "iteration", json_integer(tb->iteration));
                        json_object_set_new(ev, "lang", json_string(lang));
                        json_object_set_new(ev, "policy", review_policy_describe(cfg->review));
                        if (tb->team)
                                json_object_set_new(ev, "role", json_string("reviewer"));
                        if (llm)
                                json_object_set(ev, "llm", llm);
                }
                if (ret_review && ev)
                        *ret_review = json_deep_copy(ev);
                if (cfg->trace)
                        trace_emit(cfg->trace, "review", ev);
                else
                        json_decref(ev);
        }
        json_decref(llm);
        if (!rejected && in_session)
                review_context_add(tb, code, &res);
        if (rejected && tb->team && !res.rejected) {
                /* The team's reviewer, on the writer's work: its reasons are
                 * the observation. */
                say(s, false, "error: the reviewer rejected this %s, so nothing ran. The reviewer's reasons:\n%s"
                              "Fix what they name and send the step again.",
                    strcmp(lang, "python") == 0 ? "code" : "command", lv.reasons ? lv.reasons : "(none given)\n");
                redact_step(tb, s);
        } else if (rejected) {
                cleanup_free char *text = review_result_text(&res);
                say(s, false, "error: the safety review rejected this %s, so nothing ran. Do not try to get around "
                              "the review: take another approach.\n%s%s%s",
                    strcmp(lang, "python") == 0 ? "code" : "command", text ? text : "",
                    lv.reject ? "rejected by the reviewer model:\n" : "", lv.reject && lv.reasons ? lv.reasons : "");
                redact_step(tb, s);
        }
        review_llm_verdict_release(&lv);
        review_result_release(&res);
        return rejected;
}

/* Human approval (approve.h) of a step the review let through: false to
 * run it (*code replaced by the edit, reviewed again), true when it is not
 * to run (s says why). */
static bool approve_step(struct toolbox *tb, const char *lang, const char **code, json_t *review,
                         struct tool_result *s, char **ret_edited)
{
        struct approval_gate *g = tb->cfg->approve;
        if (!approval_gate_wants(g, json_string_value(json_object_get(review, "verdict"))))
                return false;
        cleanup_free char *note = NULL;
        int a = approval_gate_step(g, tb->iteration, lang, *code, review, ret_edited, &note);
        if (a == 0 && *ret_edited == NULL)
                return false;
        if (a != 0) {
                s->cancelled = a == 2;
                say(s, false, "%s", note ? note : "error: the step was not approved, so nothing ran");
                redact_step(tb, s);
                return true;
        }
        /* The edit is the user's: reviewed again, not asked about again. */
        if (review_step(tb, lang, *ret_edited, s, NULL))
                return true;
        *code = *ret_edited;
        if (json_is_object(s->args))
                json_object_set_new(s->args, strcmp(lang, "python") == 0 ? "code" : "command",
                                    json_string(*ret_edited));
        return false;
}

void toolbox_set_team(struct toolbox *tb, struct team *team)
{
        tb->team = team;
}

/* The jail of a step: the run's configuration with argv, the program
 * (name, code), the workspace, input/ and the staged entries read-only, and
 * the toolbox's read-only directories (toolbox_bind_read_only()).  0; -1
 * with *ret_fatal set when nothing can run, else the program was refused
 * (err says why).  *jc is released by the caller either way. */
static int step_jail_config(struct toolbox *tb, const char *name, const char *code, char *const argv[],
                            corral_jail_config *jc, bool *ret_fatal, corral_error **err)
{
        const struct agent_config *cfg = tb->cfg;
        *ret_fatal = true;
        if (corral_jail_config_copy(jc, cfg->jail, err) < 0)
                return -1;
        cleanup_free char *input = NULL;
        if (asprintf(&input, "%s/input", cfg->ws->root) < 0)
                input = NULL;
        free(jc->workspace);
        jc->workspace = strdup(cfg->ws->root);
        if (corral_jail_config_set_script(jc, name, code, strlen(code), err) < 0) {
                *ret_fatal = false;
                return -1;
        }
        if (input == NULL || jc->workspace == NULL || corral_jail_config_set_argv(jc, argv, err) < 0 ||
            corral_jail_config_add_bind_at(jc, input, "/workspace/input", false, err) < 0)
                return -1;
        /* Read-only staged entries: their sources themselves, bound by the
         * fd opened at staging, onto mount points put back in place first
         * (the last jail may have moved them). */
        if (workspace_prepare_mounts(cfg->ws, err) < 0)
                return -1;
        for (size_t i = 0; i < cfg->ws->n_staged; i++) {
                const struct ws_staged *b = &cfg->ws->staged[i];
                cleanup_free char *at = NULL;
                if (!b->bound)
                        continue;
                if (asprintf(&at, "/workspace/%s", b->dest) < 0)
                        at = NULL;
                if (at == NULL ||
                    corral_jail_config_add_bind_fd(jc, b->source_fd, b->source ? b->source : b->dest, at, err) < 0)
                        return -1;
        }
        for (size_t i = 0; i < tb->n_read_only; i++)
                if (corral_jail_config_add_bind_fd(jc, tb->read_only[i].fd, tb->read_only[i].name,
                                                   tb->read_only[i].at, err) < 0)
                        return -1;
        *ret_fatal = false;
        return 0;
}

/* A step's time limit never reaches past the run's deadline. */
static void clamp_to_deadline(const struct toolbox *tb, corral_jail_config *jc)
{
        if (tb->deadline_ms <= 0)
                return;
        double left = (tb->deadline_ms - monotonic_ms()) / 1000;
        if (left < 1)
                left = 1;
        if (left < jc->timeout_s)
                jc->timeout_s = left;
}

void toolbox_exec_code(struct toolbox *tb, const char *lang, const char *code, struct tool_result *s)
{
        json_t *review = NULL;
        cleanup_free char *edited = NULL;
        bool stop = review_step(tb, lang, code, s, tb->cfg->approve ? &review : NULL) ||
                    approve_step(tb, lang, &code, review, s, &edited);
        json_decref(review);
        if (stop)
                return;
        const struct agent_config *cfg = tb->cfg;
        corral_jail_config jc = { 0 };
        corral_error *err = NULL;
        bool python = strcmp(lang, "python") == 0;
        char name[64], path[96];

        tb->step++;
        step_output_begin(&tb->out, cfg->trace, tb->iteration);
        snprintf(name, sizeof(name), "step%u.%s", tb->step, python ? "py" : "sh");
        snprintf(path, sizeof(path), "/run/corral/%s", name);
        char *argv[] = { python ? "python3" : "bash", path, NULL };
        if (step_jail_config(tb, name, code, argv, &jc, &s->fatal, &err) < 0) {
                if (!s->fatal)
                        say(s, false, "error: %s", err->msg);
                goto out;
        }
        clamp_to_deadline(tb, &jc);
        snapshot_before(tb);
        if (python && !cfg->stateless) {
                exec_in_session(tb, &jc, code, s);
                if (s->fatal)
                        err = TAKE_PTR(s->err);
                goto out;
        }

        corral_jail_io io = { .capture = true, .cancel_fd = cfg->cancel_fd, .stdin_fd = -1,
                              .on_notice = on_jail_notice, .on_output = jail_output, .userdata = tb };
        corral_jail_result res;
        double t0 = monotonic_ms();
        if (corral_jail_run(&jc, &io, &res, &err) < 0) {
                s->fatal = true;
                goto out;
        }
        double jail_ms = monotonic_ms() - t0;
        step_output_end(&tb->out); /* what waits, before the step's other events */
        s->artifacts = diff_since_before(tb);
        s->exec = agent_exec_to_json(&res, cfg->observation_bytes);
        if (s->exec)
                json_object_set_new(s->exec, "jail_ms", json_real(round_ms(jail_ms))); /* the whole jail: set-up to teardown */
        s->content = agent_observe_exec(&res, &jc, s->artifacts, cfg->observation_bytes);
        if (res.net_proxy) {
                json_t *network = json_array();
                for (size_t i = 0; network && i < res.n_network; i++) {
                        cleanup_free char *text = corral_net_conn_to_json(&res.network[i]);
                        json_t *o = text ? json_loads(text, 0, NULL) : NULL;
                        if (o)
                                json_array_append_new(network, o);
                }
                cleanup_free char *net_note = step_network(tb, network, res.network_dropped, s);
                json_decref(network);
                if (net_note && s->content) {
                        char *both = NULL;
                        if (asprintf(&both, "%s%s", s->content, net_note) >= 0) {
                                free(s->content);
                                s->content = both;
                        }
                }
        }
        s->ok = res.status == CORRAL_STATUS_OK;
        s->cancelled = res.limit == CORRAL_LIMIT_CANCELLED;
        if (!s->ok && !s->cancelled)
                note_repeat(tb, s, lang, code);
        redact_step(tb, s);
        corral_jail_result_release(&res);
out:
        step_output_end(&tb->out); /* a step that ended early: whatever came */
        if (edited && s->content)
                approval_note_edit(lang, edited, &s->content);
        if (s->fatal) {
                s->err = TAKE_PTR(err);
                if (s->err == NULL)
                        corral_fail(&s->err, ENOMEM, "cannot prepare the jail");
        }
        if (tb->team && s->exec && !s->fatal && !s->cancelled)
                team_report(tb->team, tb->iteration, lang, code, s);
        corral_error_free(err);
        corral_jail_config_release(&jc);
}

static void tool_read(struct toolbox *tb, struct tool_result *s)
{
        const char *path = arg_string(s, "path", true);
        if (path == NULL)
                return;
        corral_error *err = NULL;
        cleanup_free char *data = NULL;
        size_t len = 0;
        bool truncated = false;
        if (workspace_read_file(tb->cfg->ws, path, tb->cfg->read_bytes, &data, &len, &truncated, &err) < 0) {
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
        redact_step(tb, s);
}

static void tool_write(struct toolbox *tb, struct tool_result *s)
{
        const char *path = arg_string(s, "path", true);
        const char *content = path ? arg_string(s, "content", true) : NULL;
        if (content == NULL)
                return;
        corral_error *err = NULL;
        snapshot_before(tb);
        size_t len = json_string_length(json_object_get(s->args, "content"));
        if (workspace_write_file(tb->cfg->ws, path, content, len, &err) < 0) {
                say(s, false, "error: %s", err->msg);
                corral_error_free(err);
        } else {
                say(s, true, "wrote %zu bytes to %s", len, path);
                s->artifacts = diff_since_before(tb);
        }
}

static void tool_list(struct toolbox *tb, struct tool_result *s)
{
        const char *path = json_object_get(s->args, "path") ? arg_string(s, "path", false) : "";
        if (path == NULL && s->content)
                return;
        json_t *list = NULL;
        corral_error *err = NULL;
        if (workspace_list_files(tb->cfg->ws, path ? path : "", 8, 500, &list, &err) < 0) {
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

void toolbox_call(struct toolbox *tb, const char *name, const char *arguments, struct tool_result *s)
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
                toolbox_exec_code(tb, py ? "python" : "bash", code, s);
        } else if (strcmp(name, "read_file") == 0) {
                tool_read(tb, s);
        } else if (strcmp(name, "write_file") == 0) {
                tool_write(tb, s);
        } else if (strcmp(name, "list_files") == 0) {
                tool_list(tb, s);
        } else if (strcmp(name, "final_answer") == 0) {
                const char *answer = arg_string(s, "answer", true);
                if (answer == NULL)
                        return;
                s->final_answer = strdup(answer);
                say(s, true, "answer received");
        } else {
                say(s, false, "error: there is no tool named '%s'; the tools are: %s", name, toolbox_names());
        }
}

void toolbox_reset(struct toolbox *tb)
{
        toolbox_session_close(tb);
        toolbox_images_clear(tb);
}

void toolbox_free(struct toolbox *tb)
{
        if (tb == NULL)
                return;
        toolbox_session_close(tb);
        toolbox_images_clear(tb);
        ws_snapshot_free(tb->last_snapshot);
        for (size_t i = 0; i < tb->n_read_only; i++) {
                free(tb->read_only[i].name);
                free(tb->read_only[i].at);
        }
        free(tb);
}

int toolbox_run_program(struct toolbox *tb, const char *name, const char *code, char *const argv[],
                        const char *const *env, corral_jail_result *ret, corral_error **ret_err)
{
        corral_jail_config jc = { 0 };
        bool fatal;
        int rc = step_jail_config(tb, name, code, argv, &jc, &fatal, ret_err);
        for (size_t i = 0; rc == 0 && env && env[i]; i++)
                rc = corral_jail_config_add_env(&jc, env[i], ret_err);
        if (rc == 0)
                clamp_to_deadline(tb, &jc);
        corral_jail_io io = { .capture = true, .cancel_fd = tb->cfg->cancel_fd, .stdin_fd = -1,
                              .on_notice = on_jail_notice, .userdata = tb };
        if (rc == 0)
                rc = corral_jail_run(&jc, &io, ret, ret_err);
        corral_jail_config_release(&jc);
        return rc;
}
