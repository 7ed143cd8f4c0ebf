/* serve.c: `corral serve`, sandboxes over HTTP (src/server/, docs/api.md).
 * Options and printing; the server is the library's. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../server/server.h"
#include "cli.h"

static const char help_text[] =
        "usage: corral serve [--listen ADDR:PORT | --socket PATH] [--tokens FILE] [--allow-host NAME]...\n"
        "                    [--max-sandboxes N] [--max-per-token N] [--max-steps-per-token N] [--max-rate N]\n"
        "                    [--max-mcp-sessions N] [--max-mcp-sessions-per-token N] [--mcp-idle-timeout S]\n"
        "                    [--max-runs N] [--max-runs-per-token N] [--model-url URL]...\n"
        "                    [--run-retention N] [--run-retention-age S]\n"
        "                    [--data DIR] [--grace S] [--run-grace S]\n"
        "                    [JAIL LIMITS]\n"
        "\n"
        "Serve sandboxes over HTTP (docs/api.md): create one, run Python in it with its output\n"
        "streamed, read and write its files, delete it.  Every request but /healthz and /readyz\n"
        "needs a token; each token sees only its own sandboxes.  /mcp serves MCP clients over\n"
        "Streamable HTTP with the same tokens (docs/mcp.md).\n"
        "\n"
        "  --listen ADDR:PORT      where to listen (default 127.0.0.1:8745; port 0 picks one); an\n"
        "                          address beyond loopback needs --tokens\n"
        "  --socket PATH           a unix socket instead (its directory must be yours, mode 0700)\n"
        "  --tokens FILE           the tokens: one \"TOKEN [NAME]\" a line, 16 to 256 printable\n"
        "                          characters, the file readable by you only; without it a token\n"
        "                          is made, written to DIR/token (0600) and printed as a URL\n"
        "  --allow-host NAME       a Host name to answer besides localhost, 127.0.0.1, [::1] and\n"
        "                          the listen address (a proxy's name; '*': any)\n"
        "      --max-sandboxes N   sandboxes at once, all tokens together (default 64)\n"
        "      --max-per-token N   sandboxes at once per token (default 16)\n"
        "      --max-steps-per-token N  steps running at once per token (default 8)\n"
        "      --max-rate N        requests a second per token, in bursts of up to 2N (default 1000)\n"
        "      --max-mcp-sessions N  MCP sessions at /mcp at once, all tokens together (default 64)\n"
        "      --max-mcp-sessions-per-token N  MCP sessions at once per token (default 16; more are\n"
        "                          answered 429)\n"
        "      --max-runs N        agent runs (POST /v1/runs) going at once, all tokens together\n"
        "                          (default 4; more are answered 503)\n"
        "      --max-runs-per-token N  agent runs going at once per token (default 4; more are\n"
        "                          answered 429)\n"
        "      --run-retention N   keep the records of the newest N finished runs, all tokens\n"
        "                          together (default: all); older ones are removed at start and\n"
        "                          as runs end\n"
        "      --run-retention-age S  remove the records of runs that ended more than S ago\n"
        "                          (e.g. 7d; units ms, s, m, h, d; default: never)\n"
        "      --model-url URL     a model endpoint a run's request may name as its base_url,\n"
        "                          besides the server's own ($OPENAI_BASE_URL or the config file's);\n"
        "                          repeatable; 'any': every URL (the server may then be made to\n"
        "                          post to any address it reaches)\n"
        "      --mcp-idle-timeout S  an MCP session unused for S seconds ends (default 1800)\n"
        "      --data DIR          where the made token goes (default $XDG_STATE_HOME/corral/serve)\n"
        "      --grace S           on SIGTERM or Ctrl-C, let running steps end for S seconds\n"
        "                          before cancelling them (default 10)\n"
        "      --run-grace S       ... and running agent runs S seconds (default 30); then they are\n"
        "                          cancelled, their records saying \"cancelled: server stopping\"\n"
        "  -t, -m, --pids, --disk, --cpus, --cpu-time, --nofile, --output-limit, --net none|down,\n"
        "  --profile, --require-cgroups, --uid-range: as for corral exec, each sandbox's defaults\n"
        "                          and the most a request may ask for\n"
        "  --net allow=HOST[:PORT][,...], --resolve, --net-bytes, --net-conns: as for corral exec:\n"
        "                          sandboxes reach these hosts only, through corral's proxy; a\n"
        "                          request may ask for none, down, or some of the hosts\n"
        "  --secret HOST=HEADER:ENV, --upstream-ca FILE: as for corral exec, the operator's\n"
        "                          credentials: a sandbox that may reach HOST gets its header\n"
        "                          added; a request can neither see nor add one\n"
        "  -h, --help              show this help\n"
        "\n"
        "It prints the URL it serves (with the token to log in, when it made one) on stdout,\n"
        "then runs until SIGTERM or Ctrl-C, which stop it gracefully; nothing is left behind.\n"
        "Exit status: 0 stopped; 2 usage error; 125 it could not start.\n";

enum {
        OPT_LISTEN = 300,
        OPT_SOCKET,
        OPT_TOKENS,
        OPT_ALLOW_HOST,
        OPT_MAX_SANDBOXES,
        OPT_MAX_PER_TOKEN,
        OPT_MAX_STEPS,
        OPT_MAX_RATE,
        OPT_DATA,
        OPT_GRACE,
        OPT_MAX_MCP_SESSIONS,
        OPT_MAX_RUNS,
        OPT_MODEL_URL,
        OPT_MCP_IDLE_TIMEOUT,
        OPT_MAX_RUNS_PER_TOKEN,
        OPT_RUN_RETENTION,
        OPT_RUN_RETENTION_AGE,
        OPT_RUN_GRACE,
        OPT_MAX_MCP_SESSIONS_PER_TOKEN,
};

static const struct option serve_options[] = {
        { "listen", required_argument, NULL, OPT_LISTEN },
        { "socket", required_argument, NULL, OPT_SOCKET },
        { "tokens", required_argument, NULL, OPT_TOKENS },
        { "allow-host", required_argument, NULL, OPT_ALLOW_HOST },
        { "max-sandboxes", required_argument, NULL, OPT_MAX_SANDBOXES },
        { "max-per-token", required_argument, NULL, OPT_MAX_PER_TOKEN },
        { "max-steps-per-token", required_argument, NULL, OPT_MAX_STEPS },
        { "max-rate", required_argument, NULL, OPT_MAX_RATE },
        { "data", required_argument, NULL, OPT_DATA },
        { "grace", required_argument, NULL, OPT_GRACE },
        { "max-mcp-sessions", required_argument, NULL, OPT_MAX_MCP_SESSIONS },
        { "max-mcp-sessions-per-token", required_argument, NULL, OPT_MAX_MCP_SESSIONS_PER_TOKEN },
        { "max-runs", required_argument, NULL, OPT_MAX_RUNS },
        { "model-url", required_argument, NULL, OPT_MODEL_URL },
        { "mcp-idle-timeout", required_argument, NULL, OPT_MCP_IDLE_TIMEOUT },
        { "max-runs-per-token", required_argument, NULL, OPT_MAX_RUNS_PER_TOKEN },
        { "run-retention", required_argument, NULL, OPT_RUN_RETENTION },
        { "run-retention-age", required_argument, NULL, OPT_RUN_RETENTION_AGE },
        { "run-grace", required_argument, NULL, OPT_RUN_GRACE },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

struct serve_opts {
        struct server_config c;
        const char *hosts[33];
        size_t n_hosts;
        const char *model_urls[33];
        size_t n_model_urls;
        double grace_s, run_grace_s;
};

static int count(const char *arg, const char *opt, unsigned *ret, corral_error **err)
{
        char *end;
        errno = 0;
        unsigned long v = strtoul(arg, &end, 10);
        if (*arg == '\0' || *end || errno || v == 0 || v > 100000)
                return corral_usage(err, "%s: expected a number from 1 to 100000, not '%s'", opt, arg);
        *ret = (unsigned)v;
        return 0;
}

static int apply(int c, const char *arg, void *userdata, corral_error **err)
{
        struct serve_opts *o = userdata;
        switch (c) {
        case OPT_LISTEN:
                o->c.listen = arg;
                return 0;
        case OPT_SOCKET:
                o->c.socket_path = arg;
                return 0;
        case OPT_TOKENS:
                o->c.tokens_file = arg;
                return 0;
        case OPT_ALLOW_HOST:
                if (o->n_hosts + 1 >= ARRAY_SIZE(o->hosts))
                        return corral_usage(err, "--allow-host: at most %zu names", ARRAY_SIZE(o->hosts) - 1);
                o->hosts[o->n_hosts++] = arg;
                return 0;
        case OPT_MAX_SANDBOXES:
                return count(arg, "--max-sandboxes", &o->c.max_sandboxes, err);
        case OPT_MAX_PER_TOKEN:
                return count(arg, "--max-per-token", &o->c.max_sandboxes_per_token, err);
        case OPT_MAX_STEPS:
                return count(arg, "--max-steps-per-token", &o->c.max_execs_per_token, err);
        case OPT_MAX_RATE:
                return count(arg, "--max-rate", &o->c.max_rate, err);
        case OPT_DATA:
                o->c.data_dir = arg;
                return 0;
        case OPT_GRACE:
                return corral_parse_seconds(arg, &o->grace_s, err) < 0 ? corral_error_prefix(err, "--grace") : 0;
        case OPT_MAX_MCP_SESSIONS:
                return count(arg, "--max-mcp-sessions", &o->c.max_mcp_sessions, err);
        case OPT_MAX_MCP_SESSIONS_PER_TOKEN:
                return count(arg, "--max-mcp-sessions-per-token", &o->c.max_mcp_sessions_per_token, err);
        case OPT_MAX_RUNS:
                return count(arg, "--max-runs", &o->c.max_runs, err);
        case OPT_MAX_RUNS_PER_TOKEN:
                return count(arg, "--max-runs-per-token", &o->c.max_runs_per_token, err);
        case OPT_RUN_RETENTION:
                return count(arg, "--run-retention", &o->c.run_retention, err);
        case OPT_RUN_RETENTION_AGE:
                return corral_parse_seconds(arg, &o->c.run_retention_age_s, err) < 0
                               ? corral_error_prefix(err, "--run-retention-age")
                               : 0;
        case OPT_RUN_GRACE:
                if (strcmp(arg, "0") == 0) {
                        o->run_grace_s = 0;
                        return 0;
                }
                return corral_parse_seconds(arg, &o->run_grace_s, err) < 0 ? corral_error_prefix(err, "--run-grace")
                                                                           : 0;
        case OPT_MODEL_URL:
                if (o->n_model_urls + 1 >= ARRAY_SIZE(o->model_urls))
                        return corral_usage(err, "--model-url: at most %zu URLs", ARRAY_SIZE(o->model_urls) - 1);
                if (strcmp(arg, "any") != 0 && strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0)
                        return corral_usage(err, "--model-url: expected an http:// or https:// URL, or 'any', not "
                                                 "'%s'",
                                            arg);
                o->model_urls[o->n_model_urls++] = arg;
                return 0;
        case OPT_MCP_IDLE_TIMEOUT:
                if (corral_parse_seconds(arg, &o->c.mcp_idle_timeout_s, err) < 0)
                        return corral_error_prefix(err, "--mcp-idle-timeout");
                if (!(o->c.mcp_idle_timeout_s > 0))
                        return corral_usage(err, "--mcp-idle-timeout: expected a time above 0, not '%s'", arg);
                return 0;
        default:
                return 0;
        }
}

int cmd_serve(int argc, char **argv)
{
        struct serve_opts o = { .grace_s = 10, .run_grace_s = 30 };
        server_config_init(&o.c);
        corral_jail_config limits;
        corral_jail_config_init(&limits);
        corral_error *err = NULL;
        struct server *srv = NULL;
        int status = EXIT_USAGE_SUBCOMMAND;
        cleanup_free struct option *longopts = cli_merge_options(serve_options);
        if (longopts == NULL) {
                corral_fail(&err, ENOMEM, "cannot parse options");
                goto out;
        }
        int r = jail_options_parse(argc, argv, "+t:m:e:h", longopts, "serve", &limits, apply, &o, &err);
        if (r > 0) {
                fputs(help_text, stdout);
                status = EXIT_OK;
                goto out;
        }
        if (r == 0 && optind < argc)
                corral_usage(&err, "serve takes no arguments ('%s')", argv[optind]);
        else if (r == 0 && (limits.rootfs || limits.n_binds || limits.workspace))
                corral_usage(&err, "a sandbox's files are its own: --rootfs, --bind, --ro-bind and -w do not apply");
        else if (r == 0 && limits.net == CORRAL_NET_HOST)
                corral_usage(&err, "--net host would give every caller the host's network: use none or down");
        if (err)
                goto out;
        o.hosts[o.n_hosts] = NULL;
        o.c.allowed_hosts = o.hosts;
        o.model_urls[o.n_model_urls] = NULL;
        o.c.model_urls = o.model_urls;
        o.c.limits = &limits;
        int cancel_fd = cli_catch_signals();
        if (server_start(&o.c, &srv, &err) < 0) {
                status = err && err->kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND : EXIT_CORRAL;
                goto out;
        }
        /* The URL on stdout (a script reads it); how to stop on stderr. */
        printf("%s\n", server_url(srv));
        fflush(stdout);
        if (server_token_file(srv))
                fprintf(stderr, "corral serve: the token is in %s\n", server_token_file(srv));
        fprintf(stderr, "corral serve: serving; Ctrl-C or SIGTERM stops it\n");
        struct pollfd p = { .fd = cancel_fd, .events = POLLIN };
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
                ;
        fprintf(stderr, "corral serve: stopping (running steps have %g s to end, agent runs %g s)\n", o.grace_s,
                o.run_grace_s);
        server_shutdown(srv, o.grace_s, o.run_grace_s);
        status = EXIT_OK;
out:
        if (err)
                cli_error_obj("serve", err);
        corral_error_free(err);
        server_free(srv);
        corral_jail_config_release(&limits);
        return status;
}
