/* jail-options.c: the jail's limits, mounts and environment on the command
 * line, shared by `corral exec` and `corral run` (see cli.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corral/jail.h>

#include "../lib/util.h"
#include "cli.h"

const struct option jail_long_options[] = {
        { "timeout", required_argument, NULL, 't' },
        { "cpu-time", required_argument, NULL, OPT_CPU_TIME },
        { "memory", required_argument, NULL, 'm' },
        { "pids", required_argument, NULL, OPT_PIDS },
        { "cpus", required_argument, NULL, OPT_CPUS },
        { "nofile", required_argument, NULL, OPT_NOFILE },
        { "disk", required_argument, NULL, OPT_DISK },
        { "output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT },
        { "net", required_argument, NULL, OPT_NET },
        { "ro-bind", required_argument, NULL, OPT_RO_BIND },
        { "bind", required_argument, NULL, OPT_BIND },
        { "rootfs", required_argument, NULL, OPT_ROOTFS },
        { "env", required_argument, NULL, 'e' },
        { "profile", required_argument, NULL, OPT_PROFILE },
        { "require-cgroups", no_argument, NULL, OPT_REQUIRE_CGROUPS },
        { "uid-range", required_argument, NULL, OPT_UID_RANGE },
        { "resolve", required_argument, NULL, OPT_RESOLVE },
        { "net-bytes", required_argument, NULL, OPT_NET_BYTES },
        { "net-conns", required_argument, NULL, OPT_NET_CONNS },
        { "secret", required_argument, NULL, OPT_SECRET },
        { "upstream-ca", required_argument, NULL, OPT_UPSTREAM_CA },
        { NULL, 0, NULL, 0 },
};

struct option *cli_merge_options(const struct option *extra)
{
        size_t n_jail = 0, n_extra = 0;
        while (jail_long_options[n_jail].name)
                n_jail++;
        while (extra[n_extra].name)
                n_extra++;
        struct option *all = calloc(n_jail + n_extra + 1, sizeof(*all));
        if (all == NULL)
                return NULL;
        memcpy(all, jail_long_options, n_jail * sizeof(*all));
        memcpy(all + n_jail, extra, n_extra * sizeof(*all));
        return all;
}

static int parse_double_positive(const char *text, double *ret, corral_error **err)
{
        char *end = NULL;
        errno = 0;
        double v = strtod(text, &end);
        if (errno || end == text || *end || !(v > 0) || v > 4096)
                return corral_usage(err, "invalid number '%s': expected a positive number", text);
        *ret = v;
        return 0;
}

static int parse_uid_range(const char *text, corral_jail_config *cfg, corral_error **err)
{
        unsigned long long start, count;
        char tail;
        if (sscanf(text, "%llu:%llu%c", &start, &count, &tail) != 2 || count == 0 || start > 0xffffffffull ||
            count > 0xffffffffull)
                return corral_usage(err, "invalid uid range '%s': expected START:COUNT", text);
        cfg->uid_base = (uint32_t)start;
        cfg->uid_count = (uint32_t)count;
        return 0;
}

int jail_option_apply(int c, const char *arg, corral_jail_config *cfg, corral_error **err)
{
        switch (c) {
        case 't':
                return corral_parse_seconds(arg, &cfg->timeout_s, err) < 0 ? corral_error_prefix(err, "--timeout") : 1;
        case OPT_CPU_TIME:
                return corral_parse_seconds(arg, &cfg->cpu_time_s, err) < 0 ? corral_error_prefix(err, "--cpu-time")
                                                                             : 1;
        case 'm':
                return corral_parse_size(arg, &cfg->memory_bytes, err) < 0 ? corral_error_prefix(err, "--memory") : 1;
        case OPT_PIDS:
                return corral_parse_count(arg, &cfg->pids, err) < 0 ? corral_error_prefix(err, "--pids") : 1;
        case OPT_CPUS:
                return parse_double_positive(arg, &cfg->cpus, err) < 0 ? corral_error_prefix(err, "--cpus") : 1;
        case OPT_NOFILE:
                return corral_parse_count(arg, &cfg->nofile, err) < 0 ? corral_error_prefix(err, "--nofile") : 1;
        case OPT_DISK:
                return corral_parse_size(arg, &cfg->disk_bytes, err) < 0 ? corral_error_prefix(err, "--disk") : 1;
        case OPT_OUTPUT_LIMIT:
                return corral_parse_size(arg, &cfg->output_limit, err) < 0 ? corral_error_prefix(err, "--output-limit")
                                                                            : 1;
        case OPT_NET:
                /* "loopback": the old name of none, when none meant loopback down. */
                if (strcmp(arg, "none") == 0 || strcmp(arg, "loopback") == 0)
                        cfg->net = CORRAL_NET_NONE;
                else if (strcmp(arg, "down") == 0)
                        cfg->net = CORRAL_NET_DOWN;
                else if (strcmp(arg, "host") == 0)
                        cfg->net = CORRAL_NET_HOST;
                else if (strncmp(arg, "allow=", 6) == 0) {
                        cfg->net = CORRAL_NET_ALLOW;
                        if (corral_jail_config_add_net_allow(cfg, arg + 6, err) < 0)
                                return corral_error_prefix(err, "--net");
                } else
                        return corral_usage(err, "--net: invalid mode '%s': expected none, down, host or "
                                                 "allow=HOST[:PORT][,...]", arg);
                return 1;
        case OPT_RESOLVE:
                return corral_jail_config_add_net_resolve(cfg, arg, err) < 0 ? corral_error_prefix(err, "--resolve")
                                                                             : 1;
        case OPT_NET_BYTES:
                return corral_parse_size(arg, &cfg->net_bytes, err) < 0 ? corral_error_prefix(err, "--net-bytes") : 1;
        case OPT_NET_CONNS:
                return corral_parse_count(arg, &cfg->net_conns, err) < 0 ? corral_error_prefix(err, "--net-conns")
                                                                          : 1;
        case OPT_SECRET:
                return corral_jail_config_add_net_secret_env(cfg, arg, err) < 0 ? corral_error_prefix(err, "--secret")
                                                                                : 1;
        case OPT_UPSTREAM_CA:
                free(cfg->net_upstream_ca);
                cfg->net_upstream_ca = strdup(arg);
                return cfg->net_upstream_ca ? 1 : corral_fail(err, ENOMEM, "--upstream-ca");
        case OPT_RO_BIND:
        case OPT_BIND:
                return corral_jail_config_add_bind(cfg, arg, c == OPT_BIND, err) < 0 ? -1 : 1;
        case OPT_ROOTFS:
                free(cfg->rootfs);
                cfg->rootfs = strdup(arg);
                return 1;
        case 'e':
                return corral_jail_config_add_env(cfg, arg, err) < 0 ? -1 : 1;
        case OPT_REQUIRE_CGROUPS:
                cfg->require_cgroups = true;
                return 1;
        case OPT_UID_RANGE:
                return parse_uid_range(arg, cfg, err) < 0 ? -1 : 1;
        case OPT_PROFILE:
                return 1; /* loaded in a first pass, before other options */
        default:
                return 0;
        }
}

int jail_options_parse(int argc, char **argv, const char *shortopts, const struct option *longopts, const char *cmd,
                       corral_jail_config *cfg, int (*apply)(int c, const char *arg, void *userdata, corral_error **err),
                       void *userdata, corral_error **err)
{
        /* Pass 1: --help and --profile, so explicit options override it. */
        opterr = 0;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
                if (c == 'h')
                        return 1;
                if (c == OPT_PROFILE && corral_jail_config_load_profile(cfg, optarg, err) < 0)
                        return -1;
        }
        /* Pass 2: everything else, with errors reported. */
        opterr = 0;
        optind = 1;
        while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
                if (c == '?' || c == ':') {
                        if (optopt && optopt < 256)
                                return corral_usage(err, "unknown option or missing value: '-%c' (see 'corral %s "
                                                         "--help')", optopt, cmd);
                        return corral_usage(err, "unknown option or missing value: '%s' (see 'corral %s --help')",
                                            argv[optind - 1], cmd);
                }
                int r = jail_option_apply(c, optarg, cfg, err);
                if (r < 0)
                        return -1;
                if (r == 0 && apply(c, optarg, userdata, err) < 0)
                        return -1;
        }
        return 0;
}
