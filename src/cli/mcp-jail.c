/* mcp-jail.c: `corral mcp-jail`, a third-party stdio MCP server in a jail
 * (src/mcp/jailed.h, docs/mcp.md "Jailed MCP servers").  Options only: the
 * proxy is the library's.  stdout carries nothing but the server's stdout;
 * corral's own messages go to stderr beside the server's. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/util.h"
#include "../mcp/jailed.h"
#include "cli.h"

static const char help_text[] =
        "usage: corral mcp-jail [OPTIONS] -- COMMAND [ARGS...]\n"
        "\n"
        "Run a stdio MCP server (any program: Node, Python, a binary) inside a jail and proxy its\n"
        "stdin and stdout, for an MCP client's config (docs/mcp.md, \"Jailed MCP servers\"):\n"
        "  \"command\": \"corral\", \"args\": [\"mcp-jail\", \"--allow-read\", \"/srv/docs\", \"--\",\n"
        "                                 \"node\", \"/opt/mcp/server/dist/index.js\"]\n"
        "The server sees the host's /usr, /bin and /lib* read-only, a private /tmp and /workspace,\n"
        "no network, a clean environment, and only the host paths named here.  COMMAND is looked\n"
        "up on the jail's PATH; a program elsewhere must lie under an --allow-read path.\n"
        "\n"
        "  --allow-read PATH       the host file or directory PATH, read-only, at the same path\n"
        "                          (repeatable; relative to the current directory)\n"
        "  --allow-write PATH      the same, writable (repeatable)\n"
        "  --env NAME[=VALUE]      add NAME to the clean environment: with the value it has in\n"
        "                          corral's environment, or VALUE (repeatable)\n"
        "  --net MODE              none (default: the jail's own loopback only), host (the host's\n"
        "                          network) or allow=HOST[:PORT][,...] (HTTP and HTTPS to those hosts\n"
        "                          only, through corral's proxy: docs/network.md)\n"
        "      --resolve HOST:ADDR, --net-bytes SIZE, --net-conns N, --secret HOST=HEADER:ENV,\n"
        "      --upstream-ca FILE: with allow=, as for corral exec\n"
        "  -m, --memory SIZE       memory limit (default 1G)\n"
        "      --address-space SIZE  the address-space limit that stands in for the memory limit\n"
        "                          without cgroups (rlimits): default 16G, or the memory limit if\n"
        "                          larger (Node reserves far more address space than it uses)\n"
        "  -t, --timeout SECONDS   wall-clock limit (default: none, a server lives as long as its\n"
        "                          client)\n"
        "      --output-limit SIZE cap on the server's stdout and on its stderr (default: none)\n"
        "      --pids, --cpus, --cpu-time, --nofile, --disk, --profile, --require-cgroups,\n"
        "      --uid-range: as for corral exec (default 128 processes, 256M disk)\n"
        "  -h, --help              show this help\n"
        "\n"
        "It runs until the server exits; the client closing stdin normally ends it, and a server\n"
        "still running 5 s later is stopped.  SIGINT or SIGTERM stop it too.\n"
        "Exit status: the server's; 2 usage error; 125 the jail could not be set up; 126/127 the\n"
        "command could not be executed / was not found in the jail; 128+N stopped by signal N.\n";

_Static_assert(MCP_JAIL_EOF_GRACE_S == 5, "the help text says 5 s");

enum { OPT_ALLOW_READ = 420, OPT_ALLOW_WRITE, OPT_MCP_ENV, OPT_MCP_NET, OPT_ADDRESS_SPACE };

static const struct option own_options[] = {
        { "allow-read", required_argument, NULL, OPT_ALLOW_READ },
        { "allow-write", required_argument, NULL, OPT_ALLOW_WRITE },
        { "env", required_argument, NULL, OPT_MCP_ENV },
        { "net", required_argument, NULL, OPT_MCP_NET },
        { "address-space", required_argument, NULL, OPT_ADDRESS_SPACE },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

/* exec's jail options that mcp-jail does not take: its own --net and --env
 * replace them, and --allow-read/--allow-write the binds. */
