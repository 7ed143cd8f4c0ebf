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
#include "../agent/run.h"
#include "../lib/redact.h"
#include "../mcp/servers.h"
#include "../model/provider.h"
#include "../review/review.h"
#include "../trace/render.h"
#include "../workspace/workspace.h"
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
        "      --no-mcp            do not start the MCP servers of the config file's \"mcp\" section\n"
        "                          (by default their tools are offered beside corral's: docs/mcp.md)\n"
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
        "      --output-limit, --net none|down|host|allow=HOST[:PORT],..., --resolve, --net-bytes,\n"
        "      --net-conns, --secret, --upstream-ca, --ro-bind, --bind, --rootfs, --profile,\n"
        "      --require-cgroups, --uid-range\n"
        "      --stateless         run each run_python step in a fresh process (default: one\n"
        "                          Python session per run: variables and imports persist,\n"
        "                          figures are saved to output/figures/; docs/sessions.md)\n"
        "      --cold              start the session's interpreter afresh (default: forked from a\n"
        "                          zygote with numpy, pandas, matplotlib and scipy imported: the\n"
        "                          session host's, started when none runs and kept between runs)\n"
        "      --no-session-host   fork it from a zygote of this run's own instead, started while\n"
        "                          the model answers the first turn and ended with the run\n"
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
        "      --reviewer-model M  the reviewer's model (same endpoint): of --llm-review (implied),\n"
        "                          or of the team's reviewer with --mode team\n"
        "\n"
        "modes (docs/modes.md):\n"
        "      --mode MODE         plain (default); team: a writer (the run's model), a\n"
        "                          reviewer that approves or rejects every code step before it\n"
        "                          runs (--reviewer-model), an executor that runs it and\n"
        "                          summarises long output for the writer (--executor-model);\n"
        "                          or tdd: tests first under tests/ (written with write_file,\n"
        "                          read-only to the jail), frozen at the first code step, run in\n"
        "                          the jail after every code step; the run ends when they pass\n"
        "                          and the code ran\n"
        "      --executor-model M  the team's executor's model (same endpoint; default: the run's)\n"
        "      --verify, --no-verify  check a final answer against the task with a separate model\n"
        "                          call and send what is missing back (default: on, except for a\n"
        "                          replay: transcript that recorded no checks)\n"
        "      --verifier-model M  the model for the check (same endpoint; default: the run's)\n"
        "      --verify-rounds N   how many times an incomplete answer is sent back (default 2)\n"
        "      --plan              a short plan first, kept in the context and revised; a run that\n"
        "                          looks stuck (the same error 3 times, no new output or file for N\n"
        "                          steps) replans at once, told what went wrong\n"
        "      --replan-every N    revise the plan every N steps (default 5; 0: only when stuck;\n"
        "                          implies --plan)\n"
        "      --reproduce         at the end, run the steps' code again in a fresh workspace on\n"
        "                          the same inputs and compare output/ (files the model wrote\n"
        "                          itself are named model-authored); the result says reproduced\n"
        "                          or what differed\n"
        "      --compact, --no-compact  near the context's limit, summarise older turns with a\n"
        "                          model call before shortening output (default: on, except for a\n"
        "                          replay: transcript that recorded none)\n"
        "      --tdd-test-changes allow|deny  whether a frozen test may change when the model\n"
        "                          gives a reason (traced; default deny)\n"
        "      --approve WHEN      ask a human before code runs: never (default), risky (only\n"
        "                          steps the safety review warned about) or always; the terminal\n"
        "                          shows the code and findings and asks [a]pprove / [d]eny /\n"
        "                          [e]dit ($VISUAL/$EDITOR); needs a terminal on standard input\n"
        "      --approve-timeout SECONDS  how long a question waits (default 600)\n"
        "      --approve-default deny|approve  the answer after the timeout (default deny)\n"
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
        OPT_NO_SESSION_HOST,
        OPT_NO_MCP,
        OPT_REVIEW_POLICY,
        OPT_LLM_REVIEW,
        OPT_REVIEWER_MODEL,
        OPT_IMAGES,
        OPT_IMAGES_PER_STEP,
        OPT_IMAGES_PER_RUN,
        OPT_IMAGE_BYTES,
        OPT_NO_COLOR,
        OPT_VERIFY,
        OPT_NO_VERIFY,
        OPT_VERIFIER_MODEL,
        OPT_VERIFY_ROUNDS,
        OPT_PLAN,
        OPT_REPLAN_EVERY,
        OPT_COMPACT,
        OPT_NO_COMPACT,
        OPT_REPRODUCE,
        OPT_MODE,
        OPT_TDD_TEST_CHANGES,
        OPT_APPROVE,
        OPT_APPROVE_TIMEOUT,
        OPT_APPROVE_DEFAULT,
        OPT_EXECUTOR_MODEL,
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
        { "no-session-host", no_argument, NULL, OPT_NO_SESSION_HOST },
        { "no-mcp", no_argument, NULL, OPT_NO_MCP },
        { "review-policy", required_argument, NULL, OPT_REVIEW_POLICY },
        { "llm-review", no_argument, NULL, OPT_LLM_REVIEW },
        { "reviewer-model", required_argument, NULL, OPT_REVIEWER_MODEL },
        { "mode", required_argument, NULL, OPT_MODE },
        { "executor-model", required_argument, NULL, OPT_EXECUTOR_MODEL },
        { "images", required_argument, NULL, OPT_IMAGES },
        { "images-per-step", required_argument, NULL, OPT_IMAGES_PER_STEP },
        { "images-per-run", required_argument, NULL, OPT_IMAGES_PER_RUN },
        { "image-bytes", required_argument, NULL, OPT_IMAGE_BYTES },
        { "verify", no_argument, NULL, OPT_VERIFY },
        { "no-verify", no_argument, NULL, OPT_NO_VERIFY },
        { "verifier-model", required_argument, NULL, OPT_VERIFIER_MODEL },
        { "verify-rounds", required_argument, NULL, OPT_VERIFY_ROUNDS },
        { "plan", no_argument, NULL, OPT_PLAN },
        { "replan-every", required_argument, NULL, OPT_REPLAN_EVERY },
        { "compact", no_argument, NULL, OPT_COMPACT },
        { "no-compact", no_argument, NULL, OPT_NO_COMPACT },
        { "reproduce", no_argument, NULL, OPT_REPRODUCE },
        { "tdd-test-changes", required_argument, NULL, OPT_TDD_TEST_CHANGES },
        { "approve", required_argument, NULL, OPT_APPROVE },
        { "approve-timeout", required_argument, NULL, OPT_APPROVE_TIMEOUT },
        { "approve-default", required_argument, NULL, OPT_APPROVE_DEFAULT },
        { "no-color", no_argument, NULL, OPT_NO_COLOR },
        { "no-colour", no_argument, NULL, OPT_NO_COLOR },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

