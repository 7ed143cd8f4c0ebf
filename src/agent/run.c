/* run.c: an agent run as a library object (run.h).
 *
 * run_open() resolves every host destination first (nothing is created
 * yet), then the model, the workspace with its inputs (an earlier run's
 * archive restored before them), the trace and the review; run_execute()
 * runs the loop (agent.c); run_finish() copies output/ out whatever the
 * outcome, writes the archive, says what a replay's answer is worth and
 * emits run_end, so that every front end's trace has an end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../lib/redact.h"
#include "../workspace/archive.h"
#include "../workspace/artifact.h"
#include "../workspace/dest.h"
#include "../workspace/workspace.h"
#include "run.h"
#include "team.h"

#ifndef CORRAL_VERSION_STRING
#define CORRAL_VERSION_STRING "0.1.0"
#endif

struct run {
        struct run_config cfg;   /* the caller's strings borrowed */
        struct model_settings model_settings;
        struct agent_config agent;
        struct provider_choice choice;
        const char **secrets;
        char *trace_path;
        char *records;           /* the run's records: RECORDS_DIR/ID */
        char run_id[64];
        /* Where the run writes on the host, resolved before anything runs
         * (workspace/dest.h); dirfd -1: not written. */
        struct ws_roots roots;   /* what the run's jails can write */
        struct ws_dest out;      /* out_dir, else (temporary workspace) RECORDS/output */
        struct ws_dest kept;     /* RECORDS/output: the output when out_dir cannot take it */
        struct ws_dest archive;
        struct ws_dest trace;    /* trace_path, else RECORDS/trace.jsonl */
        struct workspace *ws;
        model_client *model;
        model_client *reviewer;
        model_client *verifier;
        model_client *executor;  /* team mode's, when it has a model of its own */
        struct review_policy *own_review; /* the standard policy, when the caller gave none */
        trace *tr;
        json_t *inputs;          /* the staged inputs' entries */
        json_t *run_info;
        char *restore_note;      /* from: for the system prompt */
        json_t *archive_report;
        json_t *reproduction;    /* with reproduce: the report, or NULL */
        json_t *replay;          /* replay:FILE: {"transcript", "inputs": "same"|"different"|"unknown",
                                  * "input_changes"} (docs/providers.md, "Replay") */
        char *stale_note;
        struct agent_result res;
        struct approval_gate *gate; /* approve.mode not never, else NULL */
        int cancel_fd;           /* the caller's, or own_cancel */
        int own_cancel;
        double t_start;
};

void run_config_init(struct run_config *c)
{
        memset(c, 0, sizeof(*c));
        model_settings_init(&c->model);
        agent_config_init(&c->agent);
        c->images = -1;
        c->verify = -1;
        c->plan = -1;
        c->compact = -1;
        c->input_limit = 2ull << 30;
        c->cancel_fd = -1;
        approve_settings_init(&c->approve);
}

char *run_records_dir(void)
{
        const char *state = getenv("XDG_STATE_HOME");
        char *dir = NULL;
        /* The XDG rule: a relative value is invalid and ignored. */
        if (state && state[0] == '/')
                return asprintf(&dir, "%s/corral/runs", state) < 0 ? NULL : dir;
        const char *home = getenv("HOME");
        struct passwd pw, *found = NULL;
        char buf[4096];
        if ((home == NULL || home[0] != '/') && getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &found) == 0 && found)
                home = pw.pw_dir;
        if (home == NULL || home[0] != '/')
                return NULL;
        return asprintf(&dir, "%s/.local/state/corral/runs", home) < 0 ? NULL : dir;
}

/* "20261129-164512-3fa9c1": sortable, unique enough for a directory. */
static void make_run_id(char *buf, size_t len)
{
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        unsigned char rnd[3] = { 0 };
        if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
                memcpy(rnd, &now, sizeof(rnd));
        char stamp[32];
        strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
        snprintf(buf, len, "%s-%02x%02x%02x", stamp, rnd[0], rnd[1], rnd[2]);
}

/* The secrets: the API key, the values given with the jail's environment,
 * and its brokered credentials (which the proxy masks already: this keeps
 * them out of the trace should a path around the masker appear). */
static const char **collect_secrets(const char *api_key, const corral_jail_config *jc)
{
        size_t n = 0;
        while (jc->env && jc->env[n])
                n++;
        const char **v = calloc(n + jc->n_net_secrets + 2, sizeof(char *));
        if (v == NULL)
                return NULL;
        size_t k = 0;
        if (api_key && *api_key)
                v[k++] = api_key;
        for (size_t i = 0; i < n; i++) {
                const char *eq = strchr(jc->env[i], '=');
                if (eq && eq[1])
                        v[k++] = eq + 1;
        }
        for (size_t i = 0; i < jc->n_net_secrets; i++)
                v[k++] = jc->net_secrets[i].value;
        return v;
}

/* ---- where the run writes ---- */

/* A destination the caller named: an error names its field. */
static int open_dest(const char *path, enum ws_dest_kind kind, const char *what, const char *field,
                     const struct ws_roots *roots, struct ws_dest *ret, corral_error **err)
{
        if (ws_dest_open(path, kind, what, roots, ret, err) == 0)
                return 0;
        return corral_error_set_field(err, field);
}

/* Every place the run writes on the host, resolved now, before the model is
 * asked anything or any code runs: a destination that cannot be made, or
 * that lies in a directory the jails can write (where code could turn it
 * into a link to anywhere), is refused before any work is spent
 * (docs/security.md, "Host paths").  Nothing is created yet. */
