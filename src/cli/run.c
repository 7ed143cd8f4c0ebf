/* run.c: `corral run`, the agent on the command line.
 *
 * Resolves the model (flags, environment, config file), stages the inputs
 * into a workspace, runs the agent loop with a live view on stderr (the
 * answer alone goes to stdout, or one JSON object with --json), then copies
 * /workspace/output to --out whatever the outcome, writes the trace's last
 * event and maps the outcome to the CLI-wide exit statuses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../agent/agent.h"
#include "../model/provider.h"
#include "../trace/render.h"
#include "cli.h"

static const char help_text[] =
        "usage: corral run [OPTIONS] TASK      (TASK \"-\": read it from stdin)\n"
        "\n"
        "A model writes code for TASK; corral runs it in jails over a workspace, feeds the\n"
        "results back and repeats until the model answers.  The live view goes to stderr,\n"
        "the answer to stdout.\n"
        "\n"
        "model:\n"
        "      --model NAME        model id, PROVIDER/ID, or replay:FILE (default: $CORRAL_MODEL,\n"
        "                          then \"model\" in the config file)\n"
        "      --base-url URL      OpenAI-compatible endpoint, e.g. http://localhost:11434/v1\n"
        "                          (default: the provider's, then $OPENAI_BASE_URL, then the config file)\n"
        "      --provider NAME     preset: openai, ollama, llamacpp, vllm (base URL and quirks),\n"
        "                          or a provider of the config file\n"
        "      --config FILE       config file (default $XDG_CONFIG_HOME/corral/config.json)\n"
        "      --no-tools          use the text protocol (code in fenced blocks) instead of tool\n"
        "                          calls; chosen automatically when the endpoint rejects tools\n"
        "      --no-stream         ask for whole replies instead of a stream\n"
        "      --request-timeout SECONDS  per model request (default 300)\n"
        "      --retries N         retries on 429, 5xx and connection errors (default 4)\n"
        "      --record FILE       append every model exchange to FILE (a transcript for replay:)\n"
        "  The API key is $OPENAI_API_KEY or the config file's \"apiKey\"; it never enters a jail.\n"
        "\n"
        "files:\n"
        "  -i, --input PATH[:DEST] stage a host file or directory read-only at\n"
        "                          /workspace/input/DEST (default DEST: its name; repeatable)\n"
        "  -o, --out DIR           copy /workspace/output/ to DIR when the run ends (also when it\n"
        "                          fails or is interrupted)\n"
        "  -w, --workspace DIR     use DIR as the workspace and keep it (default: a temporary one)\n"
        "      --input-limit SIZE  total size of the staged inputs (default 2G)\n"
        "\n"
        "budgets:\n"
        "      --max-iterations N  model turns (default 10)\n"
        "      --token-budget N    prompt + completion tokens for the whole run (default: none)\n"
        "      --wall-budget SECONDS  wall time for the whole run (default: none)\n"
        "      --context-tokens N  the model's context size; older output is shortened to fit\n"
        "                          (default: the config file's limit.context for the model, else 32768)\n"
        "\n"
        "each execution (as for corral exec):\n"
        "  -t, --timeout SECONDS, -m, --memory SIZE, --cpu-time, --pids, --cpus, --nofile, --disk,\n"
        "      --output-limit, --net none|loopback|host, --ro-bind, --bind, --rootfs, --profile,\n"
        "      --require-cgroups, --uid-range\n"
        "  -e, --env NAME=VALUE    pass to the jails; VALUE is redacted from trace, transcript and\n"
        "                          messages\n"
        "\n"
        "output:\n"
        "      --json              print one JSON result object (docs/run-json.md), no live view\n"
        "  -q, --quiet             no live view: the answer on stdout, notices and errors on stderr\n"
        "      --trace FILE        JSONL trace (default .corral/runs/ID/trace.jsonl; mode 0600)\n"
        "      --no-trace          write no trace file\n"
        "  -h, --help              show this help\n"
        "\n"
        "exit statuses:\n"
        "  0 the agent answered; 1 it gave up (iterations, tokens, wall budget); 2 usage error;\n"
        "  3 the model could not be reached or refused (connection, 401, 404); 125 a jail could\n"
        "  not be set up; 130 interrupted.\n";

enum {
        OPT_MODEL = 300,
        OPT_BASE_URL,
        OPT_PROVIDER,
        OPT_CONFIG,
        OPT_NO_TOOLS,
        OPT_NO_STREAM,
        OPT_REQUEST_TIMEOUT,
        OPT_RETRIES,
        OPT_RECORD,
        OPT_INPUT_LIMIT,
        OPT_MAX_ITERATIONS,
        OPT_TOKEN_BUDGET,
        OPT_WALL_BUDGET,
        OPT_CONTEXT_TOKENS,
        OPT_JSON,
        OPT_TRACE,
        OPT_NO_TRACE,
};

static const struct option run_options[] = {
        { "model", required_argument, NULL, OPT_MODEL },
        { "base-url", required_argument, NULL, OPT_BASE_URL },
        { "provider", required_argument, NULL, OPT_PROVIDER },
        { "config", required_argument, NULL, OPT_CONFIG },
        { "no-tools", no_argument, NULL, OPT_NO_TOOLS },
        { "no-stream", no_argument, NULL, OPT_NO_STREAM },
        { "request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT },
        { "retries", required_argument, NULL, OPT_RETRIES },
        { "record", required_argument, NULL, OPT_RECORD },
        { "input", required_argument, NULL, 'i' },
        { "out", required_argument, NULL, 'o' },
        { "workspace", required_argument, NULL, 'w' },
        { "input-limit", required_argument, NULL, OPT_INPUT_LIMIT },
        { "max-iterations", required_argument, NULL, OPT_MAX_ITERATIONS },
        { "token-budget", required_argument, NULL, OPT_TOKEN_BUDGET },
        { "wall-budget", required_argument, NULL, OPT_WALL_BUDGET },
        { "context-tokens", required_argument, NULL, OPT_CONTEXT_TOKENS },
        { "json", no_argument, NULL, OPT_JSON },
        { "quiet", no_argument, NULL, 'q' },
        { "trace", required_argument, NULL, OPT_TRACE },
        { "no-trace", no_argument, NULL, OPT_NO_TRACE },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

struct run_opts {
        struct provider_request provider;
        struct model_settings model;
        struct agent_config agent;
        const char **inputs;
        size_t n_inputs;
        const char *out;
        const char *workspace;
        const char *trace_path;
        uint64_t input_limit;
        bool no_trace;
        bool context_given;
        bool json;
        bool quiet;
};

static int parse_count_max(const char *arg, const char *opt, uint64_t min, uint64_t max, uint64_t *ret,
                           corral_error **err)
{
        if (corral_parse_count(arg, ret, err) < 0)
                return corral_error_prefix(err, "%s", opt);
        if (*ret < min || *ret > max)
                return corral_usage(err, "%s: %" PRIu64 " is out of range (%" PRIu64 " to %" PRIu64 ")", opt, *ret,
                                    min, max);
        return 0;
}

static int apply_option(int c, const char *arg, void *userdata, corral_error **err)
{
        struct run_opts *o = userdata;
        uint64_t n;
        double s;
        switch (c) {
        case OPT_MODEL:
                o->provider.model = arg;
                return 0;
        case OPT_BASE_URL:
                o->provider.base_url = arg;
                return 0;
        case OPT_PROVIDER:
                o->provider.provider = arg;
                return 0;
        case OPT_CONFIG:
                o->provider.config_path = arg;
                return 0;
        case OPT_NO_TOOLS:
                o->agent.text_protocol = true;
                return 0;
        case OPT_NO_STREAM:
                o->model.stream = false;
                return 0;
        case OPT_REQUEST_TIMEOUT:
                if (corral_parse_seconds(arg, &o->model.request_timeout_s, err) < 0)
                        return corral_error_prefix(err, "--request-timeout");
                return 0;
        case OPT_RETRIES:
                if (parse_count_max(arg, "--retries", 0, 100, &n, err) < 0)
                        return -1;
                o->model.max_retries = (unsigned)n;
                return 0;
        case OPT_RECORD:
                o->model.record_path = arg;
                return 0;
        case 'i': {
                const char **v = realloc(o->inputs, (o->n_inputs + 1) * sizeof(*v));
                if (v == NULL)
                        return corral_fail(err, ENOMEM, "cannot parse options");
                o->inputs = v;
                v[o->n_inputs++] = arg;
                return 0;
        }
        case 'o':
                o->out = arg;
                return 0;
        case 'w':
                o->workspace = arg;
                return 0;
        case OPT_INPUT_LIMIT:
                if (corral_parse_size(arg, &o->input_limit, err) < 0)
                        return corral_error_prefix(err, "--input-limit");
                return 0;
        case OPT_MAX_ITERATIONS:
                if (parse_count_max(arg, "--max-iterations", 1, 10000, &n, err) < 0)
                        return -1;
                o->agent.max_iterations = (unsigned)n;
                return 0;
        case OPT_TOKEN_BUDGET:
                return parse_count_max(arg, "--token-budget", 1, UINT64_MAX, &o->agent.token_budget, err);
        case OPT_WALL_BUDGET:
                if (corral_parse_seconds(arg, &s, err) < 0)
                        return corral_error_prefix(err, "--wall-budget");
                o->agent.wall_budget_s = s;
                return 0;
        case OPT_CONTEXT_TOKENS:
                o->context_given = true;
                return parse_count_max(arg, "--context-tokens", 1024, 100000000, &o->agent.context_tokens, err);
        case OPT_JSON:
                o->json = true;
                return 0;
        case 'q':
                o->quiet = true;
                return 0;
        case OPT_TRACE:
                o->trace_path = arg;
                return 0;
        case OPT_NO_TRACE:
                o->no_trace = true;
                return 0;
        default:
                return 0;
        }
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

static char *read_task_stdin(void)
{
        struct capbuf b = { .cap = 1u << 20 };
        char chunk[4096];
        ssize_t n;
        while ((n = read(STDIN_FILENO, chunk, sizeof(chunk))) > 0)
                if (capbuf_append(&b, chunk, (size_t)n) == (size_t)-1)
                        break;
        return capbuf_detach(&b, NULL);
}

/* The secrets: the API key and the values given with -e. */
static const char **collect_secrets(const char *api_key, const corral_jail_config *jc)
{
        size_t n = 0;
        while (jc->env && jc->env[n])
                n++;
        const char **v = calloc(n + 2, sizeof(char *));
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
        return v;
}