struct run_opts {
        struct run_config c;
        corral_jail_config jail;
        const char **inputs;          /* -i, each borrowed from argv */
        size_t n_inputs;
        struct review_policy *review; /* --review-policy (default: the run's standard one) */
        char *task_buf;               /* the task read from stdin */
        bool json;
        bool quiet;
        bool no_color;                /* --no-color */
        bool no_session_host;         /* --no-session-host */
        bool no_mcp;                  /* --no-mcp */
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
                o->c.provider.model = arg;
                return 0;
        case OPT_BASE_URL:
                o->c.provider.base_url = arg;
                return 0;
        case OPT_PROVIDER:
                o->c.provider.provider = arg;
                return 0;
        case OPT_CONFIG:
                o->c.provider.config_path = arg;
                return 0;
        case OPT_NO_TOOLS:
                o->c.agent.text_protocol = true;
                return 0;
        case OPT_STATELESS:
                o->c.agent.stateless = true;
                return 0;
        case OPT_NO_SESSION_HOST:
                o->no_session_host = true;
                return 0;
        case OPT_NO_MCP:
                o->no_mcp = true;
                return 0;
        case OPT_COLD:
                o->c.agent.cold = true;
                return 0;
        case OPT_LLM_REVIEW:
                o->c.llm_review = true;
                return 0;
        case OPT_VERIFY:
                o->c.verify = 1;
                return 0;
        case OPT_NO_VERIFY:
                o->c.verify = 0;
                return 0;
        case OPT_VERIFIER_MODEL:
                o->c.verify = o->c.verify == 0 ? 0 : 1;
                o->c.verifier_model = arg;
                return 0;
        case OPT_VERIFY_ROUNDS:
                n = 0;
                if (strcmp(arg, "0") != 0 && parse_count_max(arg, "--verify-rounds", 1, 20, &n, err) < 0)
                        return -1;
                o->c.agent.verify_rounds = (unsigned)n;
                return 0;
        case OPT_PLAN:
                o->c.plan = 1;
                return 0;
        case OPT_REPRODUCE:
                o->c.reproduce = true;
                return 0;
        case OPT_MODE:
                if (agent_mode_from_string(arg, &o->c.agent.mode) < 0)
                        return corral_usage(err, "--mode: expected plain, tdd or team, not '%s'", arg);
                return 0;
        case OPT_TDD_TEST_CHANGES:
                if (strcmp(arg, "allow") != 0 && strcmp(arg, "deny") != 0)
                        return corral_usage(err, "--tdd-test-changes: expected allow or deny, not '%s'", arg);
                o->c.agent.tdd_test_changes = arg[0] == 'a';
                return 0;
        case OPT_APPROVE:
                if (approve_mode_from_string(arg, &o->c.approve.mode) < 0)
                        return corral_usage(err, "--approve: expected never, risky or always, not '%s'", arg);
                return 0;
        case OPT_APPROVE_TIMEOUT:
                if (corral_parse_seconds(arg, &o->c.approve.timeout_s, err) < 0)
                        return corral_error_prefix(err, "--approve-timeout");
                if (!(o->c.approve.timeout_s > 0))
                        return corral_usage(err, "--approve-timeout: give a time of more than 0 seconds");
                return 0;
        case OPT_APPROVE_DEFAULT:
                if (strcmp(arg, "deny") != 0 && strcmp(arg, "approve") != 0)
                        return corral_usage(err, "--approve-default: expected deny or approve, not '%s'", arg);
                o->c.approve.default_approve = arg[0] == 'a';
                return 0;
        case OPT_COMPACT:
        case OPT_NO_COMPACT:
                o->c.compact = c == OPT_COMPACT;
                return 0;
        case OPT_REPLAN_EVERY:
                n = 0;
                if (strcmp(arg, "0") != 0 && parse_count_max(arg, "--replan-every", 1, 1000, &n, err) < 0)
                        return -1;
                o->c.plan = 1;
                o->c.agent.replan_every = (unsigned)n;
                return 0;
        case OPT_IMAGES:
                if (strcmp(arg, "auto") == 0 || strcmp(arg, "on") == 0 || strcmp(arg, "off") == 0) {
                        o->c.images = arg[0] == 'a' ? -1 : arg[1] == 'n';
                        return 0;
                }
                return corral_usage(err, "--images: expected auto, on or off, not '%s'", arg);
        case OPT_IMAGES_PER_STEP:
                if (parse_count_max(arg, "--images-per-step", 0, AGENT_MAX_STEP_IMAGES, &n, err) < 0)
                        return -1;
                o->c.agent.images_per_step = (unsigned)n;
                return 0;
        case OPT_IMAGES_PER_RUN:
                if (parse_count_max(arg, "--images-per-run", 0, 1000, &n, err) < 0)
                        return -1;
                o->c.agent.images_per_run = (unsigned)n;
                return 0;
        case OPT_IMAGE_BYTES:
                if (corral_parse_size(arg, &o->c.agent.image_bytes, err) < 0)
                        return corral_error_prefix(err, "--image-bytes");
                /* 8 renderings of 2 MiB in base64 stay well within a session frame's 64 MiB. */
                if (o->c.agent.image_bytes < 1024 || o->c.agent.image_bytes > (2u << 20))
                        return corral_usage(err, "--image-bytes: %s is out of range (1K to 2M)", arg);
                return 0;
        case OPT_REVIEWER_MODEL:
                o->c.llm_review = true;
                o->c.reviewer_model = arg;
                return 0;
        case OPT_EXECUTOR_MODEL:
                o->c.executor_model = arg;
                return 0;
        case OPT_REVIEW_POLICY:
                review_policy_free(o->review);
                o->review = NULL;
                if (review_policy_load(arg, &o->review, err) < 0)
                        return corral_error_prefix(err, "--review-policy");
                return 0;
        case OPT_NO_STREAM:
                o->c.model.stream = false;
                return 0;
        case OPT_REQUEST_TIMEOUT:
                if (corral_parse_seconds(arg, &o->c.model.request_timeout_s, err) < 0)
                        return corral_error_prefix(err, "--request-timeout");
                return 0;
        case OPT_RETRIES:
                if (parse_count_max(arg, "--retries", 0, 100, &n, err) < 0)
                        return -1;
                o->c.model.max_retries = (unsigned)n;
                return 0;
        case OPT_RECORD:
                o->c.model.record_path = arg;
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
                o->c.out_dir = arg;
                return 0;
        case 'w':
                o->c.workspace = arg;
                return 0;
        case OPT_MANIFEST:
                if (o->c.manifest)
                        return corral_usage(err, "--manifest: give one manifest");
                o->c.manifest = arg;
                return 0;
        case OPT_INPUT_LIMIT:
                if (corral_parse_size(arg, &o->c.input_limit, err) < 0)
                        return corral_error_prefix(err, "--input-limit");
                return 0;
        case OPT_MAX_ITERATIONS:
                if (parse_count_max(arg, "--max-iterations", 1, 10000, &n, err) < 0)
                        return -1;
                o->c.agent.max_iterations = (unsigned)n;
                return 0;
        case OPT_TOKEN_BUDGET:
                return parse_count_max(arg, "--token-budget", 1, UINT64_MAX, &o->c.agent.token_budget, err);
        case OPT_WALL_BUDGET:
                if (corral_parse_seconds(arg, &s, err) < 0)
                        return corral_error_prefix(err, "--wall-budget");
                o->c.agent.wall_budget_s = s;
                return 0;
        case OPT_CONTEXT_TOKENS:
                o->c.context_given = true;
                return parse_count_max(arg, "--context-tokens", 1024, 100000000, &o->c.agent.context_tokens, err);
        case OPT_JSON:
                o->json = true;
                return 0;
        case 'q':
                o->quiet = true;
                return 0;
        case OPT_TRACE:
                o->c.trace_path = arg;
                return 0;
        case OPT_NO_TRACE:
                o->c.no_trace = true;
                return 0;
        case OPT_ARCHIVE:
                o->c.archive = arg;
                return 0;
        case OPT_ARCHIVE_INPUTS:
                o->c.archive_inputs = true;
                return 0;
        case OPT_FROM:
                o->c.from = arg;
                return 0;
        case OPT_NO_COLOR:
                o->no_color = true;
                return 0;
        default:
                return 0;
        }
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
static int parse_command_line(struct run_opts *o, int argc, char **argv, const char **ret_task, corral_error **err)
{
        cleanup_free struct option *longopts = cli_merge_options(run_options);
        if (longopts == NULL)
                return corral_fail(err, ENOMEM, "cannot parse options");
        int r = jail_options_parse(argc, argv, "+i:o:w:t:m:e:qh", longopts, "run", &o->jail, apply_option, o,
                                   err);
        if (r != 0)
                return r;
        if (optind != argc - 1)
                return corral_usage(err, optind >= argc ? "no task given: corral run [OPTIONS] \"TASK\""
                                                        : "one task expected, got more arguments (quote the task)");
        const char *task = argv[optind];
        if (strcmp(task, "-") == 0)
                task = o->task_buf = read_task_stdin();
        if (task == NULL)
                return corral_fail(err, errno, "cannot read the task from standard input");
        if (o->task_buf && strlen(task) > AGENT_TASK_MAX) /* the rest was not read */
                return corral_usage(err, "the task on standard input is over the %u KiB a task may be: put the "
                                         "text in a file, stage it with -i FILE, and name it in the task",
                                    AGENT_TASK_MAX >> 10);
        if (o->c.archive_inputs && o->c.archive == NULL)
                return corral_usage(err, "--archive-inputs needs --archive FILE");
        if (o->json)
                o->quiet = false;
        *ret_task = task;
        return 0;
}