static int open_destinations(struct run *r, corral_error **err)
{
        const struct run_config *c = &r->cfg;
        make_run_id(r->run_id, sizeof(r->run_id));
        if (c->workspace && ws_roots_add(&r->roots, c->workspace, "the workspace", err) < 0)
                return -1;
        for (size_t i = 0; i < c->jail->n_binds; i++)
                if (c->jail->binds[i].writable &&
                    ws_roots_add(&r->roots, c->jail->binds[i].src, "a writable bind", err) < 0)
                        return -1;
        cleanup_free char *runs = c->records_dir ? strdup(c->records_dir) : run_records_dir();
        if (runs == NULL || asprintf(&r->records, "%s/%s", runs, r->run_id) < 0) {
                r->records = NULL;
                return corral_usage(err, "cannot tell where to keep the run's records: set $XDG_STATE_HOME or "
                                         "$HOME");
        }
        cleanup_free char *kept = NULL, *trace_file = NULL;
        if (asprintf(&kept, "%s/output", r->records) < 0 || asprintf(&trace_file, "%s/trace.jsonl", r->records) < 0)
                return corral_fail(err, ENOMEM, "cannot start the run");
        if (c->out_dir &&
            open_dest(c->out_dir, WS_DEST_DIR, "the output directory", "out_dir", &r->roots, &r->out, err) < 0)
                return -1;
        /* Without a workspace of the caller's, the workspace goes at the
         * end: its output is kept with the records, or there when out_dir
         * cannot take it. */
        if (c->workspace == NULL &&
            open_dest(kept, WS_DEST_DIR, "the run's output directory", NULL, &r->roots, &r->kept, err) < 0)
                return corral_error_prefix(err, "the run's records (%s)", runs);
        if (c->archive && open_dest(c->archive, WS_DEST_FILE, "the archive", "archive", &r->roots, &r->archive, err) < 0)
                return -1;
        if (!c->no_trace) {
                const char *path = c->trace_path ? c->trace_path : trace_file;
                if (open_dest(path, WS_DEST_FILE, "the trace", "trace", &r->roots, &r->trace, err) < 0)
                        return c->trace_path ? -1 : corral_error_prefix(err, "the run's records (%s)", runs);
                r->trace_path = strdup(path);
                if (r->trace_path == NULL)
                        return corral_fail(err, ENOMEM, "cannot start the run");
        }
        /* The transcript is opened by the model client, before any step:
         * only where it is needs checking here. */
        struct ws_dest rec;
        if (c->model.record_path &&
            open_dest(c->model.record_path, WS_DEST_FILE, "the transcript", "record", &r->roots, &rec, err) < 0)
                return -1;
        if (c->model.record_path)
                ws_dest_release(&rec);
        return 0;
}

/* ---- an earlier run's archive ---- */

/* s cut at max bytes (on a UTF-8 boundary), "..." appended when cut. */
static char *cut(const char *s, size_t max)
{
        size_t n = strlen(s);
        if (n <= max)
                return strdup(s);
        while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
                max--;
        char *out = NULL;
        return asprintf(&out, "%.*s...", (int)max, s) < 0 ? NULL : out;
}

/* Write the workspace to dest with a .corral/run.json saying what the run
 * did (secrets redacted); workspace_archive()'s report, or NULL. */
static json_t *archive_write(struct run *r, corral_error **err)
{
        const struct agent_result *res = &r->res;
        char when[32] = "";
        time_t now = time(NULL);
        struct tm tm;
        if (gmtime_r(&now, &tm))
                strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        /* The archive may be shared: no secret goes into it from here. */
        cleanup_free char *t = redact_text(r->cfg.task, r->secrets);
        cleanup_free char *a = res->answer ? redact_text(res->answer, r->secrets) : NULL;
        cleanup_free char *why = res->reason ? redact_text(res->reason, r->secrets) : NULL;
        json_t *meta = json_pack("{s:i, s:s?, s:s, s:s?, s:s?, s:i, s:s, s:s, s:s?, s:s}", "schema", 1, "task", t,
                                 "status", agent_status_to_string(res->status), "answer", a, "reason", why,
                                 "iterations", (int)res->iterations, "time", when, "run_id", r->run_id, "model",
                                 r->choice.model, "corral_version", CORRAL_VERSION_STRING);
        cleanup_free char *text =
                meta ? json_dumps(meta, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) : NULL;
        json_decref(meta);
        if (text == NULL) {
                corral_fail(err, ENOMEM, "cannot archive the workspace");
                return NULL;
        }
        struct ws_archive_opts opts = { .include_inputs = r->cfg.archive_inputs, .run_json = text };
        json_t *report = NULL;
        if (workspace_archive(r->ws, &r->archive, &opts, &report, err) < 0)
                return NULL;
        return report;
}

/* Restore an earlier run's archive into the workspace and make the note for
 * the system prompt: its task and answer and the files restored. */