struct live {
        render *view;
};

static void on_content(void *ud, const char *delta, size_t len)
{
        struct live *l = ud;
        if (l->view)
                render_content_delta(l->view, delta, len);
}

/* --quiet: notices (a fallback, a file not copied) still reach stderr. */
static void print_notice(void *ud, const json_t *event)
{
        (void)ud;
        const char *type = json_string_value(json_object_get(event, "type"));
        const char *msg = json_string_value(json_object_get(event, "message"));
        if (type && strcmp(type, "notice") == 0 && msg) {
                cleanup_free char *clean = render_sanitize(msg, strlen(msg), NULL);
                cli_error("run", "note: %s", clean ? clean : "");
        }
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
                if (type && strcmp(type, "file") == 0)
                        json_array_append_new(out, json_pack("{s:O, s:O}", "path", json_object_get(e, "path"),
                                                             "bytes", json_object_get(e, "size")));
        }
        json_decref(list);
        return out;
}

static int exit_status_for(const struct agent_result *r)
{
        switch (r->status) {
        case AGENT_ANSWERED:
                return EXIT_OK;
        case AGENT_GAVE_UP:
                return EXIT_RUN_GAVE_UP;
        case AGENT_MODEL_ERROR:
                return r->error_kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND : EXIT_RUN_MODEL;
        case AGENT_JAIL_ERROR:
                return EXIT_CORRAL;
        case AGENT_CANCELLED:
                return cli_cancel_signal() ? 128 + cli_cancel_signal() : EXIT_RUN_INTERRUPTED;
        default:
                return EXIT_CORRAL;
        }
}

