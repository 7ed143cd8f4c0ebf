/* session.c: `corral session start|exec|archive|stop|list|shutdown`,
 * sessions that outlive the command (docs/sessions.md).  `archive`, `stop
 * --archive` and `start --from` pause and resume one through a workspace
 * archive (src/session/pause.c).
 *
 * These are the clients.  Sessions live in the session host (session-host.c),
 * one process per user and runtime directory that `start` launches when none
 * runs; each session is served on <runtime dir>/<ID>.sock and ends on `stop`,
 * its idle timeout, its lifetime limit or the host's end, leaving nothing
 * behind: the jail is torn down, the socket unlinked and a temporary
 * workspace removed before `stop` is answered.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corral/jail.h>
#include <jansson.h>

#include "../lib/termsafe.h"
#include "../lib/util.h"
#include "../session/client.h"
#include "../session/daemon.h"
#include "../session/host.h"
#include "../session/session.h"
#include "../session/warm.h"
#include "../trace/render.h"
#include "../workspace/workspace.h"
#include "cli.h"


static const char help_text[] =
        "usage: corral session start [JAIL OPTIONS] [-w DIR] [--idle-timeout S] [--lifetime S] [--grace S]\n"
        "                            [--warm | --cold]\n"
        "                            [--from FILE.tar] [--json]\n"
        "       corral session exec ID (-c CODE | FILE) [--timeout S] [--output-limit SIZE]\n"
        "                               [--json [--figure-png]]\n"
        "       corral session archive ID FILE.tar [--wait S] [--json]\n"
        "       corral session stop ID [--archive FILE.tar [--wait S] [--json]]\n"
        "       corral session list [--json]\n"
        "       corral session status [--json]\n"
        "       corral session shutdown\n"
        "\n"
        "A session is a Python interpreter in a jail that keeps its variables, imports and data\n"
        "from step to step.  `start` prints its ID; the session lives on in the background until\n"
        "`stop`, its idle timeout or its lifetime limit.  Sessions live in the session host, one\n"
        "background process per user that `start` launches when none runs; it keeps the zygote of\n"
        "warm sessions for CORRAL_SESSION_LINGER seconds (default 300) after the last session\n"
        "ends.  `status` describes it ({\"pid\", \"sessions\", \"zygote_pid\", \"pool\", \"linger_s\",\n"
        "\"exec_pool\"} with --json, null when none runs; exec_pool: the CORRAL_EXEC_POOL jails made in\n"
        "advance, docs/exec-pool.md); `shutdown` stops it and every session now.\n"
        "\n"
        "start options:\n"
        "  -w, --workspace DIR     host directory at /workspace (default: a private temporary\n"
        "                          directory, removed when the session ends)\n"
        "  -t, --timeout SECONDS   default wall-clock limit of each step (default 30)\n"
        "  -m, --memory SIZE       memory limit of the whole session (default 512M); also --pids,\n"
        "                          --disk, --cpus, --cpu-time, --nofile, --net, --resolve,\n"
        "                          --net-bytes, --net-conns, --bind, --ro-bind, -e, --profile,\n"
        "                          --require-cgroups, --uid-range, --secret, --upstream-ca as for\n"
        "                          corral exec (--net allow=: a proxy for the session's life,\n"
        "                          docs/network.md)\n"
        "      --output-limit SIZE default cap on stdout and on stderr of each step (default 1M)\n"
        "      --idle-timeout S    end the session after S seconds without a step (default 600)\n"
        "      --lifetime S        end the session S seconds after it started (default 3600)\n"
        "      --grace S           after a step's time limit interrupts it (KeyboardInterrupt),\n"
        "                          wait S seconds before killing the interpreter (default 2)\n"
        "      --warm              fork the interpreter from the host's zygote, with numpy, pandas,\n"
        "                          matplotlib and scipy already imported (docs/sessions.md): the\n"
        "                          default, except with --rootfs, --net host or binds outside\n"
        "                          /workspace; without --warm, a session that cannot start warm\n"
        "                          (a small -m under rlimits) starts cold, with a notice\n"
        "      --cold              start a fresh interpreter (nothing imported)\n"
        "      --from FILE.tar     resume: the workspace starts as the archive's contents (corral\n"
        "                          session archive, corral run --archive); with -w, DIR must be\n"
        "                          new or empty.  Files come back, variables and imports do not.\n"
        "                          A refused archive (a path out of the tree, a symlink out, a\n"
        "                          device, a bomb: see corral workspace) leaves nothing behind\n"
        "      --json              print {\"id\", \"pid\" (the host's), \"socket\", \"workspace\", \"from\",\n"
        "                          \"warm\"}\n"
        "exec options:\n"
        "  -c, --code CODE         the Python code of the step (or a FILE)\n"
        "  -t, --timeout SECONDS   this step's wall-clock limit\n"
        "      --output-limit SIZE this step's cap on stdout and on stderr\n"
        "      --json              print one JSON result object (docs/sessions.md)\n"
        "      --figure-png        with --json: each figure's PNG file as base64 in its \"png\"\n"
        "                          (at most 8 MiB a figure, 32 MiB a step)\n"
        "archive and stop --archive (pause):\n"
        "  write the workspace as it is between steps to FILE.tar (a pax tar, mode 0600, with\n"
        "  .corral/session.json saying which session it was); a running step is waited for,\n"
        "  and no step starts until the archive is written.  stop --archive stops the session\n"
        "  only once the archive is written.  The interpreter's state (variables) is not saved.\n"
        "      --wait S            wait at most S seconds for a running step (default: as long\n"
        "                          as it runs); then nothing is written, exit 1\n"
        "      --json              print {\"session\", \"path\", \"entries\", \"files\", \"bytes\",\n"
        "                          \"skipped\", \"excluded\", \"truncated\", \"stopped\"}\n"
        "\n"
        "exit statuses:\n"
        "  start/stop/list: 0 done; 2 usage error or unknown session; 125 corral failed.\n"
        "  start --from: also 1 the archive was refused or could not be read.\n"
        "  archive, stop --archive: 0 written; 1 a step was still running after --wait (nothing\n"
        "  written, the session goes on); 2 usage error, unknown session or a bad destination;\n"
        "  125 corral failed (the session goes on).\n"
        "  exec: 0 the step ran; 1 it raised an exception; 124 its time limit interrupted it\n"
        "  (state kept unless \"state_lost\"); 128+N the interpreter was killed by signal N (137 also\n"
        "  the memory limit); another status the interpreter exited with; 2 usage error or unknown\n"
        "  session; 125 corral failed.  Whenever the interpreter died, the next step starts a clean one.\n";

enum {
        OPT_JSON = 300,
        OPT_IDLE,
        OPT_LIFETIME,
        OPT_GRACE,
        OPT_WARM,
        OPT_COLD,
        OPT_FROM,
        OPT_ARCHIVE,
        OPT_WAIT,
        OPT_FIGURE_PNG,
};

enum {
        EXIT_START_REFUSED = 1,  /* start --from: the archive was refused or unreadable */
        EXIT_ARCHIVE_BUSY = 1,   /* archive: a step still ran after --wait */
};