static int archive_restore(struct run *r, const char *path, corral_error **err)
{
        json_t *report = NULL;
        if (workspace_restore(r->ws, path, NULL, &report, err) < 0)
                return -1;
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (f == NULL) {
                json_decref(report);
                return corral_fail(err, ENOMEM, "cannot describe the restored workspace");
        }
        /* What the earlier run did, from its .corral/run.json (as hostile
         * as the rest of the archive: only shown to the model, cut short). */
        cleanup_free char *meta_text = NULL;
        json_t *meta = NULL;
        if (workspace_read_file(r->ws, ".corral/run.json", 65536, &meta_text, NULL, NULL, NULL) == 0)
                meta = json_loads(meta_text, 0, NULL);
        const char *task = json_string_value(json_object_get(meta, "task"));
        const char *status = json_string_value(json_object_get(meta, "status"));
        const char *answer = json_string_value(json_object_get(meta, "answer"));
        fprintf(f, "The workspace was restored from an archive of an earlier run");
        if (task) {
                cleanup_free char *t = cut(task, 300);
                cleanup_free char *a = answer ? cut(answer, 600) : NULL;
                fprintf(f, " (its task: \"%s\"; it %s%s%s%s)", t ? t : "",
                        status && strcmp(status, "answered") == 0 ? "answered" : "ended without an answer",
                        a ? ": \"" : "", a ? a : "", a ? "\"" : "");
        }
        fprintf(f, "; .corral/run.json says what it did. Continue from its files:\n");
        json_t *e;
        size_t i, shown = 0, more = 0;
        json_array_foreach(json_object_get(report, "files_list"), i, e) {
                const char *type = json_string_value(json_object_get(e, "type"));
                if (type && strcmp(type, "dir") == 0)
                        continue;
                if (shown >= 50) {
                        more++;
                        continue;
                }
                shown++;
                fprintf(f, "    %s (%" JSON_INTEGER_FORMAT " bytes%s%s)\n",
                        json_string_value(json_object_get(e, "path")), json_integer_value(json_object_get(e, "size")),
                        type && strcmp(type, "file") ? ", " : "", type && strcmp(type, "file") ? type : "");
        }
        if (more)
                fprintf(f, "    ... and %zu more\n", more);
        if (shown == 0)
                fprintf(f, "    (no files)\n");
        fclose(f);
        json_decref(meta);
        json_decref(report);
        if (out == NULL)
                return corral_fail(err, ENOMEM, "cannot describe the restored workspace");
        /* No trailing newline: the prompt adds its own. */
        if (len > 0 && out[len - 1] == '\n')
                out[len - 1] = '\0';
        r->restore_note = out;
        return 0;
}

/* ---- replay ---- */

/* "input/sales.csv: 48213 bytes then, 51200 now" for each input that
 * differs between the recording's run and this one. */
static json_t *input_changes(const json_t *then, const json_t *now)
{
        json_t *out = json_array();
        size_t i, k;
        json_t *a, *b;
        json_array_foreach (then, i, a) {
                const char *dest = json_string_value(json_object_get(a, "dest"));
                json_t *match = NULL;
                json_array_foreach (now, k, b)
                        if (dest && json_equal(json_object_get(b, "dest"), json_object_get(a, "dest")))
                                match = b;
                char *line = NULL;
                json_int_t was = json_integer_value(json_object_get(a, "bytes"));
                if (match == NULL) {
                        if (asprintf(&line, "%s: recorded, not staged now", dest ? dest : "?") < 0)
                                line = NULL;
                } else if (json_integer_value(json_object_get(match, "bytes")) != was) {
                        if (asprintf(&line, "%s: %" JSON_INTEGER_FORMAT " bytes then, %" JSON_INTEGER_FORMAT " now",
                                     dest, was, json_integer_value(json_object_get(match, "bytes"))) < 0)
                                line = NULL;
                } else if (json_is_string(json_object_get(a, "sha256")) &&
                           !json_equal(json_object_get(a, "sha256"), json_object_get(match, "sha256"))) {
                        if (asprintf(&line, "%s: other contents (SHA-256 differs)", dest) < 0)
                                line = NULL;
                }
                if (line)
                        json_array_append_new(out, json_string(line));
                free(line);
        }
        json_array_foreach (now, k, b) {
                bool known = false;
                json_array_foreach (then, i, a)
                        known = known || json_equal(json_object_get(a, "dest"), json_object_get(b, "dest"));
                char *line = NULL;
                if (!known && asprintf(&line, "%s: staged now, not in the recording",
                                       json_string_value(json_object_get(b, "dest"))) >= 0)
                        json_array_append_new(out, json_string(line));
                free(line);
        }
        return out;
}

/* What a transcript records or a replay checks: the inputs as staged, with
 * sizes and digests (docs/providers.md, "Replay"). */
static void replay_set_up(struct run *r)
{
        bool recording = r->cfg.model.record_path != NULL, replay = model_client_is_replay(r->model);
        if (!recording && !replay)
                return;
        workspace_digest_inputs(r->ws, r->inputs);
        json_t *inputs = json_array(), *e;
        size_t i;
        json_array_foreach (r->inputs, i, e) {
                json_t *x = json_pack("{s:O?, s:O?, s:O?, s:O?}", "dest", json_object_get(e, "dest"), "type",
                                      json_object_get(e, "type"), "bytes", json_object_get(e, "bytes"), "sha256",
                                      json_object_get(e, "sha256"));
                if (x)
                        json_array_append_new(inputs, x);
        }
        if (recording) {
                json_t *info = json_pack("{s:O, s:s}", "inputs", inputs, "corral_version", CORRAL_VERSION_STRING);
                model_client_record_run(r->model, info);
                json_decref(info);
        }
        if (replay) {
                const json_t *rec = model_client_replay_run(r->model);
                r->replay = json_pack("{s:s, s:s}", "transcript", r->choice.model + strlen("replay:"), "inputs",
                                      rec ? "same" : "unknown");
                if (rec && r->replay) {
                        json_t *changes = input_changes(json_object_get(rec, "inputs"), inputs);
                        if (json_array_size(changes) > 0)
                                json_object_set_new(r->replay, "inputs", json_string("different"));
                        json_object_set_new(r->replay, "input_changes", changes);
                }
        }
        json_decref(inputs);
}

/* A replay whose answer must not pass for this run's: recorded on other
 * inputs, or on unknown ones, or its tool results differed on the way. */
static bool replay_answer_is_stale(const struct run *r)
{
        const char *inputs = json_string_value(json_object_get(r->replay, "inputs"));
        return r->replay &&
               ((inputs && strcmp(inputs, "same") != 0) || model_client_replay_divergence(r->model) != NULL);
}

/* The inputs and the manifest as one manifest, checked whole before
 * anything is made (run_open, and again for a reproduction). */
