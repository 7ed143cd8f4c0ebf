/* mcp.c: `corral mcp`, the sandbox of an MCP client (src/mcp/, docs/mcp.md).
 * Options only; the server is the library's.  Nothing but the protocol may
 * reach stdout: messages go to stderr. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mcp/mcp.h"
#include "../review/review.h"
#include "cli.h"

static const char help_text[] =
        "usage: corral mcp [-w DIR] [--review-policy P] [--cold] [--no-session-host] [JAIL LIMITS]\n"
        "\n"
        "Be the sandbox of an MCP client (docs/mcp.md): a Model Context Protocol server on stdin and\n"
        "stdout whose tools run Python (one session per connection, its state kept), bash, and read,\n"
        "write and list the files of /workspace, all in corral's jails.  In a client's config:\n"
        "  \"command\": \"corral\", \"args\": [\"mcp\"]\n"
        "\n"
        "  -w, --workspace DIR     a host directory as /workspace (default: a temporary one, removed\n"
        "                          when the client disconnects)\n"
        "      --review-policy P   review every run_python/run_shell step before it runs: standard\n"
        "                          (default), strict, off, or a JSON policy file (docs/review.md)\n"
        "      --cold              start the interpreter afresh instead of forking a warm one\n"
        "      --no-session-host   keep the session in this process, not in your session host\n"
        "  -t, --timeout S         a step's time limit (default 50: below the minute after which\n"
        "                          clients give up; a call may ask for less or more)\n"
        "  -m, --pids, --disk, --cpus, --cpu-time, --nofile, --output-limit, --net none|down,\n"
        "  -e, --profile, --require-cgroups, --uid-range: as for corral exec\n"
        "  --net allow=HOST[:PORT][,...], --resolve, --net-bytes, --net-conns, --secret,\n"
        "  --upstream-ca: as for corral exec; the tools' descriptions name the hosts\n"
        "  -h, --help              show this help\n"
        "\n"
        "It serves until the client closes stdin, or SIGTERM or Ctrl-C.\n"
        "Exit status: 0 done; 2 usage error; 125 it could not start.\n";

enum { OPT_WORKSPACE = 400, OPT_REVIEW_POLICY, OPT_COLD, OPT_NO_SESSION_HOST };

static const struct option mcp_options[] = {
        { "workspace", required_argument, NULL, 'w' },
        { "review-policy", required_argument, NULL, OPT_REVIEW_POLICY },
        { "cold", no_argument, NULL, OPT_COLD },
        { "no-session-host", no_argument, NULL, OPT_NO_SESSION_HOST },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

struct mcp_opts {
        struct mcp_config c;
        struct review_policy *review;
};

static int apply(int c, const char *arg, void *userdata, corral_error **err)
{
        struct mcp_opts *o = userdata;
        switch (c) {
        case 'w':
                o->c.workspace = arg;
                return 0;
        case OPT_REVIEW_POLICY:
                review_policy_free(o->review);
                o->review = NULL;
                if (review_policy_load(arg, &o->review, err) < 0)
                        return corral_error_prefix(err, "--review-policy");
                return 0;
        case OPT_COLD:
                o->c.cold = true;
                return 0;
        case OPT_NO_SESSION_HOST:
                o->c.no_session_host = true;
                return 0;
        default:
                return 0;
        }
}

int cmd_mcp(int argc, char **argv)
{
        struct mcp_opts o = { 0 };
        mcp_config_init(&o.c);
        corral_jail_config limits;
        corral_jail_config_init(&limits);
        limits.timeout_s = 50;
        corral_error *err = NULL;
        int status = EXIT_USAGE_SUBCOMMAND;
        cleanup_free struct option *longopts = cli_merge_options(mcp_options);
        if (longopts == NULL) {
                corral_fail(&err, ENOMEM, "cannot parse options");
                goto out;
        }
        int r = jail_options_parse(argc, argv, "+t:m:e:w:h", longopts, "mcp", &limits, apply, &o, &err);
        if (r > 0) {
                fputs(help_text, stdout);
                status = EXIT_OK;
                goto out;
        }
        if (r == 0 && optind < argc)
                corral_usage(&err, "mcp takes no arguments ('%s'): its client talks on stdin and stdout",
                             argv[optind]);
        if (err)
                goto out;
        if (o.review == NULL)
                o.review = review_policy_new(REVIEW_LEVEL_STANDARD);
        o.c.review = o.review;
        o.c.jail = &limits;
        int cancel_fd = cli_catch_signals();
        status = mcp_serve(&o.c, STDIN_FILENO, STDOUT_FILENO, cancel_fd, &err) < 0 ? EXIT_CORRAL : EXIT_OK;
out:
        if (err)
                cli_error_obj("mcp", err);
        corral_error_free(err);
        review_policy_free(o.review);
        corral_jail_config_release(&limits);
        return status;
}