struct start_opts {
        corral_jail_config *cfg;
        struct session_options sopt;
        bool json;
        const char *from;        /* --from FILE */
        int temperature;         /* OPT_WARM, OPT_COLD or 0: warm where the options allow */
};

static int start_apply(int c, const char *arg, void *userdata, corral_error **err)
{
        struct start_opts *o = userdata;
        double *target = NULL;
        switch (c) {
        case 'w':
                /* The session client resolves it: --from may make it. */
                free(o->cfg->workspace);
                o->cfg->workspace = strdup(arg);
                return o->cfg->workspace ? 0 : corral_fail(err, ENOMEM, "-w");
        case OPT_FROM:
                o->from = arg;
                return 0;
        case OPT_JSON:
                o->json = true;
                return 0;
        case OPT_WARM:
        case OPT_COLD:
                if (o->temperature && o->temperature != c)
                        return corral_usage(err, "--warm and --cold exclude each other");
                o->temperature = c;
                return 0;
        case OPT_IDLE:
                target = &o->sopt.idle_timeout_s;
                break;
        case OPT_LIFETIME:
                target = &o->sopt.lifetime_s;
                break;
        case OPT_GRACE:
                target = &o->sopt.grace_s;
                break;
        default:
                return 0;
        }
        if (corral_parse_seconds(arg, target, err) < 0)
                return corral_error_prefix(err, "%s", c == OPT_IDLE ? "--idle-timeout" : c == OPT_LIFETIME
                                                                                            ? "--lifetime"
                                                                                            : "--grace");
        return 0;
}

