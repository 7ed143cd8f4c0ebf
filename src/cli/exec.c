/* exec.c: `corral exec`, the jail on the command line.
 *
 * Parses options into a corral_jail_config (a --profile first, explicit
 * options on top), turns FILE / -c CODE / -- PROGRAM into argv and program
 * text, runs the jail and passes the program's exit status through.  corral's
 * own failures use 124-127 as timeout(1) and docker run do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <corral/jail.h>

#include "../lib/util.h"
#include "../review/review.h"
#include "../session/client.h"
#include "../workspace/artifact.h"
#include "cli.h"

static const char help_text[] =
        "usage: corral exec [OPTIONS] FILE [ARGS...]       run a file (.py with python3, .sh with bash)\n"
        "       corral exec [OPTIONS] -c CODE [--lang python|bash]\n"
        "       corral exec [OPTIONS] -- PROGRAM [ARGS...]  run a program present in the jail\n"
        "\n"
        "options:\n"
        "  -w, --workspace DIR     host directory mounted read-write at /workspace, the working\n"
        "                          directory (default: a private tmpfs of --disk, removed afterwards)\n"
        "  -t, --timeout SECONDS   wall-clock limit for the whole process tree (default 30)\n"
        "      --cpu-time SECONDS  CPU-time limit for the whole tree (per process without a cgroup)\n"
        "  -m, --memory SIZE       memory limit, e.g. 256M, 1G (default 512M)\n"
        "      --pids N            process and thread limit (default 128)\n"
        "      --cpus N            CPU share, e.g. 0.5 (needs a cgroup cpu controller)\n"
        "      --nofile N          open-file limit (default 256)\n"
        "      --disk SIZE         cap on the default workspace and, separately, on /tmp; per-file\n"
        "                          cap with -w (default 256M)\n"
        "      --output-limit SIZE cap on stdout and on stderr, each (default 1M); the rest is\n"
        "                          dropped and marked\n"
        "      --net MODE          none (default: the jail's own loopback only), down (not even\n"
        "                          loopback), host (the host's network), or allow=HOST[:PORT][,...]\n"
        "                          (only those hosts, *.DOMAIN for subdomains, through corral's\n"
        "                          HTTP proxy; docs/network.md)\n"
        "      --resolve HOST:ADDR with --net allow=: the proxy connects to ADDR for HOST, which\n"
        "                          may then be loopback or private (repeatable)\n"
        "      --net-bytes SIZE    with --net allow=: bytes through the proxy, both ways (default 1G)\n"
        "      --net-conns N       with --net allow=: connections open at once (default 32)\n"
        "      --secret HOST=HEADER:ENV  with --net allow=: the proxy adds HEADER with the value\n"
        "                          of corral's environment variable ENV to requests to HOST;\n"
        "                          the jail never sees it (HTTPS: a CA made for the jail; repeatable)\n"
        "      --upstream-ca FILE  PEM CAs trusted, besides the system's, for brokered hosts\n"
        "      --ro-bind SRC[:DST] add a host path read-only (repeatable)\n"
        "      --bind SRC[:DST]    add a host path read-write (repeatable)\n"
        "      --rootfs DIR        use DIR's /usr, /bin, /lib* as the read-only root\n"
        "  -e, --env NAME=VALUE    add to the jail's clean environment (repeatable)\n"
        "      --stdin             pass corral's stdin through a pipe (default: /dev/null)\n"
        "      --profile FILE      read limits, mounts and environment from a JSON profile\n"
        "      --print-profile     print the effective profile and exit\n"
        "      --require-cgroups   refuse to run when limits would fall back to rlimits\n"
        "      --uid-range START:COUNT  host uids for jails when run as root\n"
        "                          (default 1400000000:65536)\n"
        "  -c, --code CODE         run CODE instead of a file\n"
        "      --lang LANG         python (default) or bash, for -c or a FILE without extension\n"
        "      --review POLICY     review the code first (strict, standard, off or a JSON policy\n"
        "                          file; docs/review.md): a rejection prints the findings and\n"
        "                          runs nothing (exit 123; --json: status \"rejected\")\n"
        "      --json              print one JSON result object instead of streaming output;\n"
        "                          with -w, its \"artifacts\" list what the program created,\n"
        "                          changed or deleted in DIR, files typed by content\n"
        "  -h, --help              show this help\n"
        "\n"
        "exit statuses:\n"
        "  the program's own status, or: 123 rejected by --review; 124 time limit reached; 125 corral failed (usage\n"
        "  error, jail not set up); 126 not executable; 127 not found; 128+N killed by signal N\n"
        "  (137 memory limit, 159 blocked system call).\n";

enum {
        OPT_STDIN = 300,
        OPT_PRINT_PROFILE,
        OPT_JSON,
        OPT_LANG,
        OPT_REVIEW,
};

static const struct option exec_options[] = {
        { "workspace", required_argument, NULL, 'w' },
        { "stdin", no_argument, NULL, OPT_STDIN },
        { "print-profile", no_argument, NULL, OPT_PRINT_PROFILE },
        { "code", required_argument, NULL, 'c' },
        { "lang", required_argument, NULL, OPT_LANG },
        { "json", no_argument, NULL, OPT_JSON },
        { "review", required_argument, NULL, OPT_REVIEW },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

struct exec_opts {
        corral_jail_config *cfg;
        const char *code;
        const char *lang;
        bool json;
        bool print_profile;
        bool dashdash;
        const char *review;      /* --review POLICY */
        char *review_code;       /* the program text reviewed (exactly what runs) */
        const char *review_lang;
};