static int run_manifest(const struct run_config *c, struct ws_manifest *man, corral_error **err)
{
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < c->n_inputs; i++)
                rc = ws_manifest_add_input(man, c->inputs[i], err);
        if (rc == 0 && c->manifest)
                rc = ws_manifest_load(man, c->manifest, err);
        if (rc == 0)
                rc = ws_manifest_check(man, err);
        return rc;
}

/* ---- set-up ---- */

/* The destinations, then the model client, the workspace with its inputs,
 * then the trace: nothing is written before the inputs are staged. */
static int set_up(struct run *r, corral_error **err)
{
        const struct run_config *c = &r->cfg;
        if (open_destinations(r, err) < 0)
                return -1;
        if (provider_resolve(&c->provider, &r->choice, err) < 0)
                return -1;
        r->secrets = collect_secrets(r->choice.api_key, c->jail);
        if (r->secrets == NULL)
                return corral_fail(err, ENOMEM, "cannot start the run");
        struct model_settings *m = &r->model_settings;
        *m = c->model;
        m->base_url = r->choice.base_url;
        m->model = r->choice.model;
        m->api_key = r->choice.api_key;
        m->provider = r->choice.provider;
        m->quirks = r->choice.quirks;
        m->cancel_fd = r->cancel_fd;
        m->secrets = r->secrets;
        r->agent = c->agent;
        if (!c->context_given && r->choice.context_tokens)
                r->agent.context_tokens = r->choice.context_tokens;
        if (r->choice.cost_input >= 0 && r->choice.cost_output >= 0) {
                r->agent.priced = true;
                r->agent.price_input = r->choice.cost_input;
                r->agent.price_output = r->choice.cost_output;
        }
        /* Images: the caller's choice, else the config file's "modalities";
         * no preset turns them on (a text-only model rejects the request). */
        r->agent.images = c->images >= 0 ? c->images == 1 : r->choice.images > 0;
        if (model_client_open(m, &r->model, err) < 0)
                return -1;

        /* The inputs and the manifest are one manifest, checked whole
         * before anything is made. */
        struct ws_manifest man = { 0 };
        int rc = run_manifest(c, &man, err);
        if (rc == 0)
                rc = workspace_open(c->workspace, &r->ws, err);
        /* Before the inputs: the archive's entries must not meet them. */
        if (rc == 0 && c->from)
                rc = archive_restore(r, c->from, err);
        uint64_t budget = c->input_limit;
        json_t *staged = NULL;
        if (rc == 0)
                rc = workspace_stage_manifest(r->ws, &man, &budget, &staged, err);
        ws_manifest_release(&man);
        if (rc < 0)
                return -1;
        json_array_extend(r->inputs, staged);
        json_decref(staged);
        replay_set_up(r);

        cleanup_close int trace_dir = r->trace.dirfd >= 0 ? ws_dest_dir(&r->trace, 0700, err) : AT_FDCWD;
        if (trace_dir == -1 || trace_open_at(trace_dir, r->trace.name, r->trace_path, r->secrets, &r->tr, err) < 0) {
                /* Where the trace goes is the caller's to fix: a usage error. */
                (*err)->kind = CORRAL_ERR_USAGE;
                corral_error_prefix(err, "the trace");
                return corral_error_set_field(err, "trace");
        }
        const char *model = r->choice.model;
        r->run_info = json_pack("{s:s, s:s, s:s?, s:s?, s:O, s:s, s:s?, s:s}", "run_id", r->run_id, "model", model,
                                "base_url", strncmp(model, "replay:", 7) ? r->choice.base_url : NULL, "provider",
                                r->choice.provider, "inputs", r->inputs, "workspace", r->ws->root, "trace",
                                r->trace_path, "version", CORRAL_VERSION_STRING);
        if (r->run_info && c->cwd)
                json_object_set_new(r->run_info, "cwd", json_string(c->cwd));
        if (r->run_info && r->agent.mode != AGENT_MODE_PLAIN)
                json_object_set_new(r->run_info, "mode", json_string(agent_mode_to_string(r->agent.mode)));
        if (r->run_info && r->replay)
                json_object_set(r->run_info, "replay", r->replay);
        return 0;
}

/* The run's inputs and manifest staged into ws (a fresh workspace for a
 * reproduction), checked as run_open() checked them. */
static int stage_again(struct run *r, struct workspace *ws, corral_error **err)
{
        const struct run_config *c = &r->cfg;
        struct ws_manifest man = { 0 };
        int rc = run_manifest(c, &man, err);
        uint64_t budget = c->input_limit;
        json_t *staged = NULL;
        if (rc == 0)
                rc = workspace_stage_manifest(ws, &man, &budget, &staged, err);
        ws_manifest_release(&man);
        json_decref(staged);
        return rc;
}

/* Run the steps again in a fresh workspace on the same inputs and compare
 * (agent.h, agent_reproduce_run()); the report is a "reproduce" event and
 * the result's "reproduction".  The reproduction's jails are the run's:
 * same limits, same review; no LLM reviewer, no model at all, and no one
 * asked to approve again: the steps are the code that was approved (an
 * edit's, when the user edited one). */
static void reproduce(struct run *r)
{
        if (!r->cfg.reproduce || r->res.status == AGENT_CANCELLED)
                return;
        trace_emit(r->tr, "notice", json_pack("{s:s}", "message", "reproducing: running the steps' code again in a "
                                                                  "fresh workspace on the same inputs"));
        struct workspace *fresh = NULL;
        corral_error *err = NULL;
        json_t *rep = NULL;
        if (workspace_open(NULL, &fresh, &err) == 0 && stage_again(r, fresh, &err) == 0) {
                struct agent_config a = r->agent;
                a.ws = fresh;
                a.trace = NULL;
                a.reviewer = NULL;
                a.approve = NULL;
                a.tools = NULL;
                a.on_content = NULL;
                a.session_host = false; /* a session of its own, not the user's host's */
                rep = agent_reproduce_run(&a, r->ws, &r->res, &err);
        }
        if (rep == NULL)
                rep = json_pack("{s:s, s:s}", "result", "not_reproduced", "error",
                                err ? err->msg : "cannot set up the reproduction");
        corral_error_free(err);
        workspace_close(fresh, true);
        if (rep)
                redact_json(rep, r->secrets);
        r->reproduction = rep;
        trace_emit(r->tr, "reproduce", json_incref(rep));
}