/* Plain `start --from`: where the session came from, and what it lost. */
static void note_resumed(const json_t *from)
{
        const char *id = json_string_value(json_object_get(from, "session"));
        json_t *steps = json_object_get(from, "steps");
        fprintf(stderr, "corral session: resumed from an archive");
        if (id && session_id_valid(id))
                fprintf(stderr, " of session %s", id);
        if (json_is_integer(steps))
                fprintf(stderr, " (%" JSON_INTEGER_FORMAT " step%s)", json_integer_value(steps),
                        json_integer_value(steps) == 1 ? "" : "s");
        fprintf(stderr, ": its files are back; its variables and imports are not\n");
}

static void note_slow_start(void *userdata)
{
        fprintf(stderr, "corral session: starting (the first start of the session host imports numpy, pandas, "
                        "matplotlib and scipy; a second or two)...\n");
}

static int cmd_start(int argc, char **argv)
{
        static const struct option own[] = {
                { "workspace", required_argument, NULL, 'w' },   { "json", no_argument, NULL, OPT_JSON },
                { "idle-timeout", required_argument, NULL, OPT_IDLE }, { "lifetime", required_argument, NULL, OPT_LIFETIME },
                { "grace", required_argument, NULL, OPT_GRACE }, { "help", no_argument, NULL, 'h' },
                { "warm", no_argument, NULL, OPT_WARM }, { "cold", no_argument, NULL, OPT_COLD },
                { "from", required_argument, NULL, OPT_FROM },
                { NULL, 0, NULL, 0 },
        };
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        struct start_opts o = { .cfg = &cfg };
        session_options_init(&o.sopt);
        corral_error *err = NULL;
        int status = EXIT_CORRAL;
        cleanup_free char *from_abs = NULL;
        cleanup_free struct option *longopts = cli_merge_options(own);
        /* The driver is the program; validate() wants one. */
        char *placeholder[] = { "python3", NULL };
        if (longopts == NULL) {
                corral_fail(&err, ENOMEM, "cannot parse options");
                goto fail;
        }
        if (corral_jail_config_set_argv(&cfg, placeholder, &err) < 0)
                goto fail;
        int r = jail_options_parse(argc, argv, "+w:t:m:e:h", longopts, "session", &cfg, start_apply, &o, &err);
        if (r > 0) {
                fputs(help_text, stdout);
                status = EXIT_OK;
                goto out;
        }
        if (r < 0 || (optind < argc && corral_usage(&err, "start takes no arguments ('%s')", argv[optind]) < 0))
                goto usage;
        if (!(o.sopt.lifetime_s > 0)) {
                corral_usage(&err, "--lifetime must be positive");
                goto usage;
        }
        if (corral_jail_config_validate(&cfg, &err) < 0)
                goto usage;
        /* Warm unless asked otherwise or the options need a cold session
         * (--rootfs, --bind, --net host, a system directory
         * as the workspace); an explicit --warm that cannot
         * be is refused by the host with the reason. */
        o.sopt.warm = o.temperature == OPT_WARM || (o.temperature == 0 && warm_supported(&cfg, NULL) == 0);
        if (cfg.net == CORRAL_NET_HOST)
                fprintf(stderr, "corral session: warning: --net host gives the session the host's network\n");

        char id[SESSION_ID_LEN + 1];
        if (session_id_make(id, &err) < 0)
                goto fail;
        /* The daemon runs the session (src/session/daemon.c). */
        const char *tmp = getenv("TMPDIR");
        struct session_client_start req = { .cfg = &cfg, .opt = &o.sopt, .warm_asked = o.temperature == OPT_WARM,
                                            .from = o.from, .tmpdir = tmp && tmp[0] == '/' ? tmp : "/tmp" };
        /* The first warm start of a daemon imports the data libraries (a
         * second or two): on a terminal, say so. */
        bool refused;
        json_t *reply = session_client_start(id, &req, !o.json && isatty(STDERR_FILENO) ? note_slow_start : NULL,
                                             NULL, NULL, &refused, &err);
        if (reply == NULL && refused) {
                /* As `corral workspace extract`: 1, or 125 without libarchive. */
                cli_error_obj("session", err);
                status = err && err->kind == CORRAL_ERR_UNSUPPORTED ? EXIT_CORRAL : EXIT_START_REFUSED;
                goto out;
        }
        if (reply == NULL && err && err->kind == CORRAL_ERR_USAGE)
                goto usage;
        if (reply == NULL)
                goto fail;
        const char *notice = json_string_value(json_object_get(reply, "notice"));
        if (notice)
                cli_error("session", "%s", notice);
        /* Where it came from: the host read the archive's .corral/session.json. */
        json_t *from = json_object_get(reply, "from");
        if (json_is_object(from) && !o.json)
                note_resumed(from);
        if (o.json) {
                json_t *j = json_pack("{s:s,s:O?,s:O?,s:O?,s:O?,s:O?}", "id", id, "pid",
                                      json_object_get(reply, "pid"), "socket", json_object_get(reply, "socket"),
                                      "workspace", json_object_get(reply, "workspace"), "from",
                                      json_is_object(from) ? from : NULL, "warm", json_object_get(reply, "warm"));
                cli_print_json(stdout, j, false);
                json_decref(j);
        } else {
                puts(id);
        }
        json_decref(reply);
        status = EXIT_OK;
        goto out;
fail:
        cli_error_obj("session", err);
        status = EXIT_CORRAL;
        goto out;
usage:
        cli_error_obj("session", err);
        status = EXIT_USAGE_SUBCOMMAND;
out:
        corral_error_free(err);
        corral_jail_config_release(&cfg);
        return status;
}

