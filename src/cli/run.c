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
#include "../lib/redact.h"
#include "../model/provider.h"
#include "../review/review.h"
#include "../trace/render.h"
#include "../workspace/artifact.h"
#include "../workspace/dest.h"
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
        "                          (default: $OPENAI_BASE_URL unless --provider is given, else the\n"
        "                          provider's from the config file or its preset, else OpenAI's)\n"
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
        "                          /workspace/input/DEST (default DEST: its name; repeatable);\n"
        "                          bound into the jails, not copied\n"
        "      --manifest FILE     stage the entries of a JSON manifest: files, directories and\n"
        "                          inline content anywhere under /workspace, read-only (bound, not\n"
        "                          copied) or writable (copied); see docs/workspace.md\n"
        "  -o, --out DIR           copy /workspace/output/ to DIR when the run ends (also when it\n"
        "                          fails or is interrupted; default: with the run's records,\n"
        "                          $XDG_STATE_HOME/corral/runs/ID/output, or none with -w)\n"
        "  -w, --workspace DIR     use DIR as the workspace and keep it (default: a temporary one)\n"
        "      --input-limit SIZE  total size of what --input and --manifest stage, bound or\n"
        "                          copied (default 2G)\n"
        "      --archive FILE      write the workspace to FILE (a pax tar) when the run ends, also\n"
        "                          when it gives up; staged inputs and ephemeral entries are left\n"
        "                          out (docs/workspace.md, \"Archives\")\n"
        "      --archive-inputs    with --archive: keep the staged inputs too\n"
        "      --from FILE         start from a workspace archive (an earlier run's --archive)\n"
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
        "      --output-limit, --net none|down|host, --ro-bind, --bind, --rootfs, --profile,\n"
        "      --require-cgroups, --uid-range\n"
        "      --stateless         run each run_python step in a fresh process (default: one\n"
        "                          Python session per run: variables and imports persist,\n"
        "                          figures are saved to output/figures/; docs/sessions.md)\n"
        "      --cold              start the session's interpreter afresh (default: forked from a\n"
        "                          zygote with numpy, pandas, matplotlib and scipy imported,\n"
        "                          started while the model answers the first turn)\n"
        "      --images auto|on|off  also show the model a step's figures as images (auto, the\n"
        "                          default: when the config file's \"modalities\" for the model\n"
        "                          list \"image\"); turned off for the run, with a notice, when\n"
        "                          the endpoint rejects images\n"
        "      --images-per-step N, --images-per-run N  image budget (default 2 and 8; 0-8 per\n"
        "                          step); figures over it are named, not sent\n"
        "      --image-bytes SIZE  PNG bytes per image (default 300K; rendered with a long side\n"
        "                          of at most 768 px, smaller if needed)\n"
        "  -e, --env NAME=VALUE    pass to the jails; VALUE is redacted from trace, transcript and\n"
        "                          messages\n"
        "\n"
        "safety review (docs/review.md):\n"
        "      --review-policy P   review every run_python/run_shell step before it runs: strict,\n"
        "                          standard (default), off, or a JSON policy file; a rejected step\n"
        "                          does not run and the model is told why\n"
        "      --llm-review        also ask a model about steps the review warns about (the run's\n"
        "                          model, with its own prompt); it may reject them\n"
        "      --reviewer-model M  the model for --llm-review (same endpoint; implies --llm-review)\n"
        "\n"
        "output:\n"
        "      --json              print one JSON result object (docs/run-json.md), no live view\n"
        "  -q, --quiet             no live view: the answer on stdout, notices and errors on stderr\n"
        "      --no-color          no colours in the live view (also when NO_COLOR is set or TERM\n"
        "                          is dumb)\n"
        "      --trace FILE        JSONL trace (default $XDG_STATE_HOME/corral/runs/ID/trace.jsonl,\n"
        "                          ~/.local/state/... when unset; mode 0600; see corral runs)\n"
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
        OPT_MANIFEST,
        OPT_MAX_ITERATIONS,
        OPT_TOKEN_BUDGET,
        OPT_WALL_BUDGET,
        OPT_CONTEXT_TOKENS,
        OPT_JSON,
        OPT_TRACE,
        OPT_NO_TRACE,
        OPT_ARCHIVE,
        OPT_ARCHIVE_INPUTS,
        OPT_FROM,
        OPT_STATELESS,
        OPT_COLD,
        OPT_REVIEW_POLICY,
        OPT_LLM_REVIEW,
        OPT_REVIEWER_MODEL,
        OPT_IMAGES,
        OPT_IMAGES_PER_STEP,
        OPT_IMAGES_PER_RUN,
        OPT_IMAGE_BYTES,
        OPT_NO_COLOR,
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
        { "manifest", required_argument, NULL, OPT_MANIFEST },
        { "max-iterations", required_argument, NULL, OPT_MAX_ITERATIONS },
        { "token-budget", required_argument, NULL, OPT_TOKEN_BUDGET },
        { "wall-budget", required_argument, NULL, OPT_WALL_BUDGET },
        { "context-tokens", required_argument, NULL, OPT_CONTEXT_TOKENS },
        { "json", no_argument, NULL, OPT_JSON },
        { "quiet", no_argument, NULL, 'q' },
        { "trace", required_argument, NULL, OPT_TRACE },
        { "no-trace", no_argument, NULL, OPT_NO_TRACE },
        { "archive", required_argument, NULL, OPT_ARCHIVE },
        { "archive-inputs", no_argument, NULL, OPT_ARCHIVE_INPUTS },
        { "from", required_argument, NULL, OPT_FROM },
        { "stateless", no_argument, NULL, OPT_STATELESS },
        { "cold", no_argument, NULL, OPT_COLD },
        { "review-policy", required_argument, NULL, OPT_REVIEW_POLICY },
        { "llm-review", no_argument, NULL, OPT_LLM_REVIEW },
        { "reviewer-model", required_argument, NULL, OPT_REVIEWER_MODEL },
        { "images", required_argument, NULL, OPT_IMAGES },
        { "images-per-step", required_argument, NULL, OPT_IMAGES_PER_STEP },
        { "images-per-run", required_argument, NULL, OPT_IMAGES_PER_RUN },
        { "image-bytes", required_argument, NULL, OPT_IMAGE_BYTES },
        { "no-color", no_argument, NULL, OPT_NO_COLOR },
        { "no-colour", no_argument, NULL, OPT_NO_COLOR },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