/* One exec option onto cfg and o (the jail's own options are applied by
 * jail_option_apply first). */
static int apply_option(int c, const char *arg, void *userdata, corral_error **err)
{
        struct exec_opts *o = userdata;
        corral_jail_config *cfg = o->cfg;
        switch (c) {
        case 'w':
                free(cfg->workspace);
                cfg->workspace = strdup(arg);
                return 0;
        case OPT_STDIN:
                cfg->stdin_mode = CORRAL_STDIN_PIPE;
                return 0;
        case 'c':
                o->code = arg;
                return 0;
        case OPT_LANG:
                if (strcmp(arg, "python") != 0 && strcmp(arg, "bash") != 0)
                        return corral_usage(err, "--lang: unknown language '%s': expected python or bash", arg);
                o->lang = arg;
                return 0;
        case OPT_JSON:
                o->json = true;
                return 0;
        case OPT_PRINT_PROFILE:
                o->print_profile = true;
                return 0;
        case OPT_REVIEW:
                o->review = arg;
                return 0;
        default:
                return 0;
        }
}

/* Turn FILE / -c CODE / -- PROGRAM into the jail's argv and program text. */
static int set_program(corral_jail_config *cfg, struct exec_opts *o, int argc, char **argv, corral_error **err)
{
        if (o->code != NULL) {
                if (argc > 0 && !o->dashdash)
                        return corral_usage(err, "-c takes no FILE; put arguments for the code after --");
                const char *lang = o->lang ? o->lang : "python";
                if (corral_jail_config_set_code(cfg, lang, strcmp(lang, "python") == 0 ? "main.py" : "main.sh",
                                                o->code, strlen(o->code), argv, "the code", err) < 0)
                        return -1;
                o->review_code = strdup(o->code);
                o->review_lang = lang;
                return 0;
        }
        if (argc == 0)
                return corral_usage(err, "nothing to run: give a FILE, -c CODE, or -- PROGRAM");
        if (o->dashdash) {
                if (o->review)
                        return corral_usage(err, "--review needs the code: give a FILE or -c CODE, not -- PROGRAM");
                return corral_jail_config_set_argv(cfg, argv, err);
        }
        const char *path = argv[0];
        const char *lang = o->lang ? o->lang : corral_lang_from_name(path);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
                return corral_usage(err, "'%s' is a directory: give a .py or .sh file, -c CODE, or -- PROGRAM "
                                         "(-w DIR makes a directory the workspace)",
                                    path);
        if (lang == NULL)
                return corral_usage(err, "'%s': unknown file type; use a .py or .sh file, --lang, or -- PROGRAM",
                                    path);
        size_t len = 0;
        cleanup_free char *text = cli_read_code(path, &len, err);
        if (text == NULL)
                return -1;
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        if (corral_jail_config_set_code(cfg, lang, base, text, len, argv + 1, path, err) < 0)
                return -1;
        o->review_code = strdup(text);
        o->review_lang = lang;
        return 0;
}