/* ---- the clients ---- */

static void print_result(json_t *r)
{
        json_t *v = json_object_get(r, "value");
        const char *text = json_string_value(json_object_get(v, "text"));
        if (text) {
                cli_print_untrusted(stdout, text, strlen(text));
                fputc('\n', stdout);
        }
        fflush(stdout);
        json_t *e = json_object_get(r, "error");
        const char *tb = json_string_value(json_object_get(e, "traceback"));
        const char *status = json_string_value(json_object_get(r, "status"));
        if (tb && *tb && status && strcmp(status, "error") == 0)
                cli_print_untrusted(stderr, tb, strlen(tb));
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(r, "figures"), i, f) {
                const char *why = json_string_value(json_object_get(f, "error"));
                if (why) {
                        cli_error("session", "a figure was not saved: %s", why);
                        continue;
                }
                const char *p = json_string_value(json_object_get(f, "host_path"));
                if (p == NULL)
                        p = json_string_value(json_object_get(f, "path"));
                if (json_is_integer(json_object_get(f, "width")))
                        cli_error("session", "figure %s (%" JSON_INTEGER_FORMAT "x%" JSON_INTEGER_FORMAT ")",
                                  p ? p : "?", json_integer_value(json_object_get(f, "width")),
                                  json_integer_value(json_object_get(f, "height")));
                else
                        cli_error("session", "figure %s", p ? p : "?");
        }
        const char *reason = json_string_value(json_object_get(r, "reason"));
        if (status && strcmp(status, "ok") != 0 && strcmp(status, "error") != 0 && reason)
                cli_error("session", "%s: %s", status, reason);
        if (json_is_true(json_object_get(r, "state_lost")))
                fprintf(stderr, "corral session: the session's state is lost; the next step starts a clean "
                                "interpreter\n");
}

struct exec_view {
        const char *id;
        bool json;
        struct cli_output streams[2];
};

static void exec_output(void *userdata, int stream, const char *data, size_t len)
{
        struct exec_view *v = userdata;
        if (!v->json)
                cli_output_write(&v->streams[stream == 2 ? 1 : 0], data, len);
}

static void exec_event(void *userdata, enum session_client_event ev)
{
        struct exec_view *v = userdata;
        if (ev == SESSION_CLIENT_WAITING)
                cli_error("session", "session '%s' is running another step; waiting for it to end "
                                     "(Ctrl-C to give up: then nothing runs)", v->id);
        else
                cli_error("session", "interrupting the step (Ctrl-C again leaves it running)");
}