static bool not_ours(const char *name)
{
        static const char *const dropped[] = { "net", "env", "ro-bind", "bind", "rootfs" };
        for (size_t i = 0; i < ARRAY_SIZE(dropped); i++)
                if (strcmp(name, dropped[i]) == 0)
                        return true;
        return false;
}

/* jail_long_options but not_ours(), then own_options; free(). */
static struct option *mcp_jail_options(void)
{
        size_t n = 0, k = 0;
        while (jail_long_options[n].name)
                n++;
        struct option *all = calloc(n + ARRAY_SIZE(own_options), sizeof(*all));
        if (all == NULL)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (!not_ours(jail_long_options[i].name))
                        all[k++] = jail_long_options[i];
        memcpy(all + k, own_options, sizeof(own_options));
        return all;
}

struct mcp_jail_opts {
        corral_jail_config *cfg;
        bool address_space_given;
};

static int allow_path(corral_jail_config *cfg, const char *arg, bool writable, corral_error **err)
{
        const char *flag = writable ? "--allow-write" : "--allow-read";
        cleanup_free char *real = realpath(arg, NULL);
        if (real == NULL)
                return corral_usage(err, "%s: cannot use '%s': %s", flag, arg, strerror(errno));
        if (corral_jail_config_add_bind_at(cfg, real, real, writable, err) < 0)
                return corral_error_prefix(err, "%s '%s'", flag, arg);
        return 0;
}

static int add_env(corral_jail_config *cfg, const char *arg, corral_error **err)
{
        if (strchr(arg, '='))
                return corral_jail_config_add_env(cfg, arg, err) < 0 ? corral_error_prefix(err, "--env") : 0;
        const char *value = getenv(arg);
        if (value == NULL)
                return corral_usage(err, "--env %s: '%s' is not set in corral's environment (give --env %s=VALUE)",
                                    arg, arg, arg);
        cleanup_free char *assignment = NULL;
        if (asprintf(&assignment, "%s=%s", arg, value) < 0)
                return corral_fail(err, ENOMEM, "--env %s", arg);
        return corral_jail_config_add_env(cfg, assignment, err) < 0 ? corral_error_prefix(err, "--env %s", arg) : 0;
}

static int apply(int c, const char *arg, void *userdata, corral_error **err)
{
        struct mcp_jail_opts *o = userdata;
        switch (c) {
        case OPT_ALLOW_READ:
        case OPT_ALLOW_WRITE:
                return allow_path(o->cfg, arg, c == OPT_ALLOW_WRITE, err);
        case OPT_MCP_ENV:
                return add_env(o->cfg, arg, err);
        case OPT_MCP_NET:
                if (strcmp(arg, "none") == 0)
                        o->cfg->net = CORRAL_NET_NONE;
                else if (strcmp(arg, "host") == 0)
                        o->cfg->net = CORRAL_NET_HOST;
                else if (strncmp(arg, "allow=", 6) == 0) {
                        o->cfg->net = CORRAL_NET_ALLOW;
                        if (corral_jail_config_add_net_allow(o->cfg, arg + 6, err) < 0)
                                return corral_error_prefix(err, "--net");
                } else
                        return corral_usage(err, "--net: invalid mode '%s': expected none, host or allow=HOST[:PORT][,...]", arg);
                return 0;
        case OPT_ADDRESS_SPACE:
                o->address_space_given = true;
                return corral_parse_size(arg, &o->cfg->address_space_bytes, err) < 0
                               ? corral_error_prefix(err, "--address-space")
                               : 0;
        default:
                return 0;
        }
}