/* A role's model of its own (team mode): the run's endpoint, key and
 * transcript; field names the setting for an error. */
static int open_role_model(struct run *r, const char *model, const char *who, const char *field,
                           model_client **ret, corral_error **err)
{
        struct model_settings ms = r->model_settings;
        ms.model = model;
        if (model_client_open(&ms, ret, err) < 0) {
                corral_error_prefix(err, "the %s's model", who);
                if ((*err)->field && strcmp((*err)->field, "model") == 0)
                        (*err)->field = field;
                return -1;
        }
        return 0;
}

/* Team mode (team.h): the reviewer is the model the reviewer_model setting
 * names, the executor the one executor_model names, else the run's; a model
 * of its own is a client on the run's endpoint and key whose exchanges go to
 * the run's transcript.  A replay plays every role's calls back from its
 * transcript (side calls "review" and "summary"), so it opens no other
 * model. */
static int team_set_up(struct run *r, corral_error **err)
{
        const struct run_config *c = &r->cfg;
        bool replay = model_client_is_replay(r->model);
        struct agent_config *a = &r->agent;
        a->writer_model = a->reviewer_model = a->executor_model = r->choice.model;
        a->reviewer = NULL;
        if (c->reviewer_model && !replay) {
                if (open_role_model(r, c->reviewer_model, "reviewer", "reviewer_model", &r->reviewer, err) < 0)
                        return -1;
                a->reviewer = r->reviewer;
                a->reviewer_model = c->reviewer_model;
        }
        if (c->executor_model && !replay) {
                if (open_role_model(r, c->executor_model, "executor", "executor_model", &r->executor, err) < 0)
                        return -1;
                a->executor = r->executor;
                a->executor_model = c->executor_model;
        }
        if (r->run_info)
                json_object_set_new(r->run_info, "team",
                                    json_pack("{s:s, s:s, s:s, s:i}", "writer", a->writer_model, "reviewer",
                                              a->reviewer_model, "executor", a->executor_model,
                                              "summary_min_bytes", TEAM_SUMMARY_MIN_BYTES));
        return 0;
}

/* The safety review, and the LLM reviewer: the run's endpoint and key, its
 * own model if given, no transcript.  In team mode, the team's reviewer. */
static int review_set_up(struct run *r, corral_error **err)
{
        const struct run_config *c = &r->cfg;
        struct review_policy *policy = c->review;
        if (policy == NULL)
                policy = r->own_review = review_policy_new(REVIEW_LEVEL_STANDARD);
        if (policy == NULL)
                return corral_fail(err, ENOMEM, "cannot set up the safety review");
        r->agent.review = policy;
        if (r->run_info)
                json_object_set_new(r->run_info, "review", review_policy_describe(policy));
        if (r->agent.mode == AGENT_MODE_TEAM)
                return team_set_up(r, err);
        if (!c->llm_review)
                return 0;
        struct model_settings rs = r->model_settings;
        if (c->reviewer_model)
                rs.model = c->reviewer_model;
        rs.record_path = NULL;
        if (model_client_open(&rs, &r->reviewer, err) < 0) {
                corral_error_prefix(err, "the reviewer's model");
                if ((*err)->field && strcmp((*err)->field, "model") == 0)
                        (*err)->field = c->reviewer_model ? "reviewer_model" : NULL;
                return -1;
        }
        r->agent.reviewer = r->reviewer;
        r->agent.reviewer_model = rs.model;
        if (r->run_info)
                json_object_set_new(json_object_get(r->run_info, "review"), "reviewer_model", json_string(rs.model));
        return 0;
}

/* The completion check: on for a live model unless turned off; for a
 * replay only when its transcript recorded checks (else the recorded
 * answer would meet a verifier that has no reply).  A verifier model of
 * its own: the run's endpoint and key, its exchanges recorded with the
 * run's (a replay then plays them back). */
static int verify_set_up(struct run *r, corral_error **err)
{
        const struct run_config *c = &r->cfg;
        bool replay = model_client_is_replay(r->model);
        if (r->agent.mode == AGENT_MODE_TDD && r->run_info)
                json_object_set_new(r->run_info, "tdd_test_changes", json_boolean(r->agent.tdd_test_changes));
        r->agent.plan = c->plan > 0 || (c->plan < 0 && replay && model_client_replay_has(r->model, "plan"));
        if (r->agent.plan && r->run_info)
                json_object_set_new(r->run_info, "plan", json_pack("{s:i}", "replan_every",
                                                                   (int)r->agent.replan_every));
        r->agent.compact = c->compact > 0 ||
                           (c->compact < 0 && (!replay || model_client_replay_has(r->model, "compact")));
        r->agent.verify = c->verify > 0 || (c->verify < 0 && (!replay || model_client_replay_has(r->model, "verify")));
        if (!r->agent.verify)
                return 0;
        r->agent.verifier_model = r->choice.model;
        if (c->verifier_model && !replay) {
                struct model_settings vs = r->model_settings;
                vs.model = c->verifier_model;
                if (model_client_open(&vs, &r->verifier, err) < 0) {
                        corral_error_prefix(err, "the verifier's model");
                        if ((*err)->field && strcmp((*err)->field, "model") == 0)
                                (*err)->field = "verifier_model";
                        return -1;
                }
                r->agent.verifier = r->verifier;
                r->agent.verifier_model = c->verifier_model;
        }
        if (r->run_info)
                json_object_set_new(r->run_info, "verify",
                                    json_pack("{s:s, s:i}", "model", r->agent.verifier_model, "rounds",
                                              (int)r->agent.verify_rounds));
        return 0;
}