static int cmd_exec_step(int argc, char **argv)
{
        static const struct option opts[] = {
                { "code", required_argument, NULL, 'c' },   { "timeout", required_argument, NULL, 't' },
                { "output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT }, { "json", no_argument, NULL, OPT_JSON },
                { "figure-png", no_argument, NULL, OPT_FIGURE_PNG }, { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        const char *code_arg = NULL;
        bool json = false, figure_png = false;
        double timeout = 0;
        uint64_t output = 0;
        corral_error *err = NULL;
        cleanup_free char *code = NULL;
        int status = EXIT_USAGE_SUBCOMMAND;
        opterr = 0;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "c:t:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        code_arg = optarg;
                        break;
                case 't':
                        if (corral_parse_seconds(optarg, &timeout, &err) < 0) {
                                corral_error_prefix(&err, "--timeout");
                                goto usage;
                        }
                        break;
                case OPT_OUTPUT_LIMIT:
                        if (corral_parse_size(optarg, &output, &err) < 0) {
                                corral_error_prefix(&err, "--output-limit");
                                goto usage;
                        }
                        break;
                case OPT_JSON:
                        json = true;
                        break;
                case OPT_FIGURE_PNG:
                        figure_png = true;
                        break;
                case 'h':
                        fputs(help_text, stdout);
                        return EXIT_OK;
                default:
                        corral_usage(&err, "unknown option or missing value: '%s' (see 'corral session --help')",
                                     argv[optind - 1]);
                        goto usage;
                }
        }
        if (figure_png && !json) {
                corral_usage(&err, "--figure-png needs --json: the PNG bytes are part of the JSON result");
                goto usage;
        }
        if (optind >= argc) {
                corral_usage(&err, "exec needs a session ID (see 'corral session list')");
                goto usage;
        }
        const char *id = argv[optind++];
        if (code_arg && optind < argc) {
                corral_usage(&err, "give either -c CODE or a FILE, not both");
                goto usage;
        }
        if (code_arg == NULL && optind + 1 != argc) {
                corral_usage(&err, "nothing to run: give -c CODE or one FILE");
                goto usage;
        }
        code = code_arg ? strdup(code_arg) : cli_read_code(argv[optind], NULL, &err);
        if (code == NULL)
                goto usage;
        if (!utf8_valid(code, strlen(code))) {
                corral_usage(&err, "the code is not valid UTF-8");
                goto usage;
        }
        /* The step's output, made inert on a terminal (termsafe.h). */
        struct exec_view v = { .id = id, .json = json };
        cli_output_init(&v.streams[0], STDOUT_FILENO);
        cli_output_init(&v.streams[1], STDERR_FILENO);
        /* Ctrl-C interrupts the step (KeyboardInterrupt, the state kept), as
         * its time limit would; a second one leaves it running. */
        struct session_client_exec x = { .timeout_s = timeout, .output_limit = output, .figure_png = figure_png,
                                         .cancel_fd = cli_catch_signals(), .on_output = exec_output,
                                         .on_event = exec_event, .userdata = &v };
        json_t *r = NULL;
        int rc = session_client_exec(id, code, &x, &r, &err);
        cli_output_end(&v.streams[0]);
        cli_output_end(&v.streams[1]);
        if (rc == 1) {
                cli_error("session", "interrupted while waiting: the step was not run");
                status = 128 + (cli_cancel_signal() ? cli_cancel_signal() : SIGINT);
                goto out;
        }
        if (rc < 0) {
                if (err && err->kind == CORRAL_ERR_USAGE)
                        goto usage;
                goto fail;
        }
        if (json) {
                cli_print_json(stdout, r, false);
        } else {
                print_result(r);
        }
        json_t *ec = json_object_get(r, "exit_code");
        status = json_is_integer(ec) ? (int)json_integer_value(ec) : EXIT_CORRAL;
        json_decref(r);
        goto out;
fail:
        cli_error_obj("session", err);
        status = EXIT_CORRAL;
        goto out;
usage:
        cli_error_obj("session", err);
        status = EXIT_USAGE_SUBCOMMAND;
out:
        corral_error_free(err);
        return status;
}

/* Print what an archive request wrote. */
static void print_archived(const char *id, json_t *report, bool json)
{
        if (json) {
                cli_print_json(stdout, report, false);
                return;
        }
        const char *path = json_string_value(json_object_get(report, "path"));
        cleanup_free char *clean = path ? term_sanitize(path, strlen(path), NULL) : NULL;
        json_t *skipped = json_object_get(report, "skipped");
        fprintf(stderr,
                "corral session: session %s archived to '%s' (%" JSON_INTEGER_FORMAT " entries, %" JSON_INTEGER_FORMAT
                " files, %" JSON_INTEGER_FORMAT " bytes%s)%s\n",
                id, clean ? clean : "?", json_integer_value(json_object_get(report, "entries")),
                json_integer_value(json_object_get(report, "files")),
                json_integer_value(json_object_get(report, "bytes")),
                json_is_true(json_object_get(report, "truncated")) ? ", truncated at the entry or depth limit" : "",
                json_is_true(json_object_get(report, "stopped")) ? "; the session is stopped" : "");
        size_t i;
        json_t *e;
        json_array_foreach(skipped, i, e) {
                if (i == 10) {
                        fprintf(stderr, "corral session: ... and %zu more skipped (see --json)\n",
                                json_array_size(skipped) - 10);
                        break;
                }
                const char *p = json_string_value(json_object_get(e, "path"));
                const char *why = json_string_value(json_object_get(e, "reason"));
                /* Names from the jail: no terminal escapes. */
                cleanup_free char *cp = term_sanitize(p ? p : "?", strlen(p ? p : "?"), NULL);
                cleanup_free char *cw = term_sanitize(why ? why : "", strlen(why ? why : ""), NULL);
                fprintf(stderr, "corral session: skipped '%s': %s\n", cp ? cp : "?", cw ? cw : "");
        }
}

/* `archive ID FILE` and `stop ID --archive FILE`: the supervisor answers
 * "idle" when no step runs (it serves one request at a time, so a running
 * step is waited for), we confirm with "go", it writes the archive (and
 * with stop, ends).  Past wait_s (> 0) without "idle", nothing is written. */
static void note_archive_waits(void *userdata)
{
        fprintf(stderr, "corral session: session %s is running a step; waiting for it to end\n",
                (const char *)userdata);
}

static int archive_request(const char *id, const char *file, bool stop, double wait_s, bool json)
{
        corral_error *err = NULL;
        json_t *report = NULL;
        int rc = session_client_archive(id, file, stop, wait_s, note_archive_waits, (void *)id, &report, &err);
        if (rc == 0) {
                print_archived(id, report, json);
                json_decref(report);
                return EXIT_OK;
        }
        if (rc == 1) {
                cli_error("session",
                          "session '%s' is still running a step after %g s: nothing was archived%s (try again, or "
                          "give --wait more time)",
                          id, wait_s, stop ? " and the session goes on" : "");
                return EXIT_ARCHIVE_BUSY;
        }
        int status = err && err->kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND : EXIT_CORRAL;
        corral_error_prefix(&err, "session '%s' was not archived%s", id, stop ? " nor stopped" : "");
        cli_error_obj("session", err);
        corral_error_free(err);
        return status;
}

static int cmd_archive(int argc, char **argv)
{
        static const struct option opts[] = {
                { "wait", required_argument, NULL, OPT_WAIT },       { "json", no_argument, NULL, OPT_JSON },
                { "archive", required_argument, NULL, OPT_ARCHIVE }, { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        bool stop = strcmp(argv[0], "stop") == 0, json = false;
        const char *file = NULL;
        double wait_s = 0;
        corral_error *err = NULL;
        opterr = 0;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case OPT_WAIT:
                        if (corral_parse_seconds(optarg, &wait_s, &err) < 0) {
                                cli_error("session", "--wait: %s", err ? err->msg : "invalid");
                                corral_error_free(err);
                                return EXIT_USAGE_SUBCOMMAND;
                        }
                        break;
                case OPT_JSON:
                        json = true;
                        break;
                case OPT_ARCHIVE:
                        if (stop) {
                                file = optarg;
                                break;
                        }
                        cli_error("session", "--archive is an option of stop (archive takes ID FILE.tar)");
                        return EXIT_USAGE_SUBCOMMAND;
                case 'h':
                        fputs(help_text, stdout);
                        return EXIT_OK;
                default:
                        cli_error("session", "unknown option or missing value: '%s' (see 'corral session --help')",
                                  argv[optind - 1]);
                        return EXIT_USAGE_SUBCOMMAND;
                }
        }
        if (!stop && argc - optind == 2)
                file = argv[optind + 1];
        if (argc - optind != (stop ? 1 : 2) || file == NULL || file[0] == '\0') {
                cli_error("session", stop ? "usage: corral session stop ID --archive FILE.tar [--wait S] [--json]"
                                          : "usage: corral session archive ID FILE.tar [--wait S] [--json]");
                return EXIT_USAGE_SUBCOMMAND;
        }
        return archive_request(argv[optind], file, stop, wait_s, json);
}

static int cmd_stop(int argc, char **argv)
{
        corral_error *err = NULL;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--archive") == 0 || strncmp(argv[i], "--archive=", 10) == 0)
                        return cmd_archive(argc, argv);
        if (argc != 2 || argv[1][0] == '-') {
                if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
                        fputs(help_text, stdout);
                        return EXIT_OK;
                }
                cli_error("session", "usage: corral session stop ID");
                return EXIT_USAGE_SUBCOMMAND;
        }
        if (session_client_stop(argv[1], &err) < 0) {
                cli_error_obj("session", err);
                int kind = err ? err->kind : 0;
                corral_error_free(err);
                return kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND : EXIT_CORRAL;
        }
        fprintf(stderr, "corral session: session %s stopped\n", argv[1]);
        return EXIT_OK;
}