/* What the run says after it ended: the answer (or the JSON object) on
 * stdout, what went wrong on stderr.  Returns the exit status. */
static int print_result(struct run_opts *o, struct run *r, json_t *j)
{
        const struct agent_result *res = run_result(r);
        const char *const *secrets = run_secrets(r);
        /* The reason in words names the setting; the CLI adds its flag. */
        cleanup_free char *reason = res->reason ? cli_field_text(res->reason, res->reason_field) : NULL;
        if (reason == NULL && res->reason)
                reason = strdup(res->reason);
        if (o->json) {
                cleanup_free char *shown = reason ? redact_text(reason, secrets) : NULL;
                if (j && shown)
                        json_object_set_new(j, "reason", json_string(shown));
                if (cli_print_json(stdout, j, true) < 0)
                        cli_error("run", "cannot format the JSON result");
        } else if (res->status == AGENT_ANSWERED && res->answer) {
                cleanup_free char *a = redact_text(res->answer, secrets);
                /* Never passed off as this run's when it is not. */
                if (run_stale_note(r))
                        printf("[corral: %s]\n", run_stale_note(r));
                /* The model's text: inert on a terminal, exact in a file. */
                cli_print_untrusted(stdout, a ? a : "", a ? strlen(a) : 0);
                if (a && *a && a[strlen(a) - 1] != '\n')
                        fputc('\n', stdout);
        }
        if (res->status != AGENT_ANSWERED && reason) {
                cleanup_free char *m = redact_text(reason, secrets);
                cli_error("run", "%s", m ? m : reason);
        }
        if (run_trace_error(r))
                cli_error("run", "the trace could not be written completely: %s", run_trace_error(r));
        fflush(stdout);
        return exit_status_for(res);
}