/* What the jail shows a server, for a command that could not be executed. */
static void exec_hint(const char *program)
{
        if (program[0] == '/')
                fprintf(stderr, "corral mcp-jail: the jail has the host's /usr, /bin and /lib* and the --allow-read "
                                "and --allow-write paths only: a program elsewhere must lie under one of them\n");
        else
                fprintf(stderr, "corral mcp-jail: '%s' is looked up on the jail's PATH (/usr/local/bin:/usr/bin:/bin); "
                                "give a path under an --allow-read directory for a program elsewhere\n",
                        program);
}

int cmd_mcp_jail(int argc, char **argv)
{
        corral_jail_config cfg;
        mcp_jail_config_init(&cfg);
        /* 0 until an option or a profile sets them: none (mcp_jail_config_init). */
        cfg.timeout_s = 0;
        cfg.output_limit = 0;
        struct mcp_jail_opts o = { .cfg = &cfg };
        corral_error *err = NULL;
        int status = EXIT_USAGE_SUBCOMMAND;
        cleanup_free struct option *longopts = mcp_jail_options();
        if (longopts == NULL) {
                corral_fail(&err, ENOMEM, "cannot parse options");
                goto out;
        }
        int r = jail_options_parse(argc, argv, "+t:m:h", longopts, "mcp-jail", &cfg, apply, &o, &err);
        if (r > 0) {
                fputs(help_text, stdout);
                status = EXIT_OK;
                goto out;
        }
        if (r < 0)
                goto out;
        if (optind >= argc) {
                corral_usage(&err, "no server to run: give its command after --, as in 'corral mcp-jail -- "
                                   "python3 /srv/server.py'");
                goto out;
        }
        if (corral_jail_config_set_argv(&cfg, argv + optind, &err) < 0)
                goto out;
        cfg.no_timeout = !(cfg.timeout_s > 0);
        if (cfg.no_timeout)
                cfg.timeout_s = 30; /* unused; keeps the config valid if it is copied with no_timeout off */
        cfg.stream_unlimited = cfg.output_limit == 0;
        if (cfg.stream_unlimited)
                cfg.output_limit = 1u << 20; /* bounds nothing: the output is streamed, not kept */
        if (!o.address_space_given && cfg.address_space_bytes < cfg.memory_bytes)
                cfg.address_space_bytes = cfg.memory_bytes;
        cfg.stdin_mode = CORRAL_STDIN_PIPE;
        if (corral_jail_config_validate(&cfg, &err) < 0)
                goto out;
        if (cfg.net == CORRAL_NET_HOST)
                fprintf(stderr, "corral mcp-jail: warning: --net host gives the server the host's network\n");

        int cancel_fd = cli_catch_signals();
        corral_jail_result res;
        if (mcp_jail_run(&cfg, STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO, cancel_fd, &res, &err) < 0) {
                status = err && err->kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND : EXIT_CORRAL;
                goto out;
        }
        status = res.exit_code;
        if (res.limit == CORRAL_LIMIT_CANCELLED && cli_cancel_signal()) {
                cli_error("mcp-jail", "interrupted by %s; the server was stopped",
                          cli_signal_name(cli_cancel_signal()));
                status = 128 + cli_cancel_signal();
        } else if (res.limit == CORRAL_LIMIT_CANCELLED) {
                cli_error("mcp-jail", "%s", res.reason ? res.reason : "the server was stopped");
        } else if (res.status != CORRAL_STATUS_OK && res.status != CORRAL_STATUS_ERROR) {
                cli_error("mcp-jail", "%s: %s", corral_status_to_string(res.status), res.reason ? res.reason : "");
        } else if (res.reason) {
                cli_error("mcp-jail", "%s", res.reason);
                if (status == EXIT_NOT_FOUND || status == EXIT_NOT_EXECUTABLE)
                        exec_hint(cfg.argv[0]);
        }
        corral_jail_result_release(&res);
out:
        if (err) {
                cli_error_obj("mcp-jail", err);
                if (err->kind == CORRAL_ERR_USAGE)
                        status = EXIT_USAGE_SUBCOMMAND;
        }
        corral_error_free(err);
        corral_jail_config_release(&cfg);
        return status;
}