/* A verb whose only option is --json (or -h): -1 when parsed, else the
 * exit status (help printed, or a usage error said). */
static int json_flag_only(int argc, char **argv, const char *usage, bool *ret_json)
{
        *ret_json = argc == 2 && strcmp(argv[1], "--json") == 0;
        if (argc == 1 || *ret_json)
                return -1;
        if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
                fputs(help_text, stdout);
                return EXIT_OK;
        }
        cli_error("session", "%s", usage);
        return EXIT_USAGE_SUBCOMMAND;
}

static int cmd_list(int argc, char **argv)
{
        bool json = false;
        int done = json_flag_only(argc, argv, "usage: corral session list [--json]", &json);
        if (done >= 0)
                return done;
        corral_error *err = NULL;
        json_t *all = session_client_list(&err);
        if (all == NULL) {
                cli_error_obj("session", err);
                corral_error_free(err);
                return EXIT_CORRAL;
        }
        if (json) {
                cli_print_json(stdout, all, false);
        } else {
                size_t i;
                json_t *e;
                if (json_array_size(all))
                        printf("%-12s %8s %6s %10s  %s\n", "ID", "PID", "STEPS", "EXPIRES", "WORKSPACE");
                else
                        puts("no sessions");
                json_array_foreach(all, i, e) {
                        printf("%-12s %8" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT " %9.0fs  %s\n",
                               json_string_value(json_object_get(e, "id")),
                               json_integer_value(json_object_get(e, "pid")),
                               json_integer_value(json_object_get(e, "steps")),
                               json_number_value(json_object_get(e, "expires_in_s")),
                               json_string_value(json_object_get(e, "workspace")) ?: "");
                }
        }
        json_decref(all);
        return EXIT_OK;
}