/* Human approval: a gate when the mode asks for one.  A replay has no
 * human (docs/modes.md): its questions are asked and traced, and answered
 * at once with approve, so that the recorded code runs as recorded. */
static int approve_set_up(struct run *r, corral_error **err)
{
        struct approve_settings s = r->cfg.approve;
        if (s.mode == APPROVE_NEVER)
                return 0;
        s.unattended = s.unattended || model_client_is_replay(r->model);
        if (approval_gate_new(&s, r->tr, r->cancel_fd, &r->gate, err) < 0)
                return -1;
        if (r->run_info)
                json_object_set_new(r->run_info, "approve", approval_gate_describe(r->gate));
        return 0;
}

json_t *run_approval_pending(struct run *r)
{
        json_t *p = approval_gate_pending(r->gate);
        if (p)
                redact_json(p, r->secrets); /* as the trace's approval_request is */
        return p;
}

bool run_approval_asks(const struct run *r)
{
        return r->gate && !r->cfg.approve.unattended && !model_client_is_replay(r->model);
}

int run_approval_answer(struct run *r, unsigned n, const char *decision, const char *reason, const char *code,
                        const char *who, corral_error **ret_err)
{
        return approval_gate_answer(r->gate, n, decision, reason, code, who, ret_err);
}

/* A task any front end may pass: words, in UTF-8, small enough to go
 * with every model turn. */
static int check_task(const char *task, corral_error **ret_err)
{
        size_t len = strlen(task);
        if (task[strspn(task, " \t\r\n")] == '\0')
                return corral_usage(ret_err, "the task is empty");
        if (len > AGENT_TASK_MAX)
                return corral_usage_field(ret_err, "inputs",
                                          "the task is %zu bytes, more than the %u KiB a task may be (it is sent "
                                          "with every model turn): put the text in a file, stage it as an input, "
                                          "and name it in the task",
                                          len, AGENT_TASK_MAX >> 10);
        if (!utf8_valid(task, len))
                return corral_usage(ret_err, "the task is not valid UTF-8");
        return 0;
}

int run_open(const struct run_config *cfg, struct run **ret, corral_error **ret_err)
{
        if (cfg->task == NULL || cfg->jail == NULL)
                return corral_usage(ret_err, "a run needs a task and a jail configuration");
        if (check_task(cfg->task, ret_err) < 0)
                return -1;
        if (cfg->executor_model && cfg->agent.mode != AGENT_MODE_TEAM)
                return corral_usage_field(ret_err, "executor_model", "an executor model is a role of the team: "
                                                                     "set the mode to team, or leave it out");
        if (cfg->reproduce && cfg->from)
                return corral_usage_field(ret_err, "reproduce", "a reproduction starts from the inputs alone: it "
                                                                "cannot follow a run continued from an archive");
        struct run *r = calloc(1, sizeof(*r));
        if (r == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the run");
        r->cfg = *cfg;
        r->out.dirfd = r->kept.dirfd = r->archive.dirfd = r->trace.dirfd = -1;
        r->own_cancel = -1;
        r->t_start = monotonic_ms();
        r->inputs = json_array();
        r->cancel_fd = cfg->cancel_fd;
        if (r->cancel_fd < 0)
                r->cancel_fd = r->own_cancel = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->inputs == NULL || r->cancel_fd < 0) {
                corral_fail(ret_err, errno ? errno : ENOMEM, "cannot start the run");
                run_free(r);
                return -1;
        }
        if (set_up(r, ret_err) < 0 || review_set_up(r, ret_err) < 0 || verify_set_up(r, ret_err) < 0) {
                run_free(r);
                return -1;
        }
        if (approve_set_up(r, ret_err) < 0) {
                run_free(r);
                return -1;
        }
        struct agent_config *a = &r->agent;
        a->approve = r->gate;
        a->task = cfg->task;
        a->model = r->model;
        a->ws = r->ws;
        a->jail = cfg->jail;
        a->trace = r->tr;
        a->run_info = r->run_info;
        a->workspace_note = r->restore_note;
        a->cancel_fd = r->cancel_fd;
        a->secrets = r->secrets;
        *ret = r;
        return 0;
}

int run_subscribe(struct run *r, trace_subscriber_fn fn, void *userdata, bool sync)
{
        return sync ? trace_subscribe_sync(r->tr, fn, userdata) : trace_subscribe(r->tr, fn, userdata, 0);
}

void run_set_tools(struct run *r, const struct agent_tools *tools)
{
        r->agent.tools = tools;
}

void run_on_content(struct run *r, void (*fn)(void *userdata, const char *delta, size_t len), void *userdata)
{
        r->agent.on_content = fn;
        r->agent.userdata = userdata;
}

int run_execute(struct run *r, corral_error **ret_err)
{
        r->agent.record_steps = r->cfg.reproduce;
        if (agent_run(&r->agent, &r->res, ret_err) < 0)
                return -1;
        reproduce(r);
        return 0;
}

void run_cancel(struct run *r)
{
        uint64_t one = 1;
        ssize_t n = write(r->cancel_fd, &one, sizeof(one));
        (void)n;
}

/* ---- the end ---- */

/* The run's model's usage; with prices, "cost": its tokens (its replies
 * and the side calls it answered) at them. */