/* --review: 0 run, 1 rejected (the findings printed), -1 error. */
static int exec_review(const struct exec_opts *o, corral_error **err)
{
        struct review_policy *policy = NULL;
        if (review_policy_load(o->review, &policy, err) < 0)
                return corral_error_prefix(err, "--review");
        if (o->review_code == NULL) {
                review_policy_free(policy);
                return corral_fail(err, ENOMEM, "cannot review the program");
        }
        struct review_result res;
        int r = review_code(review_lang_from_string(o->review_lang), o->review_code, strlen(o->review_code), policy,
                            &res, err);
        review_policy_free(policy);
        if (r < 0)
                return -1;
        if (o->json && res.rejected) {
                char *text = review_rejection_to_json(&res);
                if (text)
                        puts(text);
                free(text);
        } else if (res.n_findings) {
                char *text = review_result_text(&res);
                if (text) /* it quotes the code */
                        cli_print_untrusted(stderr, text, strlen(text));
                free(text);
                if (res.rejected)
                        fprintf(stderr, "corral exec: rejected by the safety review; nothing ran\n");
        }
        r = res.rejected ? 1 : 0;
        review_result_release(&res);
        return r;
}

/* The program's stdout and stderr, made inert when they go to a terminal. */
static struct cli_output out_streams[2];

static void on_output(void *ud, int stream, const char *data, size_t len)
{
        (void)ud;
        cli_output_write(&out_streams[stream == 1 ? 0 : 1], data, len);
}

static void on_truncate(void *ud, int stream)
{
        const corral_jail_config *cfg = ud;
        cli_output_end(&out_streams[stream == 1 ? 0 : 1]);
        fprintf(stderr, "\ncorral exec: %s truncated at the output limit (%llu bytes); the rest is dropped\n",
                stream == 1 ? "stdout" : "stderr", (unsigned long long)cfg->output_limit);
}

static void on_notice(void *ud, const char *msg)
{
        (void)ud;
        cli_error("exec", "note: %s", msg);
}

/* Where exec_run() ran the jail: the pool's host, whose connection stays
 * open until the result is out (the host tears the jail down when it
 * closes), or directly. */
struct exec_where {
        bool pooled;
        int host_conn;
};

/* corral exec's runner: a jail of the session host's pool where one is
 * ready and fits, else a direct jail, silently (the same isolation either
 * way; docs/exec-pool.md). */
static int exec_run(const corral_jail_config *cfg, const corral_jail_io *io, corral_jail_result *res, void *userdata,
                    corral_error **ret_err)
{
        struct exec_where *w = userdata;
        int r = session_client_exec_claim(cfg, io, res, &w->host_conn, ret_err);
        w->pooled = r == 0;
        return r <= 0 ? r : corral_jail_run(cfg, io, res, ret_err);
}