/* The host's state: pid, sessions, zygote, pool, linger. */
static int cmd_status(int argc, char **argv)
{
        bool json = false;
        int done = json_flag_only(argc, argv, "usage: corral session status [--json]", &json);
        if (done >= 0)
                return done;
        corral_error *err = NULL;
        json_t *info = session_client_status(&err);
        if (info == NULL && err) {
                cli_error_obj("session", err);
                corral_error_free(err);
                return EXIT_CORRAL;
        }
        if (json) {
                cli_print_json(stdout, info, false);
        } else if (info == NULL) {
                puts("no session host is running");
        } else {
                int zpid = (int)json_integer_value(json_object_get(info, "zygote_pid"));
                printf("session host %d: %d session%s", (int)json_integer_value(json_object_get(info, "pid")),
                       (int)json_integer_value(json_object_get(info, "sessions")),
                       json_integer_value(json_object_get(info, "sessions")) == 1 ? "" : "s");
                if (zpid > 0)
                        printf(", zygote %d with %d warm in its pool, kept %.0f s after the last session", zpid,
                               (int)json_integer_value(json_object_get(info, "pool")),
                               json_number_value(json_object_get(info, "linger_s")));
                putchar('\n');
                json_t *pool = json_object_get(info, "exec_pool");
                if (json_is_object(pool)) {
                        printf("pre-made jails for corral exec: %d ready of %d, %d running, %d made, %d claimed, "
                               "%d failed, %d replaced idle",
                               (int)json_integer_value(json_object_get(pool, "size")),
                               (int)json_integer_value(json_object_get(pool, "target")),
                               (int)json_integer_value(json_object_get(pool, "running")),
                               (int)json_integer_value(json_object_get(pool, "made")),
                               (int)json_integer_value(json_object_get(pool, "claimed")),
                               (int)json_integer_value(json_object_get(pool, "failed")),
                               (int)json_integer_value(json_object_get(pool, "replaced")));
                        const char *why;
                        json_t *n;
                        const char *sep = "; direct instead: ";
                        json_object_foreach(json_object_get(pool, "fallbacks"), why, n) {
                                cleanup_free char *safe = term_sanitize(why, strlen(why), NULL); /* the host's words */
                                printf("%s%d %s", sep, (int)json_integer_value(n), safe ? safe : "?");
                                sep = ", ";
                        }
                        putchar('\n');
                }
        }
        json_decref(info);
        return EXIT_OK;
}