struct run_opts {
        struct provider_request provider;
        struct model_settings model;
        struct agent_config agent;
        const char **inputs;
        size_t n_inputs;
        const char *manifest;
        const char *out;
        const char *workspace;
        const char *trace_path;
        uint64_t input_limit;
        const char *archive;     /* --archive FILE */
        const char *from;        /* --from FILE */
        bool archive_inputs;
        bool no_trace;
        bool context_given;
        bool json;
        bool quiet;
        bool no_color;               /* --no-color */
        struct review_policy *review; /* --review-policy (default standard) */
        bool llm_review;              /* --llm-review */
        const char *reviewer_model;   /* --reviewer-model */
        model_client *reviewer;
        int images;                   /* --images: 1 on, 0 off, -1 auto (the config file says) */
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
        case OPT_STATELESS:
                o->agent.stateless = true;
                return 0;
        case OPT_COLD:
                o->agent.cold = true;
                return 0;
        case OPT_LLM_REVIEW:
                o->llm_review = true;
                return 0;
        case OPT_IMAGES:
                if (strcmp(arg, "auto") == 0 || strcmp(arg, "on") == 0 || strcmp(arg, "off") == 0) {
                        o->images = arg[0] == 'a' ? -1 : arg[1] == 'n';
                        return 0;
                }
                return corral_usage(err, "--images: expected auto, on or off, not '%s'", arg);
        case OPT_IMAGES_PER_STEP:
                if (parse_count_max(arg, "--images-per-step", 0, AGENT_MAX_STEP_IMAGES, &n, err) < 0)
                        return -1;
                o->agent.images_per_step = (unsigned)n;
                return 0;
        case OPT_IMAGES_PER_RUN:
                if (parse_count_max(arg, "--images-per-run", 0, 1000, &n, err) < 0)
                        return -1;
                o->agent.images_per_run = (unsigned)n;
                return 0;
        case OPT_IMAGE_BYTES:
                if (corral_parse_size(arg, &o->agent.image_bytes, err) < 0)
                        return corral_error_prefix(err, "--image-bytes");
                /* 8 renderings of 2 MiB in base64 stay well within a session frame's 64 MiB. */
                if (o->agent.image_bytes < 1024 || o->agent.image_bytes > (2u << 20))
                        return corral_usage(err, "--image-bytes: %s is out of range (1K to 2M)", arg);
                return 0;
        case OPT_REVIEWER_MODEL:
                o->llm_review = true;
                o->reviewer_model = arg;
                return 0;
        case OPT_REVIEW_POLICY:
                review_policy_free(o->review);
                o->review = NULL;
                if (review_policy_load(arg, &o->review, err) < 0)
                        return corral_error_prefix(err, "--review-policy");
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
        case OPT_MANIFEST:
                if (o->manifest)
                        return corral_usage(err, "--manifest: give one manifest");
                o->manifest = arg;
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
        case OPT_ARCHIVE:
                o->archive = arg;
                return 0;
        case OPT_ARCHIVE_INPUTS:
                o->archive_inputs = true;
                return 0;
        case OPT_FROM:
                o->from = arg;
                return 0;
        case OPT_NO_COLOR:
                o->no_color = true;
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

/* The task from stdin: a byte past AGENT_TASK_MAX tells it is too long
 * (agent_run() says so); the rest is not read. */
static char *read_task_stdin(void)
{
        struct capbuf b = { .cap = AGENT_TASK_MAX + 1 };
        char chunk[4096];
        ssize_t n;
        while (!b.truncated && (n = read(STDIN_FILENO, chunk, sizeof(chunk))) > 0)
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

/* Streamed model text into the live view (userdata: the render, or NULL). */
static void on_content(void *ud, const char *delta, size_t len)
{
        if (ud)
                render_content_delta(ud, delta, len);
}

/* --quiet: notices (a fallback, a file not copied) still reach stderr. */
static void print_notice(void *ud, const json_t *event)
{
        (void)ud;
        const char *type = json_string_value(json_object_get(event, "type"));
        const char *msg = json_string_value(json_object_get(event, "message"));
        if (type && strcmp(type, "notice") == 0 && msg)
                cli_error("run", "note: %s", msg); /* made inert there */
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
                         "retries", (int)u->retries, "wait_ms", round_ms(u->wait_ms), "estimated", u->estimated);
}

/* Everything one `corral run` holds; released by run_release(). */
struct run {
        struct run_opts o;
        corral_jail_config jail;
        struct provider_choice choice;
        const char **secrets;
        char *task_buf;
        char *trace_path;
        char *records;           /* the run's records: RUNS_DIR/ID (cli_runs_dir()) */
        char run_id[64];
        /* Where the run writes on the host, resolved before anything runs
         * (workspace/dest.h); dirfd -1: not written. */
        struct ws_roots roots;   /* what the run's jails can write */
        struct ws_dest out;      /* --out, else (without -w) RECORDS/output */
        struct ws_dest kept;     /* RECORDS/output: the output when --out cannot take it */
        struct ws_dest archive;  /* --archive */
        struct ws_dest trace;    /* --trace, else RECORDS/trace.jsonl */
        struct workspace *ws;
        model_client *model;
        trace *tr;
        render *view;
        json_t *inputs;          /* the staged inputs' entries */
        json_t *run_info;
        char *restore_note;      /* --from: for the system prompt */
        json_t *archive_report;  /* --archive: what was written */
        json_t *replay;          /* replay:FILE: {"transcript", "inputs": "same"|"different"|"unknown",
                                  * "input_changes"} (docs/providers.md, "Replay") */
        struct agent_result res;
        double t_start;
};

static bool is_model_error(int kind)
{
        switch (kind) {
        case CORRAL_ERR_MODEL_UNREACHABLE:
        case CORRAL_ERR_MODEL_AUTH:
        case CORRAL_ERR_MODEL_NOT_FOUND:
        case CORRAL_ERR_MODEL_CONTEXT:
        case CORRAL_ERR_MODEL_NO_TOOLS:
        case CORRAL_ERR_MODEL_REFUSED:
        case CORRAL_ERR_MODEL_NO_IMAGES:
                return true;
        default:
                return false;
        }
}

/* Options and the task.  1 for --help, 0, or -1 with a usage error. */
static int parse_command_line(struct run *run, int argc, char **argv, const char **ret_task, corral_error **err)
{
        cleanup_free struct option *longopts = cli_merge_options(run_options);
        if (longopts == NULL)
                return corral_fail(err, ENOMEM, "cannot parse options");
        int r = jail_options_parse(argc, argv, "+i:o:w:t:m:e:qh", longopts, "run", &run->jail, apply_option,
                                   &run->o, err);
        if (r != 0)
                return r;
        if (optind != argc - 1)
                return corral_usage(err, optind >= argc ? "no task given: corral run [OPTIONS] \"TASK\""
                                                        : "one task expected, got more arguments (quote the task)");
        const char *task = argv[optind];
        if (strcmp(task, "-") == 0)
                task = run->task_buf = read_task_stdin();
        if (task == NULL || task[strspn(task, " \t\r\n")] == '\0')
                return corral_usage(err, "the task is empty");
        if (!utf8_valid(task, strlen(task)) && strlen(task) <= AGENT_TASK_MAX)
                return corral_usage(err, "the task is not valid UTF-8");
        if (strlen(task) > AGENT_TASK_MAX)
                return corral_usage(err, "the task is %s%zu bytes, more than the %u KiB a task may be (it is sent "
                                         "with every model turn): put the text in a file, stage it with -i FILE, and "
                                         "name it in the task",
                                    run->task_buf ? "over " : "", strlen(task), AGENT_TASK_MAX >> 10);
        if (run->o.archive_inputs && run->o.archive == NULL)
                return corral_usage(err, "--archive-inputs needs --archive FILE");
        if (run->o.json)
                run->o.quiet = false;
        *ret_task = task;
        return 0;
}

/* A destination the user named with a flag: a usage error names the flag. */
static int open_dest(const char *path, enum ws_dest_kind kind, const char *what, const char *flag,
                     const struct ws_roots *roots, struct ws_dest *ret, corral_error **err)
{
        if (ws_dest_open(path, kind, what, roots, ret, err) == 0)
                return 0;
        if (flag)
                corral_error_prefix(err, "%s", flag);
        return -1;
}

/* Every place the run writes on the host, resolved now, before the model is
 * asked anything or any code runs: a destination that cannot be made, or
 * that lies in a directory the jails can write (where code could turn it
 * into a link to anywhere), is refused before any work is spent
 * (docs/security.md, "Host paths").  Nothing is created yet. */
static int open_destinations(struct run *run, corral_error **err)
{
        struct run_opts *o = &run->o;
        make_run_id(run->run_id, sizeof(run->run_id));
        if (o->workspace && ws_roots_add(&run->roots, o->workspace, "the workspace", err) < 0)
                return -1;
        for (size_t i = 0; i < run->jail.n_binds; i++)
                if (run->jail.binds[i].writable &&
                    ws_roots_add(&run->roots, run->jail.binds[i].src, "a writable bind", err) < 0)
                        return -1;
        cleanup_free char *runs = cli_runs_dir();
        if (runs == NULL || asprintf(&run->records, "%s/%s", runs, run->run_id) < 0) {
                run->records = NULL;
                return corral_usage(err, "cannot tell where to keep the run's records: set $XDG_STATE_HOME or "
                                         "$HOME");
        }
        cleanup_free char *kept = NULL, *trace_file = NULL;
        if (asprintf(&kept, "%s/output", run->records) < 0 || asprintf(&trace_file, "%s/trace.jsonl", run->records) < 0)
                return corral_fail(err, ENOMEM, "cannot start the run");
        if (o->out && open_dest(o->out, WS_DEST_DIR, "the output directory", "--out", &run->roots, &run->out, err) < 0)
                return -1;
        /* Without -w the workspace goes at the end: its output is kept with
         * the records, or there when --out cannot take it. */
        if (o->workspace == NULL &&
            open_dest(kept, WS_DEST_DIR, "the run's output directory", NULL, &run->roots, &run->kept, err) < 0)
                return corral_error_prefix(err, "the run's records ($XDG_STATE_HOME/corral/runs)");
        if (o->archive &&
            open_dest(o->archive, WS_DEST_FILE, "the archive", "--archive", &run->roots, &run->archive, err) < 0)
                return -1;
        if (!o->no_trace) {
                int r = o->trace_path ? open_dest(o->trace_path, WS_DEST_FILE, "the trace", "--trace", &run->roots,
                                                  &run->trace, err)
                                      : open_dest(trace_file, WS_DEST_FILE, "the trace", NULL, &run->roots, &run->trace,
                                                  err);
                if (r < 0)
                        return o->trace_path ? -1
                                             : corral_error_prefix(err, "the run's records ($XDG_STATE_HOME/corral/"
                                                                        "runs; or --no-trace)");
                run->trace_path = strdup(o->trace_path ? o->trace_path : trace_file);
                if (run->trace_path == NULL)
                        return corral_fail(err, ENOMEM, "cannot start the run");
        }
        /* The transcript is opened by the model client, before any step:
         * only where it is needs checking here. */
        struct ws_dest rec;
        if (o->model.record_path &&
            open_dest(o->model.record_path, WS_DEST_FILE, "the transcript", "--record", &run->roots, &rec, err) < 0)
                return -1;
        if (o->model.record_path)
                ws_dest_release(&rec);
        return 0;
}

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
static void replay_set_up(struct run *run)
{
        bool recording = run->o.model.record_path != NULL, replay = model_client_is_replay(run->model);
        if (!recording && !replay)
                return;
        workspace_digest_inputs(run->ws, run->inputs);
        json_t *inputs = json_array(), *e;
        size_t i;
        json_array_foreach (run->inputs, i, e) {
                json_t *x = json_pack("{s:O?, s:O?, s:O?, s:O?}", "dest", json_object_get(e, "dest"), "type",
                                      json_object_get(e, "type"), "bytes", json_object_get(e, "bytes"), "sha256",
                                      json_object_get(e, "sha256"));
                if (x)
                        json_array_append_new(inputs, x);
        }
        if (recording) {
                json_t *info = json_pack("{s:O, s:s}", "inputs", inputs, "corral_version", CORRAL_VERSION);
                model_client_record_run(run->model, info);
                json_decref(info);
        }
        if (replay) {
                const json_t *rec = model_client_replay_run(run->model);
                run->replay = json_pack("{s:s, s:s}", "transcript", run->choice.model + strlen("replay:"), "inputs",
                                        rec ? "same" : "unknown");
                if (rec && run->replay) {
                        json_t *changes = input_changes(json_object_get(rec, "inputs"), inputs);
                        if (json_array_size(changes) > 0)
                                json_object_set_new(run->replay, "inputs", json_string("different"));
                        json_object_set_new(run->replay, "input_changes", changes);
                }
        }
        json_decref(inputs);
}

/* A replay whose answer must not pass for this run's: recorded on other
 * inputs, or on unknown ones, or its tool results differed on the way. */
static bool replay_answer_is_stale(const struct run *run)
{
        const char *inputs = json_string_value(json_object_get(run->replay, "inputs"));
        return run->replay && ((inputs && strcmp(inputs, "same") != 0) ||
                               model_client_replay_divergence(run->model) != NULL);
}

/* The destinations, then the model client, the workspace with its inputs,
 * then the trace and the view: nothing is written before the inputs are
 * staged. */
static int set_up(struct run *run, int cancel_fd, corral_error **err)
{
        struct run_opts *o = &run->o;
        if (open_destinations(run, err) < 0)
                return -1;
        if (provider_resolve(&o->provider, &run->choice, err) < 0)
                return -1;
        run->secrets = collect_secrets(run->choice.api_key, &run->jail);
        if (run->secrets == NULL)
                return corral_fail(err, ENOMEM, "cannot start the run");
        o->model.base_url = run->choice.base_url;
        o->model.model = run->choice.model;
        o->model.api_key = run->choice.api_key;
        o->model.provider = run->choice.provider;
        o->model.quirks = run->choice.quirks;
        o->model.cancel_fd = cancel_fd;
        o->model.secrets = run->secrets;
        if (!o->context_given && run->choice.context_tokens)
                o->agent.context_tokens = run->choice.context_tokens;
        /* Images: the flag, else the config file's "modalities"; no preset
         * turns them on (a text-only model rejects the request). */
        o->agent.images = o->images >= 0 ? o->images == 1 : run->choice.images > 0;
        if (model_client_open(&o->model, &run->model, err) < 0)
                return -1;
        if (run->jail.net == CORRAL_NET_HOST)
                fprintf(stderr, "corral run: warning: --net host gives the model's code the host's network\n");

        /* --input and --manifest are one manifest, checked whole before
         * anything is made. */
        struct ws_manifest m = { 0 };
        int r = 0;
        for (size_t i = 0; r == 0 && i < o->n_inputs; i++)
                r = ws_manifest_add_input(&m, o->inputs[i], err);
        if (r == 0 && o->manifest)
                r = ws_manifest_load(&m, o->manifest, err);
        if (r == 0)
                r = ws_manifest_check(&m, err);
        if (r == 0)
                r = workspace_open(o->workspace, &run->ws, err);
        /* Before the inputs: the archive's entries must not meet them. */
        if (r == 0 && o->from)
                r = run_archive_restore(run->ws, o->from, &run->restore_note, err);
        uint64_t budget = o->input_limit;
        json_t *staged = NULL;
        if (r == 0)
                r = workspace_stage_manifest(run->ws, &m, &budget, &staged, err);
        ws_manifest_release(&m);
        if (r < 0)
                return -1;
        json_array_extend(run->inputs, staged);
        json_decref(staged);
        if (run->ws->created)
                cli_cancel_leaves(run->ws->root);
        replay_set_up(run);

        cleanup_close int trace_dir = run->trace.dirfd >= 0 ? ws_dest_dir(&run->trace, 0700, err) : AT_FDCWD;
        if (trace_dir == -1 ||
            trace_open_at(trace_dir, run->trace.name, run->trace_path, run->secrets, &run->tr, err) < 0) {
                /* Where the trace goes is the user's to fix: a usage error. */
                (*err)->kind = CORRAL_ERR_USAGE;
                return corral_error_prefix(err, "the trace (choose another with --trace FILE, or --no-trace)");
        }
        if (!o->json && !o->quiet) {
                struct render_options ro;
                render_options_default(&ro, stderr, true);
                ro.field_text = cli_field_text;
                if (o->no_color)
                        ro.color = false;
                run->view = render_new(&ro);
                if (run->view)
                        trace_subscribe_sync(run->tr, render_event, run->view);
        } else if (o->quiet) {
                trace_subscribe_sync(run->tr, print_notice, NULL);
        }
        const char *model = run->choice.model;
        cleanup_free char *cwd = getcwd(NULL, 0); /* where the run was started, for `corral runs` */
        run->run_info = json_pack("{s:s, s:s, s:s?, s:s?, s:O, s:s, s:s?, s:s}", "run_id", run->run_id, "model",
                                  model, "base_url", strncmp(model, "replay:", 7) ? run->choice.base_url : NULL,
                                  "provider", run->choice.provider, "inputs", run->inputs, "workspace",
                                  run->ws->root, "trace", run->trace_path, "version", CORRAL_VERSION);
        if (run->run_info && cwd)
                json_object_set_new(run->run_info, "cwd", json_string(cwd));
        if (run->run_info && run->replay)
                json_object_set(run->run_info, "replay", run->replay);
        return 0;
}

/* Copy the output out (whatever the outcome), say what was left behind,
 * write the last event and print the result.  Returns the exit status. */
static int finish(struct run *run)
{
        struct run_opts *o = &run->o;
        struct agent_result *res = &run->res;
        json_t *copy_report = NULL;
        corral_error *copy_err = NULL;
        json_t *artifacts = list_artifacts(run->ws);
        /* Where the output goes: --out, else (without -w) the run's
         * records, made only when there is something to keep. */
        const struct ws_dest *out = run->out.dirfd >= 0 ? &run->out : run->kept.dirfd >= 0 ? &run->kept : NULL;
        if (out == &run->kept && json_array_size(artifacts) == 0)
                out = NULL;
        const char *output_dir = out ? out->shown : NULL;
        if (out && workspace_copy_out(run->ws, out, &copy_report, &copy_err) < 0) {
                /* Nothing is lost: the output goes with the run's records,
                 * and the run keeps the status it had. */
                cleanup_free char *msg = NULL;
                json_decref(copy_report);
                copy_report = NULL;
                output_dir = NULL;
                corral_error *kept_err = NULL;
                if (out != &run->kept && run->kept.dirfd >= 0 &&
                    workspace_copy_out(run->ws, &run->kept, &copy_report, &kept_err) == 0) {
                        output_dir = run->kept.shown;
                        if (asprintf(&msg, "cannot copy the output to '%s' (%s): kept in '%s' instead", out->shown,
                                     copy_err->msg, output_dir) < 0)
                                msg = NULL;
                } else if (asprintf(&msg, "cannot copy the output to '%s': %s%s", out->shown, copy_err->msg,
                                    run->o.workspace ? " (it is still in the workspace)" : "") < 0) {
                        msg = NULL;
                }
                trace_emit(run->tr, "notice", json_pack("{s:s}", "message", msg ? msg : copy_err->msg));
                if (o->json || o->quiet || run->view == NULL)
                        cli_error("run", "%s", msg ? msg : copy_err->msg);
                corral_error_free(copy_err);
                corral_error_free(kept_err);
        }
        /* What could not be copied is said, not silently dropped. */
        json_t *skipped = json_object_get(copy_report, "skipped"), *sk;
        size_t i;
        json_array_foreach(skipped, i, sk) {
                cleanup_free char *msg = NULL;
                if (asprintf(&msg, "not copied to '%s': %s (%s)", output_dir,
                             json_string_value(json_object_get(sk, "path")),
                             json_string_value(json_object_get(sk, "reason"))) >= 0)
                        trace_emit(run->tr, "notice", json_pack("{s:s}", "message", msg));
        }
        cleanup_free char *archive_error = NULL;
        if (run->archive.dirfd >= 0) {
                corral_error *aerr = NULL;
                run->archive_report = run_archive_write(run->ws, &run->archive, o->archive_inputs, o->agent.task,
                                                        res, run->run_id, run->choice.model, run->secrets, &aerr);
                cleanup_free char *msg = NULL;
                json_t *ar = run->archive_report;
                int n = ar ? asprintf(&msg, "workspace archived to '%s' (%" JSON_INTEGER_FORMAT " entries, %"
                                            JSON_INTEGER_FORMAT " skipped)", o->archive,
                                      json_integer_value(json_object_get(ar, "entries")),
                                      (json_int_t)json_array_size(json_object_get(ar, "skipped")))
                           : asprintf(&msg, "cannot archive the workspace to '%s': %s", o->archive,
                                      aerr ? aerr->msg : "unknown error");
                if (n >= 0)
                        trace_emit(run->tr, "notice", json_pack("{s:s}", "message", msg));
                if (ar == NULL && (o->json || o->quiet || run->view == NULL))
                        cli_error("run", "%s", msg ? msg : "cannot archive the workspace");
                if (ar == NULL)
                        archive_error = strdup(aerr ? aerr->msg : "unknown error");
                corral_error_free(aerr);
        }
        /* A replay's answer is the recorded text: say when it is not about
         * this run's data (the code did run on it: the artifacts are this
         * run's). */
        bool stale = replay_answer_is_stale(run);
        cleanup_free char *stale_note = NULL;
        if (run->replay) {
                const json_t *div = model_client_replay_divergence(run->model);
                json_object_set(run->replay, "diverged", div ? (json_t *)div : json_null());
                json_object_set_new(run->replay, "answer_recorded_on_other_data", json_boolean(stale));
        }
        if (stale && res->status == AGENT_ANSWERED) {
                const char *inputs = json_string_value(json_object_get(run->replay, "inputs"));
                json_t *changes = json_object_get(run->replay, "input_changes");
                const json_t *div = model_client_replay_divergence(run->model);
                const char *why = strcmp(inputs, "different") == 0 ? json_string_value(json_array_get(changes, 0))
                                  : strcmp(inputs, "unknown") == 0 ? "the transcript does not record its inputs"
                                                                   : NULL;
                char turn[96] = "";
                if (why == NULL && div)
                        snprintf(turn, sizeof(turn), "the tool results of turn %" JSON_INTEGER_FORMAT " differ",
                                 json_integer_value(json_object_get(div, "turn")));
                if (asprintf(&stale_note,
                             "the answer is the one recorded in '%s', not computed from this run's data (%s%s); the "
                             "code ran on this run's inputs: its artifacts are this run's",
                             json_string_value(json_object_get(run->replay, "transcript")), why ? why : turn,
                             why && json_array_size(changes) > 1 ? ", ..." : "") < 0)
                        stale_note = NULL;
                if (stale_note)
                        trace_emit(run->tr, "notice", json_pack("{s:s}", "message", stale_note));
        }
        const struct model_usage *u = model_client_usage(run->model);
        double wall_ms = round_ms(monotonic_ms() - run->t_start);
        const char *status = agent_status_to_string(res->status);
        /* The trace keeps the reason's words and its field; what the user
         * reads (the JSON, stderr, the live view) names the flag too. */
        trace_emit(run->tr, "run_end",
                   json_pack("{s:s, s:s?, s:s?, s:s?, s:i, s:o, s:O, s:s?, s:O?, s:f}", "status", status, "answer",
                             res->answer, "reason", res->reason, "field", res->reason_field, "iterations",
                             res->iterations, "usage", usage_json(u), "artifacts", artifacts, "output_dir",
                             output_dir, "not_copied", skipped, "wall_ms", wall_ms));
        cleanup_free char *reason = res->reason ? cli_field_text(res->reason, res->reason_field) : NULL;
        if (reason == NULL && res->reason)
                reason = strdup(res->reason);

        if (o->json) {
                json_t *j = json_pack("{s:i, s:s, s:s?, s:s?, s:i, s:o, s:O, s:s?, s:s, s:s, s:s, s:s?, s:o, s:f}",
                                      "schema", 1, "status", status, "answer", res->answer, "reason", reason,
                                      "iterations", res->iterations, "usage", usage_json(u), "artifacts",
                                      artifacts, "trace", run->trace_path, "run_id", run->run_id, "model",
                                      run->choice.model, "protocol", res->text_protocol ? "text" : "tools",
                                      "output_dir", output_dir, "not_copied",
                                      skipped ? json_incref(skipped) : json_array(), "wall_ms", wall_ms);
                char *text = NULL;
                if (j && run->archive_report)
                        json_object_set(j, "archive", run->archive_report);
                if (j && archive_error)
                        json_object_set_new(j, "archive_error", json_string(archive_error));
                if (j && run->replay)
                        json_object_set(j, "replay", run->replay);
                if (j) {
                        redact_json(j, run->secrets);
                        text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
                }
                if (text)
                        puts(text);
                else
                        cli_error("run", "cannot format the JSON result");
                free(text);
                json_decref(j);
        } else if (res->status == AGENT_ANSWERED && res->answer) {
                cleanup_free char *a = redact_text(res->answer, run->secrets);
                /* Never passed off as this run's when it is not. */
                if (stale_note)
                        printf("[corral: %s]\n", stale_note);
                /* The model's text: inert on a terminal, exact in a file. */
                cli_print_untrusted(stdout, a ? a : "", a ? strlen(a) : 0);
                if (a && *a && a[strlen(a) - 1] != '\n')
                        fputc('\n', stdout);
        }
        if (res->status != AGENT_ANSWERED && reason) {
                cleanup_free char *m = redact_text(reason, run->secrets);
                cli_error("run", "%s", m ? m : reason);
        }
        if (trace_write_error(run->tr))
                cli_error("run", "the trace could not be written completely: %s", trace_write_error(run->tr));
        fflush(stdout);
        json_decref(artifacts);
        json_decref(copy_report);
        return exit_status_for(res);
}

static void run_release(struct run *run)
{
        render_free(run->view);
        trace_close(run->tr);
        agent_result_release(&run->res);
        model_client_free(run->model);
        /* Only a workspace corral made is removed; -w DIR is the user's. */
        workspace_close(run->ws, run->o.workspace == NULL);
        provider_choice_release(&run->choice);
        json_decref(run->inputs);
        json_decref(run->run_info);
        json_decref(run->archive_report);
        json_decref(run->replay);
        free(run->restore_note);
        corral_jail_config_release(&run->jail);
        free(run->secrets);
        free(run->task_buf);
        free(run->trace_path);
        free(run->records);
        ws_dest_release(&run->out);
        ws_dest_release(&run->kept);
        ws_dest_release(&run->archive);
        ws_dest_release(&run->trace);
        ws_roots_release(&run->roots);
        free(run->o.inputs);
        review_policy_free(run->o.review);
        model_client_free(run->o.reviewer);
}

int cmd_run(int argc, char **argv)
{
        struct run run = { .o = { .input_limit = 2ull << 30, .images = -1 },
                           .out.dirfd = -1,
                           .kept.dirfd = -1,
                           .archive.dirfd = -1,
                           .trace.dirfd = -1,
                           .t_start = monotonic_ms() };
        corral_jail_config_init(&run.jail);
        model_settings_init(&run.o.model);
        agent_config_init(&run.o.agent);
        run.inputs = json_array();
        corral_error *err = NULL;
        const char *task = NULL;
        int status;

        int r = run.inputs ? parse_command_line(&run, argc, argv, &task, &err)
                           : corral_fail(&err, ENOMEM, "cannot start the run");
        if (r > 0) {
                fputs(help_text, stdout);
                status = EXIT_OK;
        } else if (r < 0 || set_up(&run, cli_catch_signals(), &err) < 0) {
                /* What the user can fix is usage (2); the endpoint, 3; corral itself, 125. */
                status = err && err->kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND
                         : err && is_model_error(err->kind)   ? EXIT_RUN_MODEL
                                                              : EXIT_CORRAL;
                cli_error_obj("run", err);
        } else {
                struct agent_config *a = &run.o.agent;
                a->task = task;
                a->model = run.model;
                a->ws = run.ws;
                a->jail = &run.jail;
                a->trace = run.tr;
                a->run_info = run.run_info;
                a->workspace_note = run.restore_note;
                a->cancel_fd = run.o.model.cancel_fd;
                a->secrets = run.secrets;
                a->on_content = on_content;
                a->userdata = run.view;
                if (run.o.review == NULL)
                        run.o.review = review_policy_new(REVIEW_LEVEL_STANDARD);
                a->review = run.o.review;
                if (run.run_info && run.o.review)
                        json_object_set_new(run.run_info, "review", review_policy_describe(run.o.review));
                if (run.o.llm_review && a->review) {
                        /* The reviewer: the run's endpoint and key, its own model if given, no transcript. */
                        struct model_settings rs = run.o.model;
                        if (run.o.reviewer_model)
                                rs.model = run.o.reviewer_model;
                        rs.record_path = NULL;
                        if (model_client_open(&rs, &run.o.reviewer, &err) < 0) {
                                /* The prefix names the flag: not --model's. */
                                corral_error_prefix(&err, "--reviewer-model");
                                if (err && err->field && strcmp(err->field, "model") == 0)
                                        err->field = NULL;
                        }
                        a->reviewer = run.o.reviewer;
                        a->reviewer_model = rs.model;
                        if (run.run_info)
                                json_object_set_new(json_object_get(run.run_info, "review"), "reviewer_model",
                                                    json_string(rs.model));
                }
                if (a->review == NULL || err) {
                        if (err == NULL)
                                corral_fail(&err, ENOMEM, "cannot set up the safety review");
                        cli_error_obj("run", err);
                        status = err->kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND : EXIT_CORRAL;
                } else if (agent_run(a, &run.res, &err) < 0) {
                        cli_error_obj("run", err);
                        status = EXIT_CORRAL;
                } else {
                        status = finish(&run);
                }
        }
        corral_error_free(err);
        run_release(&run);
        /* What a SIGKILLed run left in $TMPDIR (after the run: off its path). */
        workspace_sweep(NULL);
        return status;
}