int cmd_exec(int argc, char **argv)
{
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        corral_error *err = NULL;
        struct exec_opts o = { .cfg = &cfg };
        cleanup_free struct option *longopts = NULL;
        cleanup_free char *json = NULL;
        int status = EXIT_CORRAL;
        longopts = cli_merge_options(exec_options);
        if (longopts == NULL) {
                corral_fail(&err, ENOMEM, "cannot parse options");
                goto fail;
        }
        int r = jail_options_parse(argc, argv, "+w:t:m:e:c:h", longopts, "exec", &cfg, apply_option, &o, &err);
        if (r < 0)
                goto fail;
        if (r > 0) {
                fputs(help_text, stdout);
                status = EXIT_OK;
                goto out;
        }
        o.dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
        if (o.print_profile) {
                char *p = corral_jail_config_to_profile_json(&cfg);
                if (p == NULL) {
                        corral_fail(&err, ENOMEM, "cannot print the profile");
                        goto fail;
                }
                puts(p);
                free(p);
                status = EXIT_OK;
                goto out;
        }
        if (set_program(&cfg, &o, argc - optind, argv + optind, &err) < 0)
                goto fail;
        if (o.review) {
                int rv = exec_review(&o, &err);
                if (rv < 0)
                        goto fail;
                if (rv > 0) {
                        status = EXIT_REVIEW_REJECTED;
                        goto out;
                }
        }
        if (cfg.net == CORRAL_NET_HOST)
                fprintf(stderr, "corral exec: warning: --net host gives the program the host's network\n");

        int cancel_fd = cli_catch_signals();
        cli_output_init(&out_streams[0], STDOUT_FILENO);
        cli_output_init(&out_streams[1], STDERR_FILENO);
        corral_jail_io io = { .stdin_fd = STDIN_FILENO, .capture = o.json, .userdata = &cfg, .cancel_fd = cancel_fd,
                              .on_output = o.json ? NULL : on_output, .on_truncate = o.json ? NULL : on_truncate,
                              .on_notice = on_notice };
        corral_jail_result res;
        struct exec_where where = { .pooled = false, .host_conn = -1 };
        if ((o.json ? artifact_jail_run_by(&cfg, &io, exec_run, &where, &res, &json, &err)
                    : exec_run(&cfg, &io, &res, &where, &err)) < 0)
                goto fail;
        cli_output_end(&out_streams[0]);
        cli_output_end(&out_streams[1]);
        size_t jn = json ? strlen(json) : 0;
        if (jn > 1 && json[jn - 1] == '}') {
                /* Where it ran: the one member a pooled jail's object adds
                 * to a direct one's (docs/exec-json.md), written after the
                 * object's text rather than into a copy of it (which holds
                 * the program's output, up to the output limit twice). */
                fwrite(json, 1, jn - 1, stdout);
                printf(",\"from\":\"%s\"}\n", where.pooled ? "pool" : "direct");
        } else if (json) {
                puts(json);
        } else if (res.limit == CORRAL_LIMIT_CANCELLED) {
                cli_error("exec", "interrupted by %s; the jail was stopped", cli_signal_name(cli_cancel_signal()));
        } else if (res.status != CORRAL_STATUS_OK && res.status != CORRAL_STATUS_ERROR) {
                cli_error("exec", "%s: %s", corral_status_to_string(res.status), res.reason ? res.reason : "");
        } else if (res.reason) {
                cli_error("exec", "%s", res.reason);
        }
        fflush(stdout);
        if (where.host_conn >= 0)
                close(where.host_conn); /* the result is out: the host may tear the jail down */
        status = res.exit_code;
        if (res.limit == CORRAL_LIMIT_CANCELLED && cli_cancel_signal())
                status = 128 + cli_cancel_signal();
        corral_jail_result_release(&res);
        goto out;
fail:
        cli_error_obj("exec", err);
        status = EXIT_CORRAL;
        if (o.json) {
                /* --json promises one object on stdout, a failure too. */
                cleanup_free char *msg = err ? cli_field_text(err->msg, err->field) : NULL;
                char *text = corral_jail_failure_to_json(err, msg);
                if (text)
                        puts(text);
                free(text);
        }
out:
        free(o.review_code);
        corral_error_free(err);
        corral_jail_config_release(&cfg);
        return status;
}