/* Stop the host and every session in it; 0 also when none runs. */
static int cmd_shutdown(int argc, char **argv)
{
        if (argc != 1) {
                if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
                        fputs(help_text, stdout);
                        return EXIT_OK;
                }
                cli_error("session", "usage: corral session shutdown");
                return EXIT_USAGE_SUBCOMMAND;
        }
        corral_error *err = NULL;
        if (session_client_shutdown(&err) < 0) {
                cli_error_obj("session", err);
                corral_error_free(err);
                return EXIT_CORRAL;
        }
        return EXIT_OK;
}

int cmd_session(int argc, char **argv)
{
        if (argc < 2) {
                fputs("usage: corral session start|exec|archive|stop|list|status|shutdown ...\n"
                      "  corral session start                 a session (prints its ID)\n"
                      "  corral session exec ID -c CODE       run a step in it\n"
                      "  corral session stop ID               end it\n"
                      "See 'corral session --help' for every option.\n",
                      stderr);
                return EXIT_USAGE_SUBCOMMAND;
        }
        const char *verb = argv[1];
        if (strcmp(verb, "-h") == 0 || strcmp(verb, "--help") == 0 || strcmp(verb, "help") == 0) {
                fputs(help_text, stdout);
                return EXIT_OK;
        }
        if (strcmp(verb, "start") == 0)
                return cmd_start(argc - 1, argv + 1);
        if (strcmp(verb, "exec") == 0)
                return cmd_exec_step(argc - 1, argv + 1);
        if (strcmp(verb, "stop") == 0)
                return cmd_stop(argc - 1, argv + 1);
        if (strcmp(verb, "archive") == 0)
                return cmd_archive(argc - 1, argv + 1);
        if (strcmp(verb, "list") == 0)
                return cmd_list(argc - 1, argv + 1);
        if (strcmp(verb, "shutdown") == 0)
                return cmd_shutdown(argc - 1, argv + 1);
        if (strcmp(verb, "status") == 0)
                return cmd_status(argc - 1, argv + 1);
        if (strcmp(verb, "host") == 0) {
                /* Internal: `start` runs the host so (session-host.c). */
                char *end = NULL;
                long fd = argc == 4 && strcmp(argv[2], "--ready-fd") == 0 ? strtol(argv[3], &end, 10) : -1;
                if (fd < 3 || fd > 1024 || end == NULL || *end != '\0') {
                        cli_error("session", "usage: corral session host --ready-fd N (started by 'corral session start')");
                        return EXIT_USAGE_SUBCOMMAND;
                }
                session_daemon_main((int)fd, cli_catch_signals());
        }
        cli_error("session", "unknown subcommand '%s': expected start, exec, archive, stop, list, status or shutdown", verb);
        return EXIT_USAGE_SUBCOMMAND;
}