static json_t *usage_json(const struct model_usage *u)
{
        return json_pack("{s:I, s:I, s:i, s:i, s:f, s:b}", "prompt_tokens", (json_int_t)u->prompt_tokens,
                         "completion_tokens", (json_int_t)u->completion_tokens, "requests", (int)u->requests,
                         "retries", (int)u->retries, "wait_ms", u->wait_ms, "estimated", u->estimated);
}

int cmd_run(int argc, char **argv)
{
        corral_jail_config jc;
        corral_jail_config_init(&jc);
        struct run_opts o = { .input_limit = 2ull << 30 };
        model_settings_init(&o.model);
        agent_config_init(&o.agent);
        corral_error *err = NULL;
        cleanup_free struct option *longopts = NULL;
        cleanup_free char *task_buf = NULL, *trace_path = NULL;
        cleanup_free const char **secrets = NULL;
        struct provider_choice choice = { 0 };
        struct workspace *ws = NULL;
        model_client *model = NULL;
        trace *tr = NULL;
        render *view = NULL;
        json_t *inputs = json_array(), *run_info = NULL, *copy_report = NULL;
        struct agent_result res = { 0 };
        int status = EXIT_USAGE_SUBCOMMAND;
        double t_start = monotonic_ms();
        char run_id[64];

        longopts = cli_merge_options(run_options);
        if (longopts == NULL || inputs == NULL) {
                corral_fail(&err, ENOMEM, "cannot parse options");
                goto fail;
        }
        int r = jail_options_parse(argc, argv, "+i:o:w:t:m:e:qh", longopts, "run", &jc, apply_option, &o, &err);
        if (r < 0)
                goto fail;
        if (r > 0) {
                fputs(help_text, stdout);
                status = EXIT_OK;
                goto out;
        }
        if (optind != argc - 1) {
                corral_usage(&err, optind >= argc ? "no task given: corral run [OPTIONS] \"TASK\""
                                                  : "one task expected, got more arguments (quote the task)");
                goto fail;
        }
        const char *task = argv[optind];
        if (strcmp(task, "-") == 0)
                task = task_buf = read_task_stdin();
        if (task == NULL || task[strspn(task, " \t\r\n")] == '\0') {
                corral_usage(&err, "the task is empty");
                goto fail;
        }
        if (!utf8_valid(task, strlen(task))) {
                corral_usage(&err, "the task is not valid UTF-8");
                goto fail;
        }
        if (o.json && o.quiet)
                o.quiet = false;

        /* The model. */
        if (provider_resolve(&o.provider, &choice, &err) < 0)
                goto fail;
        secrets = collect_secrets(choice.api_key, &jc);
        if (secrets == NULL) {
                corral_fail(&err, ENOMEM, "cannot start the run");
                goto fail_corral;
        }
        int cancel_fd = cli_catch_signals();
        o.model.base_url = choice.base_url;
        o.model.model = choice.model;
        o.model.api_key = choice.api_key;
        o.model.provider = choice.provider;
        o.model.quirks = choice.quirks;
        if (!o.context_given && choice.context_tokens)
                o.agent.context_tokens = choice.context_tokens;
        o.model.cancel_fd = cancel_fd;
        o.model.secrets = secrets;
        if (model_client_open(&o.model, &model, &err) < 0)
                goto fail;
        if (jc.net == CORRAL_NET_HOST)
                fprintf(stderr, "corral run: warning: --net host gives the model's code the host's network\n");

        /* The workspace and its inputs, before anything is written. */
        if (workspace_open(o.workspace, &ws, &err) < 0)
                goto fail;
        uint64_t budget = o.input_limit;
        for (size_t i = 0; i < o.n_inputs; i++) {
                json_t *entry = NULL;
                if (workspace_stage_input(ws, o.inputs[i], &budget, &entry, &err) < 0)
                        goto fail_stage;
                json_array_append_new(inputs, entry);
        }

        /* The trace. */
        make_run_id(run_id, sizeof(run_id));
        if (!o.no_trace) {
                if (o.trace_path)
                        trace_path = strdup(o.trace_path);
                else if (asprintf(&trace_path, ".corral/runs/%s/trace.jsonl", run_id) < 0)
                        trace_path = NULL;
                if (trace_path == NULL) {
                        corral_fail(&err, ENOMEM, "cannot start the run");
                        goto fail_corral;
                }
        }
        if (trace_open(trace_path, secrets, &tr, &err) < 0)
                goto fail;
        if (!o.json && !o.quiet) {
                struct render_options ro;
                render_options_default(&ro, stderr, true);
                view = render_new(&ro);
                if (view)
                        trace_subscribe(tr, render_event, view);
        } else if (o.quiet) {
                trace_subscribe(tr, print_notice, NULL);
        }

        run_info = json_pack("{s:s, s:s, s:s?, s:s?, s:O, s:s, s:s?, s:s}", "run_id", run_id, "model", choice.model,
                             "base_url", strncmp(choice.model, "replay:", 7) ? choice.base_url : NULL, "provider",
                             choice.provider, "inputs", inputs, "workspace", ws->root, "trace", trace_path, "version",
                             CORRAL_VERSION);
        struct live live = { .view = view };
        o.agent.task = task;
        o.agent.model = model;
        o.agent.ws = ws;
        o.agent.jail = &jc;
        o.agent.trace = tr;
        o.agent.run_info = run_info;
        o.agent.cancel_fd = cancel_fd;
        o.agent.secrets = secrets;
        o.agent.on_content = on_content;
        o.agent.userdata = &live;
        if (agent_run(&o.agent, &res, &err) < 0)
                goto fail_corral;

        /* Whatever happened: the artifacts come out. */
        corral_error *copy_err = NULL;
        if (o.out && workspace_copy_out(ws, o.out, &copy_report, &copy_err) < 0) {
                cli_error("run", "cannot copy the output to '%s': %s", o.out, copy_err->msg);
                corral_error_free(copy_err);
                if (res.status == AGENT_ANSWERED) {
                        res.status = AGENT_JAIL_ERROR;
                        free(res.reason);
                        res.reason = strdup("the output could not be copied");
                }
        }
        /* What could not be copied is said, not silently dropped. */
        json_t *skipped = json_object_get(copy_report, "skipped"), *sk;
        size_t si;
        json_array_foreach(skipped, si, sk) {
                cleanup_free char *msg = NULL;
                if (asprintf(&msg, "not copied to '%s': %s (%s)", o.out,
                             json_string_value(json_object_get(sk, "path")),
                             json_string_value(json_object_get(sk, "reason"))) >= 0)
                        trace_emit(tr, "notice", json_pack("{s:s}", "message", msg));
        }
        json_t *artifacts = list_artifacts(ws);
        const struct model_usage *u = model_client_usage(model);
        double wall_ms = monotonic_ms() - t_start;
        trace_emit(tr, "run_end",
                   json_pack("{s:s, s:s?, s:s?, s:i, s:o, s:O, s:s?, s:O?, s:f}", "status",
                             agent_status_to_string(res.status), "answer", res.answer, "reason", res.reason,
                             "iterations", res.iterations, "usage", usage_json(u), "artifacts", artifacts,
                             "output_dir", o.out, "not_copied", skipped, "wall_ms", wall_ms));
        status = exit_status_for(&res);

        if (o.json) {
                json_t *j = json_pack("{s:i, s:s, s:s?, s:s?, s:i, s:o, s:O, s:s?, s:s, s:s, s:s, s:s?, s:o, s:f}",
                                      "schema", 1, "status", agent_status_to_string(res.status), "answer",
                                      res.answer, "reason", res.reason, "iterations", res.iterations, "usage",
                                      usage_json(u), "artifacts", artifacts, "trace", trace_path, "run_id", run_id,
                                      "model", choice.model, "protocol", res.text_protocol ? "text" : "tools",
                                      "output_dir", o.out, "not_copied", skipped ? json_incref(skipped) : json_array(),
                                      "wall_ms", wall_ms);
                if (j) {
                        trace_redact_json(j, secrets);
                        char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
                        if (text)
                                puts(text);
                        free(text);
                        json_decref(j);
                }
                if (res.status != AGENT_ANSWERED && res.reason) {
                        cleanup_free char *m = trace_redact_text(res.reason, secrets);
                        cli_error("run", "%s", m ? m : res.reason);
                }
        } else {
                if (res.status == AGENT_ANSWERED && res.answer) {
                        cleanup_free char *a = trace_redact_text(res.answer, secrets);
                        fputs(a ? a : "", stdout);
                        if (a && *a && a[strlen(a) - 1] != '\n')
                                fputc('\n', stdout);
                } else if (res.reason) {
                        cleanup_free char *m = trace_redact_text(res.reason, secrets);
                        cli_error("run", "%s", m ? m : res.reason);
                }
        }
        json_decref(artifacts);
        if (trace_write_error(tr))
                cli_error("run", "the trace could not be written completely: %s", trace_write_error(tr));
        fflush(stdout);
        goto out;

fail_stage:
        /* A bad --input is the user's to fix: usage. */
        if (err && err->kind != CORRAL_ERR_USAGE)
                goto fail_corral;
fail:
        status = err && err->kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND
                 : err && err->kind >= CORRAL_ERR_MODEL_UNREACHABLE ? EXIT_RUN_MODEL
                                                                     : EXIT_CORRAL;
        cli_error_obj("run", err);
        goto out;
fail_corral:
        status = EXIT_CORRAL;
        cli_error_obj("run", err);
out:
        render_free(view);
        trace_close(tr);
        agent_result_release(&res);
        model_client_free(model);
        workspace_close(ws, o.workspace == NULL);
        provider_choice_release(&choice);
        json_decref(inputs);
        json_decref(run_info);
        json_decref(copy_report);
        corral_error_free(err);
        corral_jail_config_release(&jc);
        free(o.inputs);
        return status;
}