static json_t *usage_json(const struct model_usage *u, const struct agent_config *cfg)
{
        json_t *j = json_pack("{s:I, s:I, s:i, s:i, s:f, s:b}", "prompt_tokens", (json_int_t)u->prompt_tokens,
                              "completion_tokens", (json_int_t)u->completion_tokens, "requests", (int)u->requests,
                              "retries", (int)u->retries, "wait_ms", round_ms(u->wait_ms), "estimated", u->estimated);
        if (j && cfg->priced)
                json_object_set_new(j, "cost", json_real(agent_cost(cfg, u->prompt_tokens, u->completion_tokens)));
        return j;
}

/* The files under output/ when the run ended: [{"path","bytes"}]. */
static json_t *list_artifacts(struct workspace *ws)
{
        json_t *list = NULL, *out = json_array(), *e;
        size_t i;
        if (out == NULL || workspace_list_files(ws, "output", 16, 10000, &list, NULL) < 0)
                return out;
        json_array_foreach(list, i, e) {
                const char *type = json_string_value(json_object_get(e, "type"));
                if (type == NULL || strcmp(type, "file") != 0)
                        continue;
                json_t *a = json_pack("{s:O, s:O}", "path", json_object_get(e, "path"), "bytes",
                                      json_object_get(e, "size"));
                /* Typed by content like the steps' artifacts (artifact.h),
                 * as many as a step would type. */
                if (a && json_array_size(out) < ARTIFACT_TYPE_MAX)
                        (void)artifact_detect_at(ws->root_fd, json_string_value(json_object_get(e, "path")),
                                                 ARTIFACT_SCAN_MAX, a);
                json_array_append_new(out, a);
        }
        json_decref(list);
        return out;
}

/* A notice event; error: the caller should be told even without a view. */
static void notice(struct run *r, const char *msg, bool error)
{
        trace_emit(r->tr, "notice", json_pack("{s:s, s:s?}", "message", msg, "severity", error ? "error" : NULL));
}

/* Copy output/ out: to out_dir, else with the records; a failure keeps it
 * with the records when it can.  Returns where it went (or NULL) and the
 * copy's report. */
static const char *copy_out(struct run *r, json_t **ret_report)
{
        const struct ws_dest *out = r->out.dirfd >= 0 ? &r->out : r->kept.dirfd >= 0 ? &r->kept : NULL;
        json_t *artifacts = list_artifacts(r->ws);
        if (out == &r->kept && json_array_size(artifacts) == 0)
                out = NULL;
        json_decref(artifacts);
        corral_error *copy_err = NULL;
        if (out == NULL || workspace_copy_out(r->ws, out, ret_report, &copy_err) == 0)
                return out ? out->shown : NULL;
        /* Nothing is lost: the output goes with the run's records, and the
         * run keeps the status it had. */
        json_decref(*ret_report);
        *ret_report = NULL;
        const char *where = NULL;
        cleanup_free char *msg = NULL;
        corral_error *kept_err = NULL;
        if (out != &r->kept && r->kept.dirfd >= 0 && workspace_copy_out(r->ws, &r->kept, ret_report, &kept_err) == 0) {
                where = r->kept.shown;
                if (asprintf(&msg, "cannot copy the output to '%s' (%s): kept in '%s' instead", out->shown,
                             copy_err->msg, where) < 0)
                        msg = NULL;
        } else if (asprintf(&msg, "cannot copy the output to '%s': %s%s", out->shown, copy_err->msg,
                            r->cfg.workspace ? " (it is still in the workspace)" : "") < 0) {
                msg = NULL;
        }
        notice(r, msg ? msg : copy_err->msg, true);
        corral_error_free(copy_err);
        corral_error_free(kept_err);
        return where;
}

/* A replay's answer is the recorded text: say when it is not about this
 * run's data (the code did run on it: the artifacts are this run's). */
static void replay_verdict(struct run *r)
{
        bool stale = replay_answer_is_stale(r);
        const json_t *div = model_client_replay_divergence(r->model);
        if (r->replay) {
                json_object_set(r->replay, "diverged", div ? (json_t *)div : json_null());
                json_object_set_new(r->replay, "answer_recorded_on_other_data", json_boolean(stale));
        }
        if (!stale || r->res.status != AGENT_ANSWERED)
                return;
        const char *inputs = json_string_value(json_object_get(r->replay, "inputs"));
        json_t *changes = json_object_get(r->replay, "input_changes");
        const char *why = strcmp(inputs, "different") == 0 ? json_string_value(json_array_get(changes, 0))
                          : strcmp(inputs, "unknown") == 0 ? "the transcript does not record its inputs"
                                                           : NULL;
        char turn[96] = "";
        if (why == NULL && div)
                snprintf(turn, sizeof(turn), "the tool results of turn %" JSON_INTEGER_FORMAT " differ",
                         json_integer_value(json_object_get(div, "turn")));
        if (asprintf(&r->stale_note,
                     "the answer is the one recorded in '%s', not computed from this run's data (%s%s); the code "
                     "ran on this run's inputs: its artifacts are this run's",
                     json_string_value(json_object_get(r->replay, "transcript")), why ? why : turn,
                     why && json_array_size(changes) > 1 ? ", ..." : "") < 0)
                r->stale_note = NULL;
        if (r->stale_note)
                notice(r, r->stale_note, false);
}