/* --json without a view: the notices the user must hear (a copy or an
 * archive that failed) still reach stderr. */
static void print_error_notice(void *ud, const json_t *event)
{
        const char *type = json_string_value(json_object_get(event, "type"));
        const char *severity = json_string_value(json_object_get(event, "severity"));
        const char *msg = json_string_value(json_object_get(event, "message"));
        if (type && strcmp(type, "notice") == 0 && severity && strcmp(severity, "error") == 0 && msg)
                cli_error("run", "%s", msg);
}

static int start_mcp_servers(struct run_opts *o, struct run *r, struct mcp_servers **ret, corral_error **err)
{
        json_t *doc = NULL;
        cleanup_free char *path = NULL;
        if (provider_config_load(o->c.provider.config_path, &doc, &path, err) < 0)
                return -1;
        int rc = mcp_servers_open(doc, path, ret, err);
        json_decref(doc);
        if (rc == 0 && *ret)
                run_set_tools(r, mcp_servers_tools(*ret));
        return rc;
}

int cmd_run(int argc, char **argv)
{
        struct run_opts o = { 0 };
        run_config_init(&o.c);
        corral_jail_config_init(&o.jail);
        corral_error *err = NULL;
        struct run *r = NULL;
        struct mcp_servers *servers = NULL;
        render *view = NULL;
        const char *task = NULL;
        int status;
        cleanup_free char *cwd = getcwd(NULL, 0); /* where the run was started, for `corral runs` */

        int pr = parse_command_line(&o, argc, argv, &task, &err);
        if (pr > 0) {
                fputs(help_text, stdout);
                status = EXIT_OK;
                goto out;
        }
        o.c.task = task;
        o.c.jail = &o.jail;
        /* run_python's session from the user's session host: its zygote
         * outlives the run (docs/sessions.md). */
        o.c.agent.session_host = !o.no_session_host;
        o.c.inputs = o.inputs;
        o.c.n_inputs = o.n_inputs;
        o.c.review = o.review;
        o.c.cwd = cwd;
        o.c.cancel_fd = cli_catch_signals();
        if (pr == 0 && o.jail.net == CORRAL_NET_HOST)
                fprintf(stderr, "corral run: warning: --net host gives the model's code the host's network\n");
        if (pr < 0 || run_open(&o.c, &r, &err) < 0) {
                /* What the user can fix is usage (2); the endpoint, 3; corral itself, 125. */
                status = err && err->kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND
                         : err && is_model_error(err->kind)   ? EXIT_RUN_MODEL
                                                              : EXIT_CORRAL;
                cli_error_obj("run", err);
                goto out;
        }
        /* A question needs someone to answer it: here, the terminal (a
         * replay has no human and asks no one). */
        if (run_approval_asks(r) && !isatty(STDIN_FILENO)) {
                corral_usage(&err, "--approve %s asks on the terminal, and standard input is not one: run it in "
                                   "a terminal, leave --approve out, or start the run on a server (corral serve) "
                                   "and answer there", approve_mode_to_string(o.c.approve.mode));
                status = EXIT_USAGE_SUBCOMMAND;
                cli_error_obj("run", err);
                goto out;
        }
        /* The config file's MCP servers, once the run's settings are known
         * good: a mistake in them is the user's to fix (2). */
        if (!o.no_mcp && start_mcp_servers(&o, r, &servers, &err) < 0) {
                status = err && err->kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND : EXIT_CORRAL;
                cli_error_obj("run", err);
                goto out;
        }
        bool temporary = false;
        const char *ws = run_workspace_dir(r, &temporary);
        if (temporary)
                cli_cancel_leaves(ws);
        if (!o.json && !o.quiet) {
                struct render_options ro;
                render_options_default(&ro, stderr, true);
                ro.field_text = cli_field_text;
                if (o.no_color)
                        ro.color = false;
                view = render_new(&ro);
                if (view) {
                        run_subscribe(r, render_event, view, true);
                        run_on_content(r, on_content, view);
                }
        } else if (o.quiet) {
                run_subscribe(r, print_notice, NULL, true);
        }
        if (view == NULL && !o.quiet)
                run_subscribe(r, print_error_notice, NULL, true);
        /* After the view: the request's code and review are on screen first. */
        struct cli_approver approver = { .run = r, .color = !o.no_color && isatty(STDERR_FILENO) &&
                                                             getenv("NO_COLOR") == NULL };
        if (run_approval_asks(r))
                run_subscribe(r, cli_approve_event, &approver, true);
        if (run_execute(r, &err) < 0) {
                cli_error_obj("run", err);
                status = EXIT_CORRAL;
                goto out;
        }
        json_t *j = run_finish(r);
        status = print_result(&o, r, j);
        json_decref(j);
out:
        corral_error_free(err);
        /* The run first: its trace holds the view as a subscriber. */
        run_free(r);
        mcp_servers_close(servers);
        render_free(view);
        corral_jail_config_release(&o.jail);
        review_policy_free(o.review);
        free(o.inputs);
        free(o.task_buf);
        /* What a SIGKILLed run left in $TMPDIR (after the run: off its path). */
        workspace_sweep(NULL);
        return status;
}