json_t *run_finish(struct run *r)
{
        struct agent_result *res = &r->res;
        json_t *copy_report = NULL;
        json_t *artifacts = list_artifacts(r->ws);
        const char *output_dir = copy_out(r, &copy_report);
        /* What could not be copied is said, not silently dropped. */
        json_t *skipped = json_object_get(copy_report, "skipped"), *sk;
        size_t i;
        json_array_foreach(skipped, i, sk) {
                cleanup_free char *msg = NULL;
                if (asprintf(&msg, "not copied to '%s': %s (%s)", output_dir,
                             json_string_value(json_object_get(sk, "path")),
                             json_string_value(json_object_get(sk, "reason"))) >= 0)
                        notice(r, msg, false);
        }
        cleanup_free char *archive_error = NULL;
        if (r->archive.dirfd >= 0) {
                corral_error *aerr = NULL;
                r->archive_report = archive_write(r, &aerr);
                cleanup_free char *msg = NULL;
                json_t *ar = r->archive_report;
                int n = ar ? asprintf(&msg, "workspace archived to '%s' (%" JSON_INTEGER_FORMAT " entries, %"
                                            JSON_INTEGER_FORMAT " skipped)", r->cfg.archive,
                                      json_integer_value(json_object_get(ar, "entries")),
                                      (json_int_t)json_array_size(json_object_get(ar, "skipped")))
                           : asprintf(&msg, "cannot archive the workspace to '%s': %s", r->cfg.archive,
                                      aerr ? aerr->msg : "unknown error");
                if (n >= 0)
                        notice(r, msg, ar == NULL);
                if (ar == NULL)
                        archive_error = strdup(aerr ? aerr->msg : "unknown error");
                corral_error_free(aerr);
        }
        replay_verdict(r);
        const struct model_usage *u = model_client_usage(r->model);
        double wall_ms = round_ms(monotonic_ms() - r->t_start);
        const char *status = agent_status_to_string(res->status);
        /* The reason in words and the field behind it: a front end names
         * its own way of setting it (the CLI, a flag). */
        trace_emit(r->tr, "run_end",
                   json_pack("{s:s, s:s?, s:s?, s:s?, s:i, s:o, s:O, s:s?, s:O?, s:f, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "status",
                             status,
                             "answer", res->answer, "reason", res->reason, "field", res->reason_field, "iterations",
                             res->iterations, "usage", usage_json(u, &r->agent), "artifacts", artifacts, "output_dir",
                             output_dir, "not_copied", skipped, "wall_ms", wall_ms, "verification",
                             res->verification, "planning", res->planning, "compaction", res->compaction,
                             "reproduction", r->reproduction, "team", res->team, "tdd", res->tdd));
        json_t *j = json_pack("{s:i, s:s, s:s?, s:s?, s:s?, s:i, s:o, s:O, s:s?, s:s, s:s, s:s, s:s?, s:o, s:f}",
                              "schema", 1, "status", status, "answer", res->answer, "reason", res->reason, "field",
                              res->reason_field, "iterations", res->iterations, "usage", usage_json(u, &r->agent), "artifacts",
                              artifacts, "trace", r->trace_path, "run_id", r->run_id, "model", r->choice.model,
                              "protocol", res->text_protocol ? "text" : "tools", "output_dir", output_dir,
                              "not_copied", skipped ? json_incref(skipped) : json_array(), "wall_ms", wall_ms);
        if (j && r->archive_report)
                json_object_set(j, "archive", r->archive_report);
        if (j && archive_error)
                json_object_set_new(j, "archive_error", json_string(archive_error));
        if (j && r->replay)
                json_object_set(j, "replay", r->replay);
        if (j && res->verification)
                json_object_set(j, "verification", res->verification);
        if (j && res->planning)
                json_object_set(j, "planning", res->planning);
        if (j && res->compaction)
                json_object_set(j, "compaction", res->compaction);
        if (j && res->team)
                json_object_set(j, "team", res->team);
        if (j && r->agent.mode != AGENT_MODE_PLAIN)
                json_object_set_new(j, "mode", json_string(agent_mode_to_string(r->agent.mode)));
        if (j && r->reproduction)
                json_object_set(j, "reproduction", r->reproduction);
        if (j && res->tdd)
                json_object_set(j, "tdd", res->tdd);
        if (j && r->gate)
                json_object_set_new(j, "approval", approval_gate_summary(r->gate));
        if (j)
                redact_json(j, r->secrets);
        json_decref(artifacts);
        json_decref(copy_report);
        return j;
}

void run_free(struct run *r)
{
        if (r == NULL)
                return;
        trace_close(r->tr);
        approval_gate_free(r->gate);
        agent_result_release(&r->res);
        model_client_free(r->model);
        model_client_free(r->reviewer);
        model_client_free(r->verifier);
        model_client_free(r->executor);
        review_policy_free(r->own_review);
        /* Only a workspace corral made is removed; the caller's is theirs. */
        workspace_close(r->ws, r->cfg.workspace == NULL);
        provider_choice_release(&r->choice);
        json_decref(r->inputs);
        json_decref(r->run_info);
        json_decref(r->archive_report);
        json_decref(r->replay);
        json_decref(r->reproduction);
        free(r->restore_note);
        free(r->stale_note);
        free(r->secrets);
        free(r->trace_path);
        free(r->records);
        ws_dest_release(&r->out);
        ws_dest_release(&r->kept);
        ws_dest_release(&r->archive);
        ws_dest_release(&r->trace);
        ws_roots_release(&r->roots);
        if (r->own_cancel >= 0)
                close(r->own_cancel);
        free(r);
}

const char *run_id(const struct run *r)
{
        return r->run_id;
}

const struct agent_result *run_result(const struct run *r)
{
        return &r->res;
}

const char *run_workspace_dir(const struct run *r, bool *ret_temporary)
{
        if (ret_temporary)
                *ret_temporary = r->ws && r->ws->created;
        return r->ws ? r->ws->root : NULL;
}

const char *const *run_secrets(const struct run *r)
{
        return r->secrets;
}

const char *run_stale_note(const struct run *r)
{
        return r->stale_note;
}

const char *run_trace_error(const struct run *r)
{
        return trace_write_error(r->tr);
}
